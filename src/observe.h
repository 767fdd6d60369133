/* observe.h — the one seam between what the engine decides and what reports it.
 *
 * The engine (src/engine.c) decides what happens to every launch and call; it reports each
 * decision once, by calling one function here, and calls no observer itself. The observers
 * subscribe here, each to the decisions it wants:
 *   stats  the counters of AUTOGRAPH_STATS (src/stats.h): always on;
 *   log    AUTOGRAPH_LOG lines (src/log.h): by level;
 *   dump   the sequence dump of AUTOGRAPH_DUMP (src/dump.h): when ag__dump_armed;
 *   trace  the timeline of AUTOGRAPH_TRACE, and the runs and cuts of the statistics and the dump
 *          (src/trace.h): when ag__trace_armed;
 *   nvtx   NVTX ranges and marks for a profiler (src/nvtx.h): when ag__nvtx_on (a tool listens).
 * So the path a launch takes reads in one file, and adding an observer, or a decision to one,
 * changes this file and the observer's, never the engine's. (The fused replacements count their
 * own runs, src/graph.c and src/fuse-dnn.c: they are the replacement's, not a decision here.
 * The engine's own diagnostics, a helper thread that cannot start, an error never reported,
 * are logged where they happen.)
 *
 * Everything is inline: an observer that is not armed costs the test of its word (the same
 * tests the engine made before the seam, so the launch path is unchanged). Unless a function
 * says otherwise it is called under the engine lock, so the counters written here are plain
 * relaxed loads and stores (OBS_INC), never locked instructions; the counters of calls, which
 * are counted outside the lock, use atomic adds (AG_STAT_ADD).
 */
#ifndef AG_OBSERVE_H
#define AG_OBSERVE_H

#include <stdint.h>

#include "ag.h"
#include "dump.h"
#include "engine.h"
#include "kinfo.h"
#include "log.h"
#include "nvtx.h"
#include "segment.h"
#include "stats.h"
#include "trace.h"

/* A counter written only under the engine lock: a relaxed load and store (the exit report reads
 * them with relaxed loads and tolerates a launch in flight). */
