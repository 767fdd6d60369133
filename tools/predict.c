/* predict.c — autograph-predict: what libautograph would do to a program, from a PyTorch
 * profiler trace of it.
 *
 * Usage: autograph-predict [options] TRACE.json[.gz]   (see usage() below)
 *
 * Contract: the trace (torch.profiler's Chrome trace export, read by tools/trace-parse.c) is
 * turned back into the launch stream the program made: every runtime or driver launch event
 * joined by its correlation id to the kernel it launched (name, grid, block, shared memory,
 * stream, device), and every call the library treats as an ordering call (the ORDER entries of
 * shims/cudart.def, the same table the library's runtime shim is generated from; driver calls
 * other than launches are ordering calls, as the library's default for driver functions is).
 * That stream is fed, in timestamp order, to the library's own engine (src/engine.c and the
 * rest of src/, linked in unchanged) through its entry points ag__launch and
 * ag__order_enter/leave. The engine's driver table (ag__real) is filled with fakes defined
 * here: one synthetic CUfunction per kernel name with a single fixed 8-byte parameter
 * (argument values are not in a trace, so every argument is assumed fixed), and graph
 * functions that record what the engine builds and replays. Whatever the engine decides
 * (which sequences it learns, holds, replays, flushes or demotes) is therefore exactly what
 * the library's code decides for that launch stream.
 *
 * Every launch is followed to its fate: a launch the engine submits through the entry point's
 * callback or through the fake cuLaunchKernel was passed through; one that a fake cuGraphLaunch
 * consumed was replayed. The engine never reorders, drops or duplicates launches, so held
 * launches are matched to the fake calls in order (a queue per stream), and the counts are checked
 * against the engine's own statistics (ag__stats) before anything is reported.
 *
 * Time is modelled: the engine measures host time with clock_gettime(CLOCK_MONOTONIC), which
 * this program defines for itself. Between calls the clock is the host's time under the library
 * as the timeline models it (tools/timeline.h: the trace's own time, shifted by what the library
 * saves or costs before that point), so the engine sees the pace at which launches come (its
 * chunks and the bound on its holds follow it); inside the fakes it advances by the modelled
 * costs: an ordinary launch costs its own duration in the trace, a graph launch the modelled
 * --graph-launch-us plus --graph-node-ns per node, a node update --update-us. Holds end at their
 * bound on that clock, and whether a stream has work left (cuStreamQuery) is the modelled GPU's.
 * So the guard sees the same costs the report uses, and the prediction is deterministic.
 *
 * The timelines (tools/timeline.h) give each step's time as recorded, modelled as recorded (the
 * calibration) and modelled under the library (the plan of submissions the engine made while it
 * was fed: each fake records what it submits at which call).
 *
 * Exit status: 0; 2 for a usage error or a trace that cannot be used (missing, not JSON, not a
 * Chrome trace, truncated or corrupt gzip, no kernel launches), with one line on stderr
 * `autograph-predict: FILE: REASON` naming the byte offset where there is one; 1 when the
 * engine's counts disagree with the launches followed here (a bug, reported as such).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "config.h"
#include "dump.h"
#include "engine.h"
#include "fusion.h"
#include "graph.h"
#include "json.h"
#include "real.h"
#include "segment.h"
#include "stats.h"
#include "trace-parse.h"
#include "timeline.h"
#include "trace.h"

/* ---- options ------------------------------------------------------------------------------- */

static struct {
  const char *path;
  int json;
  int repeats, min_seq, max_seq, max_graphs, chunk_us;
  const char *deny;
  double graph_launch_us, graph_node_ns, update_us;
  double hold_us;        /* modelled host cost of a launch the library holds */
  double node_gap_us;    /* between consecutive nodes of a graph; < 0: the trace's queue gap */
  double latency_us;     /* submission to start on an idle stream; < 0: measured in the trace */
  int top;
  int steps_max;
  const char *dump;
} opt = {.repeats = 1, .min_seq = 2, .max_seq = 256, .max_graphs = 512, .chunk_us = -1, .graph_launch_us = 2.5,
         .graph_node_ns = 1.0, .update_us = 0.5, .hold_us = 0.5, .node_gap_us = -1.0,
         .latency_us = -1.0, .top = 10, .steps_max = 50};

/* ---- the trace, as read -------------------------------------------------------------------- */

enum { CALL_LAUNCH, CALL_COOP, CALL_ORDER };

typedef struct kname {
  char *name; /* key */
  uint32_t id;
  UT_hash_handle hh;
} kname_t;

typedef struct kev { /* a kernel event */
  int64_t corr, ts, dur, stream, device;
  uint32_t name, shmem;
  uint32_t grid[3], block[3];
} kev_t;

typedef struct call { /* a runtime or driver event the engine must see */
  int64_t ts, dur, corr, tid;
  uint32_t seq;      /* file order, to keep equal timestamps stable */
  int32_t nm;        /* its API name (base name), an index in T.cnames */
  uint8_t kind;      /* CALL_* */
  uint8_t driver;    /* a driver API event (cuLaunchKernel…) */
  uint8_t graph;     /* a graph launch (cudaGraphLaunch, cuGraphLaunch) */
  int32_t order;     /* index of the ordering call in `ordcalls`, or -1 */
} call_t;

typedef struct step {
  int64_t num, ts, dur;
} step_t;

#define VEC(T) struct { T *v; size_t n, cap; }
#define VEC_PUSH(vec, x)                                                                    \
  ((vec).n == (vec).cap && vec_grow((void **)&(vec).v, &(vec).cap, sizeof *(vec).v) ? -1     \
                                                                  : ((vec).v[(vec).n++] = (x), 0))

static int vec_grow(void **v, size_t *cap, size_t elem) {
  size_t ncap = *cap ? *cap * 2 : 1024;
  void *p = realloc(*v, ncap * elem);
  if (!p) return -1;
  *v = p, *cap = ncap;
  return 0;
}

typedef struct gop { /* a copy or memset on the GPU: the stream its call ordered */
  int64_t corr, stream;
  int64_t ts, dur;
  int pageable;      /* a copy from or to pageable host memory (Kineto names the side) */
} gop_t;

static struct {
  VEC(kev_t) kernels;
  VEC(gop_t) gops;
  VEC(call_t) calls;
  VEC(step_t) steps;
  kname_t *names_by_str;
  VEC(char *) names;
  VEC(char *) cnames; /* API names of the calls (a few dozen: found by a linear search) */
  uint64_t events, runtime_events, driver_events, other_calls, gpu_user;
  int oom;
} T;

