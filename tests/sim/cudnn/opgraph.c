/* opgraph.c — operation graphs of the simulated cuDNN's backend API other than one convolution:
 * compiled at the graph's finalization for the interpreter of opgraph.h, executed as one launch.
 *
 * Operations: POINTWISE (ADD, SUB, MUL, DIV, MAX, MIN, EXP, LOG, NEG, RECIPROCAL, IDENTITY, with
 * alpha1 and alpha2 of 1), MATMUL (float compute, batch dimensions broadcast), REDUCTION (ADD, MAX,
 * MIN, float compute), RESHAPE (dense layouts: a transpose or a view), the diagonal band mask
 * with the comparison GE and no bounds (the causal mask), and the fused forward attention
 * (OPERATION_SDPA_FWD) with an optional causal score modifier and softmax statistics — the
 * graphs cudnn_frontend builds for PyTorch's cuDNN attention, forward and backward. Tensors of
 * 1 to 4 dimensions, float, half or bfloat16 in memory, virtual (held in float in the workspace),
 * or by value (one float). Anything else is refused with a NOT_SUPPORTED status rather than
 * computed approximately: other modes or operators, attributes the interpreter does not read,
 * other data types, more than OG_MAX_T tensors or OG_MAX_OPS operations.
 *
 * Statuses: BAD_PARAM for a missing operand, a descriptor of the wrong type, shapes that do not
 * broadcast, a tensor produced twice, a virtual tensor read but never produced, two descriptors
 * of one uid that differ, a cycle; BAD_PARAM_NOT_FINALIZED for an unfinalized operand.
 */
#include "backend.h"

/* The graph being compiled. */
struct og_build {
  og_graph_t g;
  int64_t uid[OG_MAX_T];
  bk_tensor_t t[OG_MAX_T];
  int producer[OG_MAX_T]; /* the op writing each tensor, -1 for none */
  og_op_t ops[OG_MAX_OPS];
  int nops;
};

/* Nonzero when every attribute stored on b is one of the n names in `allowed`. */
static int only_attrs(const bk_desc_t *b, const cudnnBackendAttributeName_t *allowed, int n) {
  for (int i = 0; i < b->nattrs; i++) {
    int ok = 0;
    for (int j = 0; j < n; j++) ok |= b->attrs[i].name == allowed[j];
    if (!ok) return 0;
  }
  return 1;
}

/* The tensor descriptor `name` of op d: its index in the graph (added at its first use), or a
 * negative status. `optional` answers -1 when it is absent. */
static int tensor_of(og_build_t *gb, bk_desc_t *d, cudnnBackendAttributeName_t name, int optional,
                     cudnnStatus_t *st) {
  bk_attr_t *a = attr_find(d, name);
  if (!a && optional) return -1;
  bk_desc_t *t = get_desc(d, name, 0);
  if (!a || !t || a->count != 1 || t->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) {
    *st = CUDNN_STATUS_BAD_PARAM;
    return -2;
  }
  if (!t->finalized) {
    *st = CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    return -2;
  }
  const bk_tensor_t *bt = &t->tensor;
  og_graph_t *g = &gb->g;
  for (int i = 0; i < g->nt; i++) {
    if (gb->uid[i] != bt->uid) continue;
    const bk_tensor_t *o = &gb->t[i];
    if (o->dtype != bt->dtype || o->nbdims != bt->nbdims || o->virt != bt->virt ||
        o->byval != bt->byval || memcmp(o->dims, bt->dims, sizeof o->dims[0] * (size_t)o->nbdims) ||
        memcmp(o->strides, bt->strides, sizeof o->strides[0] * (size_t)o->nbdims)) {
      *st = CUDNN_STATUS_BAD_PARAM; /* one uid, two tensors */
      return -2;
    }
    return i;
  }
  if (bt->nbdims > OG_DIMS) {
    *st = CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
    return -2;
  }
  if (g->nt == OG_MAX_T) {
    *st = CUDNN_STATUS_NOT_SUPPORTED;
    return -2;
  }
  og_tensor_t *ot = &g->t[g->nt];
  memset(ot, 0, sizeof *ot);
  int pad = OG_DIMS - bt->nbdims;
  long long count = 1;
  for (int i = 0; i < OG_DIMS; i++) {
    int64_t dim = i < pad ? 1 : bt->dims[i - pad], stride = i < pad ? 1 : bt->strides[i - pad];
    if (dim > 0x7fffffff || stride > 0x7fffffff) {
      *st = CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
      return -2;
    }
    ot->dims[i] = (int)dim, ot->strides[i] = (int)stride;
    count *= dim;
    if (count > 0x7fffffffLL) {
      *st = CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
      return -2;
    }
  }
  if (bt->dtype == CUDNN_DATA_FLOAT) ot->dtype = CUDNNSIM_F32;
  else if (bt->dtype == CUDNN_DATA_HALF && !bt->byval) ot->dtype = CUDNNSIM_F16;
  else if (bt->dtype == CUDNN_DATA_BFLOAT16 && !bt->byval) ot->dtype = CUDNNSIM_BF16;
  else {
    *st = CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
    return -2;
  }
  if (bt->byval && count != 1) {
    *st = CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
    return -2;
  }
  ot->where = bt->byval ? OG_VALUE : bt->virt ? OG_VIRT : OG_MEM;
  gb->t[g->nt] = *bt;
  gb->uid[g->nt] = bt->uid;
  gb->producer[g->nt] = -1;
  return g->nt++;
}

