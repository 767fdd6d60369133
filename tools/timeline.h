/* timeline.h — the host and GPU timelines of a profiler trace, as recorded and as modelled.
 *
 * Contract: the caller (tools/predict.c) fills the recorded calls (every runtime or driver call
 * the predictor follows, sorted by start) and the recorded GPU operations (kernels, copies,
 * memsets, each joined to the call that issued it), then calls ag__tl_prepare once, which infers
 * from the recording what each operation's start waited for and what each blocking call waited
 * for. A plan then says how the calls are made: when each operation is submitted (at which call,
 * in which order) and what host time each call costs. ag__tl_run replays the recorded program
 * under a plan and gives every call and operation its modelled start and end. With the plan of
 * the recording itself (ag__tl_plan_eager), the model must reproduce the recorded times: that is
 * its calibration. With the plan the library's engine made, it predicts the program under the
 * library.
 *
 * The model, in full (docs/predictor.md has the reasoning and the sources of the costs):
 *   - The host runs the recorded program: the time between two calls (Python, the framework) is
 *     as recorded. A call starts at its recorded start plus the shift in force, and the shift
 *     changes by however much earlier or later than recorded a call ends. One shift for all
 *     threads: PyTorch's threads take turns (the main thread waits inside backward() while the
 *     autograd thread launches).
 *   - A GPU operation starts at the latest of: its submission plus the device's launch latency,
 *     the end of the previous operation of its stream plus the gap seen between queued
 *     operations (or the node-to-node gap inside a graph), and the end of the operation it was
 *     seen to wait for on another stream (an event wait, or the GPU's resources). What was seen
 *     beyond the constraint that bound its recorded start is kept as that constraint's own delay.
 *     It lasts as recorded.
 *   - A call that was seen to wait for the GPU (its duration well above the usual for its name,
 *     and the end of an operation it could wait for inside it) ends at the latest of its own cost
 *     and the end of what it waits for, plus the wake-up delay seen: device-wide calls wait for
 *     everything submitted, stream and event synchronisations for the stream of what they
 *     waited for, a copy or memset for its own operation, other calls (a launch finding the
 *     launch queue full) for the one operation whose end released them.
 * Nothing here calls CUDA or the engine; all times are integer nanoseconds.
 */
#ifndef AG_TIMELINE_H
#define AG_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

/* What a blocking call waits for. */
enum { AG_TL_WAIT_NONE, AG_TL_WAIT_OP, AG_TL_WAIT_OWN, AG_TL_WAIT_STREAM, AG_TL_WAIT_DEVICE };

/* Which constraint bound an operation's recorded start. */
enum { AG_TL_BIND_ISSUE, AG_TL_BIND_PREV, AG_TL_BIND_DEP };

typedef struct ag_tl_call {
  int64_t ts, dur;   /* recorded */
  int32_t name;      /* the caller's id of the call's name (costs are kept per name) */
  uint8_t device_wide; /* a call that waits for the whole device when it waits */
  uint8_t stream_wide; /* a stream or event synchronisation */
  int32_t stream;    /* the stream a stream-wide call observes, or -1 (unknown: every stream) */
  /* Filled by ag__tl_prepare: */
  uint8_t wait_kind; /* AG_TL_WAIT_* */
  int32_t wait_op;   /* the operation whose end released it in the recording, or -1 */
  int64_t wake;      /* recorded end − that operation's recorded end */
  int64_t own;       /* its own cost when it waits (the usual duration of its name) */
} ag_tl_call_t;

typedef struct ag_tl_op {
  int64_t ts, dur;   /* recorded start and duration */
  int32_t stream;    /* a small index (the caller's numbering of the trace's streams) */
  int32_t call;      /* the call that issued it */
  /* Filled by ag__tl_prepare: */
  int32_t prev;      /* the previous operation of its stream (by recorded start), or -1 */
  int32_t dep;       /* another operation its start waited for, or -1 */
  uint8_t bind;      /* AG_TL_BIND_* */
  int64_t gap;       /* after prev: the recorded gap when prev bound its start, else the
                      * trace's usual gap between queued operations */
  int64_t dep_gap;   /* after dep */
  int64_t extra;     /* recorded start beyond the binding constraint, kept with it */
} ag_tl_op_t;

typedef struct ag_tl {
  ag_tl_call_t *calls; /* sorted by ts */
  size_t ncalls;
  ag_tl_op_t *ops;
  size_t nops;
  int32_t nstreams;
  /* Measured by ag__tl_prepare from the recording: */
  int64_t latency;   /* submission to start, on an idle stream (5th percentile) */
  int64_t queue_gap; /* between consecutive operations of a stream when the later one was
                      * already queued (median) */
  int64_t dep_gap;   /* from the end of an operation on another stream to the start of one that
                      * waited for it (median) */
  int64_t wake;      /* from the end of what a call waited for to the call's return (median) */
  uint64_t waits, waits_unknown; /* calls seen to wait; operations whose start is unexplained */
} ag_tl_t;