/* The library's runtime table: which calls are ordering calls, and their family. */
/* SETTING flushes only when a value changes, ERROR never: neither is counted as ordering here. */
enum { CLS_LAUNCH, CLS_ORDER, CLS_OP, CLS_SETTING, CLS_ERROR };
static ag_call_t ordcalls[] = {
#define AG_RT(ret, name, cls, fam, variants, params, args, stream) \
  {#name, AG_FAM_##fam, 0, #stream, 0},
#include "../shims/cudart.def"
#undef AG_RT
};
static const unsigned char ordcls[] = {
#define AG_RT(ret, name, cls, fam, variants, params, args, stream) CLS_##cls,
#include "../shims/cudart.def"
#undef AG_RT
};
/* Driver calls in a trace other than launches: ordering, as the library treats a driver
 * function it does not know to be harmless. */
static ag_call_t drv_order = {"(driver call)", AG_FAM_UNCLASSIFIED, 0, NULL, 0};
/* The launches, counted by the engine per entry point. */
static ag_call_t rt_launch = {"cudaLaunchKernel", AG_FAM_LAUNCH, 0, NULL, 0};
static ag_call_t drv_launch = {"cuLaunchKernel", AG_FAM_LAUNCH, 0, NULL, 0};

/* The API name without CUPTI's version suffix (_v7000) and the per-thread suffixes. */
static void base_name(const char *name, char *out, size_t size) {
  size_t n = strlen(name);
  const char *v = strrchr(name, '_');
  if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' && strspn(v + 2, "0123456789") == strlen(v + 2))
    n = (size_t)(v - name);
  if (n >= 5 && (!strncmp(name + n - 5, "_ptsz", 5) || !strncmp(name + n - 5, "_ptds", 5))) n -= 5;
  if (n >= size) n = size - 1;
  memcpy(out, name, n);
  out[n] = '\0';
}

static int is_cat(const char *cat, const char *want) { return !strcasecmp(cat, want); }

static int32_t intern(const char *s) {
  kname_t *k;
  HASH_FIND_STR(T.names_by_str, s, k);
  if (k) return (int32_t)k->id;
  if (!(k = calloc(1, sizeof *k)) || !(k->name = strdup(s))) {
    free(k);
    return -1;
  }
  k->id = (uint32_t)T.names.n;
  if (VEC_PUSH(T.names, k->name)) {
    free(k->name), free(k);
    return -1;
  }
  HASH_ADD_KEYPTR(hh, T.names_by_str, k->name, strlen(k->name), k);
  return (int32_t)k->id;
}

/* The index of API name s in T.cnames, added when new; -1 when out of memory. */
static int32_t cname(const char *s) {
  for (size_t i = 0; i < T.cnames.n; i++)
    if (!strcmp(T.cnames.v[i], s)) return (int32_t)i;
  char *d = strdup(s);
  if (!d || VEC_PUSH(T.cnames, d)) {
    free(d);
    return -1;
  }
  return (int32_t)T.cnames.n - 1;
}

static int on_event(const ag_trace_event_t *e, void *arg) {
  (void)arg;
  T.events++;
  if (strcmp(e->ph, "X")) return 0; /* launches, kernels and steps are complete events */
  if (is_cat(e->cat, "kernel")) {
    kev_t k = {0};
    int32_t id;
    if (!(e->has & AG_TEV_CORR)) return 0;
    if ((id = intern(e->name)) < 0) goto oom;
    k.corr = e->correlation;
    k.ts = e->ts_ns, k.dur = e->dur_ns;
    k.stream = e->has & AG_TEV_STREAM ? e->stream : 0;
    k.device = e->has & AG_TEV_DEVICE ? e->device : 0;
    k.name = (uint32_t)id;
    k.shmem = e->has & AG_TEV_SHMEM && e->shmem > 0 && e->shmem <= UINT32_MAX ? (uint32_t)e->shmem : 0;
    for (int i = 0; i < 3; i++) {
      k.grid[i] = e->has & AG_TEV_GRID ? e->grid[i] : 1;
      k.block[i] = e->has & AG_TEV_BLOCK ? e->block[i] : 1;
    }
    if (VEC_PUSH(T.kernels, k)) goto oom;
    return 0;
  }
  if (is_cat(e->cat, "gpu_memcpy") || is_cat(e->cat, "gpu_memset")) {
    gop_t g = {e->correlation, e->stream, e->ts_ns, e->has & AG_TEV_DUR ? e->dur_ns : 0,
               strstr(e->name, "Pageable") != NULL};
    if ((e->has & (AG_TEV_CORR | AG_TEV_STREAM)) != (AG_TEV_CORR | AG_TEV_STREAM)) return 0;
    if (VEC_PUSH(T.gops, g)) goto oom;
    return 0;
  }
  int rt = is_cat(e->cat, "cuda_runtime") || is_cat(e->cat, "runtime");
  int drv = is_cat(e->cat, "cuda_driver") || is_cat(e->cat, "driver");
  if (rt || drv) {
    char base[128];
    call_t c = {.ts = e->ts_ns, .dur = e->has & AG_TEV_DUR ? e->dur_ns : 0,
                .corr = e->has & AG_TEV_CORR ? e->correlation : -1, .seq = (uint32_t)T.calls.n,
                .tid = e->has & AG_TEV_TID ? e->tid : 0,
                .driver = (uint8_t)drv, .order = -1};
    if (rt) T.runtime_events++; else T.driver_events++;
    base_name(e->name, base, sizeof base);
    if ((c.nm = cname(base)) < 0) goto oom;
    if (!strncmp(base, "cudaLaunchCooperativeKernel", 27) || !strcmp(base, "cuLaunchCooperativeKernel")) {
      c.kind = CALL_COOP;
    } else if (!strcmp(base, "cudaLaunchKernel") || !strcmp(base, "cudaLaunchKernelExC") ||
               !strcmp(base, "__cudaLaunchKernel") || !strcmp(base, "cuLaunchKernel") ||
               !strcmp(base, "cuLaunchKernelEx")) {
      c.kind = CALL_LAUNCH;
    } else if (!strcmp(base, "cudaGraphLaunch") || !strcmp(base, "cuGraphLaunch")) {
      /* The program's own graph, or one the library launched: an ordering call on its stream,
       * as the library treats cudaGraphLaunch, whose kernels run as they did (already replayed:
       * no launch of theirs to hold). */
      c.graph = 1, c.kind = CALL_ORDER, c.order = -2;
      for (size_t i = 0; i < AG_ARRAY_SIZE(ordcalls); i++)
        if (!strcmp(ordcalls[i].name, "cudaGraphLaunch")) c.order = (int32_t)i;
    } else if (rt) {
      int found = -1;
      for (size_t i = 0; i < AG_ARRAY_SIZE(ordcalls); i++)
        if ((ordcls[i] == CLS_ORDER || ordcls[i] == CLS_OP) && !strcmp(ordcalls[i].name, base))
          found = (int)i;
      if (found < 0) { /* harmless to the library: error queries, attributes, creation… */
        T.other_calls++;
        return 0;
      }
      c.kind = CALL_ORDER, c.order = found;
    } else {
      c.kind = CALL_ORDER, c.order = -2;
    }
    if (!(e->has & AG_TEV_TS)) return 0;
    if (VEC_PUSH(T.calls, c)) goto oom;
    return 0;
  }
  if (!strncmp(e->name, "ProfilerStep#", 13) && (e->has & AG_TEV_TS) && !is_cat(e->cat, "gpu_user_annotation")) {
    char *end;
    long long num = strtoll(e->name + 13, &end, 10);
    step_t s = {num, e->ts_ns, e->has & AG_TEV_DUR ? e->dur_ns : 0};
    if (end == e->name + 13 || *end) return 0;
    if (VEC_PUSH(T.steps, s)) goto oom;
  }
  return 0;
oom:
  T.oom = 1;
  return 1;
}

/* ---- the launch stream --------------------------------------------------------------------- */

enum { L_PENDING, L_PASSED, L_REPLAYED };

typedef struct launch {
  int64_t ts, dur;   /* the launch call's */
  uint32_t k;        /* kernel event */
  uint32_t fn;       /* kernel name id */
  int32_t step;      /* index in T.steps, or -1 */
  uint8_t state, coop, driver;
  uint8_t own;       /* submitted by its own call, as it came (not held) */
  uint32_t replay;   /* which replay served it (index in `replays`) */
} launch_t;

typedef struct replay_rec {
  uint32_t first, n; /* the launches rlaunch[first .. first + n) */
  uint32_t exec;
} replay_t;

static VEC(launch_t) L;
static VEC(replay_t) replays;
/* Launches held by the engine, oldest first, per stream (the engine holds on several streams at
 * once and submits each stream's in order); and the stream's held copies and memsets, as the
 * timeline's operations (-1: one the timeline does not have), oldest first. */
typedef struct squeue {
  void *stream;
  uint32_t *v;
  size_t head, tail, cap;
  int32_t *ops;
  size_t ohead, otail, ocap;
} squeue_t;
#define SQUEUES 256
static squeue_t squeues[SQUEUES];
static size_t nsqueues;
/* The launches each replay replaced, in order: replays[r] covers rlaunch[first .. first + n). */
static VEC(uint32_t) rlaunch;

static squeue_t *squeue_of(void *stream) {
  for (size_t i = 0; i < nsqueues; i++)
    if (squeues[i].stream == stream) return &squeues[i];
  if (nsqueues == SQUEUES) return NULL;
  squeues[nsqueues].stream = stream;
  return &squeues[nsqueues++];
}

static int squeue_push(squeue_t *q, uint32_t li) {
  if (q->tail == q->cap && vec_grow((void **)&q->v, &q->cap, sizeof *q->v)) return -1;
  q->v[q->tail++] = li;
  return 0;
}
static int broken;      /* the engine's calls did not match the launches (reported, exit 1) */
static char broken_why[256];

static void fail_check(const char *why) {
  if (!broken) snprintf(broken_why, sizeof broken_why, "%s", why);
  broken = 1;
}

/* The modelled host clock (see the contract above). */
static uint64_t vclock;

/* ---- the timeline plan: when the engine submits what (tools/timeline.h) ---------------------- */

/* The calls and GPU operations of the trace, and the plan the engine makes while it is fed:
 * which call is being fed (cur_call), and, per stream, the copies and memsets the engine holds
 * (TL operation indices, -1 for one without a GPU event), submitted when the engine flushes them
 * or launches the graph holding them. */
static ag_tl_t TL;
static ag_tl_plan_t PL;
static int32_t cur_call = -1;
static ag_tl_run_t *tl_run;  /* the library's timeline, run along while the engine is fed */
static int64_t *stream_ids; /* the trace's stream numbers, indexed by the timeline's */
static int32_t nstream_ids;
static int32_t *kop, *gopi; /* TL operation of each kernel event / GPU copy or memset, or -1 */

/* The timelines (tools/timeline.h): the trace as recorded, modelled without the library (its
 * own plan: the calibration, from the trace's medians alone, and the eager model, with what
 * each operation and call showed beyond them), and modelled under the library (the plan the
 * engine makes while it is fed, PL). Step times per step, or for the whole trace without
 * steps. */
typedef struct tlstep {
  int64_t rec, model, eager, lib; /* the step's duration in each */
  int64_t held_wait;              /* GPU time submissions later than their call cost */
} tlstep_t;

/* Costs the report is also computed at (the engine's decisions are kept: see the docs). */
typedef struct tlcost {
  const char *name;
  double graph_launch_us, graph_node_ns, update_us, hold_us, node_gap_us;
  double ratio;       /* library / eager, all steps */
  int64_t worst;      /* the largest (library − eager) of a step */
} tlcost_t;

static struct {
  ag_tl_plan_t eager_plan;
  ag_tl_result_t eager, lib, model;
  tlstep_t *steps;
  size_t nsteps;
  tlstep_t all;
  double err_mean, err_max;  /* calibration: |model − recorded| / recorded, over the steps */
  int64_t worst;             /* the largest (library − eager) of a step */
  int32_t worst_step;
  int64_t *seq_wait;         /* per exec: GPU time its late submissions cost */
  tlcost_t costs[5];
  int ncosts;
} TM;

static int plan_oom;
enum { COST_LITERAL, COST_GRAPH, COST_UPDATE };

static int64_t graph_cost_ns(size_t n);

static void plan(int kind, int32_t op, int node, int32_t group, int what, int64_t ns) {
  if (op < 0 && kind == AG_TL_ISSUE) return;
  if (ag__tl_act(&PL, cur_call, kind, op, node, group, ns)) plan_oom = 1;
  else PL.acts[PL.n - 1].what = (uint8_t)what;
}

/* The next held copy or memset of stream s, submitted now (flushed, or a node of a graph). */
static void plan_memop(void *s, int node, int32_t group) {
  squeue_t *q = squeue_of(s);
  if (!q || q->ohead == q->otail) {
    fail_check("the engine submitted a copy or memset it was not holding");
    return;
  }
  plan(AG_TL_ISSUE, q->ops[q->ohead++], node, group, COST_LITERAL, 0);
}

/* What submitting one held launch as an ordinary launch costs the host: its own recorded
 * duration, without the time it spent waiting for a full launch queue. */
static int64_t flush_cost(const launch_t *l) {
  int64_t d = l->dur > 0 ? l->dur : 0;
  return d;
}

int clock_gettime(clockid_t clk, struct timespec *tp) {
  if (clk != CLOCK_MONOTONIC) return (int)syscall(SYS_clock_gettime, clk, tp);
  tp->tv_sec = (time_t)(vclock / 1000000000ull);
  tp->tv_nsec = (long)(vclock % 1000000000ull);
  return 0;
}

/* ---- the fake driver ----------------------------------------------------------------------- */

static void *fn_handle(uint32_t id) { return (void *)(uintptr_t)(((uint64_t)id + 1) << 4); }
static uint32_t fn_id(const void *h) { return (uint32_t)(((uintptr_t)h >> 4) - 1); }
static void *ctx_handle(int64_t dev) { return (void *)(uintptr_t)(((uint64_t)dev + 1) << 12 | 0x8); }
static void *stream_handle(int64_t s) { return (void *)(uintptr_t)(((uint64_t)s + 1) << 8); }

static void *cur_ctx;

enum { FN_KERNEL, FN_MEMOP, FN_EVENT };
typedef struct fnode {
  uint32_t fn;
  unsigned grid[3], block[3], shmem;
  int kind; /* FN_*: a kernel, a copy or memset, an event record or wait */
  int off;  /* disabled in its exec (cuGraphNodeSetEnabled) */
} fnode_t;

typedef struct fgraph {
  fnode_t *nodes;
  size_t n, cap;
} fgraph_t;

typedef struct fexec {
  fnode_t *nodes;  /* every node, in the order added */
  size_t n;
  fnode_t *kern;   /* the kernel nodes only (what the reports list) */
  size_t nk;
  size_t self;     /* its index in `execs` */
  uint64_t replays, updates;
} fexec_t;

static VEC(fexec_t *) execs;
static uint64_t fake_launches, fake_graph_launches, fake_updates;

static CUresult CUDAAPI f_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                         CUstream s, void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)params;
  (void)extra;
  squeue_t *q = squeue_of(s);
  fake_launches++;
  if (!q || q->head == q->tail) {
    fail_check("the engine submitted a launch it was not holding");
    return CUDA_SUCCESS;
  }
  launch_t *l = &L.v[q->v[q->head++]];
  if (fn_id(f) != l->fn) fail_check("a flushed launch is not the oldest held one");
  l->state = L_PASSED;
  vclock += (uint64_t)(l->dur > 0 ? l->dur : 0);
  plan(AG_TL_ISSUE, kop[l->k], 0, -1, COST_LITERAL, 0);
  plan(AG_TL_COST, -1, 0, -1, COST_LITERAL, flush_cost(l));
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuCtxGetCurrent(CUcontext *c) {
  *c = (CUcontext)cur_ctx;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuCtxPushCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
static CUresult CUDAAPI f_cuCtxPopCurrent(CUcontext *c) {
  *c = (CUcontext)cur_ctx;
  return CUDA_SUCCESS;
}
/* Every stream in a trace is taken as non-blocking: PyTorch's side streams and NCCL's are, and
 * the implicit synchronisation of the legacy default stream is not modelled. */
static CUresult CUDAAPI f_cuStreamGetFlags(CUstream s, unsigned *flags) {
  (void)s;
  *flags = CU_STREAM_NON_BLOCKING;
  return CUDA_SUCCESS;
}
/* Whether a stream has work left, in the library's timeline as it stands (the work of the call
 * being fed is not in it yet). */
static CUresult CUDAAPI f_cuStreamQuery(CUstream s) {
  int64_t id = (int64_t)((uintptr_t)s >> 8) - 1;
  for (int32_t i = 0; tl_run && i < nstream_ids; i++)
    if (stream_ids[i] == id && ag__tl_stream_end(tl_run, i) > (int64_t)vclock) return CUDA_ERROR_NOT_READY;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  (void)f;
  if (i > 0) return CUDA_ERROR_INVALID_VALUE;
  *off = 0, *size = 8;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuFuncGetName(const char **name, CUfunction f) {
  uint32_t id = fn_id(f);
  if (id >= T.names.n) return CUDA_ERROR_INVALID_HANDLE;
  *name = T.names.v[id];
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) {
  (void)s;
  *st = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphCreate(CUgraph *g, unsigned flags) {
  (void)flags;
  fgraph_t *fg = calloc(1, sizeof *fg);
  if (!fg) return CUDA_ERROR_OUT_OF_MEMORY;
  *g = (CUgraph)fg;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphDestroy(CUgraph g) {
  fgraph_t *fg = (fgraph_t *)g;
  free(fg->nodes), free(fg);
  return CUDA_SUCCESS;
}
/* A new node of graph g of kind `kind`; its handle is its index + 1 (in the graph and its exec). */
static fnode_t *fg_add(CUgraph g, int kind, CUgraphNode *node) {
  fgraph_t *fg = (fgraph_t *)g;
  if (fg->n == fg->cap) {
    size_t cap = fg->cap ? fg->cap * 2 : 16;
    fnode_t *nodes = realloc(fg->nodes, cap * sizeof *nodes);
    if (!nodes) return NULL;
    fg->nodes = nodes, fg->cap = cap;
  }
  fnode_t *n = &fg->nodes[fg->n++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  *node = (CUgraphNode)(uintptr_t)fg->n;
  return n;
}

static CUresult CUDAAPI f_cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                               size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
  (void)deps, (void)ndeps;
  fnode_t *n = fg_add(g, FN_KERNEL, node);
  if (!n) return CUDA_ERROR_OUT_OF_MEMORY;
  n->fn = fn_id(p->func);
  n->grid[0] = p->gridDimX, n->grid[1] = p->gridDimY, n->grid[2] = p->gridDimZ;
  n->block[0] = p->blockDimX, n->block[1] = p->blockDimY, n->block[2] = p->blockDimZ;
  n->shmem = p->sharedMemBytes;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags) {
  fgraph_t *fg = (fgraph_t *)g;
  fexec_t *x = calloc(1, sizeof *x);
  (void)flags;
  if (!x || !(x->nodes = malloc((fg->n ? fg->n : 1) * sizeof *x->nodes)) ||
      !(x->kern = malloc((fg->n ? fg->n : 1) * sizeof *x->kern)) || VEC_PUSH(execs, x)) {
    if (x) free(x->nodes), free(x->kern);
    free(x);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (fg->n) memcpy(x->nodes, fg->nodes, fg->n * sizeof *x->nodes);
  x->n = fg->n;
  x->self = execs.n - 1;
  for (size_t i = 0; i < fg->n; i++)
    if (fg->nodes[i].kind == FN_KERNEL) x->kern[x->nk++] = fg->nodes[i];
  /* The handle is the exec's index: records outlive their destruction for the report. */
  *e = (CUgraphExec)(uintptr_t)execs.n;
  /* x is owned by `execs` now (kept for the report until exit). */
  // cppcheck-suppress memleak
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphExecDestroy(CUgraphExec e) { (void)e; return CUDA_SUCCESS; }
static CUresult CUDAAPI f_cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                         const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
  (void)n, (void)p;
  execs.v[(uintptr_t)e - 1]->updates++;
  fake_updates++;
  vclock += (uint64_t)(opt.update_us * 1000.0);
  plan(AG_TL_COST, -1, 0, -1, COST_UPDATE, (int64_t)(opt.update_us * 1000.0));
  return CUDA_SUCCESS;
}
/* Stream operations: performed (a held one flushed, costing the host nothing more here) or added
 * as nodes; an update costs as a kernel node's does. */
static CUresult CUDAAPI f_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  (void)d, (void)v, (void)n;
  plan_memop(s, 0, -1);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuEventRecord(CUevent e, CUstream s) {
  (void)e, (void)s;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  (void)e, (void)s, (void)flags;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphAddMemsetNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                               size_t nd, const CUDA_MEMSET_NODE_PARAMS *p,
                                               CUcontext c) {
  (void)d, (void)nd, (void)p, (void)c;
  return fg_add(g, FN_MEMOP, n) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult CUDAAPI f_cuGraphAddEventNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                              size_t nd, CUevent e) {
  (void)d, (void)nd, (void)e;
  return fg_add(g, FN_EVENT, n) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static void op_update(CUgraphExec e) {
  execs.v[(uintptr_t)e - 1]->updates++;
  fake_updates++;
  vclock += (uint64_t)(opt.update_us * 1000.0);
  plan(AG_TL_COST, -1, 0, -1, COST_UPDATE, (int64_t)(opt.update_us * 1000.0));
}
static CUresult CUDAAPI f_cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                         const CUDA_MEMSET_NODE_PARAMS *p,
                                                         CUcontext c) {
  (void)n, (void)p, (void)c;
  op_update(e);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphExecEventNodeSetEvent(CUgraphExec e, CUgraphNode n, CUevent ev) {
  (void)n, (void)ev;
  op_update(e);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuMemcpyAsync(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) {
  (void)d, (void)src, (void)n;
  plan_memop(s, 0, -1);
  return CUDA_SUCCESS;
}
/* Copies fed as operations are of device memory (pageable ones are not fed as operations). */
static CUresult CUDAAPI f_cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) {
  (void)p;
  if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *(unsigned *)data = CU_MEMORYTYPE_DEVICE;
  else if (a == CU_POINTER_ATTRIBUTE_IS_MANAGED) *(int *)data = 0;
  else return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphAddMemcpyNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                               size_t nd, const CUDA_MEMCPY3D *p, CUcontext c) {
  (void)d, (void)nd, (void)p, (void)c;
  return fg_add(g, FN_MEMOP, n) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult CUDAAPI f_cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                         const CUDA_MEMCPY3D *p, CUcontext c) {
  (void)n, (void)p, (void)c;
  op_update(e);
  return CUDA_SUCCESS;
}

/* A node's handle is its index + 1 in its graph (and exec). A toggle costs as a node update
 * does. */
static CUresult CUDAAPI f_cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode n, unsigned on) {
  fexec_t *x = execs.v[(uintptr_t)e - 1];
  vclock += (uint64_t)(opt.update_us * 1000.0);
  plan(AG_TL_COST, -1, 0, -1, COST_UPDATE, (int64_t)(opt.update_us * 1000.0));
  if ((uintptr_t)n - 1 >= x->n) return CUDA_ERROR_INVALID_VALUE;
  x->nodes[(uintptr_t)n - 1].off = !on;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuGraphLaunch(CUgraphExec e, CUstream s) {
  fexec_t *x = execs.v[(uintptr_t)e - 1];
  /* The engine runs one stretch of a graph's nodes, the others disabled (the rest of a step cut
   * short, or what another sequence's graph did not run): the enabled ones run. */
  size_t from = 0, on;
  while (from < x->n && x->nodes[from].off) from++;
  for (on = from; on < x->n && !x->nodes[on].off; on++) {
  }
  for (size_t i = on; i < x->n; i++)
    if (!x->nodes[i].off) fail_check("a graph was launched with enabled nodes apart");
  size_t kernels = 0;
  for (size_t i = from; i < on; i++) kernels += x->nodes[i].kind == FN_KERNEL;
  replay_t r = {(uint32_t)rlaunch.n, (uint32_t)kernels, (uint32_t)((uintptr_t)e - 1)};
  squeue_t *q = squeue_of(s);
  fake_graph_launches++;
  if (!q || q->tail - q->head < kernels) {
    fail_check("a graph was launched for more launches than were held");
    return CUDA_SUCCESS;
  }
  if (VEC_PUSH(replays, r)) {
    fail_check("out of memory");
    return CUDA_SUCCESS;
  }
  int32_t group = (int32_t)(replays.n - 1);
  int first = 1;
  for (size_t i = from, k = 0; i < on; i++) {
    if (x->nodes[i].kind == FN_MEMOP) {
      plan_memop(s, !first, group);
      first = 0;
      continue;
    }
    if (x->nodes[i].kind != FN_KERNEL) continue;
    launch_t *l = &L.v[q->v[q->head + k]];
    if (l->fn != x->nodes[i].fn) fail_check("a replayed graph's kernels differ from the launches it replaced");
    l->state = L_REPLAYED;
    l->replay = (uint32_t)(replays.n - 1);
    plan(AG_TL_ISSUE, kop[l->k], !first, group, COST_LITERAL, 0);
    first = 0;
    if (VEC_PUSH(rlaunch, q->v[q->head + k])) {
      fail_check("out of memory");
      return CUDA_SUCCESS;
    }
    k++;
  }
  q->head += kernels;
  x->replays++;
  vclock += (uint64_t)graph_cost_ns(x->nk);
  plan(AG_TL_COST, (int32_t)x->nk, 0, group, COST_GRAPH, graph_cost_ns(x->nk));
  return CUDA_SUCCESS;
}

/* The entry point's own submit: the engine passed this launch through at once. */
static int submit(const ag_launch_t *al) {
  uint32_t i = (uint32_t)((uintptr_t)al->ctx - 1);
  /* Nothing older can still be held on its stream: the engine submits each stream in order. */
  squeue_t *q = squeue_of(al->stream);
  if (!q || q->tail == 0 || q->v[q->tail - 1] != i || q->tail - q->head != 1)
    fail_check("a launch passed through while older ones were held");
  else
    q->tail--;
  L.v[i].state = L_PASSED;
  L.v[i].own = 1;
  vclock += (uint64_t)(L.v[i].dur > 0 ? L.v[i].dur : 0);
  plan(AG_TL_ISSUE, kop[L.v[i].k], 0, -1, COST_LITERAL, 0);
  return 0;
}

static const char *my_getenv(const char *name) {
  static char buf[6][32];
  if (!strcmp(name, "AUTOGRAPH_REPEATS")) return snprintf(buf[0], 32, "%d", opt.repeats), buf[0];
  if (!strcmp(name, "AUTOGRAPH_MIN_SEQ")) return snprintf(buf[1], 32, "%d", opt.min_seq), buf[1];
  if (!strcmp(name, "AUTOGRAPH_MAX_SEQ")) return snprintf(buf[2], 32, "%d", opt.max_seq), buf[2];
  if (!strcmp(name, "AUTOGRAPH_MAX_GRAPHS")) return snprintf(buf[3], 32, "%d", opt.max_graphs), buf[3];
  if (!strcmp(name, "AUTOGRAPH_CHUNK_US") && opt.chunk_us >= 0)
    return snprintf(buf[5], 32, "%d", opt.chunk_us), buf[5];
  if (!strcmp(name, "AUTOGRAPH_DENY")) return opt.deny;
  if (!strcmp(name, "AUTOGRAPH_DUMP")) return opt.dump;
  if (!strcmp(name, "AUTOGRAPH_LOG")) return getenv("AUTOGRAPH_LOG");
  return NULL; /* no statistics output, no trace, no periodic dump: this is not a preload */
}

static void warn_cfg(const char *msg) { fprintf(stderr, "autograph-predict: %s\n", msg); }

static void engine_start(void) {
  /* The engine's constructor ran before main with the process environment; its configuration
   * is replaced by the options of this command (ag__config is read lazily by the engine: the
   * sequence buffers are sized at the first launch). */
  ag__config_parse(&ag__config, my_getenv, warn_cfg);
  /* No real time passes here and no helper thread runs: holds end at their bound because feed()
   * ends them, on the modelled host clock (ag__hold_next, ag__hold_expire). */
  ag__hold_offline = 1;
  __atomic_store_n(&ag__dump_armed, 0, __ATOMIC_RELAXED);
  if (opt.dump) ag__dump_init();
  /* The dump's runs (what ended each run of launches) come from the engine's decision hooks. */
  if (opt.dump) ag__trace_init();
  memset(&ag__real, 0, sizeof ag__real);
  ag__real.cuLaunchKernel = f_cuLaunchKernel;
  ag__real.cuCtxGetCurrent = f_cuCtxGetCurrent;
  ag__real.cuCtxPushCurrent = f_cuCtxPushCurrent;
  ag__real.cuCtxPopCurrent = f_cuCtxPopCurrent;
  ag__real.cuDriverGetVersion = f_cuDriverGetVersion;
  ag__real.cuFuncGetParamInfo = f_cuFuncGetParamInfo;
  ag__real.cuFuncGetName = f_cuFuncGetName;
  ag__real.cuStreamIsCapturing = f_cuStreamIsCapturing;
  ag__real.cuStreamGetFlags = f_cuStreamGetFlags;
  ag__real.cuStreamQuery = f_cuStreamQuery;
  ag__real.cuMemsetD8Async = f_cuMemsetD8Async;
  ag__real.cuEventRecord = f_cuEventRecord;
  ag__real.cuStreamWaitEvent = f_cuStreamWaitEvent;
  ag__real.cuGraphAddMemsetNode = f_cuGraphAddMemsetNode;
  ag__real.cuGraphAddEventRecordNode = f_cuGraphAddEventNode;
  ag__real.cuGraphAddEventWaitNode = f_cuGraphAddEventNode;
  ag__real.cuGraphExecMemsetNodeSetParams = f_cuGraphExecMemsetNodeSetParams;
  ag__real.cuGraphExecEventRecordNodeSetEvent = f_cuGraphExecEventNodeSetEvent;
  ag__real.cuGraphExecEventWaitNodeSetEvent = f_cuGraphExecEventNodeSetEvent;
  ag__real.cuMemcpyAsync = f_cuMemcpyAsync;
  ag__real.cuPointerGetAttribute = f_cuPointerGetAttribute;
  ag__real.cuGraphAddMemcpyNode = f_cuGraphAddMemcpyNode;
  ag__real.cuGraphExecMemcpyNodeSetParams = f_cuGraphExecMemcpyNodeSetParams;
  ag__real.cuGraphCreate = f_cuGraphCreate;
  ag__real.cuGraphDestroy = f_cuGraphDestroy;
  ag__real.cuGraphAddKernelNode = f_cuGraphAddKernelNode;
  ag__real.cuGraphInstantiateWithFlags = f_cuGraphInstantiateWithFlags;
  ag__real.cuGraphExecDestroy = f_cuGraphExecDestroy;
  ag__real.cuGraphExecKernelNodeSetParams = f_cuGraphExecKernelNodeSetParams;
  ag__real.cuGraphLaunch = f_cuGraphLaunch;
  ag__real.cuGraphNodeSetEnabled = f_cuGraphNodeSetEnabled;
  ag__real.driver_version = 13000;
  ag__real_mark_ready();
  __atomic_store_n(&ag__enabled, 1, __ATOMIC_RELAXED);
}

/* ---- feeding the engine -------------------------------------------------------------------- */

/* Kernel events and GPU copies and memsets both begin with their correlation id: sorted by it,
 * and found by it with one binary search. */
_Static_assert(offsetof(kev_t, corr) == 0 && offsetof(gop_t, corr) == 0, "corr first");

static int cmp_corr(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static const void *find_corr(const void *v, size_t n, size_t size, int64_t corr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (*(const int64_t *)((const char *)v + mid * size) < corr) lo = mid + 1; else hi = mid;
  }
  return lo < n && *(const int64_t *)((const char *)v + lo * size) == corr
             ? (const char *)v + lo * size : NULL;
}

static const kev_t *kernel_of(int64_t corr) {
  return find_corr(T.kernels.v, T.kernels.n, sizeof *T.kernels.v, corr);
}

static int cmp_call(const void *a, const void *b) {
  const call_t *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_step(const void *a, const void *b) {
  const step_t *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int32_t step_of(int64_t ts) {
  /* Steps do not overlap: the last one starting at or before ts, if ts is inside it. */
  size_t lo = 0, hi = T.steps.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (T.steps.v[mid].ts <= ts) lo = mid + 1; else hi = mid;
  }
  if (!lo) return -1;
  const step_t *s = &T.steps.v[lo - 1];
  return ts < s->ts + s->dur ? (int32_t)(lo - 1) : -1;
}

static struct {
  uint64_t launches, runtime, driver, coop, unmatched, ordering;
  uint64_t graph_launches, graph_kernels; /* graph launches in the trace, the kernels they ran */
  uint64_t callless_kernels; /* kernels whose correlation id no runtime or driver event has */
  uint64_t order_gpu, order_thread, order_unknown; /* how stream calls' streams were found */
} F;

static const gop_t *gop_of(int64_t corr) {
  return find_corr(T.gops.v, T.gops.n, sizeof *T.gops.v, corr);
}

/* The stream each thread last launched on. */
typedef struct tstream {
  int64_t tid; /* key */
  void *stream;
  UT_hash_handle hh;
} tstream_t;
static tstream_t *tstreams;

static const tstream_t *tstream_of(int64_t tid) {
  tstream_t *t;
  HASH_FIND(hh, tstreams, &tid, sizeof tid, t);
  return t;
}

static int tstream_set(int64_t tid, void *stream) {
  tstream_t *t = (tstream_t *)tstream_of(tid);
  if (!t) {
    if (!(t = calloc(1, sizeof *t))) return -1;
    t->tid = tid;
    HASH_ADD(hh, tstreams, tid, sizeof t->tid, t);
  }
  t->stream = stream;
  return 0;
}

/* Events, which a trace does not name: a record on a stream records that stream's event (one
 * per stream, a fixed argument like every other), a wait waits on an event no record of the
 * trace names, and a query observes such an event. */
#define EV_UNSEEN ((void *)(uintptr_t)0xe0e0e0e0e000ull)
static void *ev_of_stream(void *stream) { return (void *)((uintptr_t)stream | 0xe000000000000ull); }

/* A stream operation the library may hold (a memset, an event record or wait): fed as the
 * library's entry point does (src/engine.h, ag__op). The size of a memset is not read from the
 * trace: every memset is taken as the same size (a fixed argument). Returns 1 when the engine
 * took it, 0 when it is an ordering call after all. */
static int feed_op(ag_call_t *call, void *stream, const gop_t *g) {
  ag_op_t op = {.call = call, .stream = stream};
  if (!strcmp(call->name, "cudaMemcpyAsync")) {
    /* Without its GPU event the memory is unknown: an ordering call. */
    if (!g || g->pageable) return AG_OP_ORDER;
    op.kind = AG_OP_MEMCPY, op.dst = (void *)(uintptr_t)0x2000, op.src = (void *)(uintptr_t)0x3000;
    op.bytes = 4, op.dir = 4;
  } else if (!strcmp(call->name, "cudaMemsetAsync"))
    op.kind = AG_OP_MEMSET, op.dst = (void *)(uintptr_t)0x1000, op.bytes = 4;
  else if (!strcmp(call->name, "cudaEventRecord"))
    op.kind = AG_OP_EVENT_RECORD, op.event = ev_of_stream(stream);
  else if (!strcmp(call->name, "cudaStreamWaitEvent"))
    op.kind = AG_OP_EVENT_WAIT, op.event = EV_UNSEEN;
  else
    return AG_OP_ORDER;
  /* A copy or memset the engine holds is submitted when it flushes it or launches the graph
   * holding it, which may happen inside this very call (it ends a sequence): queued first,
   * taken back when not held. */
  squeue_t *q = NULL;
  if (op.kind == AG_OP_MEMSET || op.kind == AG_OP_MEMCPY) {
    q = squeue_of(stream);
    if (!q || (q->otail == q->ocap && vec_grow((void **)&q->ops, &q->ocap, sizeof *q->ops))) {
      plan_oom = 1;
      return AG_OP_ORDER;
    }
    q->ops[q->otail++] = g ? gopi[g - T.gops.v] : -1;
  }
  int r = ag__op(&op);
  if (q && r != AG_OP_HELD) q->otail--;
  return r;
}

/* ---- the timeline's input ------------------------------------------------------------------ */

/* Calls that wait for the whole device, or for one stream or event, when they wait. */
static const char *const device_wide[] = {"cudaDeviceSynchronize", "cuCtxSynchronize", "cudaMemcpy",
                                          "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol",
                                          "cudaMemcpyFromSymbol", "cudaFree", "cudaFreeHost",
                                          "cuMemFree", "cuMemFreeHost", "cudaMemcpyPeer", NULL};
static const char *const stream_wide[] = {"cudaStreamSynchronize", "cuStreamSynchronize",
                                          "cudaEventSynchronize", "cuEventSynchronize", NULL};

static int in_list(const char *const *list, const char *s) {
  for (; *list; list++)
    if (!strcmp(*list, s)) return 1;
  return 0;
}


/* The timeline's index of trace stream s, added when new; -1 when out of memory. */
static int32_t tl_stream(int64_t s) {
  for (int32_t i = 0; i < nstream_ids; i++)
    if (stream_ids[i] == s) return i;
  int64_t *v = realloc(stream_ids, ((size_t)nstream_ids + 1) * sizeof *v);
  if (!v) return -1;
  stream_ids = v;
  stream_ids[nstream_ids] = s;
  return nstream_ids++;
}

typedef struct corrcall { int64_t corr; int32_t call; } corrcall_t;
static int cmp_cc(const void *a, const void *b) { return cmp_corr(a, b); }

/* Builds the timeline's calls (T.calls, sorted) and operations (every kernel, copy and memset
 * joined to a call by correlation id) and an empty plan. Returns 0 or -AG_ENOMEM. */
static int tl_build(void) {
  size_t nk = T.kernels.n, ng = T.gops.n, m = 0;
  corrcall_t *cc = malloc((T.calls.n + 1) * sizeof *cc);
  TL.calls = calloc(T.calls.n + 1, sizeof *TL.calls);
  TL.ops = calloc(nk + ng + 1, sizeof *TL.ops);
  kop = malloc((nk + 1) * sizeof *kop), gopi = malloc((ng + 1) * sizeof *gopi);
  PL.call_cost = malloc((T.calls.n + 1) * sizeof *PL.call_cost);
  if (!cc || !TL.calls || !TL.ops || !kop || !gopi || !PL.call_cost) {
    free(cc);
    return -AG_ENOMEM;
  }
  TL.ncalls = T.calls.n;
  for (size_t i = 0; i < T.calls.n; i++) {
    const call_t *c = &T.calls.v[i];
    ag_tl_call_t *k = &TL.calls[i];
    const char *nm = T.cnames.v[c->nm];
    k->ts = c->ts, k->dur = c->dur > 0 ? c->dur : 0, k->name = c->nm, k->stream = -1;
    k->device_wide = (uint8_t)in_list(device_wide, nm);
    k->stream_wide = (uint8_t)in_list(stream_wide, nm);
    PL.call_cost[i] = -1;
    if (c->corr >= 0) cc[m++] = (corrcall_t){c->corr, (int32_t)i};
  }
  qsort(cc, m, sizeof *cc, cmp_cc);
  for (size_t i = 0; i < nk + ng; i++) {
    int kernel = i < nk;
    int64_t corr = kernel ? T.kernels.v[i].corr : T.gops.v[i - nk].corr;
    const corrcall_t *w = find_corr(cc, m, sizeof *cc, corr);
    int32_t *slot = kernel ? &kop[i] : &gopi[i - nk];
    *slot = -1;
    if (!w) continue;
    ag_tl_op_t *o = &TL.ops[TL.nops];
    o->ts = kernel ? T.kernels.v[i].ts : T.gops.v[i - nk].ts;
    o->dur = kernel ? T.kernels.v[i].dur : T.gops.v[i - nk].dur;
    if (o->dur < 0) o->dur = 0;
    if ((o->stream = tl_stream(kernel ? T.kernels.v[i].stream : T.gops.v[i - nk].stream)) < 0) {
      free(cc);
      return -AG_ENOMEM;
    }
    o->call = w->call;
    *slot = (int32_t)TL.nops++;
  }
  TL.nstreams = nstream_ids;
  free(cc);
  return 0;
}

/* Submits, at the current call, its own GPU operations (a copy or memset it makes itself, the
 * kernels of a graph the program launches) that the engine did not hold. */
static void plan_own_ops(const call_t *c) {
  if (c->corr < 0) return;
  /* In the order they ran (a graph's kernels and copies interleave on its stream). */
  const gop_t *g = gop_of(c->corr), *gend = T.gops.v + T.gops.n;
  const kev_t *k = kernel_of(c->corr), *kend = T.kernels.v + T.kernels.n;
  for (;;) {
    int gm = g && g < gend && g->corr == c->corr, km = k && k < kend && k->corr == c->corr;
    if (!gm && !km) break;
    if (gm && (!km || g->ts < k->ts)) plan(AG_TL_ISSUE, gopi[g++ - T.gops.v], 0, -1, COST_LITERAL, 0);
    else plan(AG_TL_ISSUE, kop[k++ - T.kernels.v], 0, -1, COST_LITERAL, 0);
  }
}

static int feed(void) {
  int64_t one = 0; /* the single fixed argument of every kernel */
  void *args[1] = {&one};
  if (T.kernels.n) qsort(T.kernels.v, T.kernels.n, sizeof *T.kernels.v, cmp_corr);
  if (T.calls.n) qsort(T.calls.v, T.calls.n, sizeof *T.calls.v, cmp_call);
  if (T.gops.n) qsort(T.gops.v, T.gops.n, sizeof *T.gops.v, cmp_corr);
  if (T.steps.n) qsort(T.steps.v, T.steps.n, sizeof *T.steps.v, cmp_step);
  if (tl_build()) return -AG_ENOMEM;
  /* Kernels no call launched: Kineto does not record the driver's cuGraphLaunch (the
   * library's replays), and a profiler may drop calls. */
  if (T.kernels.n) {
    int64_t *corrs = malloc((T.calls.n + 1) * sizeof *corrs);
    if (!corrs) return -AG_ENOMEM;
    for (size_t i = 0; i < T.calls.n; i++) corrs[i] = T.calls.v[i].corr;
    qsort(corrs, T.calls.n, sizeof *corrs, cmp_corr);
    for (size_t i = 0; i < T.kernels.n; i++)
      if (!find_corr(corrs, T.calls.n, sizeof *corrs, T.kernels.v[i].corr)) F.callless_kernels++;
    free(corrs);
  }
  for (size_t i = 0; i < T.calls.n; i++) {
    const call_t *c = &T.calls.v[i];
    if (c->graph) {
      F.graph_launches++;
      for (const kev_t *k = c->corr >= 0 ? kernel_of(c->corr) : NULL;
           k && k < T.kernels.v + T.kernels.n && k->corr == c->corr; k++)
        F.graph_kernels++;
    }
    if (c->kind == CALL_ORDER) continue;
    const kev_t *k = c->corr >= 0 ? kernel_of(c->corr) : NULL;
    if (!k) {
      F.unmatched++;
      continue;
    }
    launch_t l = {.ts = c->ts, .dur = c->dur, .k = (uint32_t)(k - T.kernels.v), .fn = k->name,
                  .step = step_of(c->ts), .coop = c->kind == CALL_COOP, .driver = c->driver};
    if (VEC_PUSH(L, l)) return -AG_ENOMEM;
  }
  if (!L.n) return 0;
  /* The library's timeline runs along: its clock is the engine's (see below). */
  if (ag__tl_prepare(&TL)) return -AG_ENOMEM;
  if (opt.latency_us >= 0) TL.latency = (int64_t)(opt.latency_us * 1000.0);
  PL.node_gap = opt.node_gap_us >= 0 ? (int64_t)(opt.node_gap_us * 1000.0) : -1;
  ag_tl_run_t *run;
  if (ag__tl_start(&TL, &PL, &TM.lib, &run)) return -AG_ENOMEM;
  tl_run = run;
  engine_start();
  size_t li = 0;
  for (size_t i = 0; i < T.calls.n; i++) {
    const call_t *c = &T.calls.v[i];
    cur_call = (int32_t)i;
    /* The engine's clock is the host's under the library, as the timeline models it: the
     * previous call runs (with what the engine did in it) before this one's time is known. Its
     * pace cuts the chunks and bounds the holds. Holds whose bound passed before this call end
     * first, at their bound, as the library's helper thread ends them. */
    if (i && ag__tl_call(run)) return ag__tl_stop(run), -AG_ENOMEM;
    int64_t now = ag__tl_clock(run, c->ts);
    for (uint64_t d; (d = ag__hold_next()) && d <= (uint64_t)now;) {
      if (d > vclock) vclock = d;
      plan(AG_TL_AT, -1, 0, -1, COST_LITERAL, (int64_t)d - (now - c->ts));
      ag__hold_expire(d);
      plan(AG_TL_MAIN, -1, 0, -1, COST_LITERAL, 0);
    }
    if ((uint64_t)now > vclock) vclock = (uint64_t)now;
    if (c->kind == CALL_ORDER) {
      ag_call_t *call = c->order >= 0 ? &ordcalls[c->order] : &drv_order;
      void *stream = NULL;
      F.ordering++;
      if (c->order >= 0 && ordcls[c->order] == CLS_ORDER && call->family == AG_FAM_EVENT &&
          strcmp(call->stream_arg, "NULL")) {
        /* Which event a query names is not in a trace: one that no record of the trace is. */
        stream = EV_UNSEEN;
      } else if (c->order >= 0 && strcmp(ordcalls[c->order].stream_arg, "NULL")) {
        /* A call on a stream: the stream of its copy or memset on the GPU, else the stream
         * the calling thread last launched on (PyTorch's current stream is per thread). With
         * neither, the call is taken to observe every stream. */
        const gop_t *g = c->corr >= 0 ? gop_of(c->corr) : NULL;
        const tstream_t *t = tstream_of(c->tid);
        if (g) stream = stream_handle(g->stream), F.order_gpu++;
        else if (t) stream = t->stream, F.order_thread++;
        else call = &drv_order, F.order_unknown++;
      }
      if (TL.calls[i].stream_wide) {
        /* The stream a synchronisation observes, for the timeline: the one fed to the engine,
         * or for an event, the stream its thread last launched on. */
        const tstream_t *t = tstream_of(c->tid);
        void *h = stream != EV_UNSEEN && stream ? stream : t ? t->stream : NULL;
        if (h && (TL.calls[i].stream = tl_stream((int64_t)((uintptr_t)h >> 8) - 1)) < 0) return -AG_ENOMEM;
      }
      int r = AG_OP_ORDER;
      if (c->order >= 0 && ordcls[c->order] == CLS_OP && call != &drv_order)
        r = feed_op(call, stream, c->corr >= 0 ? gop_of(c->corr) : NULL);
      if (r == AG_OP_HELD) {
        PL.call_cost[i] = (int64_t)(opt.hold_us * 1000.0);
        continue;
      }
      if (r == AG_OP_ORDER) {
        ag__order_enter(call, stream);
        ag__order_leave();
      }
      plan_own_ops(c);
      continue;
    }
    if (li >= L.n || L.v[li].ts != c->ts || (c->corr < 0 || !kernel_of(c->corr))) continue;
    launch_t *l = &L.v[li];
    const kev_t *k = &T.kernels.v[l->k];
    ag_launch_t al = {0};
    void *ctx = ctx_handle(k->device);
    if (ctx != cur_ctx) cur_ctx = ctx, ag__tls.ctx = NULL; /* another device: another context */
    al.path = l->driver ? AG_PATH_DRIVER : AG_PATH_RUNTIME;
    al.call = l->driver ? &drv_launch : &rt_launch;
    al.func = fn_handle(k->name);
    al.fkind = AG_FN_FUNCTION;
    memcpy(al.grid, k->grid, sizeof al.grid);
    memcpy(al.block, k->block, sizeof al.block);
    al.shmem = k->shmem;
    al.stream = stream_handle(k->stream);
    if (tstream_set(c->tid, al.stream)) return -AG_ENOMEM;
    al.args = args;
    al.submit = submit;
    al.ctx = (void *)(uintptr_t)(li + 1);
    al.coop = l->coop;
    F.launches++;
    if (l->driver) F.driver++; else F.runtime++;
    if (l->coop) F.coop++;
    /* Queued before the call: the engine may replay a graph that ends with this launch. */
    squeue_t *q = squeue_of(al.stream);
    if (!q || squeue_push(q, (uint32_t)li)) return -AG_ENOMEM;
    ag__launch(&al);
    if (!l->own) PL.call_cost[i] = (int64_t)(opt.hold_us * 1000.0);
    li++;
  }
  /* What is still held at the end of the trace is submitted at its last call. */
  cur_call = (int32_t)T.calls.n - 1;
  ag__flush_all();
  tl_run = NULL;
  if (plan_oom || ag__tl_call(run)) return ag__tl_stop(run), -AG_ENOMEM;
  if (ag__tl_finish(run)) return -AG_EINVAL;
  for (size_t i = 0; i < nsqueues; i++)
    if (squeues[i].head != squeues[i].tail) fail_check("launches were still held after the final flush");
  return 0;
}

/* ---- results ------------------------------------------------------------------------------- */

typedef struct stepres {
  uint64_t launches, replayed;
  int64_t host_ns, replayed_ns, model_ns, gap_ns, gap_closable_ns;
} stepres_t;

static struct {
  stepres_t *steps; /* per step, plus one for launches outside any step (last) */
  stepres_t all;
  uint64_t lps_min, lps_max;
  double lps_mean;
  /* Steady state: the last min(3, steps - 1) steps, the learning of the first step left out;
   * in a trace without ProfilerStep markers, the last quarter of its launches. */
  uint64_t steady_launches, steady_replayed;
  size_t steady_steps;
} R;

static int64_t graph_cost_ns(size_t n) {
  return (int64_t)(opt.graph_launch_us * 1000.0 + opt.graph_node_ns * (double)n);
}

static int cmp_kts(const void *a, const void *b) {
  const kev_t *const *x = a, *const *y = b;
  if ((*x)->stream != (*y)->stream) return (*x)->stream < (*y)->stream ? -1 : 1;
  if ((*x)->ts != (*y)->ts) return (*x)->ts < (*y)->ts ? -1 : 1;
  return *x < *y ? -1 : *x > *y;
}

static stepres_t *res_of(int32_t step) { return &R.steps[step >= 0 ? (size_t)step : T.steps.n]; }

static int compute(void) {
  if (!(R.steps = calloc(T.steps.n + 1, sizeof *R.steps))) return -AG_ENOMEM;
  for (size_t i = 0; i < L.n; i++) {
    const launch_t *l = &L.v[i];
    stepres_t *s = res_of(l->step);
    int64_t d = l->dur > 0 ? l->dur : 0;
    s->launches++, s->host_ns += d;
    if (l->state == L_REPLAYED) s->replayed++, s->replayed_ns += d;
  }
  /* A replay's modelled cost and closable gaps belong to the step of its last launch. */
  for (size_t r = 0; r < replays.n; r++) {
    const replay_t *rp = &replays.v[r];
    if (!rp->n) continue; /* a graph of stream operations only */
    const launch_t *last = &L.v[rlaunch.v[rp->first + rp->n - 1]];
    stepres_t *s = res_of(last->step);
    s->model_ns += graph_cost_ns(rp->n);
    for (uint32_t j = 0; j + 1 < rp->n; j++) {
      const kev_t *a = &T.kernels.v[L.v[rlaunch.v[rp->first + j]].k];
      const kev_t *b = &T.kernels.v[L.v[rlaunch.v[rp->first + j + 1]].k];
      int64_t gap = b->ts - (a->ts + a->dur);
      if (a->stream == b->stream && gap > 0) s->gap_closable_ns += gap;
    }
  }
  /* All idle time between consecutive kernels of a stream (kernels of followed launches). */
  const kev_t **ks = malloc((L.n ? L.n : 1) * sizeof *ks);
  if (!ks) return -AG_ENOMEM;
  for (size_t i = 0; i < L.n; i++) ks[i] = &T.kernels.v[L.v[i].k];
  qsort(ks, L.n, sizeof *ks, cmp_kts);
  for (size_t i = 0; i + 1 < L.n; i++) {
    if (ks[i]->stream != ks[i + 1]->stream) continue;
    int64_t gap = ks[i + 1]->ts - (ks[i]->ts + ks[i]->dur);
    if (gap > 0) res_of(step_of(ks[i + 1]->ts))->gap_ns += gap;
  }
  free(ks);
  for (size_t i = 0; i <= T.steps.n; i++) {
    stepres_t *s = &R.steps[i];
    R.all.launches += s->launches, R.all.replayed += s->replayed;
    R.all.host_ns += s->host_ns, R.all.replayed_ns += s->replayed_ns, R.all.model_ns += s->model_ns;
    R.all.gap_ns += s->gap_ns, R.all.gap_closable_ns += s->gap_closable_ns;
  }
  if (T.steps.n) {
    R.lps_min = UINT64_MAX;
    for (size_t i = 0; i < T.steps.n; i++) {
      uint64_t n = R.steps[i].launches;
      if (n < R.lps_min) R.lps_min = n;
      if (n > R.lps_max) R.lps_max = n;
      R.lps_mean += (double)n;
    }
    R.lps_mean /= (double)T.steps.n;
    R.steady_steps = T.steps.n > 3 ? 3 : T.steps.n > 1 ? T.steps.n - 1 : 1;
    for (size_t i = T.steps.n - R.steady_steps; i < T.steps.n; i++)
      R.steady_launches += R.steps[i].launches, R.steady_replayed += R.steps[i].replayed;
  } else {
    for (size_t i = L.n - L.n / 4; i < L.n; i++)
      R.steady_launches++, R.steady_replayed += L.v[i].state == L_REPLAYED;
  }
  return 0;
}

/* ---- the timelines: step time, recorded, modelled without the library, and under it ------- */


/* The step (index in TM.steps) recorded host time t belongs to, or -1. */
static int32_t tl_step_of(int64_t t) { return T.steps.n ? step_of(t) : 0; }

/* Each step's duration in result r (the recording when r is NULL): a step is done when its
 * host part and the GPU work it submitted are, at the later of its end on the host and the
 * end of its last operation, and lasts from the end of the step before (the first, from its
 * start). Without the GPU part, a step that waits less for the device at its start, as held
 * work makes a program that is ahead of the GPU do, would look longer while its work ends no
 * later. Without steps, one "step": from the first call to the end of the last call or
 * operation. Returns 0 or -AG_ENOMEM. */
static int step_times(const ag_tl_result_t *r, int64_t *len) {
  const int64_t *end = r ? r->op_end : NULL;
  if (!T.steps.n) {
    int64_t t0 = TL.ncalls ? TL.calls[0].ts : 0, e = t0;
    if (r) {
      len[0] = r->end - t0;
      return 0;
    }
    for (size_t c = 0; c < TL.ncalls; c++)
      if (TL.calls[c].ts + TL.calls[c].dur > e) e = TL.calls[c].ts + TL.calls[c].dur;
    for (size_t i = 0; i < TL.nops; i++)
      if (TL.ops[i].ts + TL.ops[i].dur > e) e = TL.ops[i].ts + TL.ops[i].dur;
    len[0] = e - t0;
    return 0;
  }
  const size_t nsteps = T.steps.n;
  int64_t *done = malloc(nsteps * sizeof *done);
  if (!done) return -AG_ENOMEM;
  for (size_t i = 0; i < nsteps; i++) {
    int64_t t = T.steps.v[i].ts + T.steps.v[i].dur;
    done[i] = r ? ag__tl_host_time(r, t) : t;
  }
  for (size_t o = 0; o < TL.nops; o++) {
    int32_t i = step_of(TL.calls[TL.ops[o].call].ts);
    int64_t e = end ? end[o] : TL.ops[o].ts + TL.ops[o].dur;
    if (i >= 0 && (size_t)i < nsteps && e > done[i]) done[i] = e;
  }
  for (size_t i = 0; i < nsteps; i++) {
    int64_t from = r ? ag__tl_host_time(r, T.steps.v[i].ts) : T.steps.v[i].ts;
    if (i && done[i - 1] > from) from = done[i - 1];
    len[i] = done[i] > from ? done[i] - from : 0;
  }
  free(done);
  return 0;
}

/* Sets the costs of the library's plan: a graph launch, a node update, a held launch. */
static void plan_costs(double graph_launch_us, double graph_node_ns, double update_us, double hold_us,
                       double node_gap_us) {
  for (size_t i = 0; i < PL.n; i++) {
    ag_tl_act_t *a = &PL.acts[i];
    if (a->kind != AG_TL_COST) continue;
    if (a->what == COST_GRAPH) a->ns = (int64_t)(graph_launch_us * 1000.0 + graph_node_ns * (double)a->op);
    else if (a->what == COST_UPDATE) a->ns = (int64_t)(update_us * 1000.0);
  }
  for (size_t c = 0; c < TL.ncalls; c++)
    if (PL.call_cost[c] >= 0) PL.call_cost[c] = (int64_t)(hold_us * 1000.0);
  PL.node_gap = node_gap_us >= 0 ? (int64_t)(node_gap_us * 1000.0) : -1;
}

/* The library's plan again at other costs: the ratio of all steps and the worst step. */
static int recost(tlcost_t *c, const int64_t *eager, int64_t *len) {
  ag_tl_result_t r;
  int rc;
  plan_costs(c->graph_launch_us, c->graph_node_ns, c->update_us, c->hold_us, c->node_gap_us);
  if ((rc = ag__tl_run(&TL, &PL, &r))) return rc;
  rc = step_times(&r, len);
  ag__tl_result_free(&r);
  if (rc) return rc;
  int64_t sum_l = 0, sum_e = 0;
  c->worst = INT64_MIN;
  for (size_t i = 0; i < TM.nsteps; i++) {
    sum_l += len[i], sum_e += eager[i];
    if (len[i] - eager[i] > c->worst) c->worst = len[i] - eager[i];
  }
  c->ratio = sum_e ? (double)sum_l / (double)sum_e : 0.0;
  return 0;
}

static int timeline(void) {
  int rc;
  if ((rc = ag__tl_plan_eager(&TL, &TM.eager_plan))) return rc;
  TM.eager_plan.node_gap = PL.node_gap;
  if ((rc = ag__tl_run(&TL, &TM.eager_plan, &TM.eager))) return rc;
  TM.eager_plan.structural = 1;
  if ((rc = ag__tl_run(&TL, &TM.eager_plan, &TM.model))) return rc;
  TM.nsteps = T.steps.n ? T.steps.n : 1;
  int64_t *len[4] = {0};
  for (int v = 0; v < 4; v++)
    if (!(len[v] = malloc(TM.nsteps * sizeof *len[v]))) goto oom;
  if (!(TM.steps = calloc(TM.nsteps, sizeof *TM.steps)) || !(TM.seq_wait = calloc(execs.n + 1, sizeof *TM.seq_wait)) ||
      step_times(NULL, len[0]) || step_times(&TM.model, len[1]) || step_times(&TM.eager, len[2]) ||
      step_times(&TM.lib, len[3]))
    goto oom;
  for (size_t i = 0; i < TM.nsteps; i++)
    TM.steps[i] = (tlstep_t){len[0][i], len[1][i], len[2][i], len[3][i], 0};
  /* The GPU time submissions later than their call cost: along each stream, the growth of how
   * much later than at its call's time each operation started (a delay passed on down a stream
   * counts once), charged to the step of the call and to the sequence replayed. */
  int32_t *exec_of = malloc((TL.nops + 1) * sizeof *exec_of);
  if (!exec_of) goto oom;
  for (size_t i = 0; i < TL.nops; i++) exec_of[i] = -1;
  for (size_t i = 0; i < L.n; i++)
    if (L.v[i].state == L_REPLAYED && kop[L.v[i].k] >= 0)
      exec_of[kop[L.v[i].k]] = (int32_t)replays.v[L.v[i].replay].exec;
  for (size_t i = 0; i < TL.nops; i++) {
    int32_t p = TL.ops[i].prev;
    int64_t d = TM.lib.op_start[i] - TM.lib.op_alt[i];
    int64_t dp = p >= 0 ? TM.lib.op_start[p] - TM.lib.op_alt[p] : 0;
    int64_t added = (d > 0 ? d : 0) - (dp > 0 ? dp : 0);
    if (added <= 0) continue;
    int32_t st = tl_step_of(TL.calls[TL.ops[i].call].ts);
    if (st >= 0) TM.steps[st].held_wait += added;
    if (exec_of[i] >= 0) TM.seq_wait[exec_of[i]] += added;
  }
  free(exec_of);
  double sum = 0;
  TM.worst = INT64_MIN, TM.worst_step = 0;
  for (size_t i = 0; i < TM.nsteps; i++) {
    const tlstep_t *x = &TM.steps[i];
    double e = x->rec ? fabs((double)(x->model - x->rec) / (double)x->rec) : 0.0;
    sum += e;
    if (e > TM.err_max) TM.err_max = e;
    if (x->lib - x->eager > TM.worst) TM.worst = x->lib - x->eager, TM.worst_step = (int32_t)i;
    TM.all.rec += x->rec, TM.all.model += x->model, TM.all.eager += x->eager, TM.all.lib += x->lib;
    TM.all.held_wait += x->held_wait;
  }
  TM.err_mean = sum / (double)TM.nsteps;
  /* The plausible range of the costs (docs/predictor.md has their sources). */
  const tlcost_t costs[] = {
      {"cheaper", 1.0, 1.0, 0.2, 0.2, -1, 0, 0},
      {"as given", opt.graph_launch_us, opt.graph_node_ns, opt.update_us, opt.hold_us, opt.node_gap_us, 0, 0},
      {"dearer", 5.0, 2.0, 1.0, 1.0, -1, 0, 0},
      {"much dearer", 10.0, 5.0, 2.0, 2.0, -1, 0, 0},
      {"graph gaps 0", opt.graph_launch_us, opt.graph_node_ns, opt.update_us, opt.hold_us, 0.0, 0, 0},
  };
  TM.ncosts = (int)AG_ARRAY_SIZE(costs);
  for (int i = 0; i < TM.ncosts; i++) {
    TM.costs[i] = costs[i];
    if ((rc = recost(&TM.costs[i], len[2], len[3]))) goto out;
  }
  plan_costs(opt.graph_launch_us, opt.graph_node_ns, opt.update_us, opt.hold_us, opt.node_gap_us);
  rc = 0;
  goto out;
oom:
  rc = -AG_ENOMEM;
out:
  for (int v = 0; v < 4; v++) free(len[v]);
  return rc;
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

static void print_timeline(void) {
  char ng[32], num[32];
  if (PL.node_gap >= 0) snprintf(ng, sizeof ng, "%.1f us", (double)PL.node_gap / 1000.0);
  else snprintf(ng, sizeof ng, "as recorded");
  printf("\nStep time, modelled (launch latency %.1f us and queued gap %.1f us as measured in the trace;\n"
         "  graph node gap %s, held launch %.2f us, graph launch %.2f us + %.1f ns per node)\n",
         (double)TL.latency / 1000.0, (double)TL.queue_gap / 1000.0, ng, opt.hold_us, opt.graph_launch_us,
         opt.graph_node_ns);
  printf("  calibration           the trace as recorded, modelled from its medians alone: off by %.1f%% on\n"
         "                        average, %.1f%% at most\n", 100.0 * TM.err_mean, 100.0 * TM.err_max);
  if (T.steps.n) snprintf(num, sizeof num, "#%" PRId64, T.steps.v[TM.worst_step].num);
  else snprintf(num, sizeof num, "the trace");
  printf("  without the library   %.3f ms (recorded %.3f ms)\n", ms(TM.all.eager), ms(TM.all.rec));
  printf("  with the library      %.3f ms (%.3f of the time without); worst step %s, %+.3f us\n",
         ms(TM.all.lib), TM.all.eager ? (double)TM.all.lib / (double)TM.all.eager : 0.0, num,
         (double)TM.worst / 1000.0);
  printf("  GPU time lost to held launches submitted later than their call: %.1f us\n",
         (double)TM.all.held_wait / 1000.0);
  /* The sequences whose late submission costs most. */
  for (int k = 0; k < 3; k++) {
    size_t best = execs.n;
    for (size_t x = 0; x < execs.n; x++)
      if (TM.seq_wait[x] > 0 && (best == execs.n || TM.seq_wait[x] > TM.seq_wait[best])) best = x;
    if (best == execs.n) break;
    const fexec_t *x = execs.v[best];
    printf("    %10.1f us  sequence of %zu launches: ", (double)TM.seq_wait[best] / 1000.0, x->nk);
    for (size_t j = 0; j < x->nk && j < 2; j++) printf("%s%.40s", j ? ", " : "", T.names.v[x->kern[j].fn]);
    printf("%s\n", x->nk > 2 ? ", …" : "");
    TM.seq_wait[best] = -TM.seq_wait[best]; /* listed (restored below) */
  }
  for (size_t x = 0; x < execs.n; x++)
    if (TM.seq_wait[x] < 0) TM.seq_wait[x] = -TM.seq_wait[x];
  printf("  at other costs        ");
  for (int i = 0; i < TM.ncosts; i++)
    printf("%s%s %.3f (worst step %+.3f us)", i ? ";\n                        " : "", TM.costs[i].name,
           TM.costs[i].ratio, (double)TM.costs[i].worst / 1000.0);
  printf("\n");
  if (T.steps.n) {
    printf("  %-8s %12s %12s %12s %12s %8s %14s\n", "step", "recorded ms", "model ms", "without ms",
           "with ms", "ratio", "held wait us");
    for (size_t i = 0; i < TM.nsteps && (int)i < opt.steps_max; i++) {
      const tlstep_t *x = &TM.steps[i];
      snprintf(num, sizeof num, "#%" PRId64, T.steps.v[i].num);
      printf("  %-8s %12.3f %12.3f %12.3f %12.3f %8.3f %14.1f\n", num, ms(x->rec), ms(x->model), ms(x->eager),
             ms(x->lib), x->eager ? (double)x->lib / (double)x->eager : 0.0, (double)x->held_wait / 1000.0);
    }
  }
}

typedef struct seqcount {
  uint64_t total, by_state[4];
} seqcount_t;

static void count_seq(ag_seq_t *s, void *arg) {
  seqcount_t *c = arg;
  c->total++;
  if (s->state >= 0 && s->state < 4) c->by_state[s->state]++;
}

static void take_snapshot(ag_seqtab_t *t, double launch_ns, void *arg) {
  (void)launch_ns;
  if (t) ag__seqtab_each(t, count_seq, arg);
}

static int cmp_exec(const void *a, const void *b) {
  const fexec_t *const *x = a, *const *y = b;
  uint64_t nx = (*x)->replays * (*x)->nk, ny = (*y)->replays * (*y)->nk;
  if (nx != ny) return nx > ny ? -1 : 1;
  return *x < *y ? -1 : *x > *y;
}

static const char *const assumptions[] = {
    "Argument values are not in a trace: every launch sequence is assumed to keep fixed "
    "arguments (no node updates) and fixed blocks; a sequence is identified by kernel name, "
    "block and shared memory, and a grid that changes is a node update (counted). Varying "
    "arguments cost node updates on a GPU; varying blocks are seen in the trace and lower the "
    "prediction.",
    "Ordering calls are taken from the trace's runtime events, classified by the library's own "
    "table (cudaStreamSynchronize, cudaDeviceSynchronize, cudaMemcpy*, cudaMemset*, "
    "cudaEventRecord/Synchronize/Query, cudaStreamWaitEvent, cudaMalloc/cudaFree, …), and the "
    "engine submits what each can observe, as in the library. A call naming a stream is given "
    "the stream of its copy or memset on the GPU, else the stream its thread last launched on, "
    "else it observes every stream; every stream is taken as non-blocking. Driver events other "
    "than launches count as ordering calls on every stream. Calls the profiler did not record "
    "(it records CUDA runtime and launch driver calls) are unseen.",
    "Launches are fed to the library's engine in timestamp order across threads; a launch "
    "event without a kernel event (same correlation id) is left out and counted as unmatched.",
    "Graph launches in the trace (cudaGraphLaunch, cuGraphLaunch: a program's own graphs, or "
    "those of a run under the library) are counted with the kernels they ran (their correlation "
    "id), which are already replayed: they have no launch overhead to remove, are not counted "
    "as launches, and run on the timeline as recorded. The launch itself is an ordering call on "
    "its stream, as the library treats it.",
    "Host time saved = the replayed launches' own durations in the trace minus a modelled "
    "graph launch per replay (fixed cost plus a cost per node); profiler overhead inflates "
    "launch durations, so the saving is an upper estimate. Graph instantiation (once per "
    "sequence, about a millisecond) is not included.",
    "GPU idle time that graphs could close is the idle time between consecutive kernels of a "
    "stream inside replayed sequences; a graph removes the host-side part of each gap, not the "
    "device's own launch latency.",
    "Launch attributes (cudaLaunchKernelExC) are not in a trace: those launches are assumed to "
    "have none. Cooperative launches are not replayed here: the library holds them through "
    "cuLaunchKernelEx, which the prediction does not model.",
    "Step time is modelled on the trace's timeline: the host runs the recorded program, the time "
    "between calls as recorded (one shift for all threads); a GPU operation starts at the latest "
    "of its submission plus the launch latency, the end of the previous operation of its stream "
    "plus the gap seen, and the end of the operation on another stream it was seen to wait for; "
    "a call seen to wait for the GPU waits for what it waited for. Under the library a held "
    "launch costs --hold-us instead of its duration, a flushed one its duration, a graph launch "
    "and a node update their modelled costs, and a chunk's kernels start when it is launched, "
    "after the gaps each had in the trace (a graph removes host time, not the device's time "
    "between kernels; --node-gap-us says otherwise). A launch that waited for a full launch "
    "queue does not wait when held. Graph instantiation is not included. A step lasts until its "
    "host part and the GPU work it submitted are done. The calibration models the trace as "
    "recorded from its medians alone (latency, gaps, wake-up); the comparison keeps what each "
    "operation and call showed beyond them, in both runs.",
    "At other costs the engine's decisions are those it made at the given costs: its guard, "
    "chunks and bounds may decide otherwise.",
};

/* One assumption as a list item, wrapped at 96 columns. */
static void print_wrapped(const char *text) {
  const char *p = text;
  int first = 1;
  while (*p) {
    size_t n = strlen(p);
    if (n > 90) {
      n = 90;
      while (n > 0 && p[n] != ' ') n--;
      if (!n) n = 90;
    }
    printf("%s%.*s\n", first ? "  - " : "    ", (int)n, p);
    p += n;
    while (*p == ' ') p++;
    first = 0;
  }
}

static void fmt_us(char *buf, size_t size, int64_t ns) { snprintf(buf, size, "%.1f", (double)ns / 1000.0); }

/* ---- fusion estimate ------------------------------------------------------------------------ */

static ag_fuse_estimate_t FE;

static int cmp_fk(const void *a, const void *b) {
  const ag_fuse_kernel_t *x = a, *y = b;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The fusion estimate over every kernel of the trace (tools/fusion.h). Returns 0 or -1 when out
 * of memory. */
static int fusion(void) {
  ag_fuse_kernel_t *k = malloc((T.kernels.n ? T.kernels.n : 1) * sizeof *k);
  if (!k) return -1;
  for (size_t i = 0; i < T.kernels.n; i++) {
    const kev_t *e = &T.kernels.v[i];
    k[i] = (ag_fuse_kernel_t){T.names.v[e->name], e->stream, e->ts, e->dur, {0}, {0}};
    memcpy(k[i].grid, e->grid, sizeof e->grid);
    memcpy(k[i].block, e->block, sizeof e->block);
  }
  qsort(k, T.kernels.n, sizeof *k, cmp_fk);
  ag__fuse_estimate(k, T.kernels.n, &FE);
  free(k);
  return 0;
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

static void print_fusion(void) {
  printf("\nFusion of elementwise chains (an upper bound from kernel names and shapes: a trace has\n"
         "no pointers, so consecutive same-shape elementwise kernels on a stream are taken to\n"
         "feed each other), and of runs of fills\n");
  printf("  elementwise kernels   %" PRIu64 " of %" PRIu64 " (%.1f%%), %.1f%% of kernel time\n", FE.elementwise,
         FE.kernels, pct((double)FE.elementwise, (double)FE.kernels), pct((double)FE.elementwise_ns, (double)FE.kernel_ns));
  printf("  chains                %" PRIu64 " holding %" PRIu64 " kernels (longest %" PRIu64 ")\n", FE.chains,
         FE.chained, FE.longest);
  printf("  launches removed      %" PRIu64 " (%.1f%% of kernels)\n", FE.removed,
         pct((double)FE.removed, (double)FE.kernels));
  printf("  GPU time saved        at most %.1f us (%.1f%% of kernel time: the removed kernels' own)\n",
         (double)FE.removed_ns / 1000.0, pct((double)FE.removed_ns, (double)FE.kernel_ns));
  printf("  bytes not read again  at least %.0f (one element per thread of each removed kernel)\n",
         FE.bytes_not_read);
  printf("  groups of fills       %" PRIu64 " holding %" PRIu64 " fills\n", FE.fill_groups, FE.fills_grouped);
  printf("  launches removed      %" PRIu64 " (%.1f%% of kernels)\n", FE.fill_removed,
         pct((double)FE.fill_removed, (double)FE.kernels));
  printf("  GPU time saved        at most %.1f us (%.1f%% of kernel time: the removed fills' own)\n",
         (double)FE.fill_removed_ns / 1000.0, pct((double)FE.fill_removed_ns, (double)FE.kernel_ns));
  /* Chains and groups of fills share no kernel, so what both remove is the sum. */
  uint64_t all = FE.removed + FE.fill_removed;
  int64_t all_ns = FE.removed_ns + FE.fill_removed_ns;
  printf("  in all                %" PRIu64 " launches removed (%.1f%% of kernels), at most %.1f us saved "
         "(%.1f%% of kernel time)\n", all, pct((double)all, (double)FE.kernels), (double)all_ns / 1000.0,
         pct((double)all_ns, (double)FE.kernel_ns));
}

static void print_text(const char *path, int gz, const seqcount_t *sc) {
  char a[32], b[32], c[32], d[32], e[32];
  const ag_stats_t *st = &ag__stats;
  printf("autograph-predict: %s%s\n\n", path, gz ? " (gzip)" : "");
  printf("Trace\n");
  printf("  events                %" PRIu64 "\n", T.events);
  printf("  kernel launches       %" PRIu64 " (runtime %" PRIu64 ", driver %" PRIu64 ")\n", F.launches, F.runtime, F.driver);
  if (F.unmatched) printf("  unmatched launches    %" PRIu64 " (no kernel event with the same correlation id; left out)\n", F.unmatched);
  if (F.graph_launches)
    printf("  graph launches        %" PRIu64 " running %" PRIu64 " kernels already replayed from graphs "
           "(no launch overhead to remove: not in the launches above, ordering calls on their "
           "stream)\n", F.graph_launches, F.graph_kernels);
  if (F.callless_kernels)
    printf("  kernels without call  %" PRIu64 " (no runtime or driver event with their correlation id:"
           " graph launches the profiler does not record, such as the driver's cuGraphLaunch, or "
           "dropped events; neither launches nor on the step-time timeline)\n", F.callless_kernels);
  printf("  ordering calls        %" PRIu64 "\n", F.ordering);
  printf("  steps                 %zu", T.steps.n);
  if (T.steps.n)
    printf(" (ProfilerStep#%" PRId64 " to #%" PRId64 ")", T.steps.v[0].num, T.steps.v[T.steps.n - 1].num);
  printf("\n");
  if (T.steps.n) {
    if (R.lps_min == R.lps_max)
      printf("  launches per step     %" PRIu64 "\n", R.lps_min);
    else
      printf("  launches per step     %.1f (min %" PRIu64 ", max %" PRIu64 ")\n", R.lps_mean, R.lps_min, R.lps_max);
  }
  printf("\nPrediction (the library's engine: repeats %d, sequences %d..%d, at most %d graphs)\n",
         opt.repeats, opt.min_seq, opt.max_seq, opt.max_graphs);
  printf("  replayed              %" PRIu64 " of %" PRIu64 " launches (%.1f%%)\n", st->replayed, st->launches,
         st->launches ? 100.0 * (double)st->replayed / (double)st->launches : 0.0);
  printf("  steady state          %" PRIu64 " of %" PRIu64 " launches (%.1f%%) in ", R.steady_replayed,
         R.steady_launches, R.steady_launches ? 100.0 * (double)R.steady_replayed / (double)R.steady_launches : 0.0);
  if (T.steps.n)
    printf("the last %zu step%s\n", R.steady_steps, R.steady_steps > 1 ? "s" : "");
  else
    printf("the last quarter of the launches (no steps)\n");
  printf("  passed through        %" PRIu64 "\n", st->passthrough);
  printf("  graphs                %" PRIu64 ", graph launches %" PRIu64 " (%" PRIu64
         " of a step's prefix)\n", st->graphs, st->graph_launches, st->prefix_replays);
  printf("  sequences             %" PRIu64 " seen, %" PRIu64 " graphed, %" PRIu64 " still learning, %" PRIu64 " demoted\n",
         sc->total, sc->by_state[AG_SEQ_READY], sc->by_state[AG_SEQ_COUNTING] + sc->by_state[AG_SEQ_BUILD],
         sc->by_state[AG_SEQ_DEMOTED]);
  static const char *const fbn[AG_FB_COUNT_] = {
#define AG_FB_NAME_(id, name) name,
      AG_FALLBACK_MAP(AG_FB_NAME_)
#undef AG_FB_NAME_
  };
  int any = 0;
  for (int i = 0; i < AG_FB_COUNT_; i++)
    if (st->fallbacks[i]) printf("%s%s %" PRIu64, any++ ? ", " : "  fallbacks             ", fbn[i], st->fallbacks[i]);
  if (any) printf("\n");
  fmt_us(a, sizeof a, R.all.host_ns), fmt_us(b, sizeof b, R.all.replayed_ns), fmt_us(c, sizeof c, R.all.model_ns);
  fmt_us(d, sizeof d, R.all.replayed_ns - R.all.model_ns);
  printf("\nHost launch time (graph launch modelled as %.2f us + %.1f ns per node)\n", opt.graph_launch_us, opt.graph_node_ns);
  printf("  on the launch path    %s us\n", a);
  printf("  of replayed launches  %s us\n", b);
  printf("  modelled replays      %s us\n", c);
  printf("  saved                 %s us (%.1f%% of launch time)\n", d,
         R.all.host_ns ? 100.0 * (double)(R.all.replayed_ns - R.all.model_ns) / (double)R.all.host_ns : 0.0);
  fmt_us(a, sizeof a, R.all.gap_ns), fmt_us(b, sizeof b, R.all.gap_closable_ns);
  printf("\nGPU idle between consecutive kernels of a stream\n");
  printf("  total                 %s us\n", a);
  printf("  inside replayed sequences (what graphs could close)  %s us\n", b);
  if (T.steps.n) {
    printf("\nPer step\n  %-8s %9s %9s %7s %14s %12s %12s\n", "step", "launches", "replayed", "share",
           "launch us", "saved us", "closable us");
    for (size_t i = 0; i < T.steps.n && (int)i < opt.steps_max; i++) {
      const stepres_t *s = &R.steps[i];
      char num[32];
      snprintf(num, sizeof num, "#%" PRId64, T.steps.v[i].num);
      fmt_us(a, sizeof a, s->host_ns), fmt_us(b, sizeof b, s->replayed_ns - s->model_ns);
      fmt_us(e, sizeof e, s->gap_closable_ns);
      printf("  %-8s %9" PRIu64 " %9" PRIu64 " %6.1f%% %14s %12s %12s\n", num, s->launches, s->replayed,
             s->launches ? 100.0 * (double)s->replayed / (double)s->launches : 0.0, a, b, e);
    }
    if ((int)T.steps.n > opt.steps_max) printf("  … %zu more steps (--steps N)\n", T.steps.n - (size_t)opt.steps_max);
    const stepres_t *o = &R.steps[T.steps.n];
    if (o->launches) printf("  outside any step: %" PRIu64 " launches, %" PRIu64 " replayed\n", o->launches, o->replayed);
  }
  if (execs.n && opt.top) {
    fexec_t **sorted = malloc(execs.n * sizeof *sorted);
    if (sorted) {
      memcpy(sorted, execs.v, execs.n * sizeof *sorted);
      qsort(sorted, execs.n, sizeof *sorted, cmp_exec);
      printf("\nTop sequences (by launches replayed)\n  %4s %7s %8s %9s  %s\n", "#", "length", "replays", "launches", "kernels");
      for (size_t i = 0; i < execs.n && (int)i < opt.top; i++) {
        const fexec_t *x = sorted[i];
        printf("  %4zu %7zu %8" PRIu64 " %9" PRIu64 "  ", i + 1, x->nk, x->replays, x->replays * x->nk);
        for (size_t j = 0; j < x->nk && j < 3; j++)
          printf("%s%.40s", j ? ", " : "", T.names.v[x->kern[j].fn]);
        printf("%s\n", x->nk > 3 ? ", …" : "");
      }
      free(sorted);
    }
  }
  print_timeline();
  print_fusion();
  printf("\nAssumptions\n");
  for (size_t i = 0; i < AG_ARRAY_SIZE(assumptions); i++) print_wrapped(assumptions[i]);
}

static void j_i64(ag_json_t *j, const char *key, int64_t v) {
  char t[32];
  snprintf(t, sizeof t, "%" PRId64, v);
  ag__json_key(j, key);
  ag__json_raw(j, t);
}
static void j_u64(ag_json_t *j, const char *key, uint64_t v) { ag__json_key(j, key), ag__json_u64(j, v); }
static void j_num(ag_json_t *j, const char *key, double v) {
  char t[64];
  snprintf(t, sizeof t, "%.6g", v);
  if (key) ag__json_key(j, key);
  ag__json_raw(j, t);
}
static void j_dims(ag_json_t *j, const char *key, const unsigned *d) {
  ag__json_key(j, key);
  ag__json_begin(j, '[');
  for (int i = 0; i < 3; i++) ag__json_u64(j, d[i]);
  ag__json_end(j, ']');
}
static void j_time(ag_json_t *j, const tlstep_t *t) {
  j_i64(j, "recorded_ns", t->rec);
  j_i64(j, "model_ns", t->model);
  j_i64(j, "eager_ns", t->eager);
  j_i64(j, "library_ns", t->lib);
  j_i64(j, "held_wait_ns", t->held_wait);
}

static void j_step(ag_json_t *j, const stepres_t *s) {
  j_u64(j, "launches", s->launches);
  j_u64(j, "replayed", s->replayed);
  j_i64(j, "host_launch_ns", s->host_ns);
  j_i64(j, "replayed_launch_ns", s->replayed_ns);
  j_i64(j, "graph_launch_cost_ns", s->model_ns);
  j_i64(j, "saved_ns", s->replayed_ns - s->model_ns);
  j_i64(j, "gpu_gap_ns", s->gap_ns);
  j_i64(j, "gpu_gap_closable_ns", s->gap_closable_ns);
}

static size_t render_json(char *buf, size_t size, const char *path, int gz, const seqcount_t *sc) {
  ag_json_t j;
  const ag_stats_t *st = &ag__stats;
  static const char *const fbn[AG_FB_COUNT_] = {
#define AG_FB_NAME_(id, name) name,
      AG_FALLBACK_MAP(AG_FB_NAME_)
#undef AG_FB_NAME_
  };
  ag__json_init(&j, buf, size);
  ag__json_begin(&j, '{');
  ag__json_key(&j, "schema"), ag__json_str(&j, "autograph-predict");
  j_u64(&j, "version", 1);
  ag__json_key(&j, "trace"), ag__json_str(&j, path);
  ag__json_key(&j, "gzip"), ag__json_raw(&j, gz ? "true" : "false");
  ag__json_key(&j, "options");
  ag__json_begin(&j, '{');
  j_u64(&j, "repeats", (uint64_t)opt.repeats);
  j_u64(&j, "min_seq", (uint64_t)opt.min_seq);
  j_u64(&j, "max_seq", (uint64_t)opt.max_seq);
  j_u64(&j, "max_graphs", (uint64_t)opt.max_graphs);
  j_num(&j, "graph_launch_us", opt.graph_launch_us);
  j_num(&j, "graph_node_ns", opt.graph_node_ns);
  j_num(&j, "update_us", opt.update_us);
  ag__json_end(&j, '}');
  j_u64(&j, "events", T.events);
  j_u64(&j, "launches", st->launches);
  j_u64(&j, "launches_runtime", F.runtime);
  j_u64(&j, "launches_driver", F.driver);
  j_u64(&j, "unmatched_launches", F.unmatched);
  j_u64(&j, "trace_graph_launches", F.graph_launches);
  j_u64(&j, "trace_graph_kernels", F.graph_kernels);
  j_u64(&j, "trace_kernels_without_call", F.callless_kernels);
  j_u64(&j, "ordering_calls", F.ordering);
  j_u64(&j, "replayed", st->replayed);
  j_num(&j, "replayed_share", st->launches ? (double)st->replayed / (double)st->launches : 0.0);
  ag__json_key(&j, "steady_state");
  ag__json_begin(&j, '{');
  ag__json_key(&j, "basis");
  ag__json_str(&j, T.steps.n ? "last_steps" : "last_quarter");
  j_u64(&j, "steps", T.steps.n ? R.steady_steps : 0);
  j_u64(&j, "launches", R.steady_launches);
  j_u64(&j, "replayed", R.steady_replayed);
  j_num(&j, "share", R.steady_launches ? (double)R.steady_replayed / (double)R.steady_launches : 0.0);
  ag__json_end(&j, '}');
  j_u64(&j, "passthrough", st->passthrough);
  j_u64(&j, "graphs", st->graphs);
  j_u64(&j, "graph_launches", st->graph_launches);
  j_u64(&j, "prefix_replays", st->prefix_replays);
  j_u64(&j, "updates", st->updates);
  j_u64(&j, "sequences", sc->total);
  j_u64(&j, "sequences_graphed", sc->by_state[AG_SEQ_READY]);
  j_u64(&j, "demotions", st->demotions);
  j_u64(&j, "evictions", st->evictions);
  ag__json_key(&j, "fallbacks");
  ag__json_begin(&j, '{');
  for (int i = 0; i < AG_FB_COUNT_; i++)
    if (st->fallbacks[i]) j_u64(&j, fbn[i], st->fallbacks[i]);
  ag__json_end(&j, '}');
  j_i64(&j, "host_launch_ns", R.all.host_ns);
  j_i64(&j, "replayed_launch_ns", R.all.replayed_ns);
  j_i64(&j, "graph_launch_cost_ns", R.all.model_ns);
  j_i64(&j, "saved_ns", R.all.replayed_ns - R.all.model_ns);
  j_i64(&j, "gpu_gap_ns", R.all.gap_ns);
  j_i64(&j, "gpu_gap_closable_ns", R.all.gap_closable_ns);
  ag__json_key(&j, "launches_per_step");
  if (T.steps.n) {
    ag__json_begin(&j, '{');
    j_u64(&j, "min", R.lps_min);
    j_u64(&j, "max", R.lps_max);
    j_num(&j, "mean", R.lps_mean);
    ag__json_end(&j, '}');
  } else {
    ag__json_raw(&j, "null");
  }
  ag__json_key(&j, "steps");
  ag__json_begin(&j, '[');
  for (size_t i = 0; i < T.steps.n; i++) {
    ag__json_begin(&j, '{');
    j_i64(&j, "step", T.steps.v[i].num);
    j_step(&j, &R.steps[i]);
    j_time(&j, &TM.steps[i]);
    ag__json_end(&j, '}');
  }
  ag__json_end(&j, ']');
  ag__json_key(&j, "outside_steps");
  ag__json_begin(&j, '{');
  j_step(&j, &R.steps[T.steps.n]);
  ag__json_end(&j, '}');
  /* The timelines: step time without and with the library. */
  ag__json_key(&j, "step_time");
  ag__json_begin(&j, '{');
  j_i64(&j, "latency_ns", TL.latency);
  j_i64(&j, "queue_gap_ns", TL.queue_gap);
  ag__json_key(&j, "node_gap_ns");
  if (PL.node_gap >= 0) ag__json_u64(&j, (uint64_t)PL.node_gap);
  else ag__json_raw(&j, "null");
  j_num(&j, "hold_us", opt.hold_us);
  j_num(&j, "calibration_error_mean", TM.err_mean);
  j_num(&j, "calibration_error_max", TM.err_max);
  j_time(&j, &TM.all);
  j_num(&j, "ratio", TM.all.eager ? (double)TM.all.lib / (double)TM.all.eager : 0.0);
  j_i64(&j, "worst_step_ns", TM.worst);
  j_i64(&j, "worst_step", T.steps.n ? T.steps.v[TM.worst_step].num : -1);
  ag__json_key(&j, "at_other_costs");
  ag__json_begin(&j, '[');
  for (int i = 0; i < TM.ncosts; i++) {
    const tlcost_t *c = &TM.costs[i];
    ag__json_begin(&j, '{');
    ag__json_key(&j, "name"), ag__json_str(&j, c->name);
    j_num(&j, "graph_launch_us", c->graph_launch_us);
    j_num(&j, "graph_node_ns", c->graph_node_ns);
    j_num(&j, "update_us", c->update_us);
    j_num(&j, "hold_us", c->hold_us);
    ag__json_key(&j, "node_gap_us");
    if (c->node_gap_us >= 0) j_num(&j, NULL, c->node_gap_us);
    else ag__json_raw(&j, "null");
    j_num(&j, "ratio", c->ratio);
    j_i64(&j, "worst_step_ns", c->worst);
    ag__json_end(&j, '}');
  }
  ag__json_end(&j, ']');
  ag__json_end(&j, '}');
  ag__json_key(&j, "top_sequences");
  ag__json_begin(&j, '[');
  fexec_t **sorted = execs.n ? malloc(execs.n * sizeof *sorted) : NULL;
  if (sorted) {
    memcpy(sorted, execs.v, execs.n * sizeof *sorted);
    qsort(sorted, execs.n, sizeof *sorted, cmp_exec);
    for (size_t i = 0; i < execs.n && (int)i < opt.top; i++) {
      const fexec_t *x = sorted[i];
      ag__json_begin(&j, '{');
      j_u64(&j, "length", x->nk);
      j_u64(&j, "replays", x->replays);
      j_u64(&j, "launches_replayed", x->replays * x->nk);
      j_i64(&j, "held_wait_ns", TM.seq_wait ? TM.seq_wait[(size_t)(x->self)] : 0);
      ag__json_key(&j, "kernels");
      ag__json_begin(&j, '[');
      for (size_t k = 0; k < x->nk && k < 256; k++) {
        ag__json_begin(&j, '{');
        ag__json_key(&j, "name"), ag__json_str(&j, T.names.v[x->kern[k].fn]);
        j_dims(&j, "grid", x->kern[k].grid);
        j_dims(&j, "block", x->kern[k].block);
        j_u64(&j, "shmem", x->kern[k].shmem);
        ag__json_end(&j, '}');
      }
      ag__json_end(&j, ']');
      ag__json_end(&j, '}');
    }
    free(sorted);
  }
  ag__json_end(&j, ']');
  ag__json_key(&j, "fusion");
  ag__json_begin(&j, '{');
  j_u64(&j, "kernels", FE.kernels);
  j_u64(&j, "elementwise", FE.elementwise);
  j_u64(&j, "chains", FE.chains);
  j_u64(&j, "chained", FE.chained);
  j_u64(&j, "longest", FE.longest);
  j_u64(&j, "launches_removed", FE.removed);
  j_i64(&j, "kernel_ns", FE.kernel_ns);
  j_i64(&j, "elementwise_ns", FE.elementwise_ns);
  j_i64(&j, "removed_ns", FE.removed_ns);
  j_num(&j, "bytes_not_read", FE.bytes_not_read);
  j_u64(&j, "fill_groups", FE.fill_groups);
  j_u64(&j, "fills_grouped", FE.fills_grouped);
  j_u64(&j, "fill_launches_removed", FE.fill_removed);
  j_i64(&j, "fill_removed_ns", FE.fill_removed_ns);
  ag__json_end(&j, '}');
  ag__json_key(&j, "assumptions");
  ag__json_begin(&j, '[');
  for (size_t i = 0; i < AG_ARRAY_SIZE(assumptions); i++) ag__json_str(&j, assumptions[i]);
  ag__json_end(&j, ']');
  ag__json_end(&j, '}');
  return ag__json_finish(&j);
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: autograph-predict [options] TRACE.json[.gz]\n"
          "\n"
          "Predicts what libautograph would do to the program a torch.profiler trace (Chrome\n"
          "trace export) was taken of, by running the library's own engine over its launches.\n"
          "\n"
          "  --json              machine-readable output (schema autograph-predict, version 1)\n"
          "  --repeats N         AUTOGRAPH_REPEATS (default 1)\n"
          "  --min-seq N         AUTOGRAPH_MIN_SEQ (default 2)\n"
          "  --max-seq N         AUTOGRAPH_MAX_SEQ (default 256)\n"
          "  --max-graphs N      AUTOGRAPH_MAX_GRAPHS (default 512)\n"
          "  --deny LIST         AUTOGRAPH_DENY (fnmatch patterns of kernel names never held)\n"
          "  --graph-launch-us X modelled host cost of one graph launch (default 2.5)\n"
          "  --graph-node-ns X   modelled extra cost per graph node (default 1)\n"
          "  --update-us X       modelled cost of one node update (default 0.5)\n"
          "  --hold-us X         modelled host cost of a launch the library holds (default 0.5)\n"
          "  --chunk-us N        AUTOGRAPH_CHUNK_US (default 30)\n"
          "  --node-gap-us X     device time between consecutive nodes of a graph (default:\n"
          "                      the gap each kernel had after the one before in the trace)\n"
          "  --latency-us X      submission to start on an idle stream (default: measured\n"
          "                      in the trace)\n"
          "  --top N             sequences listed (default 10)\n"
          "  --steps N           steps listed in the text report (default 50)\n"
          "  --dump FILE         also write the engine's sequence dump (AUTOGRAPH_DUMP schema,\n"
          "                      readable by autograph-report)\n"
          "  -h, --help          this text\n"
          "\n"
          "Exit status: 0; 2 for a usage error or a trace that cannot be used.\n");
}

static int int_arg(const char *name, const char *v, long lo, long hi, int *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) {
    fprintf(stderr, "autograph-predict: %s: expected an integer from %ld to %ld, got \"%s\"\n", name, lo, hi, v);
    return -1;
  }
  *out = (int)x;
  return 0;
}

static int num_arg(const char *name, const char *v, double *out) {
  char *end;
  double x = strtod(v, &end);
  if (end == v || *end || !(x >= 0.0) || x > 1e9) {
    fprintf(stderr, "autograph-predict: %s: expected a number from 0, got \"%s\"\n", name, v);
    return -1;
  }
  *out = x;
  return 0;
}

int main(int argc, char **argv) {
  enum { O_JSON = 256, O_REPEATS, O_MIN, O_MAX, O_GRAPHS, O_DENY, O_GL, O_GN, O_UP, O_TOP, O_STEPS, O_DUMP,
         O_CHUNK, O_HOLD, O_GAP, O_LAT };
  static const struct option longs[] = {
      {"json", no_argument, NULL, O_JSON},       {"repeats", required_argument, NULL, O_REPEATS},
      {"min-seq", required_argument, NULL, O_MIN}, {"max-seq", required_argument, NULL, O_MAX},
      {"max-graphs", required_argument, NULL, O_GRAPHS}, {"deny", required_argument, NULL, O_DENY},
      {"graph-launch-us", required_argument, NULL, O_GL}, {"graph-node-ns", required_argument, NULL, O_GN},
      {"update-us", required_argument, NULL, O_UP}, {"top", required_argument, NULL, O_TOP},
      {"steps", required_argument, NULL, O_STEPS}, {"dump", required_argument, NULL, O_DUMP},
      {"chunk-us", required_argument, NULL, O_CHUNK}, {"hold-us", required_argument, NULL, O_HOLD},
      {"node-gap-us", required_argument, NULL, O_GAP}, {"latency-us", required_argument, NULL, O_LAT},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  int c, bad = 0;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case O_JSON: opt.json = 1; break;
    case O_REPEATS: bad |= int_arg("--repeats", optarg, 1, 1000000, &opt.repeats); break;
    case O_MIN: bad |= int_arg("--min-seq", optarg, 1, AG_MAX_SEQ_LIMIT, &opt.min_seq); break;
    case O_MAX: bad |= int_arg("--max-seq", optarg, 1, AG_MAX_SEQ_LIMIT, &opt.max_seq); break;
    case O_GRAPHS: bad |= int_arg("--max-graphs", optarg, 1, 1000000, &opt.max_graphs); break;
    case O_DENY: opt.deny = optarg; break;
    case O_GL: bad |= num_arg("--graph-launch-us", optarg, &opt.graph_launch_us); break;
    case O_GN: bad |= num_arg("--graph-node-ns", optarg, &opt.graph_node_ns); break;
    case O_UP: bad |= num_arg("--update-us", optarg, &opt.update_us); break;
    case O_TOP: bad |= int_arg("--top", optarg, 0, 1000000, &opt.top); break;
    case O_STEPS: bad |= int_arg("--steps", optarg, 0, 100000000, &opt.steps_max); break;
    case O_DUMP: opt.dump = optarg; break;
    case O_CHUNK: bad |= int_arg("--chunk-us", optarg, 0, 1000000, &opt.chunk_us); break;
    case O_HOLD: bad |= num_arg("--hold-us", optarg, &opt.hold_us); break;
    case O_GAP: bad |= num_arg("--node-gap-us", optarg, &opt.node_gap_us); break;
    case O_LAT: bad |= num_arg("--latency-us", optarg, &opt.latency_us); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (bad) return 2;
  if (opt.min_seq > opt.max_seq) {
    fprintf(stderr, "autograph-predict: --min-seq %d is above --max-seq %d\n", opt.min_seq, opt.max_seq);
    return 2;
  }
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  opt.path = argv[optind];

  ag_trace_reader_t *r;
  ag_trace_err_t err;
  if (ag__trace_open_file(&r, opt.path, &err)) {
    fprintf(stderr, "autograph-predict: %s: %s\n", opt.path, err.msg);
    return 2;
  }
  int gz = ag__trace_is_gzip(r);
  int rc = ag__trace_parse(r, NULL, on_event, NULL, &err);
  ag__trace_close(r);
  if (rc) {
    if (T.oom) snprintf(err.msg, sizeof err.msg, "out of memory at byte %llu", (unsigned long long)err.offset);
    if (err.kind == AG_TRACE_EGZIP || (gz && err.kind == AG_TRACE_ESYNTAX))
      fprintf(stderr, "autograph-predict: %s: %s (JSON byte %llu, compressed byte %lld)\n", opt.path, err.msg,
              (unsigned long long)err.offset, (long long)err.gz_offset);
    else
      fprintf(stderr, "autograph-predict: %s: %s\n", opt.path, err.msg);
    return 2;
  }
  if (feed()) {
    fprintf(stderr, "autograph-predict: %s: out of memory\n", opt.path);
    return 2;
  }
  if (!F.launches) {
    fprintf(stderr,
            "autograph-predict: %s: no kernel launches: %llu events, %zu kernel events, %llu runtime and "
            "%llu driver events; a launch is a cuda_runtime or cuda_driver launch event joined to a "
            "kernel event by args.correlation (export with activities=[ProfilerActivity.CPU, "
            "ProfilerActivity.CUDA])\n",
            opt.path, (unsigned long long)T.events, T.kernels.n, (unsigned long long)T.runtime_events,
            (unsigned long long)T.driver_events);
    return 2;
  }
  seqcount_t sc = {0};
  ag__engine_snapshot(take_snapshot, &sc);
  if (compute() || fusion()) {
    fprintf(stderr, "autograph-predict: %s: out of memory\n", opt.path);
    return 2;
  }
  /* The launches followed here and the engine's own statistics must tell the same story. */
  uint64_t replayed = 0, passed = 0;
  for (size_t i = 0; i < L.n; i++) {
    if (L.v[i].state == L_REPLAYED) replayed++;
    else if (L.v[i].state == L_PASSED) passed++;
  }
  if (!broken && (replayed != ag__stats.replayed || passed != ag__stats.passthrough ||
                  replayed + passed != F.launches || ag__stats.launches != F.launches))
    fail_check("the engine's statistics disagree with the launches followed");
  if (broken) {
    fprintf(stderr, "autograph-predict: %s: internal error: %s (replayed %llu/%llu, passed %llu/%llu)\n", opt.path,
            broken_why, (unsigned long long)replayed, (unsigned long long)ag__stats.replayed,
            (unsigned long long)passed, (unsigned long long)ag__stats.passthrough);
    return 1;
  }
  if (opt.dump) ag__dump_write(AG_DUMP_EXIT);
  if (timeline()) {
    fprintf(stderr, "autograph-predict: %s: out of memory (timeline)\n", opt.path);
    return 2;
  }
  if (opt.json) {
    size_t cap = 1 << 16;
    for (;;) {
      char *buf = malloc(cap);
      if (!buf) {
        fprintf(stderr, "autograph-predict: out of memory\n");
        return 2;
      }
      size_t n = render_json(buf, cap, opt.path, gz, &sc);
      if (n < cap) {
        fwrite(buf, 1, n, stdout);
        fputc('\n', stdout);
        free(buf);
        break;
      }
      free(buf);
      cap = n + 1;
    }
  } else {
    print_text(opt.path, gz, &sc);
  }
  /* The engine's exit hook (registered by its constructor) flushes nothing more and reports
   * nothing: the configuration above names no statistics output, and the dump is written. */
  __atomic_store_n(&ag__dump_armed, 0, __ATOMIC_RELAXED);
  return fflush(stdout) == 0 ? 0 : 1;
}
