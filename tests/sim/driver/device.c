/* device.c — the simulated device: worker threads that run all queued work, streams and events.
 *
 * Every operation (kernel, copy, memset, host function, event record, graph launch) is an op
 * queued on a stream. An op is ready when it heads its stream's queue, no op of its stream is
 * running, and each of its dependencies (stream, sequence number) has completed. A small pool of
 * device threads (SIM_DEVICE_THREADS, default 4) runs ready ops, never on the caller's thread:
 * like a GPU, work of different streams runs concurrently (a host function that blocks holds up
 * its own stream and the one thread running it), and work of one stream runs in order, one op at
 * a time. An op that runs in parts (a graph launch whose next nodes wait for events: op->ready,
 * op->unfinished) gives its thread back between parts and stays at the head of its stream. Each
 * thread chooses among the ready streams with a PRNG (seeded by SIM_SEED, else by the clock) so
 * that a missing synchronisation shows up as a wrong result.
 *
 * Each context has its own legacy default stream and per-thread default streams; the device
 * threads serve the streams of every device. Legacy default stream semantics are dependencies
 * added at submission, within one context: an op on the legacy stream waits for all work
 * submitted before it to the context's blocking streams (those created without
 * CU_STREAM_NON_BLOCKING, and per-thread default streams), and an op on a blocking stream waits
 * for all legacy work of its context submitted before it.
 *
 * Destroyed streams and events are marked, never freed, so that a stale handle yields
 * CUDA_ERROR_INVALID_HANDLE rather than a crash and pending dependencies stay valid.
 */
#include "drv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_MAGIC 0x57AE4A11u
#define STREAM_DEAD 0xDEAD57A1u
#define EVENT_MAGIC 0xE7E47000u

/* Device 0's legacy stream heads the list of all streams; the other devices' are made at start. */
static drv_stream_t legacy0 = {.magic = STREAM_MAGIC, .kind = DRV_STREAM_LEGACY, .id = 1,
                               .ctx = &drv_ctxs[0]};

static drv_stream_t *all_streams = &legacy0;
static unsigned long long next_stream_id = 3;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static int start_err;
static uint64_t rng;
static __thread drv_stream_t *ptds_stream[DRV_MAX_DEVICES];
static __thread struct CUctx_st *running_ctx;

struct CUctx_st *drv_running_ctx(void) { return running_ctx ? running_ctx : &drv_ctxs[0]; }

uint64_t drv_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int op_ready(drv_op_t *op) {
  for (int i = 0; i < op->ndeps; i++)
    if (op->deps[i].s->done < op->deps[i].seq) return 0;
  return !op->ready || op->ready(op);
}

/* Scratch list of runnable streams, shared by the device threads and used only under drv_lock.
 * Not a local: a child of fork has no device threads, and the buffer must stay reachable there
 * (it is the driver's, not lost). */
static drv_stream_t **ready;
static size_t cap;

static void *device_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&drv_lock);
  for (;;) {
    size_t n = 0;
    for (drv_stream_t *s = all_streams; s; s = s->next_all) {
      if (!s->head || s->running || !op_ready(s->head)) continue;
      if (n == cap) {
        size_t ncap = cap ? cap * 2 : 16;
        drv_stream_t **grown = realloc(ready, ncap * sizeof *grown);
        if (!grown) break; /* run what fits; the rest is picked next round */
        ready = grown;
        cap = ncap;
      }
      ready[n++] = s;
    }
    if (n == 0) {
      pthread_cond_wait(&work_cond, &drv_lock);
      continue;
    }
    drv_stream_t *s = ready[next_rand() % n];
    drv_op_t *op = s->head;
    s->running = 1;
    /* After a device fault the context is unusable: queued work completes without running. */
    int skip = s->ctx->sticky != CUDA_SUCCESS;
    running_ctx = s->ctx;
    pthread_mutex_unlock(&drv_lock);
    if (!skip && op->run) op->run(op);
    uint64_t t = drv_now_ns();
    pthread_mutex_lock(&drv_lock);
    if (op->unfinished) {
      /* Parts remain (graph nodes waiting for events): the op stays at the head of its stream
       * and is picked again once a part is ready (after a fault, it is then dropped). */
      op->unfinished = 0;
      s->running = 0;
      drv_wake_locked();
      continue;
    }
    struct CUevent_st *ev = op->event;
    if (ev && ev->s == s && ev->seq == op->seq) ev->time_ns = t;
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    s->done = op->seq;
    s->running = 0;
    pthread_cond_broadcast(&drv_cond);
    /* Completion may make other streams' heads ready: let idle device threads look again. */
    pthread_cond_broadcast(&work_cond);
    drv_op_free(op);
  }
  return NULL;
}

