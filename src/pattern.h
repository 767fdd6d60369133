/* pattern.h — kernel-pattern substitution: which runs of held launches one fused kernel may
 * replace, under which conditions, and with which arguments.
 *
 * A pattern names its original kernels (fnmatch patterns over their mangled device names, plus
 * the parameter layout each must have), the conditions on their held arguments and shapes
 * (same buffer, same element count, values of the functors' fields, buffers either identical or
 * disjoint, and a launch shape with which each original computes exactly its N elements, as
 * the fused kernel does: docs/fused-patterns-conditions.md lists them all),
 * and how the fused kernel's parameters are built from the originals' arguments. The fused
 * kernels ship inside the library (the CUDA C files in shims/fused, an embedded fatbin, loaded by graph.c).
 *
 * Everything here is pure: no driver, no lock, no allocation, so tests/unit/ag-pattern.c drives
 * it on made-up kernels and argument bytes. The graph builder (graph.c) calls ag__pattern_match
 * on each position of a sequence, and ag__pattern_check + ag__pattern_params again at every
 * replay whose held arguments differ from the graph's copy, since a later occurrence of the same
 * sequence may alias its buffers differently.
 *
 * The originals are PyTorch 2.5's eager float32 kernels on contiguous tensors, launched as
 * at::native::vectorized_elementwise_kernel<VEC, FUNCTOR, at::detail::Array<char*, N>> (the
 * std::array<char*, N> spelling of later versions is accepted too): see
 * docs/fused-replacements.md for the exact names, layouts and what needs a GPU to confirm.
 */
#ifndef AG_PATTERN_H
#define AG_PATTERN_H

#include <stdint.h>

#include "kinfo.h"

/* Most original launches one pattern covers, and most parameters of a fused kernel (each one
 * an 8-byte slot of the parameter buffer ag__pattern_params fills). */
#define AG_PAT_MAX_OPS 2
#define AG_PAT_MAX_ARGS 8

/* One held launch as the matcher sees it: the kernel, its packed argument bytes and its launch
 * shape (which elements an original computes depends on its grid and block). */
typedef struct ag_pat_launch {
  const ag_kinfo_t *k;
  const uint8_t *args;
  unsigned grid[3], block[3];
  /* The elements per block and threads per block the calibration table records for the
   * kernel (src/fchain.h: the table of the loaded PyTorch build), which make its launch shape
   * known; work 0 where no table records it: the fixed rule below then applies. */
  uint32_t work;
  unsigned threads;
} ag_pat_launch_t;

typedef struct ag_pattern ag_pattern_t;

/* The number of patterns in the table, and pattern i (0 <= i < count). */
int ag__pattern_count(void);
const ag_pattern_t *ag__pattern_at(int i);

/* The pattern's stats name (e.g. "torch_add_relu"), the fused kernel's name in the embedded
 * module, how many originals it replaces, and its index in the table. */
const char *ag__pattern_name(const ag_pattern_t *p);
const char *ag__pattern_kernel(const ag_pattern_t *p);
int ag__pattern_len(const ag_pattern_t *p);
int ag__pattern_index(const ag_pattern_t *p);

/* The first pattern (in table order) whose originals are l[0..len-1], with len <= avail, and
 * whose conditions hold on their arguments; NULL when none. */
const ag_pattern_t *ag__pattern_match(const ag_pat_launch_t *l, int avail);

/* Nonzero when k is the original kernel of some pattern (its name and layout). */
int ag__pattern_original(const ag_kinfo_t *k);

/* Nonzero when the kernels l[0..len-1] are p's originals (names and layouts). */
int ag__pattern_kernels_fit(const ag_pattern_t *p, const ag_pat_launch_t *l);

/* Nonzero when p's conditions hold on the arguments of l[0..len-1] (kernels already fit). */
int ag__pattern_check(const ag_pattern_t *p, const ag_pat_launch_t *l);

/* Fills the fused kernel's parameters (nargs 8-byte slots into `buf`, AG_PAT_MAX_ARGS * 8
 * bytes) and its launch shape from the originals' arguments; `nargs` receives the number of
 * parameters. Conditions must hold. Returns 0 or -AG_EINVAL. */
int ag__pattern_params(const ag_pattern_t *p, const ag_pat_launch_t *l, uint8_t *buf,
                       int *nargs, unsigned grid[3], unsigned block[3]);

#endif
