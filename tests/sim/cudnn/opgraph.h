/* opgraph.h — the simulated cuDNN's interpreter of backend operation graphs: what one launch of
 * cudnnsim_opgraph computes, shared by the device code (kernels.cu) and its CPU twin (twins.c).
 *
 * opgraph.c compiles a finalized operation graph into an og_graph_t: up to OG_MAX_T tensors of up
 * to 4 dimensions (fewer are padded in front with 1s) and up to OG_MAX_OPS operations in an order
 * where every operation follows the producers of its inputs. The whole description travels by
 * value as the kernel's first argument, the variant pack's device pointers and by-value scalars
 * filled in at cudnnBackendExecute, the workspace pointer as the second argument. One thread
 * runs the operations one after the other (the launch is one block; only thread 0 works), so no
 * result depends on scheduling.
 *
 * Tensors live in one of three places: memory (a pointer of the variant pack, addressed through
 * the declared strides, float, half or bfloat16 — read widened exactly, written rounded to
 * nearest even once), virtual (intermediates, held in float, densely in row-major order of their
 * dimensions in the workspace, whatever their declared type and strides) or by value (one float
 * read from the caller's host pointer at execution). An input dimension of 1 broadcasts over the
 * output's.
 *
 * Exact arithmetic (float, every product and sum rounded separately; -ffp-contract=off and
 * -fmad=false as for the other kernels):
 *   pointwise  y = f(x) or f(x, b): ADD x+b, SUB x-b, MUL x*b, DIV x/b, MAX, MIN (x when equal),
 *              EXP expf, LOG logf, NEG -x, RECIPROCAL 1/x, IDENTITY x
 *   matmul     c[.., m, n]: acc = 0; for k ascending acc = acc + a[.., m, k] * b[.., k, n]
 *   reduction  y = the ADD (acc = 0, acc = acc + x), MAX or MIN of the x elements that
 *              broadcast onto y, in row-major order of x
 *   reshape    y is x's memory seen through y's declared dimensions and strides: element i of y
 *              is the element of x whose declared offset equals i's declared offset in y (a
 *              transpose when the strides are swapped)
 *   band mask  y[.., r, c] = r >= c ? x[.., r, c] : fill (the causal mask, top-left aligned)
 *   sdpa fwd   per (batch, head, query row r), head h reading key/value head h / (H / Hkv):
 *              s_j = (sum over d ascending of q[r, d] * k[j, d]) * scale; masked s_j = fill;
 *              m = max s_j; p_j = expf(s_j - m); l = sum over j ascending of p_j;
 *              o[r, e] = (sum over j ascending of p_j * v[j, e]) / l;
 *              stats[r] = m + logf(l) (the log-sum-exp of the row, natural logarithm);
 *              a row whose every score is -inf gets o = 0 and stats = -inf.
 */
#ifndef CUDNNSIM_OPGRAPH_H
#define CUDNNSIM_OPGRAPH_H

#include "cudnnsim.h"

#define CUDNNSIM_K_OPGRAPH "cudnnsim_opgraph"

#define OG_MAX_T 32
#define OG_MAX_OPS 24
#define OG_DIMS 4

enum { OG_MEM = 0, OG_VIRT = 1, OG_VALUE = 2 };

enum { OG_POINTWISE, OG_MATMUL, OG_REDUCTION, OG_RESHAPE, OG_BAND_MASK, OG_SDPA_FWD };

/* Pointwise modes and reduction operators: cuDNN's own values (cudnnPointwiseMode_t and
 * cudnnReduceTensorOp_t), repeated here for the device code, which does not include cudnn.h. */
enum {
  OG_PW_ADD = 0, OG_PW_MUL = 1, OG_PW_MIN = 2, OG_PW_MAX = 3, OG_PW_DIV = 6, OG_PW_SUB = 9,
  OG_PW_EXP = 13, OG_PW_LOG = 15, OG_PW_NEG = 16, OG_PW_IDENTITY = 21, OG_PW_RECIPROCAL = 23
};
enum { OG_RED_ADD = 0, OG_RED_MIN = 2, OG_RED_MAX = 3 };