static drv_stream_t *stream_new(int kind, unsigned flags, int priority);

static void start(void) {
  drv_ctxs[0].legacy = &legacy0;
  for (int d = 1; d < drv_ndev; d++) {
    drv_stream_t *l = stream_new(DRV_STREAM_LEGACY, 0, 0);
    if (!l) {
      start_err = ENOMEM;
      return;
    }
    l->ctx = &drv_ctxs[d];
    drv_ctxs[d].legacy = l;
  }
  const char *seed = getenv("SIM_SEED");
  rng = seed && *seed ? strtoull(seed, NULL, 0) : drv_now_ns();
  if (rng == 0) rng = 0x9E3779B97F4A7C15ull;
  const char *nthreads_env = getenv("SIM_DEVICE_THREADS");
  long nthreads = nthreads_env && *nthreads_env ? strtol(nthreads_env, NULL, 10) : 4;
  if (nthreads < 1 || nthreads > 64) nthreads = 4;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  for (long i = 0; i < nthreads && start_err == 0; i++) {
    pthread_t t;
    start_err = pthread_create(&t, &a, device_main, NULL);
  }
  pthread_attr_destroy(&a);
}

void drv_wake_locked(void) {
  pthread_cond_broadcast(&drv_cond);
  pthread_cond_broadcast(&work_cond);
}

int drv_device_start(void) {
  pthread_once(&start_once, start);
  return start_err;
}

/* ---- ops ---- */

drv_op_t *drv_op_new(void (*run)(drv_op_t *), void (*fini)(drv_op_t *), void *arg) {
  drv_op_t *op = calloc(1, sizeof *op);
  if (!op) return NULL;
  op->run = run;
  op->fini = fini;
  op->arg = arg;
  return op;
}

void drv_op_free(drv_op_t *op) {
  if (!op) return;
  if (op->fini) op->fini(op);
  free(op->deps);
  free(op);
}

int drv_op_add_dep(drv_op_t *op, drv_stream_t *s, uint64_t seq) {
  if (s->done >= seq) return 0;
  if (op->ndeps == op->cap_deps) {
    int ncap = op->cap_deps ? op->cap_deps * 2 : 4;
    drv_dep_t *d = realloc(op->deps, (size_t)ncap * sizeof *d);
    if (!d) return -1;
    op->deps = d;
    op->cap_deps = ncap;
  }
  op->deps[op->ndeps++] = (drv_dep_t){s, seq};
  return 0;
}

static int blocking(const drv_stream_t *s) {
  return s->kind != DRV_STREAM_LEGACY && !(s->flags & CU_STREAM_NON_BLOCKING);
}

