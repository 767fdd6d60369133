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
  XX(FLUSHED, "flushed")

enum ag_fallback {
#define AG_FALLBACK_ENUM_(id, name) AG_FB_##id,
  AG_FALLBACK_MAP(AG_FALLBACK_ENUM_)
#undef AG_FALLBACK_ENUM_
  AG_FB_COUNT_
};

typedef struct ag_stats {
  uint64_t launches;
  uint64_t replayed, graphs, graph_launches, updates, passthrough;
  uint64_t by_path[AG_PATH_COUNT_];
  uint64_t families[AG_FAM_COUNT_];
  uint64_t ordering; /* ordering calls (flush points) */
  uint64_t fallbacks[AG_FB_COUNT_];
  uint64_t sequences, demotions, evictions;
} ag_stats_t;

extern ag_stats_t ag__stats;

#define AG_STAT_ADD(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)

/* Registers a table of per-name counters (kept for the life of the process). Returns 0 or
 * -AG_ENOMEM when the fixed registry is full. */
int ag__stats_register(ag_call_t *calls, size_t n);

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
