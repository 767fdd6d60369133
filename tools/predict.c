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
 * Time is modelled: the engine's guard measures host time with clock_gettime(CLOCK_MONOTONIC),
 * which this program defines for itself. The clock advances only inside the fakes: an ordinary
 * launch costs its own duration in the trace, a graph launch costs the modelled
 * --graph-launch-us plus --graph-node-ns per node, a node update --update-us. So the guard
 * sees the same costs the report uses, and the prediction is deterministic.
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
#include "graph.h"
#include "json.h"
#include "real.h"
#include "segment.h"
#include "stats.h"
#include "trace-parse.h"
#include "trace.h"

/* ---- options ------------------------------------------------------------------------------- */

static struct {
  const char *path;
  int json;
  int repeats, min_seq, max_seq, max_graphs;
  const char *deny;
  double graph_launch_us, graph_node_ns, update_us;
  int top;
  int steps_max;
  const char *dump;
} opt = {.repeats = 1, .min_seq = 2, .max_seq = 256, .max_graphs = 512, .graph_launch_us = 2.5,
         .graph_node_ns = 1.0, .update_us = 0.5, .top = 10, .steps_max = 50};

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
  uint8_t kind;      /* CALL_* */
  uint8_t driver;    /* a driver API event (cuLaunchKernel…) */
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
  int pageable;      /* a copy from or to pageable host memory (Kineto names the side) */
} gop_t;