#define TENSOR(var, desc, name, optional)                                                  \
  int var = tensor_of(gb, desc, name, optional, &st);                                      \
  if (var == -2) return st

/* Records that op `op` writes tensor i. */
static cudnnStatus_t produces(og_build_t *gb, int i, int op) {
  if (gb->g.t[i].where == OG_VALUE || gb->producer[i] >= 0) return CUDNN_STATUS_BAD_PARAM;
  gb->producer[i] = op;
  return CUDNN_STATUS_SUCCESS;
}

/* Nonzero when every dimension of input i is 1 or the output o's. */
static int broadcasts(const og_graph_t *g, int i, int o) {
  for (int d = 0; d < OG_DIMS; d++)
    if (g->t[i].dims[d] != 1 && g->t[i].dims[d] != g->t[o].dims[d]) return 0;
  return 1;
}

/* A scaling factor attribute that must be 1 when present (FLOAT or DOUBLE). */
static int unit_or_absent(bk_desc_t *d, cudnnBackendAttributeName_t name) {
  bk_attr_t *a = attr_find(d, name);
  return !a || get_scale(d, name, 0.0f) == 1.0f;
}

/* A descriptor operand of op d of type `type`, finalized; NULL with *st set otherwise. */
static bk_desc_t *operand(bk_desc_t *d, cudnnBackendAttributeName_t name,
                          cudnnBackendDescriptorType_t type, cudnnStatus_t *st) {
  bk_desc_t *o = get_desc(d, name, 0);
  if (!o || o->type != type) {
    *st = CUDNN_STATUS_BAD_PARAM;
    return NULL;
  }
  if (!o->finalized) {
    *st = CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    return NULL;
  }
  return o;
}

static int compute_float(bk_desc_t *d, cudnnBackendAttributeName_t name) {
  int ct = CUDNN_DATA_FLOAT;
  if (attr_find(d, name) && !get_enum(d, name, CUDNN_TYPE_DATA_TYPE, &ct)) return 0;
  return ct == CUDNN_DATA_FLOAT;
}

