/* dnn-fusion.cu — whether this cuDNN runs a convolution and the batch norm (eval) and ReLU after it
 * as one operation graph of its backend API, the question a fusion of conv -> BN -> ReLU as
 * PyTorch runs them hangs on (docs/fused-replacements.md).
 *
 * PyTorch 2.x runs an eval-mode `relu(bn(conv(x)))` as a backend execution of a convolution graph,
 * cudnnBatchNormalizationForwardInference, then its own clamp kernel. One graph could do all three
 * only if cuDNN's engines accept a convolution followed by pointwise operations with per-channel
 * operands, and, since the program may read every tensor PyTorch wrote, with the convolution's
 * output (and the batch norm's) kept in memory rather than virtual. Only a GPU's cuDNN can say;
 * this probe asks it. For each element type and layout (float32 NCHW, PyTorch's default; float16
 * NHWC, autocast with channels_last) it builds four graphs:
 *
 *   conv            y = conv(x, w), alone (the graph PyTorch builds; a baseline)
 *   conv-sb-relu    out = relu(conv(x, w) * s + b), y virtual (per-channel s, b: the batch norm
 *                   folded into a scale and a shift)
 *   conv-sb-relu+y  the same with y written too
 *   conv-bn-relu    y written; bn = ((y - mean) * invstd) * gamma + beta written; out = relu(bn)
 *                   (the batch norm's own order of operations, invstd given per channel)
 *
 * and for each it finalizes the graph, asks the heuristics (instant mode, then fallback) for engine
 * configurations, finalizes the first plan that an engine accepts, runs it and compares every
 * tensor the graph writes with a reference computed on the host in double precision. One line per
 * graph: what failed and with which status, or the engine that ran it and the largest error
 * relative to the largest reference value, with "ok" when it is below 1e-4 (float32) or 1e-2
 * (float16). Exit status 0 when the baseline convolutions ran and matched, 1 otherwise; a fused
 * graph that cuDNN refuses is an answer, not a failure.
 *
 * On the simulator (tests/cases/dnn-fusion-probe.sh) the baselines run and the fused graphs are
 * refused: its backend runs a convolution only as a graph of its own. Each fused line is only
 * meaningful on a GPU (tools/gpu-check runs the probe and reports its lines).
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 2, C = 8, H = 8, W = 8, K = 16, R = 3, PAD = 1, MAXCFG = 8 };
enum { UX = 1, UW, UY, US, UB, UOUT, UMEAN, UINV, UGAMMA, UBN, UT1, UT2, UT3, UT4 };

#define CUDA(call)                                                                             \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "dnn-fusion: %s: %s\n", #call, cudaGetErrorString(e_));                  \
      exit(2);                                                                                 \
    }                                                                                          \
  } while (0)

typedef cudnnBackendDescriptor_t bd_t;

/* The first failure of a graph's construction: where, and cuDNN's status. */
typedef struct {
  const char *stage;
  cudnnStatus_t st;
} fail_t;

#define TRY(f, stage_, call)                                                                   \
  do {                                                                                         \
    cudnnStatus_t s_ = (call);                                                                 \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                          \
      (f)->stage = (stage_), (f)->st = s_;                                                     \
      goto out;                                                                                \
    }                                                                                          \
  } while (0)

/* Every descriptor a graph makes, destroyed at its end. */
static bd_t made[64];
static int nmade;

static cudnnStatus_t create(bd_t *d, cudnnBackendDescriptorType_t type) {
  cudnnStatus_t s = cudnnBackendCreateDescriptor(type, d);
  if (s == CUDNN_STATUS_SUCCESS) made[nmade++] = *d;
  return s;
}

static void destroy_all(void) {
  while (nmade) cudnnBackendDestroyDescriptor(made[--nmade]);
}

typedef struct {
  cudnnDataType_t dt; /* of x, w and the tensors written */
  int nhwc;
  const char *name;
} variant_t;

/* A tensor of dims (n, c, h, w), in the variant's layout; per-channel ones (1, c, 1, 1) and
 * intermediates are float. */
static cudnnStatus_t tensor(bd_t *t, int64_t uid, cudnnDataType_t dt, int nhwc, int64_t n, int64_t c,
                            int64_t h, int64_t w, int virt) {
  int64_t dims[4] = {n, c, h, w};
  int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc_s[4] = {h * w * c, 1, w * c, c};
  int64_t align = 16;
  bool v = virt != 0;
  cudnnStatus_t s;
  if ((s = create(t, CUDNN_BACKEND_TENSOR_DESCRIPTOR)) ||
      (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt)) ||
      (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims)) ||
      (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, nhwc ? nhwc_s : nchw)) ||
      (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)) ||
      (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align)) ||
      (s = cudnnBackendSetAttribute(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v)))
    return s;
  return cudnnBackendFinalize(*t);
}

