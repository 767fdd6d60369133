/* trace.h — AUTOGRAPH_TRACE: a Chrome trace (Trace Event JSON) of what the engine did.
 *
 * When AUTOGRAPH_TRACE=<path> is set, the engine reports what it does over time through the
 * hooks below: held runs (first held launch to replay or submission), graph builds, graph
 * replays, flushes of held launches with their cause, demotions and evictions. Events go into
 * one buffer sized at start-up for AUTOGRAPH_TRACE_MAX_EVENTS events (reserved, touched only as
 * it fills): recording an event is a few stores, with no I/O, no allocation and no lock of its
 * own, since every hook but ag__trace_cause runs under the engine lock. When the buffer is full
 * further events are counted, not kept; the file then ends with a "trace truncated" instant.
 *
 * The file is written once, at exit (after the last flush), to path.tmp then renamed to path,
 * in the format torch.profiler exports and chrome://tracing and ui.perfetto.dev open:
 * {"traceEvents":[…],"displayTimeUnit":"ns","otherData":{…}}. Timestamps are microseconds since
 * the library started (process start), from CLOCK_MONOTONIC. Each stream the engine held
 * launches on has its own track (tid 1, 2, … named "stream 0x…"); demotions, evictions and the
 * truncation mark go to the engine's track (tid 0). A failure to write costs one warning; a
 * process that made no intercepted call only creates the file when it is missing (as for
 * AUTOGRAPH_STATS), and a forked child never writes.
 *
 * The same hooks feed the runs and cuts of the statistics file and the dump (src/stats.h), and
 * the causes of the NVTX flush marks (src/nvtx.h): they are armed, without an event buffer, when
 * AUTOGRAPH_STATS names a file, AUTOGRAPH_DUMP is set or an NVTX tool listens.
 * When none of the three is set ag__trace_armed is zero and the engine calls none of this.
 */
#ifndef AG_TRACE_H
#define AG_TRACE_H

#include <stdint.h>

#include "segment.h"

/* Nonzero once ag__trace_init armed the hooks (AUTOGRAPH_TRACE set and its buffer reserved, or
 * the statistics file or the dump asked for runs and cuts). */
extern int ag__trace_armed;

/* Arms the trace when AUTOGRAPH_TRACE is set (after ag__config_load). */
void ag__trace_init(void);

/* Arms the trace for up to `max_events` events, whatever the configuration says (ag__trace_init
 * and tests). Returns 0 or -AG_ENOMEM. */
int ag__trace_open(int max_events);

/* ---- hooks ---------------------------------------------------------------------------------- */

/* Why the held run about to end ends, on this thread (a string with static storage: an API name
 * from an entry point's table, or a literal); NULL clears it. Set right before the engine cuts,
 * it is taken by the next flush or replay of a held run on this thread, and cleared when a new
 * run begins. Without one, a flush is attributed to its fallback reason (a flush of reason
 * "flushed" from the launch path is a change of stream or context) and a replay to the end of
 * its sequence. No lock needed. */
void ag__trace_cause(const char *why);
/* The same, for a launch that cannot be held for fallback reason `fb` (enum ag_fallback). */
void ag__trace_cause_fallback(int fb);

/* Engine lock held for all of these. Times are ag__now_ns() values (src/ag.h). */

/* The engine began holding launches on `stream`. */
void ag__trace_hold(void *stream);
/* n held launches on `stream` were submitted as ordinary launches for fallback reason `fb`,
 * the submission starting at t0; `status`: the first CUDA error, or 0; `cand`: the sequence they
 * were held as a prefix of (NULL when unknown). Ends the held run. */
void ag__trace_flush(void *stream, int n, int fb, uint64_t t0, int status, const ag_seq_t *cand);
/* The graph of s (n launches) was built from t0 to now; `status`: 0 or the CUDA error. */
void ag__trace_build(void *stream, const ag_seq_t *s, int n, uint64_t t0, int status);
/* The graph of s was replayed (node updates and launch) from t0 to t1 with `updates` kernel-node
 * updates, in place of n launches. Ends the held run at t1; `more`: a chunk of a run that goes
 * on, held again from t1 (src/graph.h). */
void ag__trace_replay(void *stream, const ag_seq_t *s, int n, uint64_t t0, uint64_t t1,
                      uint64_t updates, int more);

/* The held run on `stream` ends with nothing more to submit (its last entries went in a chunk
 * already): no event. */
void ag__trace_unhold(void *stream);
/* The cause the next flush on this thread is attributed to, for fallback reason `fb`: the one
 * set by ag__trace_cause, else the reason's own name (not taken: the flush still takes it). */
const char *ag__trace_flush_cause(int fb);
/* The statistics' key of fallback reason `fb` (enum ag_fallback), e.g. "flushed". */
const char *ag__trace_fallback_name(int fb);
/* A run of n launches that was not held ended (`content`: at a content-defined cut). */
void ag__trace_pass(int n, int content);
/* s was demoted for `why` (copied: the string need not outlive the call). */
void ag__trace_demote(const ag_seq_t *s, const char *why);
/* The graph of s was evicted from the graph cache. */
void ag__trace_evict(const ag_seq_t *s);

/* In a forked child: forget everything and never write. */
void ag__trace_atfork_child(void);

/* ---- writing (outside the engine lock) ------------------------------------------------------ */

/* Stops recording and writes the trace to AUTOGRAPH_TRACE (at exit). Failures: one warning. */
void ag__trace_write(void);

/* Stops recording and writes the document to fd. Returns 0 or -AG_EINVAL (not armed),
 * -AG_ENOMEM, -AG_EBUSY (a write failed; errno says why). For ag__trace_write and tests. */
int ag__trace_write_fd(int fd);

/* Events recorded and dropped so far; for tests. */
uint64_t ag__trace_count(uint64_t *dropped);

#endif