typedef struct {
  int dims[OG_DIMS];
  int strides[OG_DIMS]; /* declared, in elements */
  int dtype;            /* CUDNNSIM_F32, _F16 or _BF16 (memory tensors) */
  int where;            /* OG_MEM, OG_VIRT or OG_VALUE */
  long long off;        /* virtual: its first float in the workspace */
  float value;          /* by value: the scalar */
  void *ptr;            /* memory: the device pointer */
} og_tensor_t;

/* One operation; t holds tensor indices (-1 for none):
 *   pointwise x, b, y   matmul a, b, c   reduction x, y   reshape x, y   band mask x, fill, y
 *   sdpa fwd  q, k, v, o, scale, stats, fill (fill -1: no mask)
 * mode is the pointwise mode or the reduction operator. */
typedef struct {
  int kind, mode;
  short t[8];
} og_op_t;

typedef struct {
  int nt, nops;
  og_tensor_t t[OG_MAX_T];
  og_op_t op[OG_MAX_OPS];
} og_graph_t;

CUDNNSIM_FN float og_neg_inf(void) {
#ifdef __CUDACC__
  return __int_as_float(0xff800000);
#else
  return -INFINITY;
#endif
}

CUDNNSIM_FN long long og_count(const og_tensor_t *t) {
  return (long long)t->dims[0] * t->dims[1] * t->dims[2] * t->dims[3];
}

/* Index i (row-major over dims) into its coordinates. */
CUDNNSIM_FN void og_coords(const int *dims, long long i, int *c) {
  for (int d = OG_DIMS - 1; d >= 0; d--) {
    c[d] = (int)(i % dims[d]);
    i /= dims[d];
  }
}

/* Tensor t's element at coordinates c of the output it feeds (dimensions of 1 broadcast). */
CUDNNSIM_FN float og_ld(const og_graph_t *g, const float *ws, int ti, const int *c) {
  const og_tensor_t *t = &g->t[ti];
  if (t->where == OG_VALUE) return t->value;
  long long off = 0;
  for (int d = 0; d < OG_DIMS; d++) {
    int x = t->dims[d] == 1 ? 0 : c[d];
    off = t->where == OG_VIRT ? off * t->dims[d] + x : off + (long long)x * t->strides[d];
  }
  return t->where == OG_VIRT ? ws[t->off + off] : cudnnsim_ld(t->ptr, t->dtype, off);
}

CUDNNSIM_FN void og_st(const og_graph_t *g, float *ws, int ti, const int *c, float v) {
  const og_tensor_t *t = &g->t[ti];
  long long off = 0;
  for (int d = 0; d < OG_DIMS; d++)
    off = t->where == OG_VIRT ? off * t->dims[d] + c[d] : off + (long long)c[d] * t->strides[d];
  if (t->where == OG_VIRT) ws[t->off + off] = v;
  else cudnnsim_st(t->ptr, t->dtype, off, v);
}

CUDNNSIM_FN float og_pointwise(int mode, float x, float b) {
  switch (mode) {
  case OG_PW_ADD: return x + b;
  case OG_PW_SUB: return x - b;
  case OG_PW_MUL: return x * b;
  case OG_PW_DIV: return x / b;
  case OG_PW_MAX: return b > x ? b : x;
  case OG_PW_MIN: return b < x ? b : x;
  case OG_PW_EXP: return expf(x);
  case OG_PW_LOG: return logf(x);
  case OG_PW_NEG: return -x;
  case OG_PW_RECIPROCAL: return 1.0f / x;
  default: return x; /* IDENTITY */
  }
}