#define OBS_INC(field, n) \
  __atomic_store_n(&(field), __atomic_load_n(&(field), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)

/* ---- calls and launches ----------------------------------------------------------------------- */

/* The path a launch came through (enum ag_path): cuDNN's when made inside a cuDNN call, whose
 * name is then *lib_call (else NULL). */
static inline int ag__obs_path(const ag_launch_t *l, const char **lib_call) {
  if (AG_UNLIKELY(ag__tls.lib)) {
    if (lib_call) *lib_call = ag__tls.lib_call;
    return AG_PATH_CUDNN;
  }
  if (lib_call) *lib_call = NULL;
  return l->path;
}

/* A launch arrived, from its entry point l->call. The runtime's count is launches less the
 * others' (stats.c): one store fewer per launch. */
static inline void ag__obs_launch(const ag_launch_t *l) {
  int path = ag__obs_path(l, NULL);
  OBS_INC(ag__stats.launches, 1);
  if (AG_UNLIKELY(path != AG_PATH_RUNTIME)) OBS_INC(ag__stats.by_path[path], 1);
  OBS_INC(l->call->count, 1);
}

/* One launch was passed through as it came. */
static inline void ag__obs_passed_one(void) { OBS_INC(ag__stats.passthrough, 1); }

/* A kernel was seen for the first time and its record learned. */
static inline void ag__obs_kernel_learned(void) { OBS_INC(ag__stats.kernels, 1); }

/* A CUDA call other than a launch was made (`call` NULL: unknown), of `family` (enum
 * ag_family); `ordering`: one the engine treats as a flush point. Outside the lock. */
static inline void ag__obs_call(ag_call_t *call, int family, int ordering) {
  if (ordering) AG_STAT_ADD(ag__stats.ordering, 1);
  if (call) AG_STAT_ADD(call->count, 1);
  AG_STAT_ADD(ag__stats.families[family], 1);
}

/* A kernel's structure (hash h) was seen with a new block or shared memory size: the dump keeps
 * each shape a kernel was launched with. */
static inline void ag__obs_shape(uint64_t h, const ag_kinfo_t *k, const ag_launch_t *l) {
  if (AG_UNLIKELY(ag__dump_armed)) {
    const char *lib_call;
    int path = ag__obs_path(l, &lib_call);
    ag__dump_shape(h, k, l, path, lib_call);
  }
}

/* A launch cannot be held for fallback reason `fb` (enum ag_fallback) and was passed through;
 * a denied kernel's launch is kept by the dump. */
static inline void ag__obs_fallback(int fb, const ag_kinfo_t *k, const ag_launch_t *l) {
  OBS_INC(ag__stats.fallbacks[fb], 1);
  if (AG_UNLIKELY(ag__dump_armed) && fb == AG_FB_DENIED) {
    const char *lib_call;
    int path = ag__obs_path(l, &lib_call);
    ag__dump_denied(k, l, path, lib_call);
  }
}

/* A launch was passed through because the program is capturing somewhere (`on_capture`: on a
 * capturing stream, counted as such). */
static inline void ag__obs_capture_pass(int on_capture) {
  if (on_capture) OBS_INC(ag__stats.fallbacks[AG_FB_CAPTURING], 1);
}

/* ---- why a held run ends -------------------------------------------------------------------- */

/* The run about to end (on this thread) ends because of `why` (a string with static storage);
 * NULL: the cause is over. Taken by the trace's next flush or replay (src/trace.h). Any thread,
 * lock or not. */
static inline void ag__obs_cause(const char *why) {
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause(why);
}

/* The same for a launch that cannot be held for fallback reason `fb`. */
static inline void ag__obs_cause_fallback(int fb) {
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause_fallback(fb);
}

/* The clock of a flush or a build about to start: what the trace needs, nothing otherwise. */
static inline uint64_t ag__obs_clock(void) { return AG_UNLIKELY(ag__trace_armed) ? ag__now_ns() : 0; }

/* ---- runs: held, submitted, replayed, learned ----------------------------------------------- */

/* The engine began holding launches on `stream`. */
static inline void ag__obs_hold(void *stream) {
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_hold(stream);
}

/* The n entries `stream` held were submitted as ordinary calls for fallback reason `fb`, from
 * t0 (ag__obs_clock): `launches` kernel launches among them, the first failure `status` with
 * `nfailed` failures (reported to the thread that made the failed launch, by the engine);
 * `cand`: the sequence they were held as a prefix of, or NULL. */
static inline void ag__obs_submitted(void *stream, int n, int launches, int fb, uint64_t t0,
                                     int status, int nfailed, const ag_seq_t *cand) {
  if (status) {
    ag__log(AG_LOG_WARN, "%d of %d held launches failed at submission (CUDA error %d): "
            "reported to the thread that made them", nfailed, n, status);
    OBS_INC(ag__stats.failed_submissions, (uint64_t)nfailed);
  }
  OBS_INC(ag__stats.passthrough, (uint64_t)launches);
  OBS_INC(ag__stats.fallbacks[fb], (uint64_t)launches);
  /* Before the trace takes this thread's cause. */
  if (AG_UNLIKELY(ag__nvtx_on)) ag__nvtx_flushed(launches, fb, ag__trace_flush_cause(fb), cand);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_flush(stream, launches, fb, t0, status, cand);
}

/* The graph of s (n entries) was built from t0; `status`: 0 or the CUDA error. */
static inline void ag__obs_built(void *stream, const ag_seq_t *s, int n, uint64_t t0, int status) {
  if (!status) {
    OBS_INC(ag__stats.graphs, 1);
    ag__log(AG_LOG_DEBUG, "sequence %016llx: graph of %d launches built",
            (unsigned long long)s->key.hash, n);
  }
  if (AG_UNLIKELY(ag__nvtx_on)) ag__nvtx_built(s, status);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_build(stream, s, n, t0, status);
}

/* A replay of s made `updates` node updates, whether or not it then succeeded. */
static inline void ag__obs_updates(uint64_t updates) { OBS_INC(ag__stats.updates, updates); }

/* The graph launch of a replay of s is about to be made, on this thread, in place of `launches`
 * held launches and `ops` stream operations, after `updates` node updates; ag__obs_replay_end
 * follows it, whether it succeeded or not. */
static inline void ag__obs_replay_begin(const ag_seq_t *s, int launches, int ops,
                                        uint64_t updates) {
  if (AG_UNLIKELY(ag__nvtx_on)) ag__nvtx_replay_begin(s, launches, ops, updates);
}
static inline void ag__obs_replay_end(void) {
  if (AG_UNLIKELY(ag__nvtx_on)) ag__nvtx_replay_end();
}

/* A graph of s ran, from t0 to t1, in place of `launches` held launches and `ops` stream
 * operations; `whole`: all of one of its chunks, else a part of one (the nodes outside it
 * disabled); `more`: the held run goes on (a chunk launched before the rest is held). */
static inline void ag__obs_replayed(void *stream, const ag_seq_t *s, int launches, int ops,
                                    int whole, int more, uint64_t t0, uint64_t t1,
                                    uint64_t updates) {
  OBS_INC(ag__stats.ops_replayed, (uint64_t)ops);
  OBS_INC(ag__stats.replayed, (uint64_t)launches);
  OBS_INC(ag__stats.graph_launches, 1);
  if (!whole) OBS_INC(ag__stats.prefix_replays, 1);
  if (AG_UNLIKELY(ag__dump_armed)) ag__dump_replayed(s, stream);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_replay(stream, s, launches, t0, t1, updates, more);
}

/* The hold on `stream` ended (what it held was submitted, or is about to be). */
static inline void ag__obs_unhold(void *stream) {
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_unhold(stream);
}

/* A run of n entries that was not held ended (`content`: at a content-defined cut). */
static inline void ag__obs_run_passed(int n, int content) {
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_pass(n, content);
}

/* A run of n entries was counted as an occurrence of its sequence s (`added`: seen for the
 * first time); a demoted sequence's launches passed through for that reason. */
static inline void ag__obs_counted(const ag_seq_t *s, int n, int added) {
  if (added) {
    OBS_INC(ag__stats.sequences, 1);
    if (AG_UNLIKELY(ag__nvtx_on)) ag__nvtx_learned(s);
  }
  if (s->state == AG_SEQ_DEMOTED) OBS_INC(ag__stats.fallbacks[AG_FB_DEMOTED], (uint64_t)n);
}

/* A hold reached the bound (AUTOGRAPH_HOLD_US) and is about to end; it is the cause of that
 * end until ag__obs_cause(NULL). */
static inline void ag__obs_hold_timeout(void) {
  ag__obs_cause("hold bound (AUTOGRAPH_HOLD_US)");
  OBS_INC(ag__stats.hold_timeouts, 1);
}

/* ---- sequences and graphs leaving ----------------------------------------------------------- */

/* s was demoted for `why` (the caller releases its graph after this). */
static inline void ag__obs_demoted(const ag_seq_t *s, const char *why) {
  ag__log(AG_LOG_INFO, "sequence %016llx (%d launches) demoted: %s",
          (unsigned long long)s->key.hash, s->n, why);
  if (ag__dump_armed) ag__dump_demoted(s, why), ag__dump_graph_gone(s, 0);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_demote(s, why);
  if (AG_UNLIKELY(ag__nvtx_on)) ag__nvtx_demoted(s, why);
  OBS_INC(ag__stats.demotions, 1);
}

/* The graph of s is about to be released: evicted from the cache (`evicted`), or forgotten
 * with the module, fatbin or context its kernels came from. */
static inline void ag__obs_graph_gone(const ag_seq_t *s, int evicted) {
  if (evicted) OBS_INC(ag__stats.evictions, 1);
  else OBS_INC(ag__stats.forgot_graphs, 1);
  if (evicted && AG_UNLIKELY(ag__nvtx_on)) ag__nvtx_evicted(s);
  if (ag__dump_armed) ag__dump_graph_gone(s, evicted);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_evict(s);
}

/* `kernels` kernel records and `sequences` sequences were forgotten (`why`: what ended). */
static inline void ag__obs_forgot(size_t kernels, size_t sequences, const char *why) {
  OBS_INC(ag__stats.forgot_kernels, (uint64_t)kernels);
  OBS_INC(ag__stats.forgot_sequences, (uint64_t)sequences);
  if (kernels)
    ag__log(AG_LOG_DEBUG, "%s: %zu kernels and %zu sequences forgotten", why, kernels, sequences);
}

/* ---- process life --------------------------------------------------------------------------- */

/* The engine starts (configuration loaded): the observers that need it arm themselves. Called
 * once, before any other function here. */
static inline void ag__obs_init(void) {
  ag__nvtx_init(); /* first: the trace's hooks give the NVTX flush marks their causes */
  ag__dump_init();
  ag__trace_init();
}

/* The sequence table `t` was created: the dump drops its notes of a sequence freed there. */
static inline void ag__obs_table(ag_seqtab_t *t) {
  if (ag__dump_armed) ag__seqtab_on_free(t, ag__dump_seq_freed);
}

/* A point where a dump asked for (by signal or file) may be written: a launch (`at_call` 0,
 * the request only polled when the hooks word says one is armed) or an ordering call (1).
 * Outside the lock. */
static inline void ag__obs_poll(int at_call) {
  if (AG_UNLIKELY(ag__dump_armed)) ag__dump_poll(at_call);
}

/* The process exits, after the last flush: reports are written (`enabled`: the engine ran). */
static inline void ag__obs_exit(int enabled) {
  if (enabled) ag__stats_report();
  if (enabled && ag__dump_armed) ag__dump_write(AG_DUMP_EXIT);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_write();
}

/* In a forked child: counters describe the parent's work, and the trace never writes. */
static inline void ag__obs_atfork_child(void) {
  ag__stats_reset();
  ag__trace_atfork_child();
}

#endif
