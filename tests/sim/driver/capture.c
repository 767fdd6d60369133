/* capture.c — stream capture.
 *
 * A capture turns work submitted to a capturing stream into nodes of a graph instead of running
 * it. Each stream in a capture keeps its current dependency set (the nodes the next node depends
 * on). An event recorded in a capture remembers the recording stream's set; a stream that waits
 * on it joins the capture with that set (fork), and the origin stream waiting on an event of a
 * forked stream merges the sets (join). cuStreamEndCapture requires every leaf node to be joined
 * back into the origin stream (CUDA_ERROR_STREAM_CAPTURE_UNJOINED otherwise).
 *
 * Unsafe calls follow the capture modes: a thread whose mode (cuThreadExchangeStreamCaptureMode)
 * is global may not make potentially unsafe calls while any global capture is active in the
 * process, nor while it has a non-relaxed capture of its own; thread-local only the latter;
 * relaxed never. Such a call fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates
 * the captures concerned; the capture then ends with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
 */
#include "drv.h"

#include <stdlib.h>
#include <string.h>

struct drv_capture *drv_captures;
static unsigned long long next_capture_id = 1;
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

void drv_capture_invalidate(struct drv_capture *c) { c->invalidated = 1; }

static int set_deps(drv_stream_t *s, const CUgraphNode *deps, size_t n) {
  if (n > s->cap_cap_deps) {
    CUgraphNode *g = realloc(s->cap_deps, n * sizeof *g);
    if (!g) return -1;
    s->cap_deps = g;
    s->cap_cap_deps = n;
  }
  if (n) memmove(s->cap_deps, deps, n * sizeof *deps);
  s->ncap_deps = n;
  return 0;
}

int drv_capture_node(drv_stream_t *s, CUgraphNodeType type,
                     CUresult (*fill)(struct CUgraphNode_st *n, void *arg), void *arg,
                     CUresult *res) {
  struct drv_capture *c = s->cap;
  if (!c) return 0;
  if (c->invalidated) {
    *res = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return 1;
  }
  struct CUgraphNode_st *n;
  CUresult r = drv_graph_add(c->graph, type, s->cap_deps, s->ncap_deps, &n);
  if (!r && fill) r = fill(n, arg);
  if (r) {
    /* A failed node invalidates the capture, as in CUDA. */
    if (n && c->graph->n && c->graph->nodes[c->graph->n - 1] == n) {
      memset(&n->u, 0, sizeof n->u);
      n->type = CU_GRAPH_NODE_TYPE_EMPTY;
    }
    drv_capture_invalidate(c);
  } else if (set_deps(s, (CUgraphNode *)&n, 1)) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  *res = r;
  return 1;
}

static CUresult fill_event(struct CUgraphNode_st *n, void *arg) {
  n->u.ev = arg;
  return CUDA_SUCCESS;
}

CUresult drv_capture_event_node_locked(drv_stream_t *s, CUgraphNodeType type,
                                       struct CUevent_st *e) {
  CUresult r = CUDA_SUCCESS;
  drv_capture_node(s, type, fill_event, e, &r);
  return r;
}

CUresult drv_capture_record_locked(drv_stream_t *s, struct CUevent_st *e) {
  struct drv_capture *c = s->cap;
  if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  CUgraphNode *d = malloc((s->ncap_deps ? s->ncap_deps : 1) * sizeof *d);
  if (!d) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(d, s->cap_deps, s->ncap_deps * sizeof *d);
  free(e->cap_deps);
  e->cap_deps = d;
  e->ncap_deps = s->ncap_deps;
  e->cap = c;
  return CUDA_SUCCESS;
}

