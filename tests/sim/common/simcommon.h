/* simcommon.h — helpers shared by the simulated driver, runtime and cuDNN.
 *
 * Each simulated library links its own copy (the objects are static to each .so), so each
 * counts the calls of its own API names.
 *
 * Fault injection: SIM_FAIL=<api>:<n>[,<api>:<n>…] makes the n-th call (1-based) of the API
 * function named <api> (e.g. cuGraphInstantiateWithFlags, cudaMalloc, cudnnConvolutionForward)
 * fail with that function's natural error; `<api>:<n>+` fails the n-th and every later call.
 * The names are those of the public API, without _v2/_ptsz suffixes. `<api>@bg:<n>` counts only
 * the calls made from threads other than the process's main thread: in a single-threaded test
 * program, the calls a preloaded library makes from its own thread. SIM_FAIL_LOG=<file> appends
 * a line `<api> <n>` to the file for each call an injected fault made fail.
 *
 * Modelled host costs (busy-waits on the calling thread, nanoseconds, default 0):
 * SIM_LAUNCH_NS, SIM_GRAPH_LAUNCH_NS, SIM_GRAPH_NODE_NS, SIM_NODE_UPDATE_NS. The driver also
 * adds each of them to its modelled host clock (tests/sim/driver/clock.c).
 *
 * Modelled device times (nanoseconds, default 0; they move only the driver's modelled clock,
 * never the real one): SIM_LAUNCH_LATENCY_NS (from a submission to the earliest start of its
 * work), SIM_MEMOP_NS (each copy and memset), SIM_GRAPH_NODE_GAP_NS (between consecutive nodes
 * of a launched graph) and SIM_KERNEL_NS, either one number (every kernel) or a comma-separated
 * list of `pattern:ns` or `pattern:ns+per_block_ns` rules: the first rule whose fnmatch pattern
 * matches the kernel's name gives its duration, ns plus per_block_ns for each block of the grid;
 * a kernel no rule matches takes 0. A malformed value is reported once on stderr and ignored as
 * a whole, so that a typo cannot leave half of the rules in force.
 */
#ifndef SIM_COMMON_H
#define SIM_COMMON_H

#include <stdint.h>

/* Nonzero when this call of `api` must fail (counts the call). Thread-safe. */
int simc_should_fail(const char *api);

/* Value of a SIM_*_NS cost variable, read once; 0 when unset or malformed. */
enum simc_cost {
  SIMC_LAUNCH_NS,
  SIMC_GRAPH_LAUNCH_NS,
  SIMC_GRAPH_NODE_NS,
  SIMC_NODE_UPDATE_NS,
  SIMC_LAUNCH_LATENCY_NS,
  SIMC_MEMOP_NS,
  SIMC_GRAPH_NODE_GAP_NS,
  SIMC_NCOSTS
};
uint64_t simc_cost(enum simc_cost which);

/* Modelled duration of one kernel named `name` whose grid has `blocks` blocks in all, from
 * SIM_KERNEL_NS (0 when unset, malformed, or no rule matches). */
uint64_t simc_kernel_ns(const char *name, uint64_t blocks);

/* Busy-waits `ns` nanoseconds on the calling thread (no sleep: it models CPU time). */
void simc_spin_ns(uint64_t ns);

#endif
