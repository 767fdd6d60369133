/* fchain.h — chains of PyTorch elementwise kernels replaced, inside the graphs the engine
 * replays, by one kernel generated and compiled at run time (AUTOGRAPH_FUSE=chains).
 *
 * The pieces: src/chain.h finds the chains among a sequence's launches, src/fusegen.h describes a
 * chain through the wheel's calibration table and writes its kernel's CUDA C, src/jit.h compiles
 * that on a background thread and keeps the result in a disk cache. This file joins them for the
 * graph builder (src/graph.c):
 *
 *   - The calibration table is read once, on a thread of its own started at the first request
 *     (reading files and the loaded objects' build IDs must not happen under the engine lock:
 *     src/buildid.h), from AUTOGRAPH_FUSE_TABLES (a table, or a folder of them), by default the
 *     folder `calibration` next to libautograph.so. The table used is the one whose
 *     `library.build_id` names an object the process has loaded; a kernel is described through
 *     it only when its code was registered from that object (its fatbin lies inside it).
 *   - ag__fchain_get, when a graph is built: the kernel for the chain's shape (the operations,
 *     element types and which tensor is which; not the pointers, scalars or element count, which
 *     are the kernel's parameters), READY in the current context, or PENDING (its compilation
 *     requested, once per shape; or the table still being read): the graph is built unfused
 *     and notes that it waits, or LATER (the sequence is young: nothing requested yet), or NO
 *     (not describable: the chain stays as it is, for good).
 *   - ag__fchain_generation: a counter that moves when something a graph may wait for ended
 *     (a compilation finished or failed, the table was read). The engine rebuilds a graph that
 *     waits when the counter moved since it was built, after a replay, so the program never
 *     waits for a compiler: until then the chain's kernels run as they are.
 *
 * Everything but the table's thread runs under the engine lock, with the context of the graph
 * current (a loaded module belongs to its context). Results are bit-identical to the unfused
 * kernels by the generator's construction, which only the simulator has confirmed: a GPU must
 * confirm it (tools/gpu-check).
 */
#ifndef AG_FCHAIN_H
#define AG_FCHAIN_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "fusegen.h"

enum { AG_FCHAIN_NO = 0, AG_FCHAIN_PENDING = 1, AG_FCHAIN_READY = 2, AG_FCHAIN_LATER = 3 };

/* The chain l[0..n) (n >= 2, consecutive linked launches, or a run of one-tensor launches: a
 * group of fills, src/fusegen.h): AG_FCHAIN_READY with its description
 * in *c and the kernel in *fn, AG_FCHAIN_PENDING, or AG_FCHAIN_NO, with *bad the first launch
 * that cannot be described (-1: none in particular; the launches before it may form a chain of
 * their own). With `request` 0, a shape this process has not requested yet is not requested:
 * AG_FCHAIN_LATER. The engine requests only for sequences that have proved steady, so that the
 * chain shapes a program forms while its sequences are still being learned (which differ from
 * run to run) are neither compiled nor written to the cache: a second run with the cache warm
 * compiles nothing. */
int ag__fchain_get(const ag_chain_launch_t *l, int n, ag_fg_chain_t *c, CUfunction *fn, int *bad,
                   int request);

/* Names the data array of l's kernel (ag_chain_launch_t.sdata, snt) when it is the strided
 * framework and the calibration table, once read, knows where its data array is and the kernel
 * is the table's library's; else zeroes them (l is then read as src/chain.h reads it). Starts
 * the table's reader as ag__fchain_get does. */
void ag__fchain_view(ag_chain_launch_t *l);

/* The elements per block (and in *threads the threads per block) with which kernel k's
 * framework launches, as the calibration table records them, when k is a contiguous kernel of
 * the table's library that it knows; 0 when not (or no table describes a loaded library); -1
 * while the table is being read (the first call starts its reader, as ag__fchain_get does;
 * when nothing is at the tables' path that call answers 0 itself, with no reader).
 * For the kernel patterns (src/pattern.h), whose fixed rule cannot tell a version's. */
int ag__fchain_block_work(const ag_kinfo_t *k, unsigned *threads);

/* Describes l[0..n) again (a replay's arguments): 0 when it has the shape of `was` (the same
 * kernel computes it), with the new description in *c; nonzero when not. */
int ag__fchain_redescribe(const ag_chain_launch_t *l, int n, const ag_fg_chain_t *was,
                          ag_fg_chain_t *c);

/* The fused kernel's parameter block for c: `int n` then the struct of pointers and scalars, as
 * the generated kernel declares them (src/fusegen.h). Writes at most AG_FCHAIN_PARAM_BYTES bytes
 * at buf; *n_off and *a_off receive the two parameters' offsets. */
#define AG_FCHAIN_PARAM_BYTES (8 + 8 * AG_FG_MAX_PTRS + 4 * AG_FG_MAX_SCAL + 8 * AG_FG_MAX_ACC * AG_FG_MAX_DIMS)
void ag__fchain_params(const ag_fg_chain_t *c, uint8_t *buf, size_t *n_off, size_t *a_off);

/* The launch shape of c's kernel (a grid-stride loop over c->n elements, in which any shape
 * computes every element once; a group of fills has a row of blocks per fill). */
void ag__fchain_shape(const ag_fg_chain_t *c, unsigned grid[3], unsigned block[3]);

/* See above; polls the compilations still pending (a short lock each). */
uint32_t ag__fchain_generation(void);

/* Forgets the kernels loaded in ctx (NULL: every context): its modules die with it. */
void ag__fchain_ctx_gone(void *ctx);

#endif
