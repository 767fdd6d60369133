/* ag-fuse-dnn — the cuDNN fusion state machine (src/fuse-dnn.c) against fake cuDNN functions
 * that log each call: what is held, what is submitted and in which order, the learning rule,
 * the fallback and refusal after a failing fused call, deferred errors, and flushes. */
#include <string.h>

#include "check.h"
#include "fuse-dnn.h"
#include "real.h"
#include "stats.h"

static char log_[512];
static cudnnStatus_t cba_status = CUDNN_STATUS_SUCCESS, conv_status = CUDNN_STATUS_SUCCESS;
static cudnnActivationMode_t act_mode = CUDNN_ACTIVATION_RELU;

static void note(const char *what) {
  strncat(log_, what, sizeof log_ - strlen(log_) - 1);
  strncat(log_, " ", sizeof log_ - strlen(log_) - 1);
}

/* Descriptors are small integers cast to handles: 1 = x, 2 = y, 3 = bias (1x4x1x1), 4 = other
 * shape; all float. */
static cudnnStatus_t f_get_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t *dt, int *n, int *c,
                                  int *h, int *w, int *ns, int *cs, int *hs, int *ws) {
  long id = (long)d;
  *dt = CUDNN_DATA_FLOAT;
  if (id == 3) *n = 1, *c = 4, *h = 1, *w = 1;
  else if (id == 4) *n = 2, *c = 4, *h = 3, *w = 3;
  else *n = 2, *c = 4, *h = 5, *w = 5;
  *ws = 1, *hs = *w, *cs = *h * *w, *ns = *c * *cs;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_get_filter(cudnnFilterDescriptor_t d, cudnnDataType_t *dt,
                                  cudnnTensorFormat_t *f, int *k, int *c, int *h, int *w) {
  (void)d;
  *dt = CUDNN_DATA_FLOAT, *f = CUDNN_TENSOR_NCHW, *k = 4, *c = 4, *h = 3, *w = 3;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_get_conv(cudnnConvolutionDescriptor_t d, int *ph, int *pw, int *u, int *v,
                                int *dh, int *dw, cudnnConvolutionMode_t *m, cudnnDataType_t *ct) {
  (void)d;
  *ph = *pw = *u = *v = *dh = *dw = 1, *m = CUDNN_CROSS_CORRELATION, *ct = CUDNN_DATA_FLOAT;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_get_math(cudnnConvolutionDescriptor_t d, cudnnMathType_t *m) {
  (void)d, *m = CUDNN_DEFAULT_MATH;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_get_groups(cudnnConvolutionDescriptor_t d, int *g) {
  (void)d, *g = 1;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_get_act(const cudnnActivationDescriptor_t d, cudnnActivationMode_t *m,
                               cudnnNanPropagation_t *n, double *coef) {
  (void)d, *m = act_mode, *n = CUDNN_NOT_PROPAGATE_NAN, *coef = 0;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_get_stream(cudnnHandle_t h, cudaStream_t *s) {
  (void)h, *s = (cudaStream_t)0x100;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_create_act(cudnnActivationDescriptor_t *d) {
  *d = (cudnnActivationDescriptor_t)0x77;
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_set_act(cudnnActivationDescriptor_t d, cudnnActivationMode_t m,
                               cudnnNanPropagation_t n, double c) {
  (void)d, (void)n, (void)c;
  CHECK_INT(m, ==, CUDNN_ACTIVATION_IDENTITY);
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_conv(cudnnHandle_t h, const void *a, cudnnTensorDescriptor_t xd,
                            const void *x, cudnnFilterDescriptor_t wd, const void *w,
                            cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t al,
                            void *ws, size_t wss, const void *b, cudnnTensorDescriptor_t yd,
                            void *y) {
  (void)h, (void)xd, (void)x, (void)wd, (void)w, (void)cd, (void)al, (void)ws, (void)wss, (void)yd, (void)y;
  (void)b;
  CHECK(*(const float *)a == 2.0f);
  note("conv");
  return conv_status;
}
static cudnnStatus_t f_add(cudnnHandle_t h, const void *a, cudnnTensorDescriptor_t ad,
                           const void *A, const void *b, cudnnTensorDescriptor_t cd, void *C) {
  (void)h, (void)a, (void)ad, (void)A, (void)b, (void)cd, (void)C;
  note("add");
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_act(cudnnHandle_t h, cudnnActivationDescriptor_t d, const void *a,
                           cudnnTensorDescriptor_t xd, const void *x, const void *b,
                           cudnnTensorDescriptor_t yd, void *y) {
  (void)h, (void)d, (void)a, (void)xd, (void)x, (void)b, (void)yd, (void)y;
  note("act");
  return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t f_cba(cudnnHandle_t h, const void *a1, cudnnTensorDescriptor_t xd,
                           const void *x, cudnnFilterDescriptor_t wd, const void *w,
                           cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t al, void *ws,
                           size_t wss, const void *a2, cudnnTensorDescriptor_t zd, const void *z,
                           cudnnTensorDescriptor_t bd, const void *bias,
                           cudnnActivationDescriptor_t ad, cudnnTensorDescriptor_t yd, void *y) {
  (void)h, (void)xd, (void)x, (void)wd, (void)w, (void)cd, (void)al, (void)ws, (void)wss;
  (void)bd, (void)bias, (void)yd;
  CHECK(*(const float *)a1 == 2.0f && *(const float *)a2 == 0.0f);
  CHECK_PTR(z, ==, y);
  CHECK_PTR(zd, ==, yd);
  note(ad == (cudnnActivationDescriptor_t)0x77 ? "cb" : "cba");
  return cba_status;
}

static CUresult f_ctx(CUcontext *c) {
  *c = (CUcontext)0x55;
  return CUDA_SUCCESS;
}

static float xbuf[100], ybuf[100], y2buf[100], bbuf[4], wbuf[144], wsbuf[64];
static const float one = 1, zero = 0, two = 2;
#define H ((cudnnHandle_t)0x10)
#define T(id) ((cudnnTensorDescriptor_t)(id))
#define FD ((cudnnFilterDescriptor_t)0x20)
#define CD ((cudnnConvolutionDescriptor_t)0x30)
#define AD ((cudnnActivationDescriptor_t)0x40)

static cudnnStatus_t conv(cudnnConvolutionFwdAlgo_t algo) {
  return ag__fdnn_conv(H, &two, T(1), xbuf, FD, wbuf, CD, algo, wsbuf, sizeof wsbuf, &zero, T(2), ybuf);
}
static cudnnStatus_t add(void) { return ag__fdnn_add(H, &one, T(3), bbuf, &one, T(2), ybuf); }
static cudnnStatus_t act(void *out) { return ag__fdnn_act(H, AD, &one, T(2), ybuf, &zero, T(2), out); }

static void expect(const char *want) {
  if (strcmp(log_, want) != 0) {
    fprintf(stderr, "call log \"%s\", expected \"%s\"\n", log_, want);
    CHECK(0);
  }
  log_[0] = 0;
}

int main(void) {
  const cudnnConvolutionFwdAlgo_t IG = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                  PG = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  ag__fdnn_real = (ag_fdnn_real_t){f_conv, f_add, f_act, f_cba, f_get_stream, f_get_tensor,
                                   f_get_filter, f_get_conv, f_get_math, f_get_groups, f_get_act,
                                   f_create_act, f_set_act};
  ag__real.cuCtxGetCurrent = f_ctx;
  ag__real_mark_ready();

  /* First sight of a convolution: it runs at once (learning), nothing held. */
  CHECK_INT(conv(IG), ==, CUDNN_STATUS_SUCCESS);
  CHECK_INT(ag__fdnn_pending(), ==, 0);
  add(), act(ybuf);
  expect("conv add act ");

  /* Learned: conv and add are held, the in-place ReLU makes one fused call. */
  CHECK_INT(conv(IG), ==, CUDNN_STATUS_SUCCESS);
  CHECK_INT(ag__fdnn_pending(), ==, 1);
  CHECK_INT(add(), ==, CUDNN_STATUS_SUCCESS);
  expect("");
  CHECK_INT(act(ybuf), ==, CUDNN_STATUS_SUCCESS);
  expect("cba ");
  CHECK_INT(ag__fdnn_pending(), ==, 0);
  CHECK_INT(ag__stats_fused_count("cudnn_conv_bias_act"), ==, 1);

  /* Out of place with IMPLICIT_GEMM: no identity form allowed, the originals run. */
  conv(IG), add(), act(y2buf);
  expect("conv add act ");

  /* A flush (another call, a launch, an ordering call) submits what is held, in order. */
  conv(IG);
  ag__fdnn_flush();
  expect("conv ");
  add(), act(ybuf);
  expect("add act ");
  conv(IG), add();
  CHECK_INT(ag__fdnn_before(NULL), ==, CUDNN_STATUS_SUCCESS);
  expect("conv add ");

  /* A bias that is not 1xKx1x1, or beta != 0: not held. */
  conv(IG);
  CHECK_INT(ag__fdnn_add(H, &one, T(4), bbuf, &one, T(2), ybuf), ==, CUDNN_STATUS_SUCCESS);
  expect("conv add ");
  CHECK_INT(ag__fdnn_conv(H, &two, T(1), xbuf, FD, wbuf, CD, IG, wsbuf, sizeof wsbuf, &one, T(2), ybuf),
            ==, CUDNN_STATUS_SUCCESS);
  CHECK_INT(ag__fdnn_pending(), ==, 0);
  expect("conv ");

  /* tanh: the originals run, then the activation. */
  act_mode = CUDNN_ACTIVATION_TANH;
  conv(IG), add(), act(ybuf);
  expect("conv add act ");
  act_mode = CUDNN_ACTIVATION_RELU;

  /* IMPLICIT_PRECOMP_GEMM (a new convolution: learned first), out of place: conv + bias fused
   * with the identity activation, then the activation as called. Bias only: the same, at the
   * next flush. */
  conv(PG), add(), act(y2buf);
  expect("conv add act ");
  conv(PG), add(), act(y2buf);
  expect("cb act ");
  conv(PG), add();
  ag__fdnn_flush();
  expect("cb ");
  CHECK_INT(ag__stats_fused_count("cudnn_conv_bias"), ==, 2);

  /* A failing fused call: the originals run, and that convolution is never held again. */
  cba_status = CUDNN_STATUS_EXECUTION_FAILED;
  conv(IG), add();
  CHECK_INT(act(ybuf), ==, CUDNN_STATUS_SUCCESS);
  expect("cba conv add act ");
  conv(IG);
  CHECK_INT(ag__fdnn_pending(), ==, 0);
  add(), act(ybuf);
  expect("conv add act ");
  cba_status = CUDNN_STATUS_SUCCESS;

  /* A held call that fails when submitted: its error comes back from the next call on the
   * same handle, not from a call on another. */
  conv(PG);
  conv_status = CUDNN_STATUS_EXECUTION_FAILED;
  CHECK_INT(ag__fdnn_before((const void *)0x99), ==, CUDNN_STATUS_SUCCESS);
  conv_status = CUDNN_STATUS_SUCCESS;
  expect("conv ");
  conv(PG);
  conv_status = CUDNN_STATUS_EXECUTION_FAILED;
  CHECK_INT(ag__fdnn_before(H), ==, CUDNN_STATUS_EXECUTION_FAILED);
  conv_status = CUDNN_STATUS_SUCCESS;
  expect("conv ");

  /* reset forgets what was learned. */
  ag__fdnn_reset();
  conv(PG);
  CHECK_INT(ag__fdnn_pending(), ==, 0);
  expect("conv ");
  printf("ag-fuse-dnn: ok\n");
  return 0;
}
