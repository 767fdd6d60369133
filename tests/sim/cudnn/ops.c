/* ops.c — the compute calls of the simulated cuDNN and their shape queries.
 *
 * Each compute call validates its arguments on the calling thread, returning the status cuDNN
 * documents (BAD_PARAM for NULL or unset arguments and inconsistent shapes, NOT_SUPPORTED for
 * valid requests outside what is offered), copies the descriptors' contents and the host
 * scaling factors into kernel arguments, launches one kernel on the handle's stream and
 * returns. The caller sees results only after synchronising with that stream, as on a GPU.
 * Only 4-d float tensors (CUDNN_DATA_FLOAT, any strides) and 2-d convolutions are computed.
 * Every convolution algorithm computes the same thing; they differ only in the workspace they
 * ask for (ws_bytes), which the calls then require.
 */
#include "dnn.h"

#include <string.h>

static int same_dims(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b) {
  return a->nbdims == b->nbdims && memcmp(a->dims, b->dims, sizeof(int) * (size_t)a->nbdims) == 0;
}

static int same_layout(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b) {
  return same_dims(a, b) &&
         memcmp(a->strides, b->strides, sizeof(int) * (size_t)a->nbdims) == 0;
}

/* Output dimensions of a 2-d convolution; BAD_PARAM when the filter does not fit. */
static cudnnStatus_t conv_out(cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t xd,
                              cudnnFilterDescriptor_t fd, int out[4]) {
  if (!dnn_conv_ok(cd) || !dnn_tensor_ok(xd) || !dnn_filter_ok(fd)) return CUDNN_STATUS_BAD_PARAM;
  if (xd->nbdims != 4 || xd->dims[1] != fd->c) return CUDNN_STATUS_BAD_PARAM;
  long long eh = (long long)(fd->h - 1) * cd->dil_h + 1, ew = (long long)(fd->w - 1) * cd->dil_w + 1;
  long long ph = xd->dims[2] + 2LL * cd->pad_h - eh, pw = xd->dims[3] + 2LL * cd->pad_w - ew;
  if (ph < 0 || pw < 0) return CUDNN_STATUS_BAD_PARAM;
  out[0] = xd->dims[0];
  out[1] = fd->k;
  out[2] = (int)(ph / cd->u + 1);
  out[3] = (int)(pw / cd->v + 1);
  return CUDNN_STATUS_SUCCESS;
}

/* Validates x, w, conv and y of a forward convolution and fills the kernel's view of them. */
static cudnnStatus_t conv_check(cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t fd,
                                cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd,
                                cudnnsim_conv_t *p) {
  int out[4];
  cudnnStatus_t st = conv_out(cd, xd, fd, out);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!dnn_tensor_ok(yd) || yd->nbdims != 4 || memcmp(yd->dims, out, sizeof out) != 0)
    return CUDNN_STATUS_BAD_PARAM;
  if (xd->dtype != fd->dtype || xd->dtype != yd->dtype) return CUDNN_STATUS_BAD_PARAM;
  /* FLOAT_CONFIG: float data computed in float is the only configuration simulated. */
  if (xd->dtype != CUDNN_DATA_FLOAT || cd->compute != CUDNN_DATA_FLOAT)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (fd->format != CUDNN_TENSOR_NCHW && fd->format != CUDNN_TENSOR_NHWC)
    return CUDNN_STATUS_NOT_SUPPORTED;
  memset(p, 0, sizeof *p);
  p->x = dnn_t4(xd);
  p->f = dnn_f4(fd);
  p->y = dnn_t4(yd);
  p->pad_h = cd->pad_h, p->pad_w = cd->pad_w;
  p->stride_h = cd->u, p->stride_w = cd->v;
  p->dil_h = cd->dil_h, p->dil_w = cd->dil_w;
  p->flip = cd->mode == CUDNN_CONVOLUTION;
  p->groups = 1;
  return CUDNN_STATUS_SUCCESS;
}

/* Workspace each algorithm asks for: an im2col buffer of one image for GEMM, a table of filter
 * offsets for the precomputed implicit GEMM, nothing for the others. */
static size_t ws_bytes(const cudnnsim_conv_t *p, cudnnConvolutionFwdAlgo_t algo) {
  size_t crs = (size_t)p->f.c * (size_t)p->f.h * (size_t)p->f.w;
  switch (algo) {
  case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return crs * (size_t)p->y.h * (size_t)p->y.w * sizeof(float);
  case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return crs * sizeof(int);
  default: return 0;
  }
}

