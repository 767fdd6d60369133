/* fusion.h — what fusing chains of PyTorch elementwise kernels could remove, estimated from a
 * profiler trace's kernels (autograph-predict's fusion estimate).
 *
 * A trace carries each kernel's name, stream, times, grid and block, but not its pointers: which
 * kernel reads which one's output is unknown. So the estimate is an upper bound, by this rule: a
 * chain is a run of two or more kernels that follow each other on one stream (nothing else
 * between them there), each a PyTorch elementwise kernel (the frameworks
 * vectorized_elementwise_kernel, unrolled_elementwise_kernel and elementwise_kernel, by name),
 * all with the same grid and block (the same element count, as one framework sizes them), and
 * taken to feed each other in turn. Fusing a chain of n kernels into one removes n − 1 launches
 * and n − 1 reads of an intermediate (intermediates stay written: a later reader may need them),
 * at least one element per thread each. As in the library, a chain holds at most 16 kernels (a
 * longer run is several chains, one after the other). What it saves on the GPU is at most the
 * removed kernels' own time (each also did arithmetic the fused kernel still does): that time is
 * given as the bound.
 *
 * Fills (PyTorch's FillFunctor in any of the frameworks: zero_grad's and torch.full's kernels)
 * read nothing, so they feed no chain: a fill ends the run it follows and is in no chain. Runs of
 * two or more consecutive fills on one stream, of any shapes, are groups, which the library runs
 * as one kernel with a row of blocks per fill (at most 16 fills, as for chains): a group of n
 * removes n − 1 launches and no bytes (each fill still writes its tensor), and saves at most the
 * own time of all its fills but the first. Fills count as elementwise kernels. chains, chained,
 * removed, longest, removed_ns and bytes_not_read count chains only, the four fields after them
 * groups of fills only: what both remove is the sum of the two. Pure computation over arrays; no
 * I/O.
 */
#ifndef AG_FUSION_H
#define AG_FUSION_H

#include <stddef.h>
#include <stdint.h>

typedef struct ag_fuse_kernel {
  const char *name;          /* demangled, as Kineto records it */
  int64_t stream, ts, dur;   /* dur in nanoseconds */
  uint32_t grid[3], block[3];
} ag_fuse_kernel_t;

typedef struct ag_fuse_estimate {
  uint64_t kernels;          /* all kernels seen */
  uint64_t elementwise;      /* of them, PyTorch elementwise kernels (fills included) */
  uint64_t chains;           /* chains of two or more */
  uint64_t chained;          /* elementwise kernels in chains */
  uint64_t removed;          /* launches a fusion of every chain removes (chained - chains) */
  uint64_t longest;          /* kernels in the longest chain */
  int64_t kernel_ns;         /* GPU time of all kernels */
  int64_t elementwise_ns;    /* of the elementwise ones */
  int64_t removed_ns;        /* of the kernels chains remove: the bound on their saving */
  double bytes_not_read;     /* at least: one element per thread of each removed read, sized
                                by the element type the name shows (2, 4 or 8 bytes) */
  uint64_t fill_groups;      /* groups of two or more consecutive fills */
  uint64_t fills_grouped;    /* fills in them */
  uint64_t fill_removed;     /* launches grouping removes (fills_grouped - fill_groups) */
  int64_t fill_removed_ns;   /* GPU time of every grouped fill but each group's first */
} ag_fuse_estimate_t;

/* The elementwise framework a kernel name belongs to ("vectorized", "unrolled", "elementwise"),
 * or NULL. */
const char *ag__fuse_family(const char *name);

/* Bytes of the element type a kernel name shows (c10::Half/c10::BFloat16: 2, double: 8, else 4). */
int ag__fuse_elem_bytes(const char *name);

/* Estimates over n kernels sorted by (stream, ts). */
void ag__fuse_estimate(const ag_fuse_kernel_t *k, size_t n, ag_fuse_estimate_t *out);

#endif
