/* backend.c — the backend (graph) API of the simulated cuDNN: descriptors, attributes,
 * finalization, execution; the single-operation graphs of a 2-d convolution (forward, backward
 * data and backward filter, float32, half or bfloat16, any strides) here, every other graph
 * through the interpreter of opgraph.c.
 *
 * This is the subset cudnn_frontend builds for PyTorch's convolutions: tensor and convolution
 * descriptors, one convolution operation in an operation graph, engine heuristics and the engine
 * configurations they return, engines, knob choices, an execution plan, a variant pack, and
 * cudnnBackendExecute; and for its cuDNN attention: pointwise, matmul, reduction and reshape
 * operations, the fused forward attention with its score modifier and statistics node, over
 * virtual and by-value tensors (opgraph.c). Every descriptor keeps the attributes set on it (a
 * typed store, the last value of each attribute; backend.h); cudnnBackendFinalize validates them
 * and compiles what later steps need into the descriptor by value (a tensor's shape, a
 * convolution's geometry, an operation's complete description, a graph's interpreter program),
 * so a plan stays valid when the graph, the engine or the tensors it was made from are
 * destroyed, as cuDNN allows. cudnnBackendGetAttribute answers the stored attributes and those
 * cuDNN derives (engine counts, heuristic results, workspace size, notes, knobs). One engine
 * (global index 0, no knobs, no numerical or behaviour notes; a workspace only for the
 * interpreter's virtual tensors) computes every supported graph; cudnnBackendExecute validates
 * on the calling thread and launches one kernel of kernels.cu on the handle's stream, with the
 * operation's description by value and the variant pack's device pointers as arguments — the
 * forward convolution with the legacy cudnnConvolutionForward's kernel (the backend's alpha and
 * beta mean the same).
 *
 * Statuses as cuDNN documents them: BAD_PARAM for a NULL or destroyed descriptor, a wrong
 * attribute type or count, a descriptor of the wrong type, inconsistent shapes, a missing tensor
 * in the variant pack; NOT_INITIALIZED for setting an attribute of a finalized descriptor;
 * BAD_PARAM_NOT_FINALIZED for using one that is not; NOT_SUPPORTED (and its subcodes) for valid
 * requests outside the subset: descriptor types other than those above, data other than float,
 * half or bfloat16, convolution tensors other than 4-d or virtual or by value, a convolution with
 * other operations, engines other than 0, knobs, and what opgraph.c refuses.
 */
#include "backend.h"

static int type_known(cudnnBackendDescriptorType_t t) {
  switch ((int)t) {
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
  case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
  case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
  /* the operations of opgraph.c */
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
  case BK_OPERATION_BAND_MASK_DESCRIPTOR:
  case BK_OPERATION_SDPA_STATS_DESCRIPTOR:
    return 1;
  default:
    return 0;
  }
}

static size_t type_size(cudnnBackendAttributeType_t t) {
  switch ((int)t) {
  case CUDNN_TYPE_HANDLE: return sizeof(cudnnHandle_t);
  case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
  case CUDNN_TYPE_INT64: return sizeof(int64_t);
  case CUDNN_TYPE_FLOAT: return sizeof(float);
  case CUDNN_TYPE_DOUBLE: return sizeof(double);
  case CUDNN_TYPE_VOID_PTR: return sizeof(void *);
  case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(cudnnBackendDescriptor_t);
  case CUDNN_TYPE_INT32: return sizeof(int32_t);
  case CUDNN_TYPE_CHAR: return 1;
  case CUDNN_TYPE_DATA_TYPE:
  case CUDNN_TYPE_CONVOLUTION_MODE:
  case CUDNN_TYPE_HEUR_MODE:
  case CUDNN_TYPE_KNOB_TYPE:
  case CUDNN_TYPE_NUMERICAL_NOTE:
  case CUDNN_TYPE_LAYOUT_TYPE:
  case CUDNN_TYPE_ATTRIB_NAME:
  case CUDNN_TYPE_BEHAVIOR_NOTE:
  case CUDNN_TYPE_TENSOR_REORDERING_MODE:
  case CUDNN_TYPE_POINTWISE_MODE:
  case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE:
  case CUDNN_TYPE_NAN_PROPOGATION:
  case BK_TYPE_RESHAPE_MODE:
    return sizeof(int); /* enumerations */
  default:
    return 0;
  }
}