CUresult drv_capture_wait_locked(drv_stream_t *s, struct CUevent_st *e) {
  struct drv_capture *c = drv_event_capture(e);
  if (!c) {
    /* Waiting in a capture on an event recorded outside it: a cross-boundary dependency. */
    drv_capture_invalidate(s->cap);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (s->cap && s->cap != c) return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (!s->cap) {
    /* Fork: the stream joins the capture after the recorded work. */
    if (set_deps(s, e->cap_deps, e->ncap_deps)) return CUDA_ERROR_OUT_OF_MEMORY;
    s->cap = c;
    return CUDA_SUCCESS;
  }
  /* Join: the union of both dependency sets. */
  size_t n = s->ncap_deps;
  CUgraphNode *u = malloc((n + e->ncap_deps + 1) * sizeof *u);
  if (!u) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(u, s->cap_deps, n * sizeof *u);
  for (size_t i = 0; i < e->ncap_deps; i++) {
    size_t j = 0;
    while (j < n && u[j] != e->cap_deps[i]) j++;
    if (j == n) u[n++] = e->cap_deps[i];
  }
  int err = set_deps(s, u, n);
  free(u);
  return err ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult drv_capture_unsafe_locked(void) {
  if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  pthread_t self = pthread_self();
  CUresult r = CUDA_SUCCESS;
  for (struct drv_capture *c = drv_captures; c; c = c->next) {
    int mine = pthread_equal(c->thread, self) && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    int global = thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                 c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (mine || global) {
      drv_capture_invalidate(c);
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return r;
}

CUresult drv_capture_any_locked(void) {
  CUresult r = CUDA_SUCCESS;
  for (struct drv_capture *c = drv_captures; c; c = c->next) {
    drv_capture_invalidate(c);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return r;
}

/* ---- API ---- */

static CUresult begin_capture(int ptds, CUstream h, CUstreamCaptureMode mode) {
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  /* The legacy stream cannot be captured. */
  if (s->kind == DRV_STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  struct drv_capture *c = calloc(1, sizeof *c);
  struct CUgraph_st *g = NULL;
  if (!c || cuGraphCreate(&g, 0) != CUDA_SUCCESS) {
    free(c);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&drv_lock);
  if (s->cap) {
    r = CUDA_ERROR_ILLEGAL_STATE;
  } else {
    c->graph = g;
    c->mode = mode;
    c->id = next_capture_id++;
    c->origin = s;
    c->thread = pthread_self();
    c->next = drv_captures;
    drv_captures = c;
    s->cap = c;
    s->ncap_deps = 0;
  }
  pthread_mutex_unlock(&drv_lock);
  if (r) {
    drv_graph_free(g);
    free(c);
  }
  return r;
}

static CUresult begin_capture_v2(int ptds, CUstream h, CUstreamCaptureMode mode) {
  DRV_FAIL("cuStreamBeginCapture", CUDA_ERROR_INVALID_VALUE);
  return begin_capture(ptds, h, mode);
}
DRV_BOTH(begin_capture_v2, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz,
         (CUstream h, CUstreamCaptureMode mode), (h, mode))

/* CUDA 10.0's signature: global mode. */
static CUresult begin_capture_v1(int ptds, CUstream h) {
  DRV_FAIL("cuStreamBeginCapture", CUDA_ERROR_INVALID_VALUE);
  return begin_capture(ptds, h, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
#undef cuStreamBeginCapture
DRV_BOTH(begin_capture_v1, cuStreamBeginCapture, cuStreamBeginCapture_ptsz, (CUstream h), (h))

static CUresult end_capture(int ptds, CUstream h, CUgraph *out) {
  DRV_FAIL("cuStreamEndCapture", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  struct drv_capture *c = s->cap;
  if (!c) r = CUDA_ERROR_ILLEGAL_STATE;
  else if (c->origin != s) r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  else if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self()))
    r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  if (r) {
    pthread_mutex_unlock(&drv_lock);
    return r;
  }
  if (c->invalidated) {
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    /* Every leaf must be in the origin's dependency set, or work was forked and not joined. */
    struct CUgraph_st *g = c->graph;
    char *has_child = calloc(g->n + 1, 1);
    if (!has_child) r = CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; has_child && i < g->n; i++)
      for (size_t j = 0; j < g->nodes[i]->ndeps; j++) has_child[g->nodes[i]->deps[j]->index] = 1;
    for (size_t i = 0; has_child && !r && i < g->n; i++) {
      if (has_child[i]) continue;
      size_t k = 0;
      while (k < s->ncap_deps && s->cap_deps[k] != g->nodes[i]) k++;
      if (k == s->ncap_deps) r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    free(has_child);
    if (r == CUDA_ERROR_STREAM_CAPTURE_UNJOINED) c->invalidated = 1;
  }
  /* The capture ends either way: every stream leaves it. */
  for (struct drv_capture **p = &drv_captures; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  /* An ended capture is kept (see below) on a list of its own, owned like every other object
   * of the context instead of leaked. */
  static struct drv_capture *ended_captures;
  c->next = ended_captures;
  ended_captures = c;
  drv_capture_end_streams_locked(c);
  pthread_mutex_unlock(&drv_lock);
  if (r) {
    drv_graph_free(c->graph);
    *out = NULL;
  } else {
    *out = c->graph;
  }
  /* Kept (marked ended) because events recorded in it may still point to it. */
  c->ended = 1;
  c->graph = NULL;
  return r;
}
DRV_BOTH(end_capture, cuStreamEndCapture, cuStreamEndCapture_ptsz, (CUstream h, CUgraph *g),
         (h, g))

/* The legacy stream reports CUDA_ERROR_STREAM_CAPTURE_IMPLICIT while a blocking stream
 * captures (without invalidating that capture). */
static CUresult capture_status(drv_stream_t *s, CUstreamCaptureStatus *st) {
  if (s->kind == DRV_STREAM_LEGACY) {
    for (struct drv_capture *c = drv_captures; c; c = c->next)
      if (!(c->origin->flags & CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  *st = !s->cap ? CU_STREAM_CAPTURE_STATUS_NONE
        : s->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

static CUresult is_capturing(int ptds, CUstream h, CUstreamCaptureStatus *st) {
  DRV_FAIL("cuStreamIsCapturing", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!st) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  r = capture_status(s, st);
  pthread_mutex_unlock(&drv_lock);
  return r;
}
DRV_BOTH(is_capturing, cuStreamIsCapturing, cuStreamIsCapturing_ptsz,
         (CUstream h, CUstreamCaptureStatus *st), (h, st))

static CUresult capture_info(int ptds, CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id,
                             CUgraph *g, const CUgraphNode **deps, const CUgraphEdgeData **edges,
                             size_t *n) {
  DRV_FAIL("cuStreamGetCaptureInfo", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if (!st) return CUDA_ERROR_INVALID_VALUE;
  if (edges && !deps) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  r = capture_status(s, st);
  if (!r && *st == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    if (id) *id = s->cap->id;
    if (g) *g = s->cap->graph;
    if (deps) *deps = s->cap_deps;
    if (edges) *edges = NULL; /* all edges are default edges */
    if (n) *n = s->ncap_deps;
  } else if (!r && *st == CU_STREAM_CAPTURE_STATUS_INVALIDATED && id) {
    *id = s->cap->id;
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}

#undef cuStreamGetCaptureInfo
static CUresult capture_info_v1(int ptds, CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id) {
  return capture_info(ptds, h, st, id, NULL, NULL, NULL, NULL);
}
DRV_BOTH(capture_info_v1, cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_ptsz,
         (CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id), (h, st, id))

static CUresult capture_info_v2(int ptds, CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id,
                                CUgraph *g, const CUgraphNode **deps, size_t *n) {
  return capture_info(ptds, h, st, id, g, deps, NULL, n);
}
DRV_BOTH(capture_info_v2, cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz,
         (CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
          const CUgraphNode **deps, size_t *n),
         (h, st, id, g, deps, n))

DRV_BOTH(capture_info, cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz,
         (CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
          const CUgraphNode **deps, const CUgraphEdgeData **e, size_t *n),
         (h, st, id, g, deps, e, n))

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  DRV_FAIL("cuThreadExchangeStreamCaptureMode", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_check_init();
  if (r) return r;
  if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
                *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
    return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = thread_mode;
  thread_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}