static struct {
  VEC(kev_t) kernels;
  VEC(gop_t) gops;
  VEC(call_t) calls;
  VEC(step_t) steps;
  kname_t *names_by_str;
  VEC(char *) names;
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
    gop_t g = {e->correlation, e->stream, strstr(e->name, "Pageable") != NULL};
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
    if (!strncmp(base, "cudaLaunchCooperativeKernel", 27) || !strcmp(base, "cuLaunchCooperativeKernel")) {
      c.kind = CALL_COOP;
    } else if (!strcmp(base, "cudaLaunchKernel") || !strcmp(base, "cudaLaunchKernelExC") ||
               !strcmp(base, "__cudaLaunchKernel") || !strcmp(base, "cuLaunchKernel") ||
               !strcmp(base, "cuLaunchKernelEx")) {
      c.kind = CALL_LAUNCH;
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
  uint32_t replay;   /* which replay served it (index in `replays`) */
} launch_t;

typedef struct replay_rec {
  uint32_t first, n; /* the launches rlaunch[first .. first + n) */
  uint32_t exec;
} replay_t;

static VEC(launch_t) L;
static VEC(replay_t) replays;
/* Launches held by the engine, oldest first, per stream (the engine holds on several streams at
 * once and submits each stream's in order). */
typedef struct squeue {
  void *stream;
  uint32_t *v;
  size_t head, tail, cap;
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

typedef struct fnode {
  uint32_t fn;
  unsigned grid[3], block[3], shmem;
  int off; /* disabled in its exec (cuGraphNodeSetEnabled) */
} fnode_t;

typedef struct fgraph {
  fnode_t *nodes;
  size_t n, cap;
} fgraph_t;

typedef struct fexec {
  fnode_t *nodes;
  size_t n;
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
static CUresult CUDAAPI f_cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                               size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
  fgraph_t *fg = (fgraph_t *)g;
  (void)deps, (void)ndeps;
  if (fg->n == fg->cap) {
    size_t cap = fg->cap ? fg->cap * 2 : 16;
    fnode_t *nodes = realloc(fg->nodes, cap * sizeof *nodes);
    if (!nodes) return CUDA_ERROR_OUT_OF_MEMORY;
    fg->nodes = nodes, fg->cap = cap;
  }
  fnode_t *n = &fg->nodes[fg->n++];
  n->fn = fn_id(p->func);
  n->grid[0] = p->gridDimX, n->grid[1] = p->gridDimY, n->grid[2] = p->gridDimZ;
  n->block[0] = p->blockDimX, n->block[1] = p->blockDimY, n->block[2] = p->blockDimZ;
  n->shmem = p->sharedMemBytes;
  n->off = 0;
  *node = (CUgraphNode)(uintptr_t)fg->n;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags) {
  fgraph_t *fg = (fgraph_t *)g;
  fexec_t *x = calloc(1, sizeof *x);
  (void)flags;
  if (!x || !(x->nodes = malloc((fg->n ? fg->n : 1) * sizeof *x->nodes)) || VEC_PUSH(execs, x)) {
    if (x) free(x->nodes);
    free(x);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (fg->n) memcpy(x->nodes, fg->nodes, fg->n * sizeof *x->nodes);
  x->n = fg->n;
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
  return CUDA_SUCCESS;
}
/* Stream operations: performed or added as nodes, costing nothing; an update costs as a kernel
 * node's does. */
static CUresult CUDAAPI f_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  (void)d, (void)v, (void)n, (void)s;
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
static CUgraphNode op_node(void) {
  static char nodes;
  return (CUgraphNode)&nodes;
}
static CUresult CUDAAPI f_cuGraphAddMemsetNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                               size_t nd, const CUDA_MEMSET_NODE_PARAMS *p,
                                               CUcontext c) {
  (void)g, (void)d, (void)nd, (void)p, (void)c;
  *n = op_node();
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphAddEventNode(CUgraphNode *n, CUgraph g, const CUgraphNode *d,
                                              size_t nd, CUevent e) {
  (void)g, (void)d, (void)nd, (void)e;
  *n = op_node();
  return CUDA_SUCCESS;
}
static void op_update(CUgraphExec e) {
  execs.v[(uintptr_t)e - 1]->updates++;
  fake_updates++;
  vclock += (uint64_t)(opt.update_us * 1000.0);
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
  (void)d, (void)src, (void)n, (void)s;
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
  (void)g, (void)d, (void)nd, (void)p, (void)c;
  *n = op_node();
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode n,
                                                         const CUDA_MEMCPY3D *p, CUcontext c) {
  (void)n, (void)p, (void)c;
  op_update(e);
  return CUDA_SUCCESS;
}

/* A kernel node's handle is its index + 1 in its graph (and exec); stream operations share one
 * handle and are not followed. A toggle costs as a node update does. */
static CUresult CUDAAPI f_cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode n, unsigned on) {
  fexec_t *x = execs.v[(uintptr_t)e - 1];
  vclock += (uint64_t)(opt.update_us * 1000.0);
  if (n == op_node()) return CUDA_SUCCESS;
  if ((uintptr_t)n - 1 >= x->n) return CUDA_ERROR_INVALID_VALUE;
  x->nodes[(uintptr_t)n - 1].off = !on;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_cuGraphLaunch(CUgraphExec e, CUstream s) {
  fexec_t *x = execs.v[(uintptr_t)e - 1];
  /* The engine disables only a graph's last nodes (a prefix replay): the enabled ones run. */
  size_t on = 0;
  while (on < x->n && !x->nodes[on].off) on++;
  for (size_t i = on; i < x->n; i++)
    if (!x->nodes[i].off) fail_check("a graph was launched with a disabled node before an enabled one");
  replay_t r = {(uint32_t)rlaunch.n, (uint32_t)on, (uint32_t)((uintptr_t)e - 1)};
  squeue_t *q = squeue_of(s);
  fake_graph_launches++;
  if (!q || q->tail - q->head < on) {
    fail_check("a graph was launched for more launches than were held");
    return CUDA_SUCCESS;
  }
  if (VEC_PUSH(replays, r)) {
    fail_check("out of memory");
    return CUDA_SUCCESS;
  }
  for (size_t i = 0; i < on; i++) {
    launch_t *l = &L.v[q->v[q->head + i]];
    if (l->fn != x->nodes[i].fn) fail_check("a replayed graph's kernels differ from the launches it replaced");
    l->state = L_REPLAYED;
    l->replay = (uint32_t)(replays.n - 1);
    if (VEC_PUSH(rlaunch, q->v[q->head + i])) {
      fail_check("out of memory");
      return CUDA_SUCCESS;
    }
  }
  q->head += on;
  x->replays++;
  vclock += (uint64_t)(opt.graph_launch_us * 1000.0 + opt.graph_node_ns * (double)x->n);
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
  vclock += (uint64_t)(L.v[i].dur > 0 ? L.v[i].dur : 0);
  return 0;
}

static const char *my_getenv(const char *name) {
  static char buf[5][32];
  if (!strcmp(name, "AUTOGRAPH_REPEATS")) return snprintf(buf[0], 32, "%d", opt.repeats), buf[0];
  if (!strcmp(name, "AUTOGRAPH_MIN_SEQ")) return snprintf(buf[1], 32, "%d", opt.min_seq), buf[1];
  if (!strcmp(name, "AUTOGRAPH_MAX_SEQ")) return snprintf(buf[2], 32, "%d", opt.max_seq), buf[2];
  if (!strcmp(name, "AUTOGRAPH_MAX_GRAPHS")) return snprintf(buf[3], 32, "%d", opt.max_graphs), buf[3];
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
  /* No real time passes here: holds end by the trace's own calls only (not by AUTOGRAPH_HOLD_US). */
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
  uint64_t launches, runtime, driver, coop, unmatched, ordering, graph_kernels;
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
    if (!g || g->pageable) return 0;
    op.kind = AG_OP_MEMCPY, op.dst = (void *)(uintptr_t)0x2000, op.src = (void *)(uintptr_t)0x3000;
    op.bytes = 4, op.dir = 4;
  } else if (!strcmp(call->name, "cudaMemsetAsync"))
    op.kind = AG_OP_MEMSET, op.dst = (void *)(uintptr_t)0x1000, op.bytes = 4;
  else if (!strcmp(call->name, "cudaEventRecord"))
    op.kind = AG_OP_EVENT_RECORD, op.event = ev_of_stream(stream);
  else if (!strcmp(call->name, "cudaStreamWaitEvent"))
    op.kind = AG_OP_EVENT_WAIT, op.event = EV_UNSEEN;
  else
    return 0;
  return ag__op(&op) != AG_OP_ORDER;
}

static int feed(void) {
  int64_t one = 0; /* the single fixed argument of every kernel */
  void *args[1] = {&one};
  if (T.kernels.n) qsort(T.kernels.v, T.kernels.n, sizeof *T.kernels.v, cmp_corr);
  if (T.calls.n) qsort(T.calls.v, T.calls.n, sizeof *T.calls.v, cmp_call);
  if (T.gops.n) qsort(T.gops.v, T.gops.n, sizeof *T.gops.v, cmp_corr);
  if (T.steps.n) qsort(T.steps.v, T.steps.n, sizeof *T.steps.v, cmp_step);
  for (size_t i = 0; i < T.calls.n; i++) {
    const call_t *c = &T.calls.v[i];
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
  engine_start();
  size_t li = 0;
  for (size_t i = 0; i < T.calls.n; i++) {
    const call_t *c = &T.calls.v[i];
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
      if (c->order >= 0 && ordcls[c->order] == CLS_OP && call != &drv_order &&
          feed_op(call, stream, c->corr >= 0 ? gop_of(c->corr) : NULL))
        continue;
      ag__order_enter(call, stream);
      ag__order_leave();
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
    li++;
  }
  ag__flush_all();
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
  uint64_t nx = (*x)->replays * (*x)->n, ny = (*y)->replays * (*y)->n;
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

static void print_text(const char *path, int gz, const seqcount_t *sc) {
  char a[32], b[32], c[32], d[32], e[32];
  const ag_stats_t *st = &ag__stats;
  printf("autograph-predict: %s%s\n\n", path, gz ? " (gzip)" : "");
  printf("Trace\n");
  printf("  events                %" PRIu64 "\n", T.events);
  printf("  kernel launches       %" PRIu64 " (runtime %" PRIu64 ", driver %" PRIu64 ")\n", F.launches, F.runtime, F.driver);
  if (F.unmatched) printf("  unmatched launches    %" PRIu64 " (no kernel event with the same correlation id; left out)\n", F.unmatched);
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
        printf("  %4zu %7zu %8" PRIu64 " %9" PRIu64 "  ", i + 1, x->n, x->replays, x->replays * x->n);
        for (size_t j = 0; j < x->n && j < 3; j++)
          printf("%s%.40s", j ? ", " : "", T.names.v[x->nodes[j].fn]);
        printf("%s\n", x->n > 3 ? ", …" : "");
      }
      free(sorted);
    }
  }
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
  ag__json_key(j, key);
  ag__json_raw(j, t);
}
static void j_dims(ag_json_t *j, const char *key, const unsigned *d) {
  ag__json_key(j, key);
  ag__json_begin(j, '[');
  for (int i = 0; i < 3; i++) ag__json_u64(j, d[i]);
  ag__json_end(j, ']');
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
    ag__json_end(&j, '}');
  }
  ag__json_end(&j, ']');
  ag__json_key(&j, "outside_steps");
  ag__json_begin(&j, '{');
  j_step(&j, &R.steps[T.steps.n]);
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
      j_u64(&j, "length", x->n);
      j_u64(&j, "replays", x->replays);
      j_u64(&j, "launches_replayed", x->replays * x->n);
      ag__json_key(&j, "kernels");
      ag__json_begin(&j, '[');
      for (size_t k = 0; k < x->n && k < 256; k++) {
        ag__json_begin(&j, '{');
        ag__json_key(&j, "name"), ag__json_str(&j, T.names.v[x->nodes[k].fn]);
        j_dims(&j, "grid", x->nodes[k].grid);
        j_dims(&j, "block", x->nodes[k].block);
        j_u64(&j, "shmem", x->nodes[k].shmem);
        ag__json_end(&j, '}');
      }
      ag__json_end(&j, ']');
      ag__json_end(&j, '}');
    }
    free(sorted);
  }
  ag__json_end(&j, ']');
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
  enum { O_JSON = 256, O_REPEATS, O_MIN, O_MAX, O_GRAPHS, O_DENY, O_GL, O_GN, O_UP, O_TOP, O_STEPS, O_DUMP };
  static const struct option longs[] = {
      {"json", no_argument, NULL, O_JSON},       {"repeats", required_argument, NULL, O_REPEATS},
      {"min-seq", required_argument, NULL, O_MIN}, {"max-seq", required_argument, NULL, O_MAX},
      {"max-graphs", required_argument, NULL, O_GRAPHS}, {"deny", required_argument, NULL, O_DENY},
      {"graph-launch-us", required_argument, NULL, O_GL}, {"graph-node-ns", required_argument, NULL, O_GN},
      {"update-us", required_argument, NULL, O_UP}, {"top", required_argument, NULL, O_TOP},
      {"steps", required_argument, NULL, O_STEPS}, {"dump", required_argument, NULL, O_DUMP},
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
  if (compute()) {
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
