/* simcommon.h — helpers shared by the simulated driver, runtime and cuDNN.
 *
 * Each simulated library links its own copy (the objects are static to each .so), so each
 * counts the calls of its own API names.
 *
 * Fault injection: SIM_FAIL=<api>:<n>[,<api>:<n>…] makes the n-th call (1-based) of the API
 * function named <api> (e.g. cuGraphInstantiateWithFlags, cudaMalloc, cudnnConvolutionForward)
 * fail with that function's natural error; `<api>:<n>+` fails the n-th and every later call.
 * The names are those of the public API, without _v2/_ptsz suffixes.
 *
 * Modelled host costs (busy-waits on the calling thread, nanoseconds, default 0):
 * SIM_LAUNCH_NS, SIM_GRAPH_LAUNCH_NS, SIM_GRAPH_NODE_NS, SIM_NODE_UPDATE_NS.
 */
#ifndef SIM_COMMON_H
#define SIM_COMMON_H

#include <stdint.h>

/* Nonzero when this call of `api` must fail (counts the call). Thread-safe. */
int simc_should_fail(const char *api);

/* Value of a SIM_*_NS cost variable, read once; 0 when unset or malformed. */
enum simc_cost { SIMC_LAUNCH_NS, SIMC_GRAPH_LAUNCH_NS, SIMC_GRAPH_NODE_NS, SIMC_NODE_UPDATE_NS };
uint64_t simc_cost(enum simc_cost which);

/* Busy-waits `ns` nanoseconds on the calling thread (no sleep: it models CPU time). */
void simc_spin_ns(uint64_t ns);

#endif