CUDNNSIM_FN void og_run_pointwise(const og_graph_t *g, float *ws, const og_op_t *o) {
  const og_tensor_t *y = &g->t[o->t[2]];
  int c[OG_DIMS];
  for (long long i = 0; i < og_count(y); i++) {
    og_coords(y->dims, i, c);
    float x = og_ld(g, ws, o->t[0], c), b = o->t[1] >= 0 ? og_ld(g, ws, o->t[1], c) : 0.0f;
    og_st(g, ws, o->t[2], c, og_pointwise(o->mode, x, b));
  }
}

CUDNNSIM_FN void og_run_matmul(const og_graph_t *g, float *ws, const og_op_t *o) {
  const og_tensor_t *cd = &g->t[o->t[2]];
  int kdim = g->t[o->t[0]].dims[3];
  int c[OG_DIMS], ca[OG_DIMS], cb[OG_DIMS];
  for (long long i = 0; i < og_count(cd); i++) {
    og_coords(cd->dims, i, c);
    ca[0] = cb[0] = c[0], ca[1] = cb[1] = c[1];
    ca[2] = c[2], cb[3] = c[3];
    float acc = 0.0f;
    for (int k = 0; k < kdim; k++) {
      ca[3] = k, cb[2] = k;
      acc = acc + og_ld(g, ws, o->t[0], ca) * og_ld(g, ws, o->t[1], cb);
    }
    og_st(g, ws, o->t[2], c, acc);
  }
}

CUDNNSIM_FN void og_run_reduction(const og_graph_t *g, float *ws, const og_op_t *o) {
  const og_tensor_t *x = &g->t[o->t[0]], *y = &g->t[o->t[1]];
  int cx[OG_DIMS], cy[OG_DIMS], box[OG_DIMS];
  for (int d = 0; d < OG_DIMS; d++) box[d] = y->dims[d] == 1 ? x->dims[d] : 1;
  long long n = (long long)box[0] * box[1] * box[2] * box[3];
  for (long long i = 0; i < og_count(y); i++) {
    og_coords(y->dims, i, cy);
    float acc = o->mode == OG_RED_ADD ? 0.0f : o->mode == OG_RED_MAX ? og_neg_inf() : -og_neg_inf();
    for (long long j = 0; j < n; j++) {
      og_coords(box, j, cx);
      for (int d = 0; d < OG_DIMS; d++) cx[d] += box[d] == 1 ? cy[d] : 0;
      float v = og_ld(g, ws, o->t[0], cx);
      if (o->mode == OG_RED_ADD) acc = acc + v;
      else if (v != v || (o->mode == OG_RED_MAX ? v > acc : v < acc)) acc = v;
    }
    og_st(g, ws, o->t[1], cy, acc);
  }
}

/* Reshape: y's element at its declared offset is x's element at the same declared offset.
 * opgraph.c checks that both layouts are dense (every offset below the count is one element), so
 * the offset decomposes over x's dimensions in decreasing order of stride. */
CUDNNSIM_FN void og_run_reshape(const og_graph_t *g, float *ws, const og_op_t *o) {
  const og_tensor_t *x = &g->t[o->t[0]], *y = &g->t[o->t[1]];
  int cx[OG_DIMS], cy[OG_DIMS];
  for (long long i = 0; i < og_count(y); i++) {
    og_coords(y->dims, i, cy);
    long long off = 0;
    for (int d = 0; d < OG_DIMS; d++) off += (long long)cy[d] * y->strides[d];
    int used[OG_DIMS] = {0, 0, 0, 0};
    for (int n = 0; n < OG_DIMS; n++) {
      int best = -1;
      for (int d = 0; d < OG_DIMS; d++)
        if (!used[d] && (best < 0 || x->strides[d] > x->strides[best])) best = d;
      used[best] = 1;
      long long s = x->dims[best] == 1 ? 0 : x->strides[best];
      cx[best] = s ? (int)(off / s) : 0;
      off -= (long long)cx[best] * s;
    }
    og_st(g, ws, o->t[1], cy, og_ld(g, ws, o->t[0], cx));
  }
}

