/* timeline.c — the host and GPU timelines of a profiler trace (see timeline.h). */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "ag.h"

/* Beyond this, what delayed an operation's start is looked for on the other streams: an event
 * wait, or an operation that held the GPU's resources. */
#define TL_DEP_NS 5000

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n-1] (sorted in place); `none` when n is 0. */
static int64_t quantile(int64_t *v, size_t n, double q, int64_t none) {
  if (!n) return none;
  qsort(v, n, sizeof *v, cmp_i64);
  size_t i = (size_t)(q * (double)(n - 1));
  return v[i];
}

static const ag_tl_t *sort_tl;

static int cmp_stream_ts(const void *a, const void *b) {
  const ag_tl_op_t *x = &sort_tl->ops[*(const int32_t *)a], *y = &sort_tl->ops[*(const int32_t *)b];
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return *(const int32_t *)a - *(const int32_t *)b;
}

static int cmp_end(const void *a, const void *b) {
  const ag_tl_op_t *x = &sort_tl->ops[*(const int32_t *)a], *y = &sort_tl->ops[*(const int32_t *)b];
  int64_t ex = x->ts + x->dur, ey = y->ts + y->dur;
  if (ex != ey) return ex < ey ? -1 : 1;
  return *(const int32_t *)a - *(const int32_t *)b;
}

static int64_t op_end(const ag_tl_op_t *o) { return o->ts + o->dur; }

/* The index in byend (ascending recorded ends) of the last operation ending at or before t, or
 * -1. */
static ptrdiff_t last_ending(const ag_tl_t *tl, const int32_t *byend, int64_t t) {
  size_t lo = 0, hi = tl->nops;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (op_end(&tl->ops[byend[mid]]) <= t) lo = mid + 1; else hi = mid;
  }
  return (ptrdiff_t)lo - 1;
}

/* Whether operation q was submitted before operation o (so that o may wait for it). */
static int issued_before(const ag_tl_t *tl, int32_t q, int32_t o) {
  const ag_tl_op_t *a = &tl->ops[q], *b = &tl->ops[o];
  return a->call < b->call || (a->call == b->call && a->ts < b->ts);
}