/* A pointwise operation y = mode(x[, b]) computed in float. */
static cudnnStatus_t pointwise(bd_t *op, cudnnPointwiseMode_t mode, bd_t x, bd_t b, bd_t y) {
  bd_t pw;
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  cudnnStatus_t s;
  if ((s = create(&pw, CUDNN_BACKEND_POINTWISE_DESCRIPTOR)) ||
      (s = cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)) ||
      (s = cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f)) ||
      (s = cudnnBackendFinalize(pw)) || (s = create(op, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x)) ||
      (b && (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b))) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y)))
    return s;
  return cudnnBackendFinalize(*op);
}

/* The convolution y = conv(x, w): 3x3, padding 1, stride 1, cross-correlation in float. */
static cudnnStatus_t convolution(bd_t *op, bd_t x, bd_t w, bd_t y) {
  bd_t cv;
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t dims = 2, one[2] = {1, 1}, pad[2] = {PAD, PAD};
  float alpha = 1.0f, beta = 0.0f;
  cudnnStatus_t s;
  if ((s = create(&cv, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)) ||
      (s = cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f)) ||
      (s = cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)) ||
      (s = cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims)) ||
      (s = cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one)) ||
      (s = cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one)) ||
      (s = cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad)) ||
      (s = cudnnBackendSetAttribute(cv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad)) ||
      (s = cudnnBackendFinalize(cv)) || (s = create(op, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha)) ||
      (s = cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta)))
    return s;
  return cudnnBackendFinalize(*op);
}

/* ---- data and the host reference ---- */

static float hx[N * C * H * W], hw[K * C * R * R], hs[K], hb[K], hmean[K], hinv[K], hgamma[K], hbeta[K];
static double ry[N * K * H * W], rbn[N * K * H * W], rsb[N * K * H * W];

/* Element (n, c, h, w) of a tensor of c channels in the layout. */
static size_t at(int nhwc, int ch, int n, int c, int h, int w) {
  return nhwc ? (((size_t)n * H + h) * W + w) * ch + c : (((size_t)n * ch + c) * H + h) * W + w;
}

static float rounded(float v, cudnnDataType_t dt) {
  return dt == CUDNN_DATA_HALF ? __half2float(__float2half(v)) : v;
}

/* The inputs, as the element type holds them, and the references in double. */
static void make_data(cudnnDataType_t dt) {
  unsigned s = 12345;
  for (size_t i = 0; i < sizeof hx / sizeof hx[0]; i++) s = s * 1103515245u + 12345u, hx[i] = rounded((float)((s >> 9) % 2001) / 1000.0f - 1.0f, dt);
  for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++) s = s * 1103515245u + 12345u, hw[i] = rounded((float)((s >> 9) % 2001) / 4000.0f - 0.25f, dt);
  for (int k = 0; k < K; k++) {
    hmean[k] = 0.125f * (float)(k % 5) - 0.25f;
    hinv[k] = 1.0f / sqrtf(0.5f + 0.0625f * (float)k + 1e-5f);
    hgamma[k] = 0.75f + 0.03125f * (float)k;
    hbeta[k] = 0.0625f * (float)(k % 3) - 0.0625f;
    hs[k] = hgamma[k] * hinv[k];
    hb[k] = hbeta[k] - hmean[k] * hs[k];
  }
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++)
      for (int h = 0; h < H; h++)
        for (int w = 0; w < W; w++) {
          double acc = 0;
          for (int c = 0; c < C; c++)
            for (int i = 0; i < R; i++)
              for (int j = 0; j < R; j++) {
                int hh = h + i - PAD, ww = w + j - PAD;
                if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                acc += (double)hx[((n * C + c) * H + hh) * W + ww] * hw[((k * C + c) * R + i) * R + j];
              }
          size_t o = ((size_t)(n * K + k) * H + h) * W + w;
          ry[o] = acc;
          rbn[o] = (acc - hmean[k]) * hinv[k] * hgamma[k] + hbeta[k];
          rsb[o] = acc * hs[k] + hb[k];
        }
}