CUDNNSIM_FN void og_run_band_mask(const og_graph_t *g, float *ws, const og_op_t *o) {
  const og_tensor_t *y = &g->t[o->t[2]];
  int c[OG_DIMS];
  for (long long i = 0; i < og_count(y); i++) {
    og_coords(y->dims, i, c);
    float v = c[2] >= c[3] ? og_ld(g, ws, o->t[0], c) : og_ld(g, ws, o->t[1], c);
    og_st(g, ws, o->t[2], c, v);
  }
}

/* The fused forward attention (see the top of this file): the scores are recomputed in each of
 * the three passes over a row rather than stored, so it needs no workspace. */
CUDNNSIM_FN float og_sdpa_score(const og_graph_t *g, float *ws, const og_op_t *o, const int *cq,
                                int kh, int j, float scale) {
  const og_tensor_t *q = &g->t[o->t[0]];
  int ck[OG_DIMS] = {cq[0], kh, j, 0}, cqd[OG_DIMS] = {cq[0], cq[1], cq[2], 0};
  float acc = 0.0f;
  for (int d = 0; d < q->dims[3]; d++) {
    ck[3] = cqd[3] = d;
    acc = acc + og_ld(g, ws, o->t[0], cqd) * og_ld(g, ws, o->t[1], ck);
  }
  acc = acc * scale;
  if (o->t[6] >= 0 && !(cq[2] >= j)) acc = og_ld(g, ws, o->t[6], cq);
  return acc;
}

CUDNNSIM_FN void og_run_sdpa_fwd(const og_graph_t *g, float *ws, const og_op_t *o) {
  const og_tensor_t *q = &g->t[o->t[0]], *k = &g->t[o->t[1]], *out = &g->t[o->t[3]];
  int rows[OG_DIMS] = {q->dims[0], q->dims[1], q->dims[2], 1};
  int sk = k->dims[2], dv = out->dims[3], group = q->dims[1] / k->dims[1];
  float scale = og_ld(g, ws, o->t[4], rows); /* by value: the coordinates do not matter */
  int c[OG_DIMS];
  for (long long r = 0; r < og_count(q) / q->dims[3]; r++) {
    og_coords(rows, r, c);
    int kh = c[1] / group;
    float m = og_neg_inf();
    for (int j = 0; j < sk; j++) {
      float s = og_sdpa_score(g, ws, o, c, kh, j, scale);
      if (s > m || s != s) m = s;
    }
    float l = 0.0f;
    if (m != og_neg_inf())
      for (int j = 0; j < sk; j++) l = l + expf(og_sdpa_score(g, ws, o, c, kh, j, scale) - m);
    int co[OG_DIMS] = {c[0], c[1], c[2], 0}, cv[OG_DIMS] = {c[0], kh, 0, 0};
    for (int e = 0; e < dv; e++) {
      float acc = 0.0f;
      cv[3] = co[3] = e;
      if (m != og_neg_inf()) {
        for (int j = 0; j < sk; j++) {
          cv[2] = j;
          acc = acc + expf(og_sdpa_score(g, ws, o, c, kh, j, scale) - m) * og_ld(g, ws, o->t[2], cv);
        }
        acc = acc / l;
      }
      og_st(g, ws, o->t[3], co, acc);
    }
    if (o->t[5] >= 0) og_st(g, ws, o->t[5], c, m == og_neg_inf() ? m : m + logf(l));
  }
}

/* Runs the graph's operations in order (one thread). */
CUDNNSIM_FN void og_run(const og_graph_t *g, float *ws) {
  for (int i = 0; i < g->nops; i++) {
    const og_op_t *o = &g->op[i];
    switch (o->kind) {
    case OG_POINTWISE: og_run_pointwise(g, ws, o); break;
    case OG_MATMUL: og_run_matmul(g, ws, o); break;
    case OG_REDUCTION: og_run_reduction(g, ws, o); break;
    case OG_RESHAPE: og_run_reshape(g, ws, o); break;
    case OG_BAND_MASK: og_run_band_mask(g, ws, o); break;
    default: og_run_sdpa_fwd(g, ws, o); break;
    }
  }
}

#endif
