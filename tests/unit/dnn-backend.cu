/* dnn-backend.cu — cuDNN's backend (graph) API for convolutions, and batch normalization.
 *
 * Builds, as cudnn_frontend does for PyTorch, the single-operation graphs of a convolution's
 * forward, backward data and backward filter (tensor and convolution descriptors, the operation,
 * the operation graph, engine heuristics, the first engine configuration they return, an
 * execution plan, a variant pack), executes them and compares with a double-precision reference
 * computed here: padding, stride, dilation, groups, strided (channels-last) tensors, alpha and
 * beta. The plan must keep working after the graph and its tensors are destroyed. Batch norm
 * (cudnnBatchNormalizationForwardTrainingEx, BackwardEx, ForwardInference) against the
 * textbook formulas, running statistics included. On the simulator also: the statuses of misuse
 * (attributes after finalization, unfinalized operands, a missing tensor in the variant pack,
 * data types and graphs outside the simulated subset) and bit-identical repeated results; and
 * operation graphs other than a convolution, which the simulated cuDNN interprets: a matmul
 * with broadcast batches feeding a pointwise chain over virtual tensors with a by-value scalar,
 * reductions, a transposing reshape (one kernel node when captured), the fused forward attention
 * with its causal score modifier and statistics node (which the caller destroys before
 * finalizing the attention, as cudnn_frontend does), against double references; and the
 * statuses of graphs outside the interpreter's subset.
 * Runs unchanged on a GPU with the real cuDNN (tolerances cover its arithmetic).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "dnn-test.h"

static cudnnHandle_t dnn;
static int simulated;


static void near(float got, double want, double scale, const char *what, size_t i) {
  if (!(fabs(got - want) <= 1e-4 * (scale + 1.0)))
    CHECK_FAIL_("%s[%zu]: got %.8g, want %.8g", what, i, got, want);
}

/* ---- Descriptors ---- */

typedef cudnnBackendDescriptor_t bd_t;

static bd_t make(cudnnBackendDescriptorType_t t) {
  bd_t d;
  CHECK_DNN(cudnnBackendCreateDescriptor(t, &d));
  return d;
}

static void set(bd_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t c,
                const void *v) {
  CHECK_DNN(cudnnBackendSetAttribute(d, n, t, c, v));
}

/* A 4-d tensor (dims NCHW order), NCHW-packed or channels-last strides. */
static bd_t tensor(int64_t uid, const int64_t dims[4], int channels_last,
                   cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
  int64_t st[4];
  if (channels_last) {
    st[1] = 1, st[3] = dims[1], st[2] = dims[1] * dims[3], st[0] = dims[1] * dims[2] * dims[3];
  } else {
    st[3] = 1, st[2] = dims[3], st[1] = dims[2] * dims[3], st[0] = dims[1] * dims[2] * dims[3];
  }
  int64_t align = 16;
  bd_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  CHECK_DNN(cudnnBackendFinalize(t));
  return t;
}

static int64_t offset(const int64_t dims[4], int cl, int64_t n, int64_t c, int64_t h, int64_t w) {
  return cl ? ((n * dims[2] + h) * dims[3] + w) * dims[1] + c
            : ((n * dims[1] + c) * dims[2] + h) * dims[3] + w;
}

struct conv_case {
  int64_t n, c, h, w, k, r, s, pad_h, pad_w, u, v, dil_h, dil_w, groups;
  int channels_last;
  float alpha, beta;
};

/* A graph of one operation of type `op` over x, w, y; returns its finalized plan and, in *ws,
 * the workspace the plan needs. Everything but the plan is destroyed before returning. */