/* A device copy of an NCHW host array in the layout and element type. */
static void *upload(const float *h, int n, int c, int hh, int ww, int nhwc, cudnnDataType_t dt) {
  size_t count = (size_t)n * c * hh * ww, es = dt == CUDNN_DATA_HALF ? 2 : 4;
  unsigned char *buf = (unsigned char *)malloc(count * es);
  void *d;
  for (int a = 0; a < n; a++)
    for (int b = 0; b < c; b++)
      for (int i = 0; i < hh; i++)
        for (int j = 0; j < ww; j++) {
          float v = h[((size_t)(a * c + b) * hh + i) * ww + j];
          size_t o = nhwc ? (((size_t)a * hh + i) * ww + j) * c + b : (((size_t)a * c + b) * hh + i) * ww + j;
          if (es == 2) {
            __half hv = __float2half(v);
            memcpy(buf + o * 2, &hv, 2);
          } else {
            memcpy(buf + o * 4, &v, 4);
          }
        }
  CUDA(cudaMalloc(&d, count * es));
  CUDA(cudaMemcpy(d, buf, count * es, cudaMemcpyHostToDevice));
  free(buf);
  return d;
}

/* The largest error of device tensor d (N x K x H x W in the variant) against ref, relative to
 * the largest reference value; with relu, against relu(ref). */
static double error_of(const void *d, const double *ref, int relu, const variant_t *v) {
  size_t count = (size_t)N * K * H * W, es = v->dt == CUDNN_DATA_HALF ? 2 : 4;
  unsigned char *buf = (unsigned char *)malloc(count * es);
  double worst = 0, top = 0;
  CUDA(cudaMemcpy(buf, d, count * es, cudaMemcpyDeviceToHost));
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++)
      for (int h = 0; h < H; h++)
        for (int w = 0; w < W; w++) {
          size_t o = at(v->nhwc, K, n, k, h, w);
          double r = ref[((size_t)(n * K + k) * H + h) * W + w], got;
          if (relu && r < 0) r = 0;
          if (es == 2) {
            __half hv;
            memcpy(&hv, buf + o * 2, 2);
            got = __half2float(hv);
          } else {
            float f;
            memcpy(&f, buf + o * 4, 4);
            got = f;
          }
          if (fabs(got - r) > worst || got != got) worst = got != got ? INFINITY : fabs(got - r);
          if (fabs(r) > top) top = fabs(r);
        }
  free(buf);
  return worst / (top > 0 ? top : 1);
}

/* ---- one graph ---- */

enum { G_CONV, G_SB_RELU, G_SB_RELU_Y, G_BN_RELU, G_COUNT };
static const char *const GNAME[G_COUNT] = {"conv", "conv-sb-relu", "conv-sb-relu+y", "conv-bn-relu"};

typedef struct {
  void *x, *w, *y, *s, *b, *out, *mean, *inv, *gamma, *beta, *bn;
} bufs_t;

/* Plans the finalized graph g with the first engine configuration that finalizes; its engine
 * index in *engine. On failure, *stage says which step failed last. */
static cudnnStatus_t plan_for(cudnnHandle_t h, bd_t g, bd_t *plan, int64_t *engine, const char **stage) {
  static const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_FALLBACK};
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  *stage = "heuristics: no engine configuration";
  for (int m = 0; m < 2; m++) {
    bd_t heur, cfg[MAXCFG];
    int64_t got = 0;
    cudnnStatus_t s;
    if ((s = create(&heur, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)) ||
        (s = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g)) ||
        (s = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[m])) ||
        (s = cudnnBackendFinalize(heur))) {
      *stage = "heuristics", last = s;
      continue;
    }
    for (int i = 0; i < MAXCFG; i++)
      if ((s = create(&cfg[i], CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))) return s;
    if ((s = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, MAXCFG, &got, cfg))) {
      *stage = "heuristics results", last = s;
      continue;
    }
    for (int64_t i = 0; i < got && i < MAXCFG; i++) {
      if ((s = create(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)) ||
          (s = cudnnBackendSetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)) ||
          (s = cudnnBackendSetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i])) ||
          (s = cudnnBackendFinalize(*plan))) {
        *stage = "plan (every engine configuration refused)", last = s;
        continue;
      }
      bd_t eng;
      *engine = -1;
      if (!create(&eng, CUDNN_BACKEND_ENGINE_DESCRIPTOR) &&
          !cudnnBackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &eng))
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, engine);
      return CUDNN_STATUS_SUCCESS;
    }
  }
  return last;
}