static cudnnStatus_t add_pointwise(og_build_t *gb, bk_desc_t *d, og_op_t *o) {
  static const cudnnBackendAttributeName_t ok[] = {
      CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
      CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
      CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2};
  static const cudnnBackendAttributeName_t pw_ok[] = {CUDNN_ATTR_POINTWISE_MODE,
                                                      CUDNN_ATTR_POINTWISE_MATH_PREC};
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  bk_desc_t *pw = operand(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &st);
  if (!pw) return st;
  int mode = 0;
  if (!get_enum(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode)) return CUDNN_STATUS_BAD_PARAM;
  if (!only_attrs(d, ok, 6) || !only_attrs(pw, pw_ok, 2) || !compute_float(pw, CUDNN_ATTR_POINTWISE_MATH_PREC) ||
      !unit_or_absent(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1) ||
      !unit_or_absent(d, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2))
    return CUDNN_STATUS_NOT_SUPPORTED;
  int binary;
  switch (mode) {
  case OG_PW_ADD: case OG_PW_SUB: case OG_PW_MUL: case OG_PW_DIV: case OG_PW_MAX: case OG_PW_MIN:
    binary = 1;
    break;
  case OG_PW_EXP: case OG_PW_LOG: case OG_PW_NEG: case OG_PW_RECIPROCAL: case OG_PW_IDENTITY:
    binary = 0;
    break;
  default:
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  TENSOR(x, d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, 0);
  TENSOR(b, d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, 1);
  TENSOR(y, d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, 0);
  if ((b >= 0) != binary || !broadcasts(&gb->g, x, y) || (b >= 0 && !broadcasts(&gb->g, b, y)))
    return CUDNN_STATUS_BAD_PARAM;
  o->kind = OG_POINTWISE, o->mode = mode;
  o->t[0] = (short)x, o->t[1] = (short)b, o->t[2] = (short)y;
  return produces(gb, y, gb->nops);
}

static cudnnStatus_t add_matmul(og_build_t *gb, bk_desc_t *d, og_op_t *o) {
  static const cudnnBackendAttributeName_t ok[] = {
      CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
      CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_ATTR_OPERATION_MATMUL_DESC};
  static const cudnnBackendAttributeName_t mm_ok[] = {CUDNN_ATTR_MATMUL_COMP_TYPE};
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  bk_desc_t *mm = operand(d, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &st);
  if (!mm) return st;
  if (!only_attrs(d, ok, 4) || !only_attrs(mm, mm_ok, 1) || !compute_float(mm, CUDNN_ATTR_MATMUL_COMP_TYPE))
    return CUDNN_STATUS_NOT_SUPPORTED;
  TENSOR(a, d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, 0);
  TENSOR(b, d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, 0);
  TENSOR(c, d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, 0);
  const og_tensor_t *ta = &gb->g.t[a], *tb = &gb->g.t[b], *tc = &gb->g.t[c];
  if (ta->dims[2] != tc->dims[2] || tb->dims[3] != tc->dims[3] || ta->dims[3] != tb->dims[2])
    return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 2; i++)
    if ((ta->dims[i] != 1 && ta->dims[i] != tc->dims[i]) || (tb->dims[i] != 1 && tb->dims[i] != tc->dims[i]))
      return CUDNN_STATUS_BAD_PARAM;
  o->kind = OG_MATMUL;
  o->t[0] = (short)a, o->t[1] = (short)b, o->t[2] = (short)c;
  return produces(gb, c, gb->nops);
}

static cudnnStatus_t add_reduction(og_build_t *gb, bk_desc_t *d, og_op_t *o) {
  static const cudnnBackendAttributeName_t ok[] = {CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
                                                   CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
                                                   CUDNN_ATTR_OPERATION_REDUCTION_DESC};
  static const cudnnBackendAttributeName_t red_ok[] = {
      CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC};
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  bk_desc_t *red = operand(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &st);
  if (!red) return st;
  int mode = 0;
  if (!get_enum(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode))
    return CUDNN_STATUS_BAD_PARAM;
  if (!only_attrs(d, ok, 3) || !only_attrs(red, red_ok, 3) || !compute_float(red, CUDNN_ATTR_REDUCTION_COMP_TYPE) ||
      (mode != OG_RED_ADD && mode != OG_RED_MAX && mode != OG_RED_MIN))
    return CUDNN_STATUS_NOT_SUPPORTED;
  TENSOR(x, d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, 0);
  TENSOR(y, d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, 0);
  if (!broadcasts(&gb->g, y, x)) return CUDNN_STATUS_BAD_PARAM;
  o->kind = OG_REDUCTION, o->mode = mode;
  o->t[0] = (short)x, o->t[1] = (short)y;
  return produces(gb, y, gb->nops);
}

/* Nonzero when tensor t's declared layout is dense: ordered by decreasing stride, each stride
 * is the product of the dimensions after it, so its offsets are exactly 0 .. count - 1. */
static int dense(const og_tensor_t *t) {
  int used[OG_DIMS] = {0, 0, 0, 0};
  long long expect = og_count(t);
  for (int n = 0; n < OG_DIMS; n++) {
    int best = -1;
    for (int d = 0; d < OG_DIMS; d++)
      if (!used[d] && (best < 0 || t->strides[d] > t->strides[best])) best = d;
    used[best] = 1;
    if (t->dims[best] == 1) continue;
    expect /= t->dims[best];
    if (t->strides[best] != expect) return 0;
  }
  return 1;
}