int ag__tl_prepare(ag_tl_t *tl) {
  size_t n = tl->nops;
  int rc = -AG_ENOMEM;
  int32_t *order = malloc((n ? n : 1) * sizeof *order), *byend = malloc((n ? n : 1) * sizeof *byend);
  int64_t *sample = malloc(((n > tl->ncalls ? n : tl->ncalls) + 1) * sizeof *sample);
  int32_t *first_own = malloc((tl->ncalls + 1) * sizeof *first_own);
  if (!order || !byend || !sample || !first_own) goto out;

  /* Each stream's operations in recorded order. */
  for (size_t i = 0; i < n; i++) order[i] = byend[i] = (int32_t)i;
  sort_tl = tl;
  qsort(order, n, sizeof *order, cmp_stream_ts);
  qsort(byend, n, sizeof *byend, cmp_end);
  for (size_t i = 0; i < n; i++) {
    ag_tl_op_t *o = &tl->ops[order[i]];
    o->prev = i && tl->ops[order[i - 1]].stream == o->stream ? order[i - 1] : -1;
    o->dep = -1;
  }

  /* The device's launch latency: submission to start on an idle stream (a low percentile: most
   * operations also wait for something else). The gap between queued operations: its median. */
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const ag_tl_op_t *o = &tl->ops[i];
    int64_t issue = tl->calls[o->call].ts;
    if ((o->prev < 0 || op_end(&tl->ops[o->prev]) <= issue) && o->ts >= issue) sample[m++] = o->ts - issue;
  }
  tl->latency = quantile(sample, m, 0.05, 0);
  m = 0;
  for (size_t i = 0; i < n; i++) {
    const ag_tl_op_t *o = &tl->ops[i];
    if (o->prev < 0) continue;
    int64_t pe = op_end(&tl->ops[o->prev]);
    if (tl->calls[o->call].ts + tl->latency <= pe && o->ts >= pe) sample[m++] = o->ts - pe;
  }
  tl->queue_gap = quantile(sample, m, 0.5, 0);

  /* What bound each recorded start (see timeline.h). */
  tl->waits_unknown = 0;
  for (size_t i = 0; i < n; i++) {
    ag_tl_op_t *o = &tl->ops[i];
    int64_t a = tl->calls[o->call].ts + tl->latency;
    int64_t b = o->prev >= 0 ? op_end(&tl->ops[o->prev]) : INT64_MIN;
    int64_t bound = a > b ? a : b;
    if (b >= a) {
      o->bind = AG_TL_BIND_PREV, o->extra = 0;
      o->gap = o->ts > b ? o->ts - b : 0;
    } else {
      o->bind = AG_TL_BIND_ISSUE, o->extra = o->ts > a ? o->ts - a : 0;
      o->gap = o->prev >= 0 ? (o->ts - b < tl->queue_gap ? (o->ts > b ? o->ts - b : 0) : tl->queue_gap) : 0;
    }
    if (o->ts - bound <= TL_DEP_NS) continue;
    /* Unexplained by its own stream and its submission: the operation that ended last before
     * it started, on another stream, submitted before it. */
    for (ptrdiff_t j = last_ending(tl, byend, o->ts); j >= 0; j--) {
      int32_t q = byend[j];
      const ag_tl_op_t *Q = &tl->ops[q];
      if (op_end(Q) <= bound) break;
      if (q == (int32_t)i || Q->stream == o->stream || !issued_before(tl, q, (int32_t)i)) continue;
      o->dep = q, o->dep_gap = o->ts - op_end(Q);
      if (o->bind == AG_TL_BIND_PREV) o->gap = o->gap < tl->queue_gap ? o->gap : tl->queue_gap;
      o->bind = AG_TL_BIND_DEP, o->extra = 0;
      break;
    }
    if (o->dep < 0) tl->waits_unknown++;
  }
  m = 0;
  for (size_t i = 0; i < n; i++)
    if (tl->ops[i].dep >= 0) sample[m++] = tl->ops[i].dep_gap;
  tl->dep_gap = quantile(sample, m, 0.5, 0);

  /* What each call waited for. A call waited when it lasted well above the usual for its name
   * and an operation it could wait for ended inside it: its own copy or memset, or one
   * submitted before it. */
  for (size_t c = 0; c <= tl->ncalls; c++) first_own[c] = -1;
  for (size_t i = n; i-- > 0;) first_own[tl->ops[i].call] = (int32_t)i;
  int32_t maxname = 0;
  for (size_t c = 0; c < tl->ncalls; c++)
    if (tl->calls[c].name > maxname) maxname = tl->calls[c].name;
  int64_t *usual = calloc((size_t)maxname + 1, sizeof *usual);
  if (!usual) goto out;
  for (int32_t nm = 0; nm <= maxname; nm++) {
    m = 0;
    for (size_t c = 0; c < tl->ncalls; c++)
      if (tl->calls[c].name == nm) sample[m++] = tl->calls[c].dur;
    usual[nm] = quantile(sample, m, 0.5, 0);
  }
  tl->waits = 0;
  for (size_t c = 0; c < tl->ncalls; c++) {
    ag_tl_call_t *k = &tl->calls[c];
    int64_t e = k->ts + k->dur;
    k->wait_kind = AG_TL_WAIT_NONE, k->wait_op = -1, k->wake = 0;
    k->own = usual[k->name] < k->dur ? usual[k->name] : k->dur;
    if (k->dur <= 2 * usual[k->name] + TL_DEP_NS) continue;
    for (int32_t i = first_own[c]; i >= 0 && (size_t)i < n && tl->ops[i].call == (int32_t)c; i++) {
      int64_t oe = op_end(&tl->ops[i]);
      if (oe > k->ts && oe <= e && (k->wait_op < 0 || oe > op_end(&tl->ops[k->wait_op])))
        k->wait_kind = AG_TL_WAIT_OWN, k->wait_op = i;
    }
    if (k->wait_op < 0) {
      for (ptrdiff_t j = last_ending(tl, byend, e); j >= 0; j--) {
        const ag_tl_op_t *Q = &tl->ops[byend[j]];
        if (op_end(Q) <= k->ts) break;
        if (Q->call > (int32_t)c) continue;
        k->wait_op = byend[j];
        k->wait_kind = k->device_wide ? AG_TL_WAIT_DEVICE : k->stream_wide ? AG_TL_WAIT_STREAM : AG_TL_WAIT_OP;
        break;
      }
    }
    if (k->wait_op >= 0) k->wake = e - op_end(&tl->ops[k->wait_op]), sample[tl->waits++] = k->wake;
  }
  tl->wake = quantile(sample, tl->waits, 0.5, 0);
  free(usual);
  rc = 0;