CUresult drv_submit_locked(drv_stream_t *s, drv_op_t *op) {
  int err = 0;
  /* The modelled clock orders by the same implicit dependencies, whether or not the work they
   * name has already completed for real (drv_op_add_dep drops those). */
  drv_stream_t *legacy = s->ctx->legacy;
  if (s->kind == DRV_STREAM_LEGACY) {
    for (drv_stream_t *o = all_streams; o; o = o->next_all) {
      if (!blocking(o) || o->ctx != s->ctx) continue;
      if (o->cap && !o->cap->invalidated) {
        /* The legacy stream would depend on a capturing blocking stream. */
        drv_capture_invalidate(o->cap);
        drv_op_free(op);
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
      err |= drv_op_add_dep(op, o, o->submitted);
      if (o->vend > op->vready) op->vready = o->vend;
    }
  } else if (blocking(s)) {
    err |= drv_op_add_dep(op, legacy, legacy->submitted);
    if (legacy->vend > op->vready) op->vready = legacy->vend;
  }
  if (err) {
    drv_op_free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  drv_clock_submit_locked(s, op);
  op->seq = ++s->submitted;
  op->next = NULL;
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  pthread_cond_signal(&work_cond);
  return CUDA_SUCCESS;
}

void drv_wait_stream_locked(drv_stream_t *s, uint64_t seq) {
  while (s->done < seq) pthread_cond_wait(&drv_cond, &drv_lock);
}

void drv_capture_end_streams_locked(struct drv_capture *c) {
  for (drv_stream_t *s = all_streams; s; s = s->next_all)
    if (s->cap == c) {
      s->cap = NULL;
      s->ncap_deps = 0;
    }
}

void drv_wait_all_locked(void) {
  for (drv_stream_t *s = all_streams; s; s = s->next_all) drv_wait_stream_locked(s, s->submitted);
}

/* The modelled end is read before waiting: work another thread submits meanwhile is not what
 * this call waits for. */
void drv_sync_stream_locked(drv_stream_t *s) {
  uint64_t vend = s->vend;
  drv_wait_stream_locked(s, s->submitted);
  drv_clock_block_locked(vend);
}

void drv_sync_all_locked(void) {
  uint64_t vend = 0;
  for (drv_stream_t *s = all_streams; s; s = s->next_all)
    if (s->vend > vend) vend = s->vend;
  drv_wait_all_locked();
  drv_clock_block_locked(vend);
}

void drv_sync_ctx_locked(const struct CUctx_st *c) {
  uint64_t vend = 0;
  for (drv_stream_t *s = all_streams; s; s = s->next_all)
    if (s->ctx == c && s->vend > vend) vend = s->vend;
  for (drv_stream_t *s = all_streams; s; s = s->next_all)
    if (s->ctx == c) drv_wait_stream_locked(s, s->submitted);
  drv_clock_block_locked(vend);
}

/* ---- streams ---- */

static drv_stream_t *stream_new(int kind, unsigned flags, int priority) {
  drv_stream_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->magic = STREAM_MAGIC;
  s->kind = kind;
  s->flags = flags;
  s->priority = priority;
  s->id = next_stream_id++;
  s->ctx = drv_ctx_current();
  s->next_all = all_streams->next_all;
  all_streams->next_all = s;
  return s;
}

CUresult drv_stream(CUstream h, int ptds, drv_stream_t **out) {
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (h == CU_STREAM_LEGACY || (!h && !ptds)) {
    *out = c->legacy;
    return CUDA_SUCCESS;
  }
  if (h == CU_STREAM_PER_THREAD || !h) {
    drv_stream_t **mine = &ptds_stream[c->dev];
    if (!*mine) {
      pthread_mutex_lock(&drv_lock);
      *mine = stream_new(DRV_STREAM_PTDS, 0, 0);
      pthread_mutex_unlock(&drv_lock);
      if (!*mine) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = *mine;
    return CUDA_SUCCESS;
  }
  drv_stream_t *s = (drv_stream_t *)h;
  if (s->magic != STREAM_MAGIC || s->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  *out = s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority) {
  DRV_FAIL("cuStreamCreateWithPriority", CUDA_ERROR_OUT_OF_MEMORY);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  /* Priorities outside [greatest, least] = [-5, 0] are clamped, as CUDA documents. */
  if (priority < -5) priority = -5;
  if (priority > 0) priority = 0;
  pthread_mutex_lock(&drv_lock);
  drv_stream_t *s = stream_new(DRV_STREAM_USER, flags, priority);
  pthread_mutex_unlock(&drv_lock);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  *ph = (CUstream)s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *ph, unsigned int flags) {
  DRV_FAIL("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY);
  return cuStreamCreateWithPriority(ph, flags, 0);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream h) {
  DRV_FAIL("cuStreamDestroy", CUDA_ERROR_INVALID_HANDLE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  drv_stream_t *s = (drv_stream_t *)h;
  if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&drv_lock);
  if (s->magic != STREAM_MAGIC || s->destroyed) r = CUDA_ERROR_INVALID_HANDLE;
  else {
    /* Pending work still completes (CUDA releases the stream once it is idle). */
    if (s->cap) drv_capture_invalidate(s->cap);
    s->destroyed = 1;
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}

#undef cuStreamDestroy
CUresult CUDAAPI cuStreamDestroy(CUstream h) { return cuStreamDestroy_v2(h); }

static CUresult stream_get_flags(int ptds, CUstream h, unsigned int *flags) {
  DRV_FAIL("cuStreamGetFlags", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = s->flags;
  return CUDA_SUCCESS;
}
DRV_BOTH(stream_get_flags, cuStreamGetFlags, cuStreamGetFlags_ptsz,
         (CUstream h, unsigned int *f), (h, f))

static CUresult stream_get_priority(int ptds, CUstream h, int *p) {
  DRV_FAIL("cuStreamGetPriority", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = s->priority;
  return CUDA_SUCCESS;
}
DRV_BOTH(stream_get_priority, cuStreamGetPriority, cuStreamGetPriority_ptsz,
         (CUstream h, int *p), (h, p))

static CUresult stream_get_id(int ptds, CUstream h, unsigned long long *id) {
  DRV_FAIL("cuStreamGetId", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  *id = s->id;
  return CUDA_SUCCESS;
}
DRV_BOTH(stream_get_id, cuStreamGetId, cuStreamGetId_ptsz,
         (CUstream h, unsigned long long *id), (h, id))

static CUresult stream_get_ctx(int ptds, CUstream h, CUcontext *c) {
  DRV_FAIL("cuStreamGetCtx", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = s->ctx;
  return CUDA_SUCCESS;
}
DRV_BOTH(stream_get_ctx, cuStreamGetCtx, cuStreamGetCtx_ptsz, (CUstream h, CUcontext *c), (h, c))

static CUresult stream_get_device(int ptds, CUstream h, CUdevice *d) {
  DRV_FAIL("cuStreamGetDevice", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  *d = s->ctx->dev;
  return CUDA_SUCCESS;
}
DRV_BOTH(stream_get_device, cuStreamGetDevice, cuStreamGetDevice_ptsz, (CUstream h, CUdevice *d),
         (h, d))

/* Querying or synchronising a capturing stream is not allowed and invalidates the capture. */
static CUresult stream_sync_or_query(int ptds, CUstream h, int query) {
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  pthread_mutex_lock(&drv_lock);
  if (s->cap) {
    drv_capture_invalidate(s->cap);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (query) {
    /* Real completion, not the modelled clock, which a query leaves alone. */
    r = s->done < s->submitted ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
  } else {
    drv_sync_stream_locked(s);
  }
  pthread_mutex_unlock(&drv_lock);
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) return r;
  CUresult a = drv_async_error();
  return a ? a : r;
}

static CUresult stream_synchronize(int ptds, CUstream h) {
  DRV_FAIL("cuStreamSynchronize", CUDA_ERROR_INVALID_HANDLE);
  return stream_sync_or_query(ptds, h, 0);
}
DRV_BOTH(stream_synchronize, cuStreamSynchronize, cuStreamSynchronize_ptsz, (CUstream h), (h))

static CUresult stream_query(int ptds, CUstream h) {
  DRV_FAIL("cuStreamQuery", CUDA_ERROR_INVALID_HANDLE);
  return stream_sync_or_query(ptds, h, 1);
}
DRV_BOTH(stream_query, cuStreamQuery, cuStreamQuery_ptsz, (CUstream h), (h))

/* ---- host functions ---- */

typedef struct host_call {
  CUhostFn fn;
  CUstreamCallback cb;
  CUstream handle;
  void *data;
} host_call_t;

static void host_run(drv_op_t *op) {
  host_call_t *h = op->arg;
  if (h->fn) h->fn(h->data);
  else h->cb(h->handle, CUDA_SUCCESS, h->data);
}

static void free_arg(drv_op_t *op) { free(op->arg); }

static CUresult fill_host(struct CUgraphNode_st *n, void *arg) {
  host_call_t *h = arg;
  n->u.h.fn = h->fn;
  n->u.h.userData = h->data;
  return CUDA_SUCCESS;
}

static CUresult enqueue_host(int ptds, CUstream h, CUhostFn fn, CUstreamCallback cb, void *data) {
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!fn && !cb) return CUDA_ERROR_INVALID_VALUE;
  host_call_t call = {fn, cb, h, data};
  pthread_mutex_lock(&drv_lock);
  if (s->cap) {
    /* Stream callbacks cannot be captured; host functions become host nodes. */
    if (cb) {
      drv_capture_invalidate(s->cap);
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else {
      drv_capture_node(s, CU_GRAPH_NODE_TYPE_HOST, fill_host, &call, &r);
    }
    pthread_mutex_unlock(&drv_lock);
    return r;
  }
  pthread_mutex_unlock(&drv_lock);
  r = drv_async_error();
  if (r) return r;
  host_call_t *copy = malloc(sizeof *copy);
  drv_op_t *op = copy ? drv_op_new(host_run, free_arg, copy) : NULL;
  if (!op) {
    free(copy);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *copy = call;
  op->kind = DRV_OP_HOST;
  pthread_mutex_lock(&drv_lock);
  r = drv_submit_locked(s, op);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

static CUresult launch_host_func(int ptds, CUstream h, CUhostFn fn, void *data) {
  DRV_FAIL("cuLaunchHostFunc", CUDA_ERROR_INVALID_VALUE);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return enqueue_host(ptds, h, fn, NULL, data);
}
DRV_BOTH(launch_host_func, cuLaunchHostFunc, cuLaunchHostFunc_ptsz,
         (CUstream h, CUhostFn fn, void *data), (h, fn, data))

static CUresult stream_add_callback(int ptds, CUstream h, CUstreamCallback cb, void *data,
                                    unsigned int flags) {
  DRV_FAIL("cuStreamAddCallback", CUDA_ERROR_INVALID_VALUE);
  if (!cb || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return enqueue_host(ptds, h, NULL, cb, data);
}
DRV_BOTH(stream_add_callback, cuStreamAddCallback, cuStreamAddCallback_ptsz,
         (CUstream h, CUstreamCallback cb, void *data, unsigned int flags), (h, cb, data, flags))

/* ---- events ---- */

CUresult drv_event(CUevent h, struct CUevent_st **out) {
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!h || h->magic != EVENT_MAGIC || h->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  *out = h;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *ph, unsigned int flags) {
  DRV_FAIL("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!ph || (flags & ~known)) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = EVENT_MAGIC;
  e->flags = flags;
  e->ctx = drv_ctx_current();
  /* A destroyed event is kept (flagged) so that a later use of its handle is answered with
   * CUDA_ERROR_INVALID_HANDLE instead of reading freed memory; the list keeps such events
   * owned by the context, as a real context owns its resources, rather than leaked. */
  static struct CUevent_st *all_events;
  pthread_mutex_lock(&drv_lock);
  e->all_next = all_events;
  all_events = e;
  pthread_mutex_unlock(&drv_lock);
  *ph = e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent h) {
  DRV_FAIL("cuEventDestroy", CUDA_ERROR_INVALID_HANDLE);
  struct CUevent_st *e;
  CUresult r = drv_event(h, &e);
  if (r) return r;
  pthread_mutex_lock(&drv_lock);
  e->destroyed = 1;
  free(e->cap_deps);
  e->cap_deps = NULL;
  e->ncap_deps = 0;
  e->cap = NULL;
  pthread_mutex_unlock(&drv_lock);
  return CUDA_SUCCESS;
}

#undef cuEventDestroy
CUresult CUDAAPI cuEventDestroy(CUevent h) { return cuEventDestroy_v2(h); }

static CUresult event_record(int ptds, CUevent h, CUstream hs, unsigned flags) {
  struct CUevent_st *e;
  drv_stream_t *s;
  CUresult r = drv_event(h, &e);
  if (!r) r = drv_stream(hs, ptds, &s);
  if (r) return r;
  if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  /* An event is recorded only on a stream of its own context. */
  if (e->ctx != s->ctx) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&drv_lock);
  if (s->cap) {
    r = flags & CU_EVENT_RECORD_EXTERNAL
            ? drv_capture_event_node_locked(s, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e)
            : drv_capture_record_locked(s, e);
    pthread_mutex_unlock(&drv_lock);
    return r;
  }
  pthread_mutex_unlock(&drv_lock);
  drv_op_t *op = drv_op_new(NULL, NULL, NULL);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  op->event = e;
  pthread_mutex_lock(&drv_lock);
  r = drv_submit_locked(s, op);
  if (!r) {
    e->recorded = 1;
    e->s = s;
    e->seq = s->submitted;
    e->vtime = s->vend;
    e->cap = NULL;
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}

static CUresult event_record0(int ptds, CUevent h, CUstream s) {
  DRV_FAIL("cuEventRecord", CUDA_ERROR_INVALID_HANDLE);
  return event_record(ptds, h, s, 0);
}
DRV_BOTH(event_record0, cuEventRecord, cuEventRecord_ptsz, (CUevent e, CUstream s), (e, s))

static CUresult event_record_flags(int ptds, CUevent h, CUstream s, unsigned int flags) {
  DRV_FAIL("cuEventRecordWithFlags", CUDA_ERROR_INVALID_HANDLE);
  return event_record(ptds, h, s, flags);
}
DRV_BOTH(event_record_flags, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz,
         (CUevent e, CUstream s, unsigned int f), (e, s, f))

/* Queries and synchronisations are refused while the caller may not synchronise (capture), and
 * on an event whose latest record was captured. */
static CUresult event_sync_or_query(CUevent h, int query) {
  struct CUevent_st *e;
  CUresult r = drv_event(h, &e);
  if (r) return r;
  pthread_mutex_lock(&drv_lock);
  r = drv_capture_unsafe_locked();
  if (!r && drv_event_capture(e)) r = CUDA_ERROR_CAPTURED_EVENT;
  if (!r && e->recorded) {
    if (query) {
      r = e->s->done < e->seq ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
    } else {
      uint64_t vtime = e->vtime; /* this record's, even if the event is recorded again meanwhile */
      drv_wait_stream_locked(e->s, e->seq);
      drv_clock_block_locked(vtime);
    }
  }
  pthread_mutex_unlock(&drv_lock);
  if (r && r != CUDA_ERROR_NOT_READY) return r;
  CUresult a = drv_async_error();
  return a ? a : r;
}

CUresult CUDAAPI cuEventQuery(CUevent h) {
  DRV_FAIL("cuEventQuery", CUDA_ERROR_INVALID_HANDLE);
  return event_sync_or_query(h, 1);
}

CUresult CUDAAPI cuEventSynchronize(CUevent h) {
  DRV_FAIL("cuEventSynchronize", CUDA_ERROR_INVALID_HANDLE);
  return event_sync_or_query(h, 0);
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent hs, CUevent he) {
  DRV_FAIL("cuEventElapsedTime", CUDA_ERROR_INVALID_HANDLE);
  struct CUevent_st *a, *b;
  CUresult r = drv_event(hs, &a);
  if (!r) r = drv_event(he, &b);
  if (r) return r;
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING || a->ctx != b->ctx)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (!a->recorded || !b->recorded || drv_event_capture(a) || drv_event_capture(b))
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (a->s->done < a->seq || b->s->done < b->seq) r = CUDA_ERROR_NOT_READY;
  else *ms = (float)((double)((int64_t)(b->time_ns - a->time_ns)) / 1e6);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

#undef cuEventElapsedTime
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  return cuEventElapsedTime_v2(ms, a, b);
}

static CUresult stream_wait_event(int ptds, CUstream hs, CUevent h, unsigned int flags) {
  DRV_FAIL("cuStreamWaitEvent", CUDA_ERROR_INVALID_HANDLE);
  struct CUevent_st *e;
  drv_stream_t *s;
  CUresult r = drv_stream(hs, ptds, &s);
  if (!r) r = drv_event(h, &e);
  if (r) return r;
  if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  if (s->cap || drv_event_capture(e)) {
    r = s->cap && (flags & CU_EVENT_WAIT_EXTERNAL)
            ? drv_capture_event_node_locked(s, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e)
            : drv_capture_wait_locked(s, e);
    pthread_mutex_unlock(&drv_lock);
    return r;
  }
  /* Waiting for a never-recorded event only keeps the legacy stream's implicit ordering. */
  drv_op_t *op = drv_op_new(NULL, NULL, NULL);
  if (!op || (e->recorded && drv_op_add_dep(op, e->s, e->seq))) {
    drv_op_free(op);
    r = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    if (e->recorded) op->vready = e->vtime;
    r = drv_submit_locked(s, op);
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}
DRV_BOTH(stream_wait_event, cuStreamWaitEvent, cuStreamWaitEvent_ptsz,
         (CUstream s, CUevent e, unsigned int f), (s, e, f))
