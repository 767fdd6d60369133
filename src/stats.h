/* stats.h — counters and the exit report.
 *
 * Counters are plain 64-bit integers updated with relaxed atomics. At exit (ag__stats_report,
 * registered by ag__init) the library prints a one-line summary to stderr when
 * AUTOGRAPH_STATS=1, or writes JSON to the path AUTOGRAPH_STATS names. Writing never blocks on
 * a FIFO without a reader and never fails the program: errors produce one warning.
 */
#ifndef AG_STATS_H
#define AG_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Why a launch was passed through rather than held (stats key "fallbacks"), in report order. */
#define AG_FALLBACK_MAP(XX)                                                                \
  XX(LAYOUT_UNKNOWN, "layout_unknown") XX(ATTRIBUTES, "attributes")                        \
  XX(COOPERATIVE, "cooperative") XX(DENIED, "denied") XX(CAPTURING, "capturing")           \
  XX(GRAPH_ERROR, "graph_error") XX(DEMOTED, "demoted") XX(MISMATCH, "mismatch")           \
  XX(FLUSHED, "flushed") XX(HOLD_TIMEOUT, "hold_timeout")

enum ag_fallback {
#define AG_FALLBACK_ENUM_(id, name) AG_FB_##id,
  AG_FALLBACK_MAP(AG_FALLBACK_ENUM_)
#undef AG_FALLBACK_ENUM_
  AG_FB_COUNT_
};

typedef struct ag_stats {
  uint64_t launches;
  uint64_t replayed, graphs, graph_launches, updates, passthrough;
  uint64_t by_path[AG_PATH_COUNT_]; /* the runtime's entry is not kept: launches less the others */
  uint64_t families[AG_FAM_COUNT_];
  uint64_t ordering; /* ordering calls (flush points) */
  uint64_t fallbacks[AG_FB_COUNT_];
  uint64_t sequences, demotions, evictions;
  uint64_t kernels; /* kernel records learned */
  /* What the end of a module, fatbin or context made the engine forget. */
  uint64_t forgot_kernels, forgot_sequences, forgot_graphs;
  uint64_t fused; /* times a fused replacement ran in place of the originals, all patterns */
  uint64_t hold_timeouts;      /* holds ended by the bound (AUTOGRAPH_HOLD_US), src/engine.c */
  uint64_t ops_replayed;       /* stream operations (memsets, event records and waits) performed
                                * as nodes of replayed graphs, src/engine.c */
  uint64_t failed_submissions; /* held launches whose submission failed (reported later) */
  uint64_t prefix_replays;     /* graph launches that ran a proper prefix of their sequence,
                                * the later nodes disabled (counted in graph_launches too) */
  uint64_t elementwise;        /* replayed launches of PyTorch elementwise kernels (src/chain.h) */
  uint64_t chained;            /* of them, those in a chain: what fusing chains would replace */
  uint64_t chained_fused;      /* of those, the ones a generated kernel ran (src/fchain.h) */
  uint64_t fills_fused;        /* fill launches that a generated group-of-fills kernel ran */
  /* The run-time compiler (src/jit.h), stats key "jit". */
  uint64_t jit_compiles;       /* NVRTC compilations that produced an image */
  uint64_t jit_cache_hits;     /* images read from the disk cache instead */
  uint64_t jit_cache_rejected; /* cache files found truncated, corrupt or of another key */
  uint64_t jit_failures;       /* requests that ended FAILED (compile errors, no NVRTC, …) */
} ag_stats_t;

extern ag_stats_t ag__stats;

#define AG_STAT_ADD(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)

/* Registers a table of per-name counters (kept for the life of the process). Returns 0 or
 * -AG_ENOMEM when the fixed registry is full. */
int ag__stats_register(ag_call_t *calls, size_t n);

/* Counts `n` runs of the fused replacement `pattern` (a string with static storage, e.g.
 * "cudnn_conv_bias_act"): adds to `fused` and to the pattern's own count (stats key
 * "fused_by_pattern"). Up to AG_STATS_PATTERNS distinct names; further names count in `fused`
 * only. Thread-safe, lock-free. */
#define AG_STATS_PATTERNS 32
void ag__stats_fused(const char *pattern, uint64_t n);

/* The count of one pattern so far (0 if never counted); for tests. */
uint64_t ag__stats_fused_count(const char *pattern);

/* ---- what ended each run of launches (stats key "cuts", the dump's "runs") ----------------
 *
 * The engine's decision hooks (src/trace.h, armed when AUTOGRAPH_STATS names a file or
 * AUTOGRAPH_DUMP or AUTOGRAPH_TRACE is set) report every run of launches between two cuts here:
 * replayed as a graph, held and then passed through before its sequence was complete (a cut),
 * or passed through without being held. The last AG_RUNS runs are kept in order (the dump draws
 * the repeated step from them); cuts are counted by (sequence, launches held, calls that made
 * the cut), for AG_CUTS distinct keys at most. The calls that made a cut are the call that
 * ended the run followed by the intercepted API calls the same thread made before the next
 * launch of any thread ("cudaMemcpyAsync + cudaStreamSynchronize"), AG_RUN_NAMES at most. */
#define AG_RUNS 4096
#define AG_CUTS 256
#define AG_RUN_NAMES 4

enum ag_run_outcome { AG_RUN_REPLAYED, AG_RUN_CUT, AG_RUN_PASSED };

typedef struct ag_run {
  uint32_t seq, len;  /* the sequence the run began (0 when none was known) and its length */
  uint32_t n;         /* launches in the run */
  uint8_t outcome;    /* enum ag_run_outcome */
  uint8_t nnames;
  const char *names[AG_RUN_NAMES]; /* what ended it (static storage) */
} ag_run_t;

/* A run of n launches ended with `outcome`; seq/len: the sequence it replayed or was held as a
 * prefix of (0, 0: none); `why`: what ended it (static storage). Engine lock held. */
void ag__stats_run(int outcome, uint32_t seq, uint32_t len, uint32_t n, const char *why);

/* The intercepted API call `name` (static storage) is about to run on this thread: when no
 * launch was made since the last run ended, it joins the calls that ended that run. */
void ag__stats_run_call(const char *name);

/* Copies the last runs, oldest first, into out (up to max); returns how many, and the number of
 * runs recorded in all in *total. */
size_t ag__stats_runs(ag_run_t *out, size_t max, uint64_t *total);

/* Writes the JSON report into buf (NUL-terminated, truncated to size). Returns the length it
 * needed, as snprintf does. */
size_t ag__stats_json(char *buf, size_t size);

/* Writes the one-line human summary into buf, as snprintf does. */
size_t ag__stats_summary(char *buf, size_t size);

/* Reports as configured (AUTOGRAPH_STATS); called once at exit. */
void ag__stats_report(void);

/* Zeroes every counter (after fork, in the child). */
void ag__stats_reset(void);

#endif