static cudnnStatus_t add_reshape(og_build_t *gb, bk_desc_t *d, og_op_t *o) {
  static const cudnnBackendAttributeName_t ok[] = {CUDNN_ATTR_OPERATION_RESHAPE_XDESC,
                                                   CUDNN_ATTR_OPERATION_RESHAPE_YDESC, BK_ATTR_RESHAPE_MODE};
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  int mode = 0;
  if (attr_find(d, BK_ATTR_RESHAPE_MODE) && !get_enum(d, BK_ATTR_RESHAPE_MODE, BK_TYPE_RESHAPE_MODE, &mode))
    return CUDNN_STATUS_BAD_PARAM;
  if (!only_attrs(d, ok, 3) || mode != 0) return CUDNN_STATUS_NOT_SUPPORTED;
  TENSOR(x, d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, 0);
  TENSOR(y, d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, 0);
  const og_tensor_t *tx = &gb->g.t[x], *ty = &gb->g.t[y];
  if (og_count(tx) != og_count(ty)) return CUDNN_STATUS_BAD_PARAM;
  if (!dense(tx) || !dense(ty) || tx->where == OG_VALUE) return CUDNN_STATUS_NOT_SUPPORTED_LAYOUT;
  o->kind = OG_RESHAPE;
  o->t[0] = (short)x, o->t[1] = (short)y;
  return produces(gb, y, gb->nops);
}

/* Checks a causal band mask (GE, no bounds) and registers its by-value fill. When inner (the
 * score modifier of a fused attention), x and y exist only inside that operation: they are
 * checked (virtual, of the uids the attention names) but not registered; else they are. */