static bd_t plan_for(cudnnBackendDescriptorType_t op, const struct conv_case *t, const int64_t xd[4],
                     const int64_t wd[4], const int64_t yd[4], int64_t *ws) {
  bd_t x = tensor('x', xd, t->channels_last), w = tensor('w', wd, t->channels_last),
       y = tensor('y', yd, t->channels_last);
  bd_t cv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  cudnnDataType_t ct = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t two = 2, pad[2] = {t->pad_h, t->pad_w}, str[2] = {t->u, t->v}, dil[2] = {t->dil_h, t->dil_w};
  set(cv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
  set(cv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(cv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two);
  set(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(cv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str);
  set(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
  CHECK_DNN(cudnnBackendFinalize(cv));

  bd_t o = make(op);
  cudnnBackendAttributeName_t nx, nw, ny, nc, na, nb;
  if (op == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
    nx = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, nw = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W;
    ny = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, nc = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC;
    na = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, nb = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA;
  } else if (op == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    nx = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, nw = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
    ny = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, nc = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
    na = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, nb = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA;
  } else {
    nx = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, nw = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
    ny = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, nc = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
    na = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, nb = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA;
  }
  set(o, nx, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  set(o, nw, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  set(o, ny, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  set(o, nc, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv);
  set(o, na, CUDNN_TYPE_FLOAT, 1, &t->alpha);
  set(o, nb, CUDNN_TYPE_FLOAT, 1, &t->beta);
  CHECK_DNN(cudnnBackendFinalize(o));

  bd_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn);
  CHECK_DNN(cudnnBackendFinalize(g));
  int64_t count = 0;
  CHECK_DNN(cudnnBackendGetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &count, &count));
  CHECK_INT(count, >=, 1);

  bd_t h = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_INSTANT;
  set(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
  set(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm);
  CHECK_DNN(cudnnBackendFinalize(h));
  CHECK_DNN(cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
  CHECK_INT(count, >=, 1);
  bd_t cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  CHECK_DNN(cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &cfg));

  bd_t p = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
  CHECK_DNN(cudnnBackendFinalize(p));
  CHECK_DNN(cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count, ws));

  bd_t all[] = {cfg, h, g, o, cv, x, w, y};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CHECK_DNN(cudnnBackendDestroyDescriptor(all[i]));
  return p;
}

static void execute(bd_t plan, int64_t ws, void *x, void *w, void *y) {
  void *work = NULL;
  if (ws > 0) CHECK_CUDA(cudaMalloc(&work, (size_t)ws));
  int64_t uids[3] = {'x', 'w', 'y'};
  void *ptrs[3] = {x, w, y};
  bd_t vp = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &work);
  CHECK_DNN(cudnnBackendFinalize(vp));
  CHECK_DNN(cudnnBackendExecute(dnn, plan, vp));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_DNN(cudnnBackendDestroyDescriptor(vp));
  if (work) CHECK_CUDA(cudaFree(work));
}

/* Forward, backward data and backward filter of one case against the reference. */
static void conv_test(const struct conv_case *t) {
  int64_t cpg = t->c / t->groups, kpg = t->k / t->groups;
  int64_t p = (t->h + 2 * t->pad_h - (t->r - 1) * t->dil_h - 1) / t->u + 1;
  int64_t q = (t->w + 2 * t->pad_w - (t->s - 1) * t->dil_w - 1) / t->v + 1;
  int64_t xd[4] = {t->n, t->c, t->h, t->w}, wd[4] = {t->k, cpg, t->r, t->s}, yd[4] = {t->n, t->k, p, q};
  size_t xs = (size_t)(t->n * t->c * t->h * t->w), wsz = (size_t)(t->k * cpg * t->r * t->s),
         ys = (size_t)(t->n * t->k * p * q);
  float *hx = (float *)malloc(xs * 4), *hw = (float *)malloc(wsz * 4), *hy = (float *)malloc(ys * 4);
  float *got = (float *)malloc((xs > ys ? (xs > wsz ? xs : wsz) : (ys > wsz ? ys : wsz)) * 4);
  double *rx = (double *)calloc(xs, 8), *rw = (double *)calloc(wsz, 8), *ry = (double *)calloc(ys, 8);
  fill(hx, xs, 3), fill(hw, wsz, 4), fill(hy, ys, 5);
  int cl = t->channels_last;
  /* Every (output, tap) pair once: the forward sum, and both gradients given dy = hy. */
  for (int64_t n = 0; n < t->n; n++)
    for (int64_t k = 0; k < t->k; k++)
      for (int64_t oh = 0; oh < p; oh++)
        for (int64_t ow = 0; ow < q; ow++)
          for (int64_t c = 0; c < cpg; c++)
            for (int64_t r = 0; r < t->r; r++)
              for (int64_t s = 0; s < t->s; s++) {
                int64_t ih = oh * t->u - t->pad_h + r * t->dil_h, iw = ow * t->v - t->pad_w + s * t->dil_w;
                if (ih < 0 || ih >= t->h || iw < 0 || iw >= t->w) continue;
                int64_t xo = offset(xd, cl, n, (k / kpg) * cpg + c, ih, iw), wo = offset(wd, cl, k, c, r, s);
                int64_t yo = offset(yd, cl, n, k, oh, ow);
                ry[yo] += (double)hx[xo] * hw[wo];
                rx[xo] += (double)hy[yo] * hw[wo];
                rw[wo] += (double)hy[yo] * hx[xo];
              }
  struct {
    cudnnBackendDescriptorType_t op;
    float *out_host;
    double *ref;
    size_t count;
    const char *what;
  } ops[] = {{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, hy, ry, ys, "fwd y"},
             {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, hx, rx, xs, "bwd dx"},
             {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, hw, rw, wsz, "bwd dw"}};
  for (int i = 0; i < 3; i++) {
    int64_t ws = 0;
    bd_t plan = plan_for(ops[i].op, t, xd, wd, yd, &ws);
    float *dx = dev_from(hx, xs), *dw = dev_from(hw, wsz), *dy = dev_from(hy, ys);
    execute(plan, ws, dx, dw, dy);
    float *out = i == 0 ? dy : i == 1 ? dx : dw;
    to_host(got, out, ops[i].count);
    for (size_t e = 0; e < ops[i].count; e++) {
      double want = t->alpha * ops[i].ref[e] + (t->beta != 0.0f ? t->beta * ops[i].out_host[e] : 0.0);
      near(got[e], want, fabs(ops[i].ref[e]) + 1.0, ops[i].what, e);
    }
    if (simulated) {
      /* Fixed-order arithmetic: the same inputs give the same bits. */
      float *again = (float *)malloc(ops[i].count * 4);
      CHECK_CUDA(cudaMemcpy(dx, hx, xs * 4, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(dw, hw, wsz * 4, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(dy, hy, ys * 4, cudaMemcpyHostToDevice));
      execute(plan, ws, dx, dw, dy);
      to_host(again, out, ops[i].count);
      CHECK(memcmp(again, got, ops[i].count * 4) == 0);
      free(again);
    }
    CHECK_DNN(cudnnBackendDestroyDescriptor(plan));
    CHECK_CUDA(cudaFree(dx));
    CHECK_CUDA(cudaFree(dw));
    CHECK_CUDA(cudaFree(dy));
  }
  free(hx), free(hw), free(hy), free(got), free(rx), free(rw), free(ry);
}

/* ---- Misuse (the simulator's statuses) ---- */

static void status_test(void) {
  int64_t d[4] = {1, 2, 4, 4};
  bd_t t = tensor(1, d, 0);
  int64_t uid = 2;
  CHECK_INT(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid), ==,
            CUDNN_STATUS_NOT_INITIALIZED);
  int64_t got = 0, count = 0;
  CHECK_DNN(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &count, &got));
  CHECK_INT(got, ==, 1);
  CHECK_INT(count, ==, 1);
  CHECK_INT(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_FLOAT, 1, &count, &got), ==,
            CUDNN_STATUS_BAD_PARAM);
  bd_t u = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  CHECK_INT(cudnnBackendGetAttribute(u, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &count, &got), ==,
            CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  CHECK_INT(cudnnBackendFinalize(u), ==, CUDNN_STATUS_BAD_PARAM); /* nothing set */
  bd_t half = tensor(3, d, 0, CUDNN_DATA_HALF);
  /* A forward operation over a half tensor: valid, outside the simulated subset. */
  int64_t wd[4] = {2, 2, 3, 3};
  bd_t w = tensor(4, wd, 0), cv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  cudnnDataType_t ct = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t two = 2, pad[2] = {1, 1}, one[2] = {1, 1};
  set(cv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
  set(cv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(cv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two);
  set(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(cv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one);
  set(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one);
  CHECK_DNN(cudnnBackendFinalize(cv));
  bd_t o = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &half);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv);
  CHECK_INT(cudnnBackendFinalize(o), ==, CUDNN_STATUS_BAD_PARAM); /* x half, y float */
  bd_t o2 = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  /* half and bfloat16 data computed in float are simulated; double data is not */
  bd_t xdb = tensor(8, d, 0, CUDNN_DATA_DOUBLE);
  bd_t th = tensor(5, d, 0, CUDNN_DATA_DOUBLE), wh = tensor(6, wd, 0, CUDNN_DATA_DOUBLE);
  set(o2, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &xdb);
  set(o2, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &wh);
  set(o2, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &th);
  set(o2, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv);
  CHECK_INT(cudnnBackendFinalize(o2), ==, CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  /* A valid float operation; a graph of two operations is beyond the subset. */
  bd_t o3 = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  bd_t x3 = tensor(7, d, 0);
  set(o3, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x3);
  set(o3, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
  set(o3, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
  set(o3, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv);
  CHECK_DNN(cudnnBackendFinalize(o3));
  bd_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  bd_t two_ops[2] = {o3, o3};
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 2, two_ops);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn);
  CHECK_INT(cudnnBackendFinalize(g), ==, CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  /* A variant pack without y's pointer: BAD_PARAM at execution, nothing launched. */
  struct conv_case c = {1, 2, 4, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 1.0f, 0.0f};
  int64_t xd[4] = {1, 2, 4, 4}, yd[4] = {1, 2, 4, 4}, ws = 0;
  bd_t plan = plan_for(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &c, xd, wd, yd, &ws);
  bd_t vp = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  int64_t uids[2] = {'x', 'w'};
  void *ptrs[2] = {&uids, &uids}, *work = NULL;
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 2, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 2, ptrs);
  set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &work);
  CHECK_DNN(cudnnBackendFinalize(vp));
  CHECK_INT(cudnnBackendExecute(dnn, plan, vp), ==, CUDNN_STATUS_BAD_PARAM);
  CHECK_INT(cudnnBackendExecute(dnn, plan, u), ==, CUDNN_STATUS_BAD_PARAM); /* not a pack */
  bd_t all[] = {t, u, half, w, cv, o, o2, xdb, th, wh, o3, x3, g, plan, vp};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CHECK_DNN(cudnnBackendDestroyDescriptor(all[i]));
}

/* ---- Operation graphs beyond one convolution (the simulator's interpreter) ---- */

/* A tensor of nd dimensions with explicit strides (NULL: packed), virtual or by value. */
static bd_t tensor_ex(int64_t uid, int nd, const int64_t *dims, const int64_t *strides, cudnnDataType_t dt,
                      bool virt = false, bool byval = false) {
  int64_t st[8], align = 16;
  for (int i = nd - 1; i >= 0; i--) st[i] = strides ? strides[i] : i == nd - 1 ? 1 : st[i + 1] * dims[i + 1];
  bd_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, st);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  if (virt) set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
  if (byval) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byval);
  CHECK_DNN(cudnnBackendFinalize(t));
  return t;
}

static bd_t scalar(int64_t uid) {
  int64_t one[4] = {1, 1, 1, 1};
  return tensor_ex(uid, 4, one, NULL, CUDNN_DATA_FLOAT, false, true);
}

/* Finalizes the operation o, its status into *st when given (else checked), and destroys the
 * descriptor it was given: the operation keeps what it needs of it. */
static bd_t finish(bd_t o, bd_t desc, cudnnStatus_t *st) {
  cudnnStatus_t r = cudnnBackendFinalize(o);
  if (st) *st = r;
  else CHECK_DNN(r);
  CHECK_DNN(cudnnBackendDestroyDescriptor(desc));
  return o;
}

/* A pointwise operation y = mode(x[, b]), unfinalized when finalize is false; *st its status. */
static bd_t pointwise(cudnnPointwiseMode_t mode, bd_t x, bd_t b, bd_t y, cudnnStatus_t *st = NULL,
                      float alpha1 = 1.0f) {
  bd_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cudnnDataType_t ct = CUDNN_DATA_FLOAT;
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &ct);
  CHECK_DNN(cudnnBackendFinalize(pw));
  bd_t o = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set(o, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
  set(o, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  if (b) set(o, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
  set(o, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  set(o, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha1);
  return finish(o, pw, st);
}

static bd_t matmul(bd_t a, bd_t b, bd_t c, cudnnStatus_t *st = NULL) {
  bd_t mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  cudnnDataType_t ct = CUDNN_DATA_FLOAT;
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
  CHECK_DNN(cudnnBackendFinalize(mm));
  bd_t o = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set(o, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
  set(o, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
  set(o, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
  set(o, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm);
  return finish(o, mm, st);
}

static bd_t reduction(cudnnReduceTensorOp_t op, bd_t x, bd_t y) {
  bd_t rd = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  cudnnDataType_t ct = CUDNN_DATA_FLOAT;
  set(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &op);
  set(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
  CHECK_DNN(cudnnBackendFinalize(rd));
  bd_t o = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  set(o, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  set(o, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  set(o, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
  return finish(o, rd, NULL);
}

static bd_t reshape(bd_t x, bd_t y) {
  bd_t o = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  set(o, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  set(o, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  CHECK_DNN(cudnnBackendFinalize(o));
  return o;
}

/* The graph of ops, finalized (or its status in *st); NULL when it fails. */
static bd_t graph(const bd_t *ops, int n, cudnnStatus_t *st = NULL) {
  bd_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, ops);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn);
  cudnnStatus_t r = cudnnBackendFinalize(g);
  if (st) *st = r;
  else CHECK_DNN(r);
  return g;
}

/* The plan of graph g (heuristics, first configuration), and its workspace size in *ws. */
static bd_t plan_of(bd_t g, int64_t *ws) {
  int64_t count = 0;
  bd_t h = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
  set(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
  set(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm);
  CHECK_DNN(cudnnBackendFinalize(h));
  bd_t cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  CHECK_DNN(cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &cfg));
  bd_t p = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn);
  set(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
  CHECK_DNN(cudnnBackendFinalize(p));
  CHECK_DNN(cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count, ws));
  CHECK_DNN(cudnnBackendDestroyDescriptor(cfg));
  CHECK_DNN(cudnnBackendDestroyDescriptor(h));
  return p;
}

/* Executes plan with the n (uid, pointer) pairs and a workspace of ws bytes; synchronizes. */
static cudnnStatus_t run_plan(bd_t plan, int64_t ws, int n, const int64_t *uids, void *const *ptrs) {
  void *work = NULL;
  if (ws > 0) CHECK_CUDA(cudaMalloc(&work, (size_t)ws));
  bd_t vp = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
  set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &work);
  CHECK_DNN(cudnnBackendFinalize(vp));
  cudnnStatus_t st = cudnnBackendExecute(dnn, plan, vp);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_DNN(cudnnBackendDestroyDescriptor(vp));
  if (work) CHECK_CUDA(cudaFree(work));
  return st;
}

static void destroy_all(const bd_t *d, size_t n) {
  for (size_t i = 0; i < n; i++) CHECK_DNN(cudnnBackendDestroyDescriptor(d[i]));
}

/* c = (a @ b) * s - bias, a [2,3,4,5] half, b [1,1,5,6] float (broadcast over both batch
 * dimensions), s by value, bias [1,3,1,1]; out = half(c), r = sum of c over its last dimension,
 * m = max of c over the batch; the intermediates virtual. Against a double reference. */
static void chain_test(void) {
  enum { B0 = 2, B1 = 3, M = 4, K = 5, N = 6 };
  int64_t ad[4] = {B0, B1, M, K}, bdm[4] = {1, 1, K, N}, cd[4] = {B0, B1, M, N}, biasd[4] = {1, B1, 1, 1};
  int64_t rd[4] = {B0, B1, M, 1}, md[4] = {1, B1, M, N};
  bd_t a = tensor_ex(1, 4, ad, NULL, CUDNN_DATA_HALF), b = tensor_ex(2, 4, bdm, NULL, CUDNN_DATA_FLOAT);
  bd_t s = scalar(3), bias = tensor_ex(4, 4, biasd, NULL, CUDNN_DATA_FLOAT);
  bd_t c0 = tensor_ex(10, 4, cd, NULL, CUDNN_DATA_FLOAT, true), c1 = tensor_ex(11, 4, cd, NULL, CUDNN_DATA_FLOAT, true);
  bd_t c2 = tensor_ex(12, 4, cd, NULL, CUDNN_DATA_FLOAT, true);
  bd_t out = tensor_ex(5, 4, cd, NULL, CUDNN_DATA_HALF), r = tensor_ex(6, 4, rd, NULL, CUDNN_DATA_FLOAT);
  bd_t m = tensor_ex(7, 4, md, NULL, CUDNN_DATA_FLOAT);
  /* listed out of order: the graph runs each operation after its inputs' producers */
  bd_t ops[] = {pointwise(CUDNN_POINTWISE_IDENTITY, c2, NULL, out), reduction(CUDNN_REDUCE_TENSOR_ADD, c2, r),
                pointwise(CUDNN_POINTWISE_SUB, c1, bias, c2), matmul(a, b, c0),
                pointwise(CUDNN_POINTWISE_MUL, c0, s, c1), reduction(CUDNN_REDUCE_TENSOR_MAX, c2, m)};
  bd_t g = graph(ops, 6);
  int64_t ws = -1;
  bd_t plan = plan_of(g, &ws);
  CHECK_INT(ws, >=, (int64_t)(3 * B0 * B1 * M * N * sizeof(float))); /* the three intermediates */
  bd_t descs[] = {a, b, s, bias, c0, c1, c2, out, r, m, g, ops[0], ops[1], ops[2], ops[3], ops[4], ops[5]};
  destroy_all(descs, sizeof descs / sizeof descs[0]); /* the plan outlives them */

  const size_t na = B0 * B1 * M * K, nc = B0 * B1 * M * N;
  float ha[na], hb[K * N], hbias[B1], sval = 0.75f;
  fill(ha, na, 21), fill(hb, K * N, 22), fill(hbias, B1, 23);
  __half ah[na];
  for (size_t i = 0; i < na; i++) ah[i] = __float2half(ha[i]), ha[i] = __half2float(ah[i]);
  void *da, *dout;
  CHECK_CUDA(cudaMalloc(&da, sizeof ah));
  CHECK_CUDA(cudaMemcpy(da, ah, sizeof ah, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMalloc(&dout, nc * sizeof(__half)));
  float *db = dev_from(hb, K * N), *dbias = dev_from(hbias, B1), *dr, *dm;
  CHECK_CUDA(cudaMalloc(&dr, B0 * B1 * M * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dm, B1 * M * N * sizeof(float)));
  int64_t uids[] = {1, 2, 3, 4, 5, 6, 7};
  void *ptrs[] = {da, db, &sval, dbias, dout, dr, dm};
  CHECK_DNN(run_plan(plan, ws, 7, uids, ptrs));
  /* A missing pointer, or no workspace: BAD_PARAM, nothing launched. */
  CHECK_INT(run_plan(plan, ws, 6, uids, ptrs), ==, CUDNN_STATUS_BAD_PARAM);
  CHECK_INT(run_plan(plan, 0, 7, uids, ptrs), ==, CUDNN_STATUS_BAD_PARAM);

  __half hout[nc];
  float hr[B0 * B1 * M], hm[B1 * M * N];
  CHECK_CUDA(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
  to_host(hr, dr, B0 * B1 * M), to_host(hm, dm, B1 * M * N);
  double ref[nc];
  for (int i0 = 0; i0 < B0; i0++)
    for (int i1 = 0; i1 < B1; i1++)
      for (int mi = 0; mi < M; mi++)
        for (int ni = 0; ni < N; ni++) {
          double acc = 0;
          for (int k = 0; k < K; k++) acc += (double)ha[((i0 * B1 + i1) * M + mi) * K + k] * hb[k * N + ni];
          ref[((i0 * B1 + i1) * M + mi) * N + ni] = acc * sval - hbias[i1];
        }
  for (size_t i = 0; i < nc; i++) {
    double got = __half2float(hout[i]);
    if (!(fabs(got - ref[i]) <= fabs(ref[i]) * 0x1p-10 + 1e-5)) CHECK_FAIL_("out[%zu]: got %.8g, want %.8g", i, got, ref[i]);
  }
  for (int i = 0; i < B0 * B1 * M; i++) {
    double want = 0;
    for (int ni = 0; ni < N; ni++) want += ref[i * N + ni];
    near(hr[i], want, 4.0, "row sum", (size_t)i);
  }
  for (int i = 0; i < B1 * M * N; i++) {
    double want = ref[i] > ref[B1 * M * N + i] ? ref[i] : ref[B1 * M * N + i];
    near(hm[i], want, 1.0, "batch max", (size_t)i);
  }
  CHECK_DNN(cudnnBackendDestroyDescriptor(plan));
  void *bufs[] = {da, dout, db, dbias, dr, dm};
  for (size_t i = 0; i < 6; i++) CHECK_CUDA(cudaFree(bufs[i]));
}

/* A reshape with swapped strides is a transpose: y = x^T through a virtual tensor. */
static void reshape_test(void) {
  int64_t xd[4] = {1, 2, 3, 4}, td[4] = {1, 2, 4, 3}, tst[4] = {24, 12, 1, 4};
  bd_t x = tensor_ex(1, 4, xd, NULL, CUDNN_DATA_FLOAT), t = tensor_ex(2, 4, td, tst, CUDNN_DATA_FLOAT, true);
  bd_t y = tensor_ex(3, 4, td, NULL, CUDNN_DATA_FLOAT);
  bd_t ops[] = {reshape(x, t), pointwise(CUDNN_POINTWISE_IDENTITY, t, NULL, y)};
  bd_t g = graph(ops, 2);
  int64_t ws = 0;
  bd_t plan = plan_of(g, &ws);
  float hx[24], hy[24];
  fill(hx, 24, 31);
  float *dx = dev_from(hx, 24), *dy = dev_from(hx, 24);
  int64_t uids[] = {1, 3};
  void *ptrs[] = {dx, dy};
  CHECK_DNN(run_plan(plan, ws, 2, uids, ptrs));
  to_host(hy, dy, 24);
  for (int h = 0; h < 2; h++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 3; j++) CHECK_INT(hy[(h * 4 + i) * 3 + j], ==, hx[(h * 3 + j) * 4 + i]);
  /* The execution is one kernel launch on the handle's stream: captured, it is one kernel node,
   * whose replay computes the same. */
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_DNN(cudnnSetStream(dnn, s));
  void *work = NULL;
  if (ws > 0) CHECK_CUDA(cudaMalloc(&work, (size_t)ws));
  bd_t vp = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 2, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 2, ptrs);
  set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &work);
  CHECK_DNN(cudnnBackendFinalize(vp));
  cudaGraph_t cg;
  cudaGraphExec_t ge;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CHECK_DNN(cudnnBackendExecute(dnn, plan, vp));
  CHECK_CUDA(cudaStreamEndCapture(s, &cg));
  size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(cg, NULL, &nodes));
  CHECK_INT(nodes, ==, 1);
  /* On s: a non-blocking stream does not wait for the legacy stream's memset. */
  CHECK_CUDA(cudaMemsetAsync(dy, 0, sizeof hy, s));
  CHECK_CUDA(cudaGraphInstantiate(&ge, cg, 0));
  CHECK_CUDA(cudaGraphLaunch(ge, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  float again[24];
  to_host(again, dy, 24);
  CHECK(memcmp(again, hy, sizeof hy) == 0);
  CHECK_CUDA(cudaGraphExecDestroy(ge));
  CHECK_CUDA(cudaGraphDestroy(cg));
  CHECK_DNN(cudnnSetStream(dnn, 0));
  CHECK_CUDA(cudaStreamDestroy(s));
  if (work) CHECK_CUDA(cudaFree(work));
  bd_t descs[] = {x, t, y, ops[0], ops[1], g, plan, vp};
  destroy_all(descs, 8);
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dy));
}

/* The fused forward attention as cudnn_frontend builds it: q, k, v [B,H,S,D] bfloat16, a by-value
 * scale, the causal mask as a score-modifier sub-graph of one band mask (filling -inf), and the
 * softmax statistics node; the frontend destroys the sub-graph and the statistics node before
 * finalizing the attention. Against a double reference: out and the log-sum-exp statistics. */
#define BK_SDPA_STATS ((cudnnBackendDescriptorType_t)45)
#define BK_BAND_MASK ((cudnnBackendDescriptorType_t)44)
static void sdpa_test(int causal) {
  enum { B = 1, H = 2, S = 5, D = 8 };
  int64_t qd[4] = {B, H, S, D}, sd[4] = {B, H, S, S}, std_[4] = {B, H, S, 1};
  bd_t q = tensor_ex(1, 4, qd, NULL, CUDNN_DATA_BFLOAT16), k = tensor_ex(2, 4, qd, NULL, CUDNN_DATA_BFLOAT16);
  bd_t v = tensor_ex(3, 4, qd, NULL, CUDNN_DATA_BFLOAT16), o = tensor_ex(4, 4, qd, NULL, CUDNN_DATA_BFLOAT16);
  bd_t scale = scalar(5), stats = tensor_ex(6, 4, std_, NULL, CUDNN_DATA_FLOAT), fill_v = scalar(7);
  bd_t s_in = tensor_ex(8, 4, sd, NULL, CUDNN_DATA_FLOAT, true), s_out = tensor_ex(9, 4, sd, NULL, CUDNN_DATA_FLOAT, true);
  bd_t p_in = tensor_ex(10, 4, sd, NULL, CUDNN_DATA_FLOAT, true), p_out = tensor_ex(11, 4, sd, NULL, CUDNN_DATA_FLOAT, true);
  bd_t op = make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q);
  set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k);
  set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &scale);
  bd_t sm = make(BK_SDPA_STATS);
  set(sm, (cudnnBackendAttributeName_t)3100, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p_in);
  set(sm, (cudnnBackendAttributeName_t)3101, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p_out);
  set(sm, (cudnnBackendAttributeName_t)3102, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &stats);
  CHECK_DNN(cudnnBackendFinalize(sm));
  set(op, (cudnnBackendAttributeName_t)2814, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sm);
  CHECK_DNN(cudnnBackendDestroyDescriptor(sm));
  if (causal) {
    bd_t mask = make(BK_BAND_MASK);
    cudnnPointwiseMode_t ge = CUDNN_POINTWISE_CMP_GE;
    set(mask, (cudnnBackendAttributeName_t)3000, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &s_in);
    set(mask, (cudnnBackendAttributeName_t)3005, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &fill_v);
    set(mask, (cudnnBackendAttributeName_t)3006, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &s_out);
    set(mask, (cudnnBackendAttributeName_t)3007, CUDNN_TYPE_POINTWISE_MODE, 1, &ge);
    CHECK_DNN(cudnnBackendFinalize(mask));
    bd_t sub = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(sub, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mask);
    CHECK_DNN(cudnnBackendFinalize(sub));
    int64_t in_uid = 8, out_uid = 9;
    set(op, (cudnnBackendAttributeName_t)2811, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sub);
    set(op, (cudnnBackendAttributeName_t)2812, CUDNN_TYPE_INT64, 1, &in_uid);
    set(op, (cudnnBackendAttributeName_t)2813, CUDNN_TYPE_INT64, 1, &out_uid);
    CHECK_DNN(cudnnBackendDestroyDescriptor(sub));
    CHECK_DNN(cudnnBackendDestroyDescriptor(mask));
  }
  CHECK_DNN(cudnnBackendFinalize(op));
  bd_t g = graph(&op, 1);
  int64_t ws = 0;
  bd_t plan = plan_of(g, &ws);
  bd_t descs[] = {q, k, v, o, scale, stats, fill_v, s_in, s_out, p_in, p_out, op, g};
  destroy_all(descs, sizeof descs / sizeof descs[0]);

  const int n = B * H * S * D;
  float hq[n], hk[n], hv[n], hs[B * H * S], sc = 0.3f, minf = -INFINITY;
  __nv_bfloat16 bq[n], bk_[n], bv[n], bo[n];
  fill(hq, n, 41), fill(hk, n, 42), fill(hv, n, 43);
  for (int i = 0; i < n; i++) {
    bq[i] = __float2bfloat16(hq[i] * 2), hq[i] = __bfloat162float(bq[i]);
    bk_[i] = __float2bfloat16(hk[i] * 2), hk[i] = __bfloat162float(bk_[i]);
    bv[i] = __float2bfloat16(hv[i]), hv[i] = __bfloat162float(bv[i]);
  }
  void *dq, *dk, *dv, *dout;
  float *dst;
  CHECK_CUDA(cudaMalloc(&dq, sizeof bq));
  CHECK_CUDA(cudaMalloc(&dk, sizeof bq));
  CHECK_CUDA(cudaMalloc(&dv, sizeof bq));
  CHECK_CUDA(cudaMalloc(&dout, sizeof bq));
  CHECK_CUDA(cudaMalloc(&dst, sizeof hs));
  CHECK_CUDA(cudaMemcpy(dq, bq, sizeof bq, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dk, bk_, sizeof bq, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dv, bv, sizeof bq, cudaMemcpyHostToDevice));
  int64_t uids[] = {1, 2, 3, 4, 5, 6, 7};
  void *ptrs[] = {dq, dk, dv, dout, &sc, dst, &minf};
  CHECK_DNN(run_plan(plan, ws, causal ? 7 : 6, uids, ptrs));
  CHECK_CUDA(cudaMemcpy(bo, dout, sizeof bo, cudaMemcpyDeviceToHost));
  to_host(hs, dst, B * H * S);
  for (int h = 0; h < B * H; h++)
    for (int r = 0; r < S; r++) {
      double sco[S], mx = -INFINITY, l = 0;
      for (int j = 0; j < S; j++) {
        double acc = 0;
        for (int d = 0; d < D; d++) acc += (double)hq[(h * S + r) * D + d] * hk[(h * S + j) * D + d];
        sco[j] = causal && j > r ? -INFINITY : acc * sc;
        if (sco[j] > mx) mx = sco[j];
      }
      for (int j = 0; j < S; j++) l += exp(sco[j] - mx);
      near(hs[h * S + r], mx + log(l), 1.0, "stats", (size_t)(h * S + r));
      for (int e = 0; e < D; e++) {
        double want = 0;
        for (int j = 0; j < S; j++) want += exp(sco[j] - mx) / l * hv[(h * S + j) * D + e];
        double got = __bfloat162float(bo[(h * S + r) * D + e]);
        if (!(fabs(got - want) <= fabs(want) * 0x1p-8 + 1e-4))
          CHECK_FAIL_("sdpa out[%d,%d,%d]: got %.8g, want %.8g", h, r, e, got, want);
      }
    }
  CHECK_DNN(cudnnBackendDestroyDescriptor(plan));
  void *bufs[] = {dq, dk, dv, dout, dst};
  for (int i = 0; i < 5; i++) CHECK_CUDA(cudaFree(bufs[i]));
}

/* Graphs outside the interpreter's subset are refused, never computed approximately. */
static void opgraph_status_test(void) {
  int64_t d[4] = {1, 2, 3, 4}, kd[4] = {1, 2, 5, 4};
  bd_t x = tensor_ex(1, 4, d, NULL, CUDNN_DATA_FLOAT), y = tensor_ex(2, 4, d, NULL, CUDNN_DATA_FLOAT);
  bd_t v = tensor_ex(3, 4, d, NULL, CUDNN_DATA_FLOAT, true), kx = tensor_ex(4, 4, kd, NULL, CUDNN_DATA_FLOAT);
  bd_t dbl = tensor_ex(5, 4, d, NULL, CUDNN_DATA_DOUBLE);
  cudnnStatus_t st;
  /* a mode the interpreter does not implement */
  bd_t o1 = pointwise(CUDNN_POINTWISE_TANH_FWD, x, NULL, y, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_NOT_SUPPORTED);
  /* a scaling factor other than 1 */
  bd_t o2 = pointwise(CUDNN_POINTWISE_ADD, x, x, y, &st, 2.0f);
  CHECK_INT(st, ==, CUDNN_STATUS_NOT_SUPPORTED);
  /* double data */
  bd_t o3 = pointwise(CUDNN_POINTWISE_IDENTITY, dbl, NULL, y, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  /* a binary mode without its second operand; shapes that do not broadcast */
  bd_t o4 = pointwise(CUDNN_POINTWISE_ADD, x, NULL, y, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_BAD_PARAM);
  bd_t o5 = pointwise(CUDNN_POINTWISE_ADD, x, kx, y, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_BAD_PARAM);
  /* a matmul whose inner dimensions differ (4 against 2) */
  bd_t o6 = matmul(x, x, y, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_BAD_PARAM);
  /* a virtual tensor read but never written */
  bd_t o7 = pointwise(CUDNN_POINTWISE_EXP, v, NULL, y);
  bd_t g1 = graph(&o7, 1, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_BAD_PARAM);
  /* one tensor written twice */
  bd_t o8 = pointwise(CUDNN_POINTWISE_NEG, x, NULL, y), twice[2] = {o8, o8};
  bd_t g2 = graph(twice, 2, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_BAD_PARAM);
  /* a cycle through virtual tensors */
  bd_t w = tensor_ex(6, 4, d, NULL, CUDNN_DATA_FLOAT, true);
  bd_t c1 = pointwise(CUDNN_POINTWISE_EXP, v, NULL, w), c2 = pointwise(CUDNN_POINTWISE_LOG, w, NULL, v);
  bd_t cyc[2] = {c1, c2};
  bd_t g3 = graph(cyc, 2, &st);
  CHECK_INT(st, ==, CUDNN_STATUS_BAD_PARAM);
  /* a band mask with another comparison */
  bd_t f = scalar(7), m = make(BK_BAND_MASK);
  cudnnPointwiseMode_t lt = CUDNN_POINTWISE_CMP_LT;
  set(m, (cudnnBackendAttributeName_t)3000, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  set(m, (cudnnBackendAttributeName_t)3005, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &f);
  set(m, (cudnnBackendAttributeName_t)3006, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  set(m, (cudnnBackendAttributeName_t)3007, CUDNN_TYPE_POINTWISE_MODE, 1, &lt);
  CHECK_INT(cudnnBackendFinalize(m), ==, CUDNN_STATUS_NOT_SUPPORTED);
  bd_t all[] = {x, y, v, kx, dbl, o1, o2, o3, o4, o5, o6, o7, g1, o8, g2, w, c1, c2, g3, f, m};
  destroy_all(all, sizeof all / sizeof all[0]);
}

/* ---- Batch normalization ---- */

static cudnnTensorDescriptor_t tdesc(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t t;
  CHECK_DNN(cudnnCreateTensorDescriptor(&t));
  CHECK_DNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  return t;
}

static void bn_test(void) {
  const int N = 3, C = 4, H = 5, W = 3, M = N * H * W;
  const size_t xs = (size_t)N * C * H * W;
  const double eps = 1e-5, factor = 0.1;
  float hx[xs], hdy[xs], hs[C], hb[C], hrm[C], hrv[C], got[xs], sm[C], si[C], gs[C], gb[C];
  fill(hx, xs, 7), fill(hdy, xs, 8), fill(hs, C, 9), fill(hb, C, 10), fill(hrm, C, 11);
  for (int c = 0; c < C; c++) hrv[c] = 1.5f + 0.25f * c;
  cudnnTensorDescriptor_t xd = tdesc(N, C, H, W), pd = tdesc(1, C, 1, 1);
  float *x = dev_from(hx, xs), *dy = dev_from(hdy, xs), *s = dev_from(hs, C), *b = dev_from(hb, C);
  float *rm = dev_from(hrm, C), *rv = dev_from(hrv, C), *y, *smean, *sinv, *dx, *ds, *db;
  CHECK_CUDA(cudaMalloc(&y, xs * 4));
  CHECK_CUDA(cudaMalloc(&dx, xs * 4));
  CHECK_CUDA(cudaMalloc(&smean, C * 4));
  CHECK_CUDA(cudaMalloc(&sinv, C * 4));
  CHECK_CUDA(cudaMalloc(&ds, C * 4));
  CHECK_CUDA(cudaMalloc(&db, C * 4));
  float one = 1.0f, zero = 0.0f;
  size_t ws = 0, rs = 0;
  CHECK_DNN(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
      dnn, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, xd, xd, xd, pd, NULL, &ws));
  CHECK_DNN(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(dnn, CUDNN_BATCHNORM_SPATIAL,
                                                                 CUDNN_BATCHNORM_OPS_BN, NULL, xd, &rs));
  void *work = NULL, *reserve = NULL;
  if (ws) CHECK_CUDA(cudaMalloc(&work, ws));
  if (rs) CHECK_CUDA(cudaMalloc(&reserve, rs));
  CHECK_DNN(cudnnBatchNormalizationForwardTrainingEx(
      dnn, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, xd, x, NULL, NULL, xd, y,
      pd, s, b, factor, rm, rv, eps, smean, sinv, NULL, work, ws, reserve, rs));
  size_t bws = 0;
  CHECK_DNN(cudnnGetBatchNormalizationBackwardExWorkspaceSize(
      dnn, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, xd, NULL, xd, NULL, xd, pd, NULL, &bws));
  void *bwork = NULL;
  if (bws) CHECK_CUDA(cudaMalloc(&bwork, bws));
  CHECK_DNN(cudnnBatchNormalizationBackwardEx(
      dnn, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, &one, &zero, xd, x, NULL,
      NULL, xd, dy, NULL, NULL, xd, dx, pd, s, NULL, ds, db, eps, smean, sinv, NULL, bwork, bws,
      reserve, rs));
  CHECK_CUDA(cudaDeviceSynchronize());
  float grm[C], grv[C], gdx[xs];
  to_host(got, y, xs), to_host(grm, rm, C), to_host(grv, rv, C), to_host(sm, smean, C);
  to_host(si, sinv, C), to_host(gdx, dx, xs), to_host(gs, ds, C), to_host(gb, db, C);
  for (int c = 0; c < C; c++) {
    double mean = 0, var = 0, sdy = 0, sdyx = 0;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < H * W; i++) mean += hx[(n * C + c) * H * W + i];
    mean /= M;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < H * W; i++) var += pow(hx[(n * C + c) * H * W + i] - mean, 2);
    double inv = 1.0 / sqrt(var / M + eps);
    for (int n = 0; n < N; n++)
      for (int i = 0; i < H * W; i++) {
        size_t e = (size_t)(n * C + c) * H * W + i;
        double xh = (hx[e] - mean) * inv;
        near(got[e], xh * hs[c] + hb[c], 4.0, "bn y", e);
        sdy += hdy[e], sdyx += hdy[e] * xh;
      }
    near(grm[c], (1 - factor) * hrm[c] + factor * mean, 1.0, "bn running mean", (size_t)c);
    near(grv[c], (1 - factor) * hrv[c] + factor * var / (M - 1), 1.0, "bn running var", (size_t)c);
    near(sm[c], mean, 1.0, "bn saved mean", (size_t)c);
    near(si[c], inv, inv, "bn saved invstd", (size_t)c);
    near(gb[c], sdy, fabs(sdy) + M, "bn dbias", (size_t)c);
    near(gs[c], sdyx, fabs(sdyx) + M, "bn dscale", (size_t)c);
    for (int n = 0; n < N; n++)
      for (int i = 0; i < H * W; i++) {
        size_t e = (size_t)(n * C + c) * H * W + i;
        double xh = (hx[e] - mean) * inv;
        near(gdx[e], hs[c] * inv * (hdy[e] - sdy / M - xh * sdyx / M), 4.0, "bn dx", e);
      }
  }
  /* Inference from the running statistics, blended into y with beta = 0.5. */
  float half = 0.5f, prev[xs];
  to_host(prev, y, xs);
  CHECK_DNN(cudnnBatchNormalizationForwardInference(dnn, CUDNN_BATCHNORM_SPATIAL, &one, &half, xd, x,
                                                    xd, y, pd, s, b, rm, rv, eps));
  CHECK_CUDA(cudaDeviceSynchronize());
  to_host(got, y, xs);
  for (size_t e = 0; e < xs; e++) {
    int c = (int)(e / (H * W)) % C;
    double v = (hx[e] - grm[c]) / sqrt(grv[c] + eps) * hs[c] + hb[c];
    near(got[e], v + 0.5 * prev[e], 4.0, "bn inference", e);
  }
  if (simulated) { /* outside the simulated subset */
    CHECK_INT(cudnnBatchNormalizationForwardTrainingEx(
                  dnn, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN_ACTIVATION, &one, &zero, xd,
                  x, NULL, NULL, xd, y, pd, s, b, factor, rm, rv, eps, smean, sinv, NULL, NULL, 0,
                  NULL, 0),
              ==, CUDNN_STATUS_NOT_SUPPORTED);
    CHECK_INT(cudnnBatchNormalizationForwardInference(dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd,
                                                      x, xd, y, xd, s, b, rm, rv, eps),
              ==, CUDNN_STATUS_BAD_PARAM); /* parameters shaped like x */
  }
  float *frees[] = {x, dy, s, b, rm, rv, y, dx, smean, sinv, ds, db};
  for (size_t i = 0; i < sizeof frees / sizeof frees[0]; i++) CHECK_CUDA(cudaFree(frees[i]));
  void *bufs[] = {work, reserve, bwork};
  for (size_t i = 0; i < 3; i++)
    if (bufs[i]) CHECK_CUDA(cudaFree(bufs[i]));
  CHECK_DNN(cudnnDestroyTensorDescriptor(xd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(pd));
}

int main(void) {
  CHECK_CUDA(cudaFree(0));
  simulated = dlsym(RTLD_DEFAULT, "sim_cudnnsim_conv2d_bwd_data") != NULL;
  CHECK_DNN(cudnnCreate(&dnn));
  const struct conv_case cases[] = {
      /* n  c  h  w  k  r  s ph pw  u  v dh dw  g  cl alpha beta */
      {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 1.0f, 0.0f},
      {2, 4, 8, 8, 6, 3, 3, 1, 1, 2, 2, 1, 1, 1, 0, 1.0f, 0.0f},
      {1, 4, 6, 6, 8, 1, 1, 0, 0, 2, 2, 1, 1, 1, 1, 1.0f, 0.0f},
      {2, 4, 9, 7, 6, 3, 2, 2, 1, 1, 2, 2, 1, 2, 0, 1.0f, 0.0f},
      {1, 2, 5, 5, 3, 3, 3, 0, 0, 1, 1, 1, 1, 1, 1, 0.5f, 1.0f},
      {2, 3, 6, 5, 2, 2, 2, 1, 0, 1, 1, 1, 1, 1, 0, -2.0f, 0.25f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_test(&cases[i]);
  if (simulated) {
    status_test();
    chain_test();
    reshape_test();
    sdpa_test(0);
    sdpa_test(1);
    opgraph_status_test();
  }
  bn_test();
  CHECK_DNN(cudnnDestroy(dnn));
  printf("dnn-backend: ok\n");
  return 0;
}