/* Infers what bound each recorded start and what each blocking call waited for. Returns 0 or
 * -AG_ENOMEM. */
int ag__tl_prepare(ag_tl_t *tl);

/* How the calls are made. Actions are kept in call order (each call's in the order they
 * happen inside it):
 *   ISSUE: submit operation `op` now (`node`: a graph node after the first of its graph
 *          launch, which follows the previous node after the node-to-node gap);
 *   COST:  the host spends `ns` here (a graph launch, a flushed launch, node updates);
 *   AT:    what follows, up to MAIN, happens on another thread at recorded time `ns` (the
 *          library's helper thread submitting a hold that reached its bound, before this call):
 *          its submissions and costs follow that thread's clock, not the call's;
 *   MAIN:  back to the call's own thread.
 * A call's own cost is as recorded (with its waits) unless call_cost[c] >= 0 (a launch the
 * library held costs the hold). `group` numbers the graph launches, for the report of what each
 * sequence costs the GPU (-1: none). */
enum { AG_TL_ISSUE, AG_TL_COST, AG_TL_AT, AG_TL_MAIN };
typedef struct ag_tl_act {
  int32_t call;
  uint8_t kind, node;
  uint8_t what;      /* the caller's: what a COST stands for, so that it can be recosted */
  int32_t op;
  int32_t group;
  int64_t ns;
} ag_tl_act_t;

typedef struct ag_tl_plan {
  ag_tl_act_t *acts;
  size_t n, cap;
  int structural;     /* use only the trace's medians (latency, gaps, wake-up), not what each
                       * operation and call showed beyond them: the calibration's test of the
                       * model's structure */
  int64_t *call_cost; /* ncalls entries, -1: as recorded */
  int64_t node_gap;   /* between consecutive nodes of one graph launch; < 0: the gap each
                       * operation had after its predecessor in the recording (a graph removes
                       * host time, not the device's own time between kernels) */
} ag_tl_plan_t;

/* Appends one action; returns 0 or -AG_ENOMEM. */
int ag__tl_act(ag_tl_plan_t *p, int32_t call, int kind, int32_t op, int node, int32_t group,
               int64_t ns);

/* The plan of the recording: every operation submitted by its own call, at the call's start.
 * Returns 0 or -AG_ENOMEM. */
int ag__tl_plan_eager(const ag_tl_t *tl, ag_tl_plan_t *p);

void ag__tl_plan_free(ag_tl_plan_t *p);

/* The result of a run. */
typedef struct ag_tl_result {
  int64_t *op_start, *op_end;   /* nops each */
  int64_t *op_alt;              /* nops: the start the operation would have had if submitted at
                                 * its own call (same run otherwise); op_start − op_alt is the
                                 * GPU time its submission later than its call cost */
  int64_t *shift_at, *shift;    /* the host shift: shift[i] in force from recorded time
                                 * shift_at[i] on (nshift entries, shift_at ascending) */
  size_t nshift;
  int64_t end;                  /* the last call's or operation's modelled end */
  uint64_t late_deps;           /* dependencies not yet submitted when needed (taken as met) */
} ag_tl_result_t;

/* Runs the recorded program under plan p. Returns 0 or -AG_ENOMEM / -AG_EINVAL (an operation
 * never or twice submitted). */
int ag__tl_run(const ag_tl_t *tl, const ag_tl_plan_t *p, ag_tl_result_t *r);

/* The same, a call at a time, while the plan is still being made (each call's actions must be
 * in the plan before the call runs): ag__tl_start; then, per call in order, ag__tl_clock (the
 * modelled time of recorded time t, before the next call: what the library's clock reads
 * there) and ag__tl_call; ag__tl_finish (which frees the run, and the result on failure), or
 * ag__tl_stop to give up. Return 0 or -AG_E… as above. */
typedef struct ag_tl_run ag_tl_run_t;
int ag__tl_start(const ag_tl_t *tl, const ag_tl_plan_t *p, ag_tl_result_t *r, ag_tl_run_t **run);
int64_t ag__tl_clock(ag_tl_run_t *run, int64_t t);
/* The end of the last operation submitted so far to stream s (INT64_MIN: none). */
int64_t ag__tl_stream_end(const ag_tl_run_t *run, int32_t s);
int ag__tl_call(ag_tl_run_t *run);
int ag__tl_finish(ag_tl_run_t *run);
void ag__tl_stop(ag_tl_run_t *run);

/* The modelled time of recorded host time t. */
int64_t ag__tl_host_time(const ag_tl_result_t *r, int64_t t);

void ag__tl_result_free(ag_tl_result_t *r);

#endif
