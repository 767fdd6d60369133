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
 * maximal run of such links. The strided framework (elementwise_kernel, whose tensors sit in a
 * lambda's captures with offset calculators) is not read: its launches count as neither.
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
} ag_chain_launch_t;

/* Nonzero when k is an elementwise framework kernel with the layout above. */
int ag__chain_elementwise(const ag_kinfo_t *k);

/* Nonzero when b, launched right after a, chains with it: both elementwise, the same element
 * count, and b reads what a wrote. */
int ag__chain_links(const ag_chain_launch_t *a, const ag_chain_launch_t *b);

/* Marks each of l[0..n): AG_CHAIN_LINKED in a chain of two or more, AG_CHAIN_ELEMENTWISE an
 * elementwise launch in none, else AG_CHAIN_NONE. Returns the number of chains. */
int ag__chain_scan(const ag_chain_launch_t *l, int n, uint8_t *role);

#endif
