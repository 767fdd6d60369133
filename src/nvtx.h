/* nvtx.h — the engine's decisions as NVTX ranges and marks, for Nsight Systems or any NVTX tool.
 *
 * NVTX v3 is header-only: the first NVTX call loads the tool named by NVTX_INJECTION64_PATH (the
 * profiler sets it) and, without one, turns every NVTX entry point into a no-op. At start-up
 * ag__nvtx_init creates the domain "autograph" and registers the fixed names; a domain handle of
 * NULL means no tool listens, and then ag__nvtx_on stays zero and the engine calls nothing here
 * (each hook in src/observe.h tests that word first). AUTOGRAPH_NVTX=0 skips even the domain's
 * creation, so that no NVTX call is made at all; AUTOGRAPH_DISABLE=1 never gets this far.
 *
 * What a tool receives, all in the domain "autograph" (docs/nvtx.md):
 *   range  around each graph launch of a replay (a sequence, or one of its chunks), pushed and
 *          popped on the thread that submits it: message "replay seq S: L launches, O ops,
 *          U updates", payload L (unsigned 64-bit);
 *   marks  "sequence learned" and "graph built" (registered strings, payload the sequence id),
 *          "graph build failed: seq S (CUDA error E)", "demoted seq S: <reason>" (payload S),
 *          "flush L launches [of seq S] (<fallback>): <cause>" (payload L) and "graph evicted"
 *          (registered, payload the sequence id).
 * Every call comes from the engine's own decisions (held runs, replays, builds); none from a
 * launch passed through, and none from a call of the program's own (a stream capture included).
 * Engine lock held for all the hooks.
 */
#ifndef AG_NVTX_H
#define AG_NVTX_H

#include <stdint.h>

#include "segment.h"

/* Nonzero once ag__nvtx_init found a tool listening and AUTOGRAPH_NVTX allows it. */
extern int ag__nvtx_on;

/* Creates the domain and registers its strings when AUTOGRAPH_NVTX allows (after
 * ag__config_load, outside the engine lock: the first NVTX call may load the tool). */
void ag__nvtx_init(void);

/* The range of one graph launch of s, in place of `launches` held launches and `ops` stream
 * operations, after `updates` node updates; ends with ag__nvtx_replay_end on the same thread. */
void ag__nvtx_replay_begin(const ag_seq_t *s, int launches, int ops, uint64_t updates);
void ag__nvtx_replay_end(void);

/* Marks: s seen for the first time; s's graph built (`status` 0) or not (the CUDA error);
 * s demoted for `why`; s's graph evicted from the cache; n held launches submitted as ordinary
 * launches for fallback `fb` (enum ag_fallback), because of `why`, as a prefix of `cand` (or
 * NULL). */
void ag__nvtx_learned(const ag_seq_t *s);
void ag__nvtx_built(const ag_seq_t *s, int status);
void ag__nvtx_demoted(const ag_seq_t *s, const char *why);
void ag__nvtx_evicted(const ag_seq_t *s);
void ag__nvtx_flushed(int n, int fb, const char *why, const ag_seq_t *cand);

#endif