out:
  free(order), free(byend), free(sample), free(first_own);
  return rc;
}

/* ---- plans ----------------------------------------------------------------------------------- */

int ag__tl_act(ag_tl_plan_t *p, int32_t call, int kind, int32_t op, int node, int32_t group,
               int64_t ns) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 1024;
    ag_tl_act_t *a = realloc(p->acts, cap * sizeof *a);
    if (!a) return -AG_ENOMEM;
    p->acts = a, p->cap = cap;
  }
  p->acts[p->n++] = (ag_tl_act_t){call, (uint8_t)kind, (uint8_t)node, 0, op, group, ns};
  return 0;
}

int ag__tl_plan_eager(const ag_tl_t *tl, ag_tl_plan_t *p) {
  memset(p, 0, sizeof *p);
  p->node_gap = tl->queue_gap;
  if (!(p->call_cost = malloc((tl->ncalls + 1) * sizeof *p->call_cost))) return -AG_ENOMEM;
  for (size_t c = 0; c < tl->ncalls; c++) p->call_cost[c] = -1;
  /* Operations of one call in their recorded order (a graph's kernels). */
  int32_t *order = malloc((tl->nops + 1) * sizeof *order);
  if (!order) return -AG_ENOMEM;
  for (size_t i = 0; i < tl->nops; i++) order[i] = (int32_t)i;
  sort_tl = tl;
  for (size_t i = 1; i < tl->nops; i++) { /* insertion sort by (call, ts): nearly sorted */
    int32_t x = order[i];
    size_t j = i;
    while (j > 0) {
      const ag_tl_op_t *a = &tl->ops[order[j - 1]], *b = &tl->ops[x];
      if (a->call < b->call || (a->call == b->call && a->ts <= b->ts)) break;
      order[j] = order[j - 1], j--;
    }
    order[j] = x;
  }
  for (size_t i = 0; i < tl->nops; i++)
    if (ag__tl_act(p, tl->ops[order[i]].call, AG_TL_ISSUE, order[i], 0, -1, 0)) {
      free(order);
      return -AG_ENOMEM;
    }
  free(order);
  return 0;
}

void ag__tl_plan_free(ag_tl_plan_t *p) {
  free(p->acts), free(p->call_cost);
  memset(p, 0, sizeof *p);
}

/* ---- running --------------------------------------------------------------------------------- */

/* Shift updates waiting for their recorded time: a binary min-heap by key. */
typedef struct { int64_t key, shift; } upd_t;
typedef struct { upd_t *v; size_t n, cap; } heap_t;

static int heap_push(heap_t *h, upd_t u) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 256;
    upd_t *v = realloc(h->v, cap * sizeof *v);
    if (!v) return -1;
    h->v = v, h->cap = cap;
  }
  size_t i = h->n++;
  while (i && h->v[(i - 1) / 2].key > u.key) h->v[i] = h->v[(i - 1) / 2], i = (i - 1) / 2;
  h->v[i] = u;
  return 0;
}

static upd_t heap_pop(heap_t *h) {
  upd_t top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->v[c + 1].key < h->v[c].key) c++;
    if (h->v[c].key >= last.key) break;
    h->v[i] = h->v[c], i = c;
  }
  if (h->n) h->v[i] = last;
  return top;
}

struct ag_tl_run {
  const ag_tl_t *tl;
  const ag_tl_plan_t *p;
  ag_tl_result_t *r;
  int64_t *stream_end; /* the end of the last operation submitted to each stream */
  int64_t device_end;
  int64_t *call_start;
  int structural;
  heap_t h;            /* shift updates not yet due */
  int64_t shift;       /* in force */
  size_t next;         /* the next call to run */
  size_t a;            /* its first action */
};
typedef struct ag_tl_run run_t;

/* An operation not submitted yet, a stream with nothing submitted. */
#define NOT_YET INT64_MIN