static int algo_ok(cudnnConvolutionFwdAlgo_t algo) {
  return (int)algo >= 0 && (int)algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
}

/* The workspace rules shared by both convolution calls. */
static cudnnStatus_t ws_check(const cudnnsim_conv_t *p, cudnnConvolutionFwdAlgo_t algo,
                              const void *ws, size_t ws_size) {
  size_t need = ws_bytes(p, algo);
  if (need > ws_size || (need > 0 && !ws)) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Shape and algorithm queries ---- */

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc,
                                                    int *n, int *c, int *h, int *w) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  int out[4];
  if (!n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = conv_out(convDesc, inputTensorDesc, filterDesc, out);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  *n = out[0], *c = out[1], *h = out[2], *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle,
                                                      const cudnnTensorDescriptor_t xDesc,
                                                      const cudnnFilterDescriptor_t wDesc,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      const cudnnTensorDescriptor_t yDesc,
                                                      cudnnConvolutionFwdAlgo_t algo,
                                                      size_t *sizeInBytes) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  cudnnsim_conv_t p;
  if (!dnn_handle_ok(handle) || !sizeInBytes || !algo_ok(algo)) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = conv_check(xDesc, wDesc, convDesc, yDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  *sizeInBytes = ws_bytes(&p, algo);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int *count) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_handle_ok(handle) || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t *perfResults) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  /* Heuristic order: the algorithms a GPU would most likely pick first. */
  static const cudnnConvolutionFwdAlgo_t order[] = {
      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
      CUDNN_CONVOLUTION_FWD_ALGO_GEMM,                  CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
      CUDNN_CONVOLUTION_FWD_ALGO_FFT,                   CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
      CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,              CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
  };
  cudnnsim_conv_t p;
  if (!dnn_handle_ok(handle) || requestedAlgoCount <= 0 || !returnedAlgoCount || !perfResults)
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = conv_check(srcDesc, filterDesc, convDesc, destDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  int n = requestedAlgoCount < CUDNN_CONVOLUTION_FWD_ALGO_COUNT ? requestedAlgoCount
                                                               : CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  for (int i = 0; i < n; i++) {
    memset(&perfResults[i], 0, sizeof perfResults[i]);
    perfResults[i].algo = order[i];
    perfResults[i].status = CUDNN_STATUS_SUCCESS;
    perfResults[i].time = -1.0f; /* heuristics do not time */
    perfResults[i].memory = ws_bytes(&p, order[i]);
    perfResults[i].determinism = CUDNN_DETERMINISTIC;
    perfResults[i].mathType = convDesc->math;
  }
  *returnedAlgoCount = n;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Compute ---- */

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void *x,
                                      const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t convDesc,
                                      cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                                      size_t workSpaceSizeInBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  cudnnsim_conv_t p;
  if (!dnn_handle_ok(handle) || !alpha || !beta || !x || !w || !y || !algo_ok(algo))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = conv_check(xDesc, wDesc, convDesc, yDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if ((st = ws_check(&p, algo, workSpace, workSpaceSizeInBytes)) != CUDNN_STATUS_SUCCESS) return st;
  float a = *(const float *)alpha, b = *(const float *)beta;
  void *args[] = {&p, &a, &b, &x, &w, &y};
  return dnn_launch(handle, DNN_K_CONV, cudnnsim_count(&p.y), args);
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha,
                             const cudnnTensorDescriptor_t aDesc, const void *A, const void *beta,
                             const cudnnTensorDescriptor_t cDesc, void *C) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  if (!dnn_handle_ok(handle) || !alpha || !beta || !A || !C || !dnn_tensor_ok(aDesc) ||
      !dnn_tensor_ok(cDesc) || aDesc->nbdims != cDesc->nbdims || aDesc->dtype != cDesc->dtype)
    return CUDNN_STATUS_BAD_PARAM;
  /* Each dimension of A matches C's or is 1 (broadcast). */
  for (int i = 0; i < aDesc->nbdims; i++)
    if (aDesc->dims[i] != cDesc->dims[i] && aDesc->dims[i] != 1) return CUDNN_STATUS_BAD_PARAM;
  if (cDesc->nbdims != 4 || cDesc->dtype != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnsim_t4_t at = dnn_t4(aDesc), ct = dnn_t4(cDesc);
  if (at.n == 1) at.sn = 0;
  if (at.c == 1) at.sc = 0;
  if (at.h == 1) at.sh = 0;
  if (at.w == 1) at.sw = 0;
  float a = *(const float *)alpha, b = *(const float *)beta;
  void *args[] = {&at, &ct, &a, &b, &A, &C};
  return dnn_launch(handle, DNN_K_ADD, cudnnsim_count(&ct), args);
}

static cudnnsim_act_t act_args(cudnnActivationDescriptor_t ad) {
  cudnnsim_act_t act = {(int)ad->mode, ad->nan == CUDNN_PROPAGATE_NAN, (float)ad->coef};
  return act;
}

cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle,
                                     cudnnActivationDescriptor_t activationDesc, const void *alpha,
                                     const cudnnTensorDescriptor_t xDesc, const void *x,
                                     const void *beta, const cudnnTensorDescriptor_t yDesc,
                                     void *y) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  if (!dnn_handle_ok(handle) || !dnn_act_ok(activationDesc) || !alpha || !beta || !x || !y ||
      !dnn_tensor_ok(xDesc) || !dnn_tensor_ok(yDesc))
    return CUDNN_STATUS_BAD_PARAM;
  /* IDENTITY exists only to bypass the activation of the fused convolution. */
  if (activationDesc->mode == CUDNN_ACTIVATION_IDENTITY) return CUDNN_STATUS_BAD_PARAM;
  if (!same_dims(xDesc, yDesc) || xDesc->dtype != yDesc->dtype) return CUDNN_STATUS_BAD_PARAM;
  /* In place needs identical layouts, as cuDNN documents. */
  if (x == y && !same_layout(xDesc, yDesc)) return CUDNN_STATUS_BAD_PARAM;
  if (activationDesc->mode == CUDNN_ACTIVATION_SWISH || xDesc->nbdims != 4 ||
      xDesc->dtype != CUDNN_DATA_FLOAT)
    return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnsim_t4_t xt = dnn_t4(xDesc), yt = dnn_t4(yDesc);
  cudnnsim_act_t act = act_args(activationDesc);
  float a = *(const float *)alpha, b = *(const float *)beta;
  void *args[] = {&xt, &yt, &act, &a, &b, &x, &y};
  return dnn_launch(handle, DNN_K_ACT, cudnnsim_count(&yt), args);
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes,
    const void *alpha2, const cudnnTensorDescriptor_t zDesc, const void *z,
    const cudnnTensorDescriptor_t biasDesc, const void *bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc,
    void *y) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  cudnnsim_conv_t p;
  if (!dnn_handle_ok(handle) || !alpha1 || !alpha2 || !x || !w || !z || !bias || !y ||
      !dnn_tensor_ok(zDesc) || !dnn_tensor_ok(biasDesc) || !dnn_act_ok(activationDesc) ||
      !algo_ok(algo))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = conv_check(xDesc, wDesc, convDesc, yDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  /* The fused call's documented restrictions: ReLU or identity, NaNs not propagated, identity
   * only with the precomputed implicit GEMM, z shaped like y, bias 1 x K x 1 x 1. */
  cudnnActivationMode_t mode = activationDesc->mode;
  if ((mode != CUDNN_ACTIVATION_RELU && mode != CUDNN_ACTIVATION_IDENTITY) ||
      activationDesc->nan != CUDNN_NOT_PROPAGATE_NAN ||
      (mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (!same_dims(zDesc, yDesc) || zDesc->dtype != yDesc->dtype) return CUDNN_STATUS_NOT_SUPPORTED;
  if (biasDesc->nbdims != 4 || biasDesc->dims[0] != 1 || biasDesc->dims[1] != p.y.c ||
      biasDesc->dims[2] != 1 || biasDesc->dims[3] != 1 || biasDesc->dtype != yDesc->dtype)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (z == y && !same_layout(zDesc, yDesc)) return CUDNN_STATUS_BAD_PARAM;
  if ((st = ws_check(&p, algo, workSpace, workSpaceSizeInBytes)) != CUDNN_STATUS_SUCCESS) return st;
  cudnnsim_t4_t zt = dnn_t4(zDesc), bt = dnn_t4(biasDesc);
  bt.sn = bt.sh = bt.sw = 0;
  cudnnsim_act_t act = act_args(activationDesc);
  float a1 = *(const float *)alpha1, a2 = *(const float *)alpha2;
  void *args[] = {&p, &zt, &bt, &act, &a1, &a2, &x, &w, &z, &bias, &y};
  return dnn_launch(handle, DNN_K_CBA, cudnnsim_count(&p.y), args);
}