static cudnnStatus_t band_mask_operands(og_build_t *gb, bk_desc_t *d, int inner, const int64_t *uids,
                                        int *x, int *fill, int *y) {
  static const cudnnBackendAttributeName_t ok[] = {BK_ATTR_BAND_MASK_X, BK_ATTR_BAND_MASK_FILL,
                                                   BK_ATTR_BAND_MASK_Y, BK_ATTR_BAND_MASK_COMPARISON};
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  int cmp = 0;
  if (!get_enum(d, BK_ATTR_BAND_MASK_COMPARISON, CUDNN_TYPE_POINTWISE_MODE, &cmp)) return CUDNN_STATUS_BAD_PARAM;
  if (!only_attrs(d, ok, 4) || cmp != CUDNN_POINTWISE_CMP_GE) return CUDNN_STATUS_NOT_SUPPORTED;
  if (inner) {
    bk_desc_t *tx = operand(d, BK_ATTR_BAND_MASK_X, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &st);
    bk_desc_t *ty = tx ? operand(d, BK_ATTR_BAND_MASK_Y, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &st) : NULL;
    if (!ty) return st;
    if (tx->tensor.uid != uids[0] || ty->tensor.uid != uids[1]) return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
    if (!tx->tensor.virt || !ty->tensor.virt) return CUDNN_STATUS_NOT_SUPPORTED;
    if (tx->tensor.nbdims != ty->tensor.nbdims ||
        memcmp(tx->tensor.dims, ty->tensor.dims, sizeof tx->tensor.dims[0] * (size_t)tx->tensor.nbdims))
      return CUDNN_STATUS_BAD_PARAM;
    *x = *y = -1;
  } else {
    if ((*x = tensor_of(gb, d, BK_ATTR_BAND_MASK_X, 0, &st)) == -2 ||
        (*y = tensor_of(gb, d, BK_ATTR_BAND_MASK_Y, 0, &st)) == -2)
      return st;
    if (memcmp(gb->g.t[*x].dims, gb->g.t[*y].dims, sizeof gb->g.t[*x].dims)) return CUDNN_STATUS_BAD_PARAM;
  }
  if ((*fill = tensor_of(gb, d, BK_ATTR_BAND_MASK_FILL, 0, &st)) == -2) return st;
  if (gb->g.t[*fill].where != OG_VALUE) return CUDNN_STATUS_NOT_SUPPORTED;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t add_band_mask(og_build_t *gb, bk_desc_t *d, og_op_t *o) {
  int x = -1, fill = -1, y = -1;
  cudnnStatus_t st = band_mask_operands(gb, d, 0, NULL, &x, &fill, &y);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  o->kind = OG_BAND_MASK;
  o->t[0] = (short)x, o->t[1] = (short)fill, o->t[2] = (short)y;
  return produces(gb, y, gb->nops);
}

/* The fused forward attention, with its score modifier (a sub-graph of one causal band mask
 * from the modifier's input to its output) and its softmax statistics. The modifier's and the
 * statistics node's virtual tensors exist only inside the fused operation: they are checked,
 * not given workspace. */
static cudnnStatus_t add_sdpa_fwd(og_build_t *gb, bk_desc_t *d, og_op_t *o) {
  static const cudnnBackendAttributeName_t ok[] = {
      CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC,
      CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC,
      CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC,
      BK_ATTR_SDPA_FWD_SCORE_GRAPH, BK_ATTR_SDPA_FWD_SCORE_IN_UID, BK_ATTR_SDPA_FWD_SCORE_OUT_UID,
      BK_ATTR_SDPA_FWD_SOFTMAX_STATS};
  static const cudnnBackendAttributeName_t stats_ok[] = {BK_ATTR_SDPA_STATS_X, BK_ATTR_SDPA_STATS_Y,
                                                         BK_ATTR_SDPA_STATS_STATS};
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  if (!only_attrs(d, ok, 10)) return CUDNN_STATUS_NOT_SUPPORTED;
  TENSOR(q, d, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, 0);
  TENSOR(k, d, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, 0);
  TENSOR(v, d, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, 0);
  TENSOR(out, d, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, 0);
  TENSOR(scale, d, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, 0);
  TENSOR(stats, d, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, 1);
  bk_desc_t *sm = NULL;
  if (attr_find(d, BK_ATTR_SDPA_FWD_SOFTMAX_STATS)) {
    if (stats >= 0) return CUDNN_STATUS_BAD_PARAM; /* statistics given twice */
    if (!(sm = operand(d, BK_ATTR_SDPA_FWD_SOFTMAX_STATS, BK_OPERATION_SDPA_STATS_DESCRIPTOR, &st))) return st;
    if (!only_attrs(sm, stats_ok, 3)) return CUDNN_STATUS_NOT_SUPPORTED;
    bk_desc_t *sx = get_desc(sm, BK_ATTR_SDPA_STATS_X, 0), *sy = get_desc(sm, BK_ATTR_SDPA_STATS_Y, 0);
    if (!sx || !sy || sx->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR || sy->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR)
      return CUDNN_STATUS_BAD_PARAM;
    if (!sx->tensor.virt || !sy->tensor.virt) return CUDNN_STATUS_NOT_SUPPORTED;
    if ((stats = tensor_of(gb, sm, BK_ATTR_SDPA_STATS_STATS, 0, &st)) == -2) return st;
  }
  int fill = -1;
  if (attr_find(d, BK_ATTR_SDPA_FWD_SCORE_GRAPH)) {
    bk_desc_t *sg = operand(d, BK_ATTR_SDPA_FWD_SCORE_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &st);
    if (!sg) return st;
    bk_attr_t *ops = attr_find(sg, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    int64_t in_uid = -1, out_uid = -1;
    if (!get_i64(d, BK_ATTR_SDPA_FWD_SCORE_IN_UID, &in_uid) || !get_i64(d, BK_ATTR_SDPA_FWD_SCORE_OUT_UID, &out_uid) ||
        !ops || ops->type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
      return CUDNN_STATUS_BAD_PARAM;
    bk_desc_t *m = get_desc(sg, CUDNN_ATTR_OPERATIONGRAPH_OPS, 0);
    if (ops->count != 1 || !m || m->type != BK_OPERATION_BAND_MASK_DESCRIPTOR)
      return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
    if (!m->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    int64_t uids[2] = {in_uid, out_uid};
    int mx = -1, my = -1;
    if ((st = band_mask_operands(gb, m, 1, uids, &mx, &fill, &my)) != CUDNN_STATUS_SUCCESS) return st;
  } else if (attr_find(d, BK_ATTR_SDPA_FWD_SCORE_IN_UID) || attr_find(d, BK_ATTR_SDPA_FWD_SCORE_OUT_UID)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  const og_graph_t *g = &gb->g;
  const og_tensor_t *tq = &g->t[q], *tk = &g->t[k], *tv = &g->t[v], *to = &g->t[out];
  if (tq->where != OG_MEM || tk->where != OG_MEM || tv->where != OG_MEM || to->where != OG_MEM ||
      g->t[scale].where != OG_VALUE)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (tq->dims[0] != tk->dims[0] || tv->dims[0] != tk->dims[0] || tv->dims[1] != tk->dims[1] ||
      tv->dims[2] != tk->dims[2] || tq->dims[3] != tk->dims[3] || tq->dims[1] % tk->dims[1] != 0 ||
      to->dims[0] != tq->dims[0] || to->dims[1] != tq->dims[1] || to->dims[2] != tq->dims[2] ||
      to->dims[3] != tv->dims[3])
    return CUDNN_STATUS_BAD_PARAM;
  if (stats >= 0) {
    const og_tensor_t *ts = &g->t[stats];
    if (ts->where != OG_MEM || ts->dtype != CUDNNSIM_F32) return CUDNN_STATUS_NOT_SUPPORTED;
    if (ts->dims[0] != tq->dims[0] || ts->dims[1] != tq->dims[1] || ts->dims[2] != tq->dims[2] || ts->dims[3] != 1)
      return CUDNN_STATUS_BAD_PARAM;
    if ((st = produces(gb, stats, gb->nops)) != CUDNN_STATUS_SUCCESS) return st;
  }
  o->kind = OG_SDPA_FWD;
  o->t[0] = (short)q, o->t[1] = (short)k, o->t[2] = (short)v, o->t[3] = (short)out;
  o->t[4] = (short)scale, o->t[5] = (short)stats, o->t[6] = (short)fill;
  return produces(gb, out, gb->nops);
}

/* Nonzero when every input of op o is ready: produced by an op already placed, or by none. */
static int ready(const og_build_t *gb, const og_op_t *o, const int *placed) {
  for (int j = 0; j < 8; j++) {
    int t = o->t[j];
    if (t < 0) continue;
    int p = gb->producer[t];
    if (p >= 0 && p != (int)(o - gb->ops) && !placed[p]) return 0;
  }
  return 1;
}

cudnnStatus_t og_compile_op(bk_desc_t *d) {
  og_build_t *gb = calloc(1, sizeof *gb);
  if (!gb) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  og_op_t *o = &gb->ops[0];
  memset(o->t, -1, sizeof o->t);
  cudnnStatus_t st;
  switch ((int)d->type) {
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: st = add_pointwise(gb, d, o); break;
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: st = add_matmul(gb, d, o); break;
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: st = add_reduction(gb, d, o); break;
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: st = add_reshape(gb, d, o); break;
  case BK_OPERATION_BAND_MASK_DESCRIPTOR: st = add_band_mask(gb, d, o); break;
  default: st = add_sdpa_fwd(gb, d, o); break;
  }
  if (st != CUDNN_STATUS_SUCCESS) {
    free(gb);
    return st;
  }
  gb->nops = 1;
  og_free_op(d);
  d->ogb = gb;
  return CUDNN_STATUS_SUCCESS;
}

void og_free_op(bk_desc_t *d) {
  free(d->ogb);
  d->ogb = NULL;
}

int og_copy_op(bk_desc_t *dst, const bk_desc_t *src) {
  dst->ogb = NULL;
  if (!src->ogb) return 0;
  if (!(dst->ogb = malloc(sizeof *dst->ogb))) return -1;
  *dst->ogb = *src->ogb;
  return 0;
}

/* Adds op descriptor d's compiled operation to the graph gb: its tensors by uid (one uid must be
 * one tensor), its operation with the tensor indices mapped. */
static cudnnStatus_t merge_op(og_build_t *gb, const og_build_t *one) {
  og_graph_t *g = &gb->g;
  int map[OG_MAX_T];
  for (int i = 0; i < one->g.nt; i++) {
    const bk_tensor_t *bt = &one->t[i];
    int j = 0;
    while (j < g->nt && gb->uid[j] != bt->uid) j++;
    if (j < g->nt) {
      const bk_tensor_t *o = &gb->t[j];
      if (o->dtype != bt->dtype || o->nbdims != bt->nbdims || o->virt != bt->virt || o->byval != bt->byval ||
          memcmp(o->dims, bt->dims, sizeof o->dims[0] * (size_t)o->nbdims) ||
          memcmp(o->strides, bt->strides, sizeof o->strides[0] * (size_t)o->nbdims))
        return CUDNN_STATUS_BAD_PARAM; /* one uid, two tensors */
    } else {
      if (g->nt == OG_MAX_T) return CUDNN_STATUS_NOT_SUPPORTED;
      g->t[j] = one->g.t[i];
      gb->t[j] = *bt;
      gb->uid[j] = bt->uid;
      gb->producer[j] = -1;
      g->nt++;
    }
    map[i] = j;
    if (one->producer[i] >= 0) {
      if (gb->producer[j] >= 0) return CUDNN_STATUS_BAD_PARAM; /* written twice */
      gb->producer[j] = gb->nops;
    }
  }
  og_op_t *o = &gb->ops[gb->nops++];
  *o = one->ops[0];
  for (int k = 0; k < 8; k++)
    if (o->t[k] >= 0) o->t[k] = (short)map[(int)o->t[k]];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t og_compile(bk_desc_t *b, const bk_attr_t *ops) {
  if (ops->count > OG_MAX_OPS) return CUDNN_STATUS_NOT_SUPPORTED;
  og_build_t *gb = calloc(1, sizeof *gb);
  if (!gb) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  for (int64_t i = 0; st == CUDNN_STATUS_SUCCESS && i < ops->count; i++) {
    bk_desc_t *d = bk(((cudnnBackendDescriptor_t *)ops->data)[i]);
    if (!d) st = CUDNN_STATUS_BAD_PARAM;
    else if (!d->finalized) st = CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    else if (!d->ogb) st = CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN; /* not an operation here */
    else st = merge_op(gb, d->ogb);
  }
  og_graph_t *g = &gb->g;
  /* A virtual tensor must be written before it is read. */
  for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < g->nt; i++)
    if (g->t[i].where == OG_VIRT && gb->producer[i] < 0) st = CUDNN_STATUS_BAD_PARAM;
  /* Order: each operation after the producers of its inputs (a cycle is refused). */
  int placed[OG_MAX_OPS] = {0};
  for (int n = 0; st == CUDNN_STATUS_SUCCESS && n < gb->nops; n++) {
    int pick = -1;
    for (int i = 0; i < gb->nops && pick < 0; i++)
      if (!placed[i] && ready(gb, &gb->ops[i], placed)) pick = i;
    if (pick < 0) {
      st = CUDNN_STATUS_BAD_PARAM;
      break;
    }
    placed[pick] = 1;
    g->op[g->nops++] = gb->ops[pick];
  }
  /* Virtual tensors, densely in the workspace one after the other. */
  long long ws = 0;
  for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < g->nt; i++) {
    if (g->t[i].where != OG_VIRT) continue;
    g->t[i].off = ws;
    ws += og_count(&g->t[i]);
  }
  if (st == CUDNN_STATUS_SUCCESS) {
    b->og = *g;
    memcpy(b->og_uid, gb->uid, sizeof b->og_uid);
    b->og_ws = (int64_t)ws * (int64_t)sizeof(float);
    b->is_og = 1;
  }
  free(gb);
  return st;
}

cudnnStatus_t og_execute(cudnnHandle_t handle, const bk_desc_t *plan, const bk_desc_t *pack) {
  og_graph_t g = plan->og;
  for (int i = 0; i < g.nt; i++) {
    og_tensor_t *t = &g.t[i];
    if (t->where == OG_VIRT) continue;
    void *p = bk_pack_ptr(pack, plan->og_uid[i]);
    if (!p) return CUDNN_STATUS_BAD_PARAM;
    if (t->where == OG_VALUE) memcpy(&t->value, p, sizeof t->value); /* the caller's host scalar */
    else t->ptr = p;
  }
  float *ws = pack->workspace;
  if (plan->og_ws > 0 && !ws) return CUDNN_STATUS_BAD_PARAM;
  void *args[] = {&g, &ws};
  return dnn_launch(handle, DNN_K_OPGRAPH, 1, args);
}