/* Descriptor-valued attributes whose descriptors cuDNN copies when they are set: the fused
 * attention's score modifier and softmax statistics, which cudnn_frontend destroys after setting
 * them and before finalizing the attention. */
static int copied_when_set(const bk_desc_t *b, cudnnBackendAttributeName_t name) {
  return b->type == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR &&
         (name == BK_ATTR_SDPA_FWD_SCORE_GRAPH || name == BK_ATTR_SDPA_FWD_SOFTMAX_STATS);
}

static void desc_free(bk_desc_t *b);

/* Frees b's attributes, and the descriptors they name where those are b's own copies (the
 * attributes copied when set, and every one of such a copy). */
static void attrs_free(bk_desc_t *b) {
  for (int i = 0; i < b->nattrs; i++) {
    bk_attr_t *a = &b->attrs[i];
    if ((b->owns || copied_when_set(b, a->name)) && a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
      for (int64_t j = 0; j < a->count; j++) desc_free(bk(((cudnnBackendDescriptor_t *)a->data)[j]));
    free(a->data);
  }
  b->nattrs = 0;
  og_free_op(b);
}

static void desc_free(bk_desc_t *b) {
  if (!b) return;
  attrs_free(b);
  b->magic = 0;
  free(b);
}

/* A copy of d and, recursively, of the descriptors it names; NULL when out of memory or deeper
 * than `depth`. */
static bk_desc_t *clone_deep(const bk_desc_t *d, int depth) {
  if (!d || depth == 0) return NULL;
  bk_desc_t *c = malloc(sizeof *c);
  if (!c) return NULL;
  *c = *d;
  c->nattrs = 0;
  c->owns = 1;
  if (og_copy_op(c, d)) {
    c->ogb = NULL;
    desc_free(c);
    return NULL;
  }
  for (int i = 0; i < d->nattrs; i++) {
    const bk_attr_t *a = &d->attrs[i];
    size_t n = type_size(a->type) * (size_t)a->count;
    bk_attr_t *ca = &c->attrs[c->nattrs];
    *ca = *a;
    if (!(ca->data = calloc(1, n + 1))) break;
    c->nattrs++;
    if (a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR) {
      memcpy(ca->data, a->data, n);
      continue;
    }
    for (int64_t j = 0; j < a->count; j++) {
      bk_desc_t *e = clone_deep(bk(((cudnnBackendDescriptor_t *)a->data)[j]), depth - 1);
      if (!e) break;
      ((cudnnBackendDescriptor_t *)ca->data)[j] = (cudnnBackendDescriptor_t)e;
    }
  }
  /* a partial copy (an element left NULL) is freed whole */
  for (int i = 0; i < d->nattrs; i++) {
    int ok = i < c->nattrs;
    for (int64_t j = 0; ok && c->attrs[i].type == CUDNN_TYPE_BACKEND_DESCRIPTOR && j < c->attrs[i].count; j++)
      ok = ((cudnnBackendDescriptor_t *)c->attrs[i].data)[j] != NULL;
    if (!ok) {
      desc_free(c);
      return NULL;
    }
  }
  return c;
}


/* ---- Finalization of each type ---- */

static cudnnStatus_t fin_tensor(bk_desc_t *b) {
  bk_tensor_t *t = &b->tensor;
  int dt = 0, virt = 0, byval = 0;
  int64_t vc = 1;
  bk_attr_t *dims = attr_find(b, CUDNN_ATTR_TENSOR_DIMENSIONS);
  if (!get_i64(b, CUDNN_ATTR_TENSOR_UNIQUE_ID, &t->uid) ||
      !get_enum(b, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &dt) || !dims ||
      dims->type != CUDNN_TYPE_INT64 || dims->count < 1 || dims->count > CUDNN_DIM_MAX)
    return CUDNN_STATUS_BAD_PARAM;
  int64_t align = 0;
  if (!get_i64(b, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &align) || align <= 0) return CUDNN_STATUS_BAD_PARAM;
  t->nbdims = (int)dims->count;
  memcpy(t->dims, dims->data, sizeof(int64_t) * (size_t)t->nbdims);
  if (!get_i64s(b, CUDNN_ATTR_TENSOR_STRIDES, t->nbdims, t->strides)) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < t->nbdims; i++)
    if (t->dims[i] <= 0 || t->strides[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  t->dtype = (cudnnDataType_t)dt;
  get_bool(b, CUDNN_ATTR_TENSOR_IS_VIRTUAL, &virt);
  get_bool(b, CUDNN_ATTR_TENSOR_IS_BY_VALUE, &byval);
  get_i64(b, CUDNN_ATTR_TENSOR_VECTOR_COUNT, &vc);
  /* Vectorised layouts are integer ones. Intermediates and by-value scalars belong to the
   * graphs of opgraph.c: a convolution refuses them. */
  if (vc != 1) return CUDNN_STATUS_NOT_SUPPORTED;
  if (byval && virt) return CUDNN_STATUS_BAD_PARAM;
  t->virt = virt, t->byval = byval;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t fin_conv(bk_desc_t *b) {
  bk_convp_t *c = &b->conv;
  int64_t n = 0;
  int mode = 0, ct = 0;
  if (!get_i64(b, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &n) ||
      !get_enum(b, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &ct) ||
      !get_enum(b, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode))
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  if (n < 1 || n > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_BAD_PARAM;
  if (n != 2) return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
  if (!get_i64s(b, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 2, c->pre) ||
      !get_i64s(b, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, 2, c->post) ||
      !get_i64s(b, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 2, c->stride) ||
      !get_i64s(b, CUDNN_ATTR_CONVOLUTION_DILATIONS, 2, c->dil))
    return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 2; i++)
    if (c->pre[i] < 0 || c->post[i] < 0 || c->stride[i] <= 0 || c->dil[i] <= 0)
      return CUDNN_STATUS_BAD_PARAM;
  /* The kernels pad symmetrically (as every legacy convolution does). */
  if (c->pre[0] != c->post[0] || c->pre[1] != c->post[1]) return CUDNN_STATUS_NOT_SUPPORTED_PADDING;
  c->compute = (cudnnDataType_t)ct;
  c->mode = (cudnnConvolutionMode_t)mode;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnsim_t4_t t4(const bk_tensor_t *t) {
  cudnnsim_t4_t r = {(int)t->dims[0], (int)t->dims[1], (int)t->dims[2], (int)t->dims[3],
                     t->strides[0], t->strides[1], t->strides[2], t->strides[3]};
  return r;
}

/* The attribute names of x, w, y, conv, alpha and beta of each convolution operation. */
static const cudnnBackendAttributeName_t op_names[3][6] = {
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
};

static cudnnStatus_t fin_op(bk_desc_t *b, bk_kind_t kind) {
  const cudnnBackendAttributeName_t *nm = op_names[kind];
  bk_desc_t *x = get_desc(b, nm[0], 0), *w = get_desc(b, nm[1], 0), *y = get_desc(b, nm[2], 0);
  bk_desc_t *cv = get_desc(b, nm[3], 0);
  if (!x || !w || !y || !cv || x->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR ||
      w->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR || y->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR ||
      cv->type != CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)
    return CUDNN_STATUS_BAD_PARAM;
  if (!x->finalized || !w->finalized || !y->finalized || !cv->finalized)
    return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  bk_op_t *o = &b->op;
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->x = x->tensor, o->w = w->tensor, o->y = y->tensor;
  o->alpha = get_scale(b, nm[4], 1.0f);
  o->beta = get_scale(b, nm[5], 0.0f);
  const bk_convp_t *c = &cv->conv;
  if (o->x.virt || o->x.byval || o->w.virt || o->w.byval || o->y.virt || o->y.byval)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (o->x.nbdims != 4 || o->w.nbdims != 4 || o->y.nbdims != 4) return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
  if (o->x.dtype != o->w.dtype || o->x.dtype != o->y.dtype) return CUDNN_STATUS_BAD_PARAM;
  /* float, half or bfloat16 data, computed in float (PyTorch's configuration for all three) */
  int dt;
  if (o->x.dtype == CUDNN_DATA_FLOAT) dt = CUDNNSIM_F32;
  else if (o->x.dtype == CUDNN_DATA_HALF) dt = CUDNNSIM_F16;
  else if (o->x.dtype == CUDNN_DATA_BFLOAT16) dt = CUDNNSIM_BF16;
  else return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  if (c->compute != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  for (int i = 0; i < 4; i++)
    if (o->x.dims[i] > 0x7fffffff || o->w.dims[i] > 0x7fffffff || o->y.dims[i] > 0x7fffffff)
      return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
  /* Shapes: C = groups * w.C, K a multiple of groups, y the convolution's output. */
  int64_t cin = o->x.dims[1], cpg = o->w.dims[1], k = o->w.dims[0];
  if (cin % cpg != 0 || k % (cin / cpg) != 0 || o->y.dims[0] != o->x.dims[0] || o->y.dims[1] != k)
    return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 2; i++) {
    int64_t ext = (o->w.dims[2 + i] - 1) * c->dil[i] + 1;
    int64_t span = o->x.dims[2 + i] + c->pre[i] + c->post[i] - ext;
    if (span < 0 || span / c->stride[i] + 1 != o->y.dims[2 + i]) return CUDNN_STATUS_BAD_PARAM;
  }
  cudnnsim_conv_t *p = &o->p;
  p->x = t4(&o->x);
  p->f = t4(&o->w);
  p->y = t4(&o->y);
  p->pad_h = (int)c->pre[0], p->pad_w = (int)c->pre[1];
  p->stride_h = (int)c->stride[0], p->stride_w = (int)c->stride[1];
  p->dil_h = (int)c->dil[0], p->dil_w = (int)c->dil[1];
  p->flip = c->mode == CUDNN_CONVOLUTION;
  p->groups = (int)(cin / cpg);
  p->dtype = dt;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t fin_graph(bk_desc_t *b) {
  bk_attr_t *ops = attr_find(b, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  bk_attr_t *h = attr_find(b, CUDNN_ATTR_OPERATIONGRAPH_HANDLE);
  if (!ops || ops->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || ops->count < 1 ||
      (h && (h->type != CUDNN_TYPE_HANDLE || h->count != 1)))
    return CUDNN_STATUS_BAD_PARAM;
  /* A graph without a handle is a sub-graph (the score modifier of a fused attention): it is
   * compiled as part of the operation that holds it and cannot be executed on its own. */
  if (!h) return CUDNN_STATUS_SUCCESS;
  b->handle = *(cudnnHandle_t *)h->data;
  if (!dnn_handle_ok(b->handle)) return CUDNN_STATUS_BAD_PARAM;
  bk_desc_t *op = get_desc(b, CUDNN_ATTR_OPERATIONGRAPH_OPS, 0);
  if (!op) return CUDNN_STATUS_BAD_PARAM;
  if (!op->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  if (ops->count == 1 && (op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
                          op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
                          op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR)) {
    b->op = op->op;
    return CUDNN_STATUS_SUCCESS;
  }
  return og_compile(b, ops);
}

/* Copies what src compiled (its graph's operation or interpreter description, and its handle)
 * into b. */
static void take_compiled(bk_desc_t *b, const bk_desc_t *s) {
  b->op = s->op;
  b->handle = s->handle;
  b->is_og = s->is_og;
  if (s->is_og) {
    b->og = s->og;
    memcpy(b->og_uid, s->og_uid, sizeof b->og_uid);
    b->og_ws = s->og_ws;
  }
}

/* The graph-bearing descriptor `name` of b (an operation graph, engine or engine config),
 * finalized, whose compiled operation and handle b takes. */
static cudnnStatus_t take_from(bk_desc_t *b, cudnnBackendAttributeName_t name,
                               cudnnBackendDescriptorType_t type) {
  bk_desc_t *s = get_desc(b, name, 0);
  if (!s || s->type != type) return CUDNN_STATUS_BAD_PARAM;
  if (!s->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  take_compiled(b, s);
  b->engine = s->engine;
  return dnn_handle_ok(b->handle) || b->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
             ? CUDNN_STATUS_SUCCESS
             : CUDNN_STATUS_BAD_PARAM; /* a sub-graph has no handle to run on */
}

static cudnnStatus_t fin_engine(bk_desc_t *b) {
  cudnnStatus_t st = take_from(b, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!get_i64(b, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &b->engine) || b->engine < 0)
    return CUDNN_STATUS_BAD_PARAM;
  return b->engine == 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}

static cudnnStatus_t fin_enginecfg(bk_desc_t *b) {
  cudnnStatus_t st = take_from(b, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  /* Engine 0 has no knobs to choose. */
  bk_attr_t *k = attr_find(b, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES);
  if (k && k->count > 0) return CUDNN_STATUS_NOT_SUPPORTED;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t fin_heur(bk_desc_t *b) {
  int mode = 0;
  if (!get_enum(b, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode) ||
      mode < CUDNN_HEUR_MODE_INSTANT || mode > CUDNN_HEUR_MODE_A)
    return CUDNN_STATUS_BAD_PARAM;
  return take_from(b, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
}

static cudnnStatus_t fin_plan(bk_desc_t *b) {
  bk_attr_t *h = attr_find(b, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
  cudnnStatus_t st = take_from(b, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (h) {
    if (h->type != CUDNN_TYPE_HANDLE || h->count != 1) return CUDNN_STATUS_BAD_PARAM;
    b->handle = *(cudnnHandle_t *)h->data;
  }
  return dnn_handle_ok(b->handle) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

static cudnnStatus_t fin_pack(bk_desc_t *b) {
  bk_attr_t *u = attr_find(b, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  bk_attr_t *p = attr_find(b, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  bk_attr_t *w = attr_find(b, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
  if (!u || !p || u->type != CUDNN_TYPE_INT64 || p->type != CUDNN_TYPE_VOID_PTR || u->count != p->count)
    return CUDNN_STATUS_BAD_PARAM;
  if (u->count > BK_MAX_PACK) return CUDNN_STATUS_NOT_SUPPORTED;
  b->npack = (int)u->count;
  memcpy(b->uids, u->data, sizeof(int64_t) * (size_t)b->npack);
  memcpy(b->ptrs, p->data, sizeof(void *) * (size_t)b->npack);
  b->workspace = NULL;
  if (w) {
    if (w->type != CUDNN_TYPE_VOID_PTR || w->count != 1) return CUDNN_STATUS_BAD_PARAM;
    b->workspace = *(void **)w->data;
  }
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t fin_knob_choice(bk_desc_t *b) {
  int type = 0;
  int64_t v = 0;
  if (!get_enum(b, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, &type) ||
      !get_i64(b, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, &v))
    return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- The API ---- */

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                           cudnnBackendDescriptor_t *descriptor) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!descriptor) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!type_known(descriptorType)) return CUDNN_STATUS_NOT_SUPPORTED;
  bk_desc_t *b = calloc(1, sizeof *b);
  if (!b) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  b->magic = DNN_MAGIC_BACKEND;
  b->type = descriptorType;
  *descriptor = (cudnnBackendDescriptor_t)b;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!descriptor) return CUDNN_STATUS_SUCCESS;
  bk_desc_t *b = bk(descriptor);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  desc_free(b);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  bk_desc_t *b = bk(descriptor);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  cudnnBackendDescriptorType_t type = b->type;
  attrs_free(b);
  memset(b, 0, sizeof *b);
  b->magic = DNN_MAGIC_BACKEND;
  b->type = type;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType,
                                       int64_t elementCount, const void *arrayOfElements) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  bk_desc_t *b = bk(descriptor);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  if (b->finalized) return CUDNN_STATUS_NOT_INITIALIZED;
  /* No attribute of the simulated descriptors holds more than a few elements; a huge count is
   * a caller's mistake, refused before it becomes a huge allocation. */
  size_t es = type_size(attributeType);
  if (!es || elementCount < 0 || elementCount > 4096) return CUDNN_STATUS_BAD_PARAM;
  if (elementCount > 0 && !arrayOfElements) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    for (int64_t i = 0; i < elementCount; i++)
      if (!bk(((const cudnnBackendDescriptor_t *)arrayOfElements)[i])) return CUDNN_STATUS_BAD_PARAM;
  }
  bk_attr_t *a = attr_find(b, attributeName);
  if (!a) {
    if (b->nattrs == BK_MAX_ATTRS) return CUDNN_STATUS_NOT_SUPPORTED;
    a = &b->attrs[b->nattrs++];
    a->name = attributeName;
    a->type = CUDNN_TYPE_INT64;
    a->count = 0;
    a->data = NULL;
  }
  void *data = malloc(es * (size_t)elementCount + 1);
  if (!data) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  if (elementCount > 0) memcpy(data, arrayOfElements, es * (size_t)elementCount);
  if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR && copied_when_set(b, attributeName)) {
    cudnnBackendDescriptor_t *d = data;
    for (int64_t i = 0; i < elementCount; i++) {
      bk_desc_t *c = clone_deep(bk(d[i]), 4);
      if (!c) {
        while (i-- > 0) desc_free(bk(d[i]));
        free(data);
        return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
      }
      d[i] = (cudnnBackendDescriptor_t)c;
    }
  }
  if (a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR && copied_when_set(b, attributeName))
    for (int64_t i = 0; i < a->count; i++) desc_free(bk(((cudnnBackendDescriptor_t *)a->data)[i]));
  free(a->data);
  a->type = attributeType;
  a->count = elementCount;
  a->data = data;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  bk_desc_t *b = bk(descriptor);
  if (!b) return CUDNN_STATUS_BAD_PARAM;
  if (b->finalized) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st;
  switch ((int)b->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR: st = fin_tensor(b); break;
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: st = fin_conv(b); break;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: st = fin_op(b, BK_FWD); break;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: st = fin_op(b, BK_BWD_DATA); break;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: st = fin_op(b, BK_BWD_FILTER); break;
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: st = fin_graph(b); break;
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR: st = fin_engine(b); break;
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: st = fin_enginecfg(b); break;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: st = fin_heur(b); break;
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: st = fin_plan(b); break;
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: st = fin_pack(b); break;
  case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR: st = fin_knob_choice(b); break;
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
  case BK_OPERATION_SDPA_STATS_DESCRIPTOR:
    st = CUDNN_STATUS_SUCCESS; /* read by the operation that names them */
    break;
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
  case BK_OPERATION_BAND_MASK_DESCRIPTOR:
    st = og_compile_op(b);
    break;
  default: st = CUDNN_STATUS_NOT_SUPPORTED; break; /* KNOB_INFO: only cuDNN fills those */
  }
  if (st == CUDNN_STATUS_SUCCESS) b->finalized = 1;
  return st;
}

/* ---- Attributes cuDNN answers ---- */

/* Copies n elements of size es from src into the caller's array (at most `requested`), and
 * the count into *count when count is not NULL (cudnn_frontend passes NULL). */
static cudnnStatus_t answer(int64_t requested, int64_t *count, void *out, const void *src,
                            int64_t n, size_t es) {
  if (count) *count = n;
  int64_t k = requested < n ? requested : n;
  if (k > 0 && src) {
    if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    memcpy(out, src, es * (size_t)k);
  }
  return CUDNN_STATUS_SUCCESS;
}

/* Makes the caller's descriptor d (created by the caller, of type `type`) the finalized copy of
 * src's compiled contents: an engine config or an engine of src's graph. */
static cudnnStatus_t fill_desc(cudnnBackendDescriptor_t d, cudnnBackendDescriptorType_t type,
                               const bk_desc_t *src) {
  bk_desc_t *b = bk(d);
  if (!b || b->type != type) return CUDNN_STATUS_BAD_PARAM;
  attrs_free(b);
  take_compiled(b, src);
  b->engine = 0;
  b->finalized = 1;
  return CUDNN_STATUS_SUCCESS;
}

/* Attributes derived at finalization. Returns NOT_SUPPORTED when `name` is none of them. */
static cudnnStatus_t derived(bk_desc_t *b, cudnnBackendAttributeName_t name,
                             cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                             void *out) {
  int64_t zero = 0, one = 1;
  switch ((int)name) {
  case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
    if (b->type != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR || type != CUDNN_TYPE_INT64) break;
    return answer(requested, count, out, &one, 1, sizeof one);
  case CUDNN_ATTR_ENGINEHEUR_RESULTS:
    /* One configuration: engine 0. */
    if (b->type != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR || type != CUDNN_TYPE_BACKEND_DESCRIPTOR) break;
    if (count) *count = 1;
    if (requested >= 1) {
      if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
      return fill_desc(((cudnnBackendDescriptor_t *)out)[0], CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, b);
    }
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINECFG_ENGINE:
  case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG: {
    int cfg = name == CUDNN_ATTR_ENGINECFG_ENGINE;
    if (b->type != (cfg ? CUDNN_BACKEND_ENGINECFG_DESCRIPTOR : CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) ||
        type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
      break;
    if (count) *count = 1;
    if (requested >= 1) {
      if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
      return fill_desc(((cudnnBackendDescriptor_t *)out)[0],
                       cfg ? CUDNN_BACKEND_ENGINE_DESCRIPTOR : CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, b);
    }
    return CUDNN_STATUS_SUCCESS;
  }
  case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
    if (b->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || type != CUDNN_TYPE_INT64) break;
    return answer(requested, count, out, &b->engine, 1, sizeof b->engine);
  case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
  case CUDNN_ATTR_ENGINE_KNOB_INFO:
  case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
  case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE:
  case CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO:
  case CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS:
    /* Engine 0: no knobs, no notes, no intermediates. */
    return answer(requested, count, out, NULL, 0, 1);
  case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
  case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
    /* The interpreter's intermediates; convolutions need none. */
    if (type != CUDNN_TYPE_INT64) break;
    return answer(requested, count, out, b->is_og ? &b->og_ws : &zero, 1, sizeof zero);
  case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED: {
    /* cudnn_frontend asks it as INT32 */
    int32_t zero32 = 0;
    if (type == CUDNN_TYPE_INT32) return answer(requested, count, out, &zero32, 1, sizeof zero32);
    if (type != CUDNN_TYPE_INT64) break;
    return answer(requested, count, out, &zero, 1, sizeof zero);
  }
  default:
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  return CUDNN_STATUS_BAD_PARAM; /* a known attribute asked as another type */
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType,
                                       int64_t requestedElementCount, int64_t *elementCount,
                                       void *arrayOfElements) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  bk_desc_t *b = bk(descriptor);
  if (!b || requestedElementCount < 0) return CUDNN_STATUS_BAD_PARAM;
  if (!b->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  cudnnStatus_t st = derived(b, attributeName, attributeType, requestedElementCount, elementCount,
                             arrayOfElements);
  if (st != CUDNN_STATUS_NOT_SUPPORTED) return st;
  bk_attr_t *a = attr_find(b, attributeName);
  if (!a) return CUDNN_STATUS_NOT_SUPPORTED;
  if (a->type != attributeType) return CUDNN_STATUS_BAD_PARAM;
  if (a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    /* Stored descriptors are the caller's own: copy their contents into the ones passed. */
    if (elementCount) *elementCount = a->count;
    for (int64_t i = 0; i < requestedElementCount && i < a->count; i++) {
      bk_desc_t *src = bk(((cudnnBackendDescriptor_t *)a->data)[i]);
      bk_desc_t *dst = bk(((cudnnBackendDescriptor_t *)arrayOfElements)[i]);
      if (!src || !dst || dst->type != src->type) return CUDNN_STATUS_BAD_PARAM;
      if (dst == src) continue;
      attrs_free(dst);
      *dst = *src;
      dst->nattrs = 0; /* the copy answers from its compiled contents only */
      if (og_copy_op(dst, src)) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    }
    return CUDNN_STATUS_SUCCESS;
  }
  return answer(requestedElementCount, elementCount, arrayOfElements, a->data, a->count,
                type_size(a->type));
}

/* The device pointer of tensor uid in pack p; NULL when absent. */
void *bk_pack_ptr(const bk_desc_t *p, int64_t uid) {
  for (int i = 0; i < p->npack; i++)
    if (p->uids[i] == uid) return p->ptrs[i];
  return NULL;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                  cudnnBackendDescriptor_t variantPack) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  bk_desc_t *plan = bk(executionPlan), *pack = bk(variantPack);
  if (!dnn_handle_ok(handle) || !plan || !pack ||
      plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return CUDNN_STATUS_BAD_PARAM;
  if (!plan->finalized || !pack->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  if (plan->is_og) return og_execute(handle, plan, pack);
  const bk_op_t *o = &plan->op;
  void *x = bk_pack_ptr(pack, o->x.uid), *w = bk_pack_ptr(pack, o->w.uid), *y = bk_pack_ptr(pack, o->y.uid);
  if (!x || !w || !y) return CUDNN_STATUS_BAD_PARAM;
  cudnnsim_conv_t p = o->p;
  float a = o->alpha, b = o->beta;
  switch (o->kind) {
  case BK_FWD: {
    void *args[] = {&p, &a, &b, &x, &w, &y};
    return dnn_launch(handle, DNN_K_CONV, cudnnsim_count(&p.y), args);
  }
  case BK_BWD_DATA: {
    void *args[] = {&p, &a, &b, &y, &w, &x};
    return dnn_launch(handle, DNN_K_CONV_BWD_DATA, cudnnsim_count(&p.x), args);
  }
  default: {
    void *args[] = {&p, &a, &b, &x, &y, &w};
    return dnn_launch(handle, DNN_K_CONV_BWD_FILTER, cudnnsim_count(&p.f), args);
  }
  }
}