/* Builds, plans and runs graph gi for variant v; prints its line. Returns nonzero when it is a
 * baseline that failed. */
static int run_graph(cudnnHandle_t h, int gi, const variant_t *v, const bufs_t *d) {
  fail_t f = {NULL, CUDNN_STATUS_SUCCESS};
  bd_t x, w, y, s, b, out, mean, inv, gamma, beta, bn, t1, t2, t3, ops[8], g, plan, pack;
  int nops = 0, ywritten = gi == G_CONV || gi == G_SB_RELU_Y || gi == G_BN_RELU;
  int64_t engine = -1, wsize = 0, uids[12];
  void *ptrs[12], *ws = NULL;
  int np = 0, bad = 0;
  cudnnDataType_t F = CUDNN_DATA_FLOAT;
  TRY(&f, "tensors", tensor(&x, UX, v->dt, v->nhwc, N, C, H, W, 0));
  TRY(&f, "tensors", tensor(&w, UW, v->dt, v->nhwc, K, C, R, R, 0));
  TRY(&f, "tensors", tensor(&y, UY, ywritten ? v->dt : F, v->nhwc, N, K, H, W, !ywritten));
  TRY(&f, "convolution", convolution(&ops[nops++], x, w, y));
  uids[np] = UX, ptrs[np++] = d->x, uids[np] = UW, ptrs[np++] = d->w;
  if (ywritten) uids[np] = UY, ptrs[np++] = d->y;
  if (gi == G_SB_RELU || gi == G_SB_RELU_Y) {
    TRY(&f, "tensors", tensor(&s, US, F, v->nhwc, 1, K, 1, 1, 0));
    TRY(&f, "tensors", tensor(&b, UB, F, v->nhwc, 1, K, 1, 1, 0));
    TRY(&f, "tensors", tensor(&t1, UT1, F, v->nhwc, N, K, H, W, 1));
    TRY(&f, "tensors", tensor(&t2, UT2, F, v->nhwc, N, K, H, W, 1));
    TRY(&f, "tensors", tensor(&out, UOUT, v->dt, v->nhwc, N, K, H, W, 0));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_MUL, y, s, t1));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_ADD, t1, b, t2));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_RELU_FWD, t2, NULL, out));
    uids[np] = US, ptrs[np++] = d->s, uids[np] = UB, ptrs[np++] = d->b, uids[np] = UOUT, ptrs[np++] = d->out;
  } else if (gi == G_BN_RELU) {
    TRY(&f, "tensors", tensor(&mean, UMEAN, F, v->nhwc, 1, K, 1, 1, 0));
    TRY(&f, "tensors", tensor(&inv, UINV, F, v->nhwc, 1, K, 1, 1, 0));
    TRY(&f, "tensors", tensor(&gamma, UGAMMA, F, v->nhwc, 1, K, 1, 1, 0));
    TRY(&f, "tensors", tensor(&beta, UB, F, v->nhwc, 1, K, 1, 1, 0));
    TRY(&f, "tensors", tensor(&t1, UT1, F, v->nhwc, N, K, H, W, 1));
    TRY(&f, "tensors", tensor(&t2, UT2, F, v->nhwc, N, K, H, W, 1));
    TRY(&f, "tensors", tensor(&t3, UT3, F, v->nhwc, N, K, H, W, 1));
    TRY(&f, "tensors", tensor(&bn, UBN, v->dt, v->nhwc, N, K, H, W, 0));
    TRY(&f, "tensors", tensor(&out, UOUT, v->dt, v->nhwc, N, K, H, W, 0));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_SUB, y, mean, t1));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_MUL, t1, inv, t2));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_MUL, t2, gamma, t3));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_ADD, t3, beta, bn));
    TRY(&f, "pointwise", pointwise(&ops[nops++], CUDNN_POINTWISE_RELU_FWD, bn, NULL, out));
    uids[np] = UMEAN, ptrs[np++] = d->mean, uids[np] = UINV, ptrs[np++] = d->inv;
    uids[np] = UGAMMA, ptrs[np++] = d->gamma, uids[np] = UB, ptrs[np++] = d->beta;
    uids[np] = UBN, ptrs[np++] = d->bn, uids[np] = UOUT, ptrs[np++] = d->out;
  }
  TRY(&f, "operation graph", create(&g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  TRY(&f, "operation graph", cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops));
  TRY(&f, "operation graph", cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  TRY(&f, "operation graph", cudnnBackendFinalize(g));
  const char *stage;
  TRY(&f, stage, plan_for(h, g, &plan, &engine, &stage));
  TRY(&f, "workspace size", cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, NULL, &wsize));
  if (wsize > 0) CUDA(cudaMalloc(&ws, (size_t)wsize));
  TRY(&f, "variant pack", create(&pack, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  TRY(&f, "variant pack", cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, np, ptrs));
  TRY(&f, "variant pack", cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, np, uids));
  TRY(&f, "variant pack", cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
  TRY(&f, "variant pack", cudnnBackendFinalize(pack));
  CUDA(cudaMemset(d->y, 0, (size_t)N * K * H * W * 4));
  TRY(&f, "execute", cudnnBackendExecute(h, plan, pack));
  CUDA(cudaDeviceSynchronize());
  {
    double tol = v->dt == CUDNN_DATA_HALF ? 1e-2 : 1e-4, e = 0, t;
    char what[160];
    int len = 0;
    const struct {
      int on;
      const char *name;
      const void *p;
      const double *ref;
      int relu;
    } outs[] = {{ywritten, "y", d->y, ry, 0},
                {gi == G_SB_RELU || gi == G_SB_RELU_Y, "out", d->out, rsb, 1},
                {gi == G_BN_RELU, "bn", d->bn, rbn, 0},
                {gi == G_BN_RELU, "out", d->out, rbn, 1}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
      if (!outs[i].on) continue;
      t = error_of(outs[i].p, outs[i].ref, outs[i].relu, v);
      if (t > e || t != t) e = t;
      len += snprintf(what + len, sizeof what - (size_t)len, "%s%s %.1e", len ? ", " : "", outs[i].name, t);
    }
    printf("%-8s %-4s %-15s ran (engine %lld): largest error %s: %s\n", v->name, v->nhwc ? "NHWC" : "NCHW",
           GNAME[gi], (long long)engine, what, e <= tol ? "ok" : "TOO LARGE");
    bad = gi == G_CONV && !(e <= tol);
  }
out:
  if (f.stage) {
    printf("%-8s %-4s %-15s refused at %s: %s\n", v->name, v->nhwc ? "NHWC" : "NCHW", GNAME[gi], f.stage,
           cudnnGetErrorString(f.st));
    bad = gi == G_CONV;
  }
  if (ws) cudaFree(ws);
  destroy_all();
  return bad;
}

int main(void) {
  static const variant_t variants[] = {{CUDNN_DATA_FLOAT, 0, "float32"}, {CUDNN_DATA_HALF, 1, "float16"}};
  cudnnHandle_t h;
  int bad = 0;
  if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
    fprintf(stderr, "dnn-fusion: cudnnCreate failed\n");
    return 2;
  }
  printf("cudnn %zu\n", cudnnGetVersion());
  for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; vi++) {
    const variant_t *v = &variants[vi];
    bufs_t d;
    make_data(v->dt);
    d.x = upload(hx, N, C, H, W, v->nhwc, v->dt);
    d.w = upload(hw, K, C, R, R, v->nhwc, v->dt);
    d.s = upload(hs, 1, K, 1, 1, 0, CUDNN_DATA_FLOAT);
    d.b = upload(hb, 1, K, 1, 1, 0, CUDNN_DATA_FLOAT);
    d.mean = upload(hmean, 1, K, 1, 1, 0, CUDNN_DATA_FLOAT);
    d.inv = upload(hinv, 1, K, 1, 1, 0, CUDNN_DATA_FLOAT);
    d.gamma = upload(hgamma, 1, K, 1, 1, 0, CUDNN_DATA_FLOAT);
    d.beta = upload(hbeta, 1, K, 1, 1, 0, CUDNN_DATA_FLOAT);
    CUDA(cudaMalloc(&d.y, (size_t)N * K * H * W * 4));
    CUDA(cudaMalloc(&d.out, (size_t)N * K * H * W * 4));
    CUDA(cudaMalloc(&d.bn, (size_t)N * K * H * W * 4));
    for (int gi = 0; gi < G_COUNT; gi++) bad |= run_graph(h, gi, v, &d);
    void *all[] = {d.x, d.w, d.s, d.b, d.mean, d.inv, d.gamma, d.beta, d.y, d.out, d.bn};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CUDA(cudaFree(all[i]));
  }
  cudnnDestroy(h);
  return bad;
}