/* When operation o can start if submitted at `issue`; `count`: count what is missing. */
static int64_t start_at(run_t *R, const ag_tl_op_t *o, int64_t issue, int node, int64_t node_gap,
                        int count) {
  int st = R->structural;
  int64_t s = issue + R->tl->latency + (o->bind == AG_TL_BIND_ISSUE && !st ? o->extra : 0);
  if (o->prev >= 0) {
    if (R->r->op_end[o->prev] != NOT_YET) {
      int64_t p = R->r->op_end[o->prev] +
                  (node && node_gap >= 0 ? node_gap : st ? R->tl->queue_gap : o->gap);
      if (p > s) s = p;
    } else {
      R->r->late_deps += (uint64_t)count;
    }
  }
  if (o->dep >= 0) {
    if (R->r->op_end[o->dep] != NOT_YET) {
      int64_t d = R->r->op_end[o->dep] + (st ? R->tl->dep_gap : o->dep_gap);
      if (d > s) s = d;
    } else {
      R->r->late_deps += (uint64_t)count;
    }
  }
  return s;
}

static int issue(run_t *R, int32_t i, int64_t at, int node, int64_t node_gap) {
  const ag_tl_op_t *o = &R->tl->ops[i];
  if (i < 0 || (size_t)i >= R->tl->nops || R->r->op_end[i] != NOT_YET) return -AG_EINVAL;
  int64_t s = start_at(R, o, at, node, node_gap, 1);
  R->r->op_alt[i] = start_at(R, o, R->call_start[o->call], 0, node_gap, 0);
  R->r->op_start[i] = s, R->r->op_end[i] = s + o->dur;
  if (R->r->op_end[i] > R->stream_end[o->stream]) R->stream_end[o->stream] = R->r->op_end[i];
  if (R->r->op_end[i] > R->device_end) R->device_end = R->r->op_end[i];
  return 0;
}

/* When what call k waited for in the recording is done (modelled), or NOT_YET when that was
 * not submitted (under the library, a launch the queue held back may itself be held). */
static int64_t wait_end(run_t *R, const ag_tl_call_t *k) {
  int32_t w = k->wait_op;
  switch (k->wait_kind) {
  case AG_TL_WAIT_OP:
  case AG_TL_WAIT_OWN:
    return R->r->op_end[w];
  case AG_TL_WAIT_STREAM:
    return R->stream_end[k->stream >= 0 ? k->stream : R->tl->ops[w].stream];
  case AG_TL_WAIT_DEVICE:
    return R->device_end;
  }
  return NOT_YET;
}

/* What a synchronisation waits for now, whether or not it waited in the recording (under the
 * library it may wait for what it flushed), or NOT_YET. */
static int64_t sync_end(run_t *R, const ag_tl_call_t *k) {
  if (k->device_wide || (k->stream_wide && k->stream < 0)) return R->device_end;
  if (k->stream_wide) return R->stream_end[k->stream];
  return NOT_YET;
}

void ag__tl_stop(run_t *R) {
  if (!R) return;
  free(R->h.v), free(R->stream_end), free(R->call_start);
  free(R);
}

int ag__tl_start(const ag_tl_t *tl, const ag_tl_plan_t *p, ag_tl_result_t *r, run_t **out) {
  size_t n = tl->nops;
  run_t *R = calloc(1, sizeof *R);
  *out = NULL;
  memset(r, 0, sizeof *r);
  if (!R) return -AG_ENOMEM;
  R->tl = tl, R->p = p, R->r = r, R->structural = p->structural;
  r->op_start = malloc((n + 1) * sizeof *r->op_start);
  r->op_end = malloc((n + 1) * sizeof *r->op_end);
  r->op_alt = malloc((n + 1) * sizeof *r->op_alt);
  r->shift_at = malloc((tl->ncalls + 1) * sizeof *r->shift_at);
  r->shift = malloc((tl->ncalls + 1) * sizeof *r->shift);
  R->stream_end = calloc((size_t)tl->nstreams + 1, sizeof *R->stream_end);
  R->call_start = malloc((tl->ncalls + 1) * sizeof *R->call_start);
  if (!r->op_start || !r->op_end || !r->op_alt || !r->shift_at || !r->shift || !R->stream_end ||
      !R->call_start) {
    ag__tl_stop(R);
    ag__tl_result_free(r);
    return -AG_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) r->op_start[i] = r->op_end[i] = r->op_alt[i] = NOT_YET;
  for (int32_t s = 0; s <= tl->nstreams; s++) R->stream_end[s] = NOT_YET;
  R->device_end = NOT_YET;
  r->end = INT64_MIN;
  *out = R;
  return 0;
}

