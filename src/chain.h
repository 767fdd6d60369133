/* chain.h — chains of PyTorch elementwise kernels among a sequence's held launches: what a
 * fusion of elementwise chains would replace, recognised from the kernels' names, parameter
 * layouts and argument bytes.
 *
 * A launch is elementwise when its kernel is one of PyTorch's elementwise frameworks for
 * contiguous tensors, at::native::vectorized_elementwise_kernel or unrolled_elementwise_kernel
 * (by mangled name), and its parameters begin (int N, functor, array of char* data), the layout
 * both have had through PyTorch 2.x: data[0] the output, the rest the inputs, 2 to 8 tensors.
 * Two consecutive elementwise launches chain when they cover the same N and the later reads
 * what the earlier wrote (data[0] of the first among the inputs of the second); a chain is a
 * maximal run of such links.
 *
 * The strided framework, at::native::elementwise_kernel<nt, vt, gpu_kernel_impl_nocast<F>'s
 * lambda>(int N, lambda), takes its tensors inside the lambda's captures: an OffsetCalculator
 * (each tensor's byte strides over the iteration's dimensions), the data array, then F. Where the
 * array sits depends on the number of tensors, which nothing in the parameter layout tells, so a
 * strided launch is read only when its caller names the array's place and length (sdata, snt:
 * src/fchain.h takes them from the calibration table); then it links like the others, by its N
 * and its pointers. Whether the offsets of a tensor one launch writes and the next reads agree is
 * for the fusion to check (src/fusegen.h), not for the links.
 *
 * Pure: no driver, no lock, no allocation (tests/unit/ag-chain.c drives it on made-up kernels).
 */
#ifndef AG_CHAIN_H
#define AG_CHAIN_H

#include <stdint.h>

#include "kinfo.h"

/* What ag__chain_scan says of each launch. */
enum { AG_CHAIN_NONE = 0, AG_CHAIN_ELEMENTWISE = 1, AG_CHAIN_LINKED = 2 };

/* One launch as the scan sees it: its kernel and packed argument bytes (NULL for a stream
 * operation, which breaks a chain). */
typedef struct ag_chain_launch {
  const ag_kinfo_t *k;
  const uint8_t *args;
  uint16_t sdata; /* a strided launch: its data array's offset in args, else 0 */
  uint8_t snt;    /* … and its tensors (0: the launch is not read as strided) */
  unsigned grid[3], block[3]; /* its launch shape: what the calibration table's shape is checked
                                against (src/fusegen.h); zeros where unknown */
} ag_chain_launch_t;

/* Nonzero when k is a contiguous elementwise framework kernel with the layout above. */
int ag__chain_elementwise(const ag_kinfo_t *k);

/* Nonzero when k is a contiguous framework kernel with the layout above but one tensor, its
 * output (a fill: FillFunctor, the only such functor PyTorch's frameworks run; the calibration
 * table says which). Runs of them are the horizontal case: independent, of any element count. */
int ag__chain_single(const ag_kinfo_t *k);

/* Nonzero when k is the strided framework with the parameters (int N, lambda). */
int ag__chain_strided(const ag_kinfo_t *k);

/* Nonzero when launch l is read as elementwise: a contiguous framework kernel, or a strided one
 * whose data array l names, inside its parameters. */
int ag__chain_member(const ag_chain_launch_t *l);

/* Nonzero when b, launched right after a, chains with it: both members (above), the same element
 * count, and b reads what a wrote. */
int ag__chain_links(const ag_chain_launch_t *a, const ag_chain_launch_t *b);

/* Marks each of l[0..n): AG_CHAIN_LINKED in a chain of two or more, AG_CHAIN_ELEMENTWISE an
 * elementwise launch in none, else AG_CHAIN_NONE. Returns the number of chains. */
int ag__chain_scan(const ag_chain_launch_t *l, int n, uint8_t *role);

#endif