/* Applies the shift updates due by recorded time t. */
static void due(run_t *R, int64_t t) {
  while (R->h.n && R->h.v[0].key <= t) {
    upd_t u = heap_pop(&R->h);
    R->shift = u.shift;
    R->r->shift_at[R->r->nshift] = u.key, R->r->shift[R->r->nshift++] = u.shift;
  }
}

int64_t ag__tl_clock(run_t *R, int64_t t) {
  due(R, t);
  return t + R->shift;
}

int64_t ag__tl_stream_end(const run_t *R, int32_t s) {
  return s >= 0 && s < R->tl->nstreams ? R->stream_end[s] : NOT_YET;
}

int ag__tl_call(run_t *R) {
  const ag_tl_t *tl = R->tl;
  const ag_tl_plan_t *p = R->p;
  ag_tl_result_t *r = R->r;
  size_t c = R->next;
  int rc;
  if (c >= tl->ncalls) return -AG_EINVAL;
  const ag_tl_call_t *k = &tl->calls[c];
  due(R, k->ts);
  int64_t t0 = k->ts + R->shift, cur = t0, end, main_cur = 0;
  int side = 0;
  R->call_start[c] = t0;
  int fixed = p->call_cost[c] >= 0;
  if (fixed) cur += p->call_cost[c];
  for (; R->a < p->n && p->acts[R->a].call == (int32_t)c; R->a++) {
    const ag_tl_act_t *x = &p->acts[R->a];
    if (x->kind == AG_TL_AT) {
      if (!side) main_cur = cur;
      side = 1;
      cur = x->ns + R->shift;
    } else if (x->kind == AG_TL_MAIN) {
      if (side) cur = main_cur;
      side = 0;
    } else if (x->kind == AG_TL_COST) {
      cur += x->ns;
    } else if ((rc = issue(R, x->op, cur, x->node, p->node_gap)) != 0) {
      return rc;
    }
  }
  if (side) cur = main_cur;
  if (R->a < p->n && p->acts[R->a].call < (int32_t)c) return -AG_EINVAL; /* out of order */
  if (fixed) {
    end = cur;
  } else {
    int64_t d = sync_end(R, k);
    if (k->wait_op >= 0) {
      /* It waited in the recording: its own cost, or what it waits for. */
      int64_t w = wait_end(R, k);
      int64_t wake = p->structural ? tl->wake : k->wake;
      end = cur + k->own;
      if (w != NOT_YET && w + wake > end) end = w + wake;
    } else {
      end = cur + k->dur;
    }
    /* A synchronisation waits for whatever is queued now, even where it did not wait in the
     * recording (under the library, what it flushed). */
    if (d != NOT_YET && d > end) end = d;
  }
  if (end > r->end) r->end = end;
  if (heap_push(&R->h, (upd_t){k->ts + k->dur, end - (k->ts + k->dur)})) return -AG_ENOMEM;
  R->next++;
  return 0;
}

int ag__tl_finish(run_t *R) {
  ag_tl_result_t *r = R->r;
  int rc = 0;
  /* Every call run, every action taken, every operation submitted once. */
  if (R->next != R->tl->ncalls || R->a != R->p->n) rc = -AG_EINVAL;
  due(R, INT64_MAX);
  for (size_t i = 0; !rc && i < R->tl->nops; i++) {
    if (r->op_end[i] == NOT_YET) rc = -AG_EINVAL;
    else if (r->op_end[i] > r->end) r->end = r->op_end[i];
  }
  ag__tl_stop(R);
  if (rc) ag__tl_result_free(r);
  return rc;
}

int ag__tl_run(const ag_tl_t *tl, const ag_tl_plan_t *p, ag_tl_result_t *r) {
  run_t *R;
  int rc = ag__tl_start(tl, p, r, &R);
  while (!rc && R->next < tl->ncalls) rc = ag__tl_call(R);
  if (rc) {
    ag__tl_stop(R);
    ag__tl_result_free(r);
    return rc;
  }
  return ag__tl_finish(R);
}

int64_t ag__tl_host_time(const ag_tl_result_t *r, int64_t t) {
  size_t lo = 0, hi = r->nshift;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->shift_at[mid] <= t) lo = mid + 1; else hi = mid;
  }
  return t + (lo ? r->shift[lo - 1] : 0);
}

void ag__tl_result_free(ag_tl_result_t *r) {
  free(r->op_start), free(r->op_end), free(r->op_alt), free(r->shift_at), free(r->shift);
  memset(r, 0, sizeof *r);
}
