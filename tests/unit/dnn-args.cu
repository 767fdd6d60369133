/* dnn-args.cu — the simulated cuDNN refuses bad input with cuDNN's statuses, and fails on
 * request (SIM_FAIL).
 *
 * First part: version and status strings, then descriptors and compute calls given NULL,
 * unset or inconsistent arguments (BAD_PARAM) and valid requests outside what cuDNN offers
 * (NOT_SUPPORTED), including the fused call's documented restrictions. A refused compute call
 * must leave its output untouched.
 * Second part: the program runs itself again with SIM_FAIL naming cuDNN functions and checks
 * that exactly the chosen calls fail, with their natural statuses, and launch nothing.
 */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

#define BAD CUDNN_STATUS_BAD_PARAM
#define UNSUP CUDNN_STATUS_NOT_SUPPORTED

static cudnnTensorDescriptor_t tensor(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t t;
  CHECK_DNN(cudnnCreateTensorDescriptor(&t));
  CHECK_DNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  return t;
}

static float *dev_fill(size_t n, float v) {
  float *h = (float *)malloc(n * 4), *d;
  for (size_t i = 0; i < n; i++) h[i] = v;
  CHECK_CUDA(cudaMalloc(&d, n * 4));
  CHECK_CUDA(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
  free(h);
  return d;
}

/* Nonzero when every element of d is still v (after the device finished). */
static int untouched(const float *d, size_t n, float v) {
  CHECK_CUDA(cudaDeviceSynchronize());
  float *h = (float *)malloc(n * 4);
  CHECK_CUDA(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
  int ok = 1;
  for (size_t i = 0; i < n; i++) ok &= h[i] == v;
  free(h);
  return ok;
}

static void descriptors(void) {
  CHECK_INT(cudnnGetVersion(), ==, CUDNN_VERSION);
  /* the version a wheel built against a newer minor version requires; another major is ignored */
  setenv("SIM_CUDNN_VERSION", "9.26.0", 1);
  CHECK_INT(cudnnGetVersion(), ==, 92600);
  int minor = 0;
  CHECK_INT(cudnnGetProperty(MINOR_VERSION, &minor), ==, CUDNN_STATUS_SUCCESS);
  CHECK_INT(minor, ==, 26);
  setenv("SIM_CUDNN_VERSION", "8.1.0", 1);
  CHECK_INT(cudnnGetVersion(), ==, CUDNN_VERSION);
  setenv("SIM_CUDNN_VERSION", "9.26", 1);
  CHECK_INT(cudnnGetVersion(), ==, CUDNN_VERSION);
  unsetenv("SIM_CUDNN_VERSION");
  CHECK_STR(cudnnGetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
  CHECK_STR(cudnnGetErrorString(BAD), "CUDNN_STATUS_BAD_PARAM");
  CHECK_STR(cudnnGetErrorString(CUDNN_STATUS_EXECUTION_FAILED), "CUDNN_STATUS_EXECUTION_FAILED");

  cudnnTensorDescriptor_t t;
  CHECK_STATUS_EQ(BAD, cudnnCreateTensorDescriptor(NULL));
  CHECK_DNN(cudnnCreateTensorDescriptor(&t));
  cudnnDataType_t dt;
  int n, c, h, w, sn, sc, sh, sw;
  /* Not set yet. */
  CHECK_STATUS_EQ(BAD, cudnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &sn, &sc, &sh, &sw));
  CHECK_STATUS_EQ(BAD, cudnnSetTensor4dDescriptor(NULL, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  CHECK_STATUS_EQ(BAD, cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 1, 1, 1));
  CHECK_STATUS_EQ(BAD, cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, -2, 1, 1));
  CHECK_STATUS_EQ(BAD, cudnnSetTensor4dDescriptor(t, (cudnnTensorFormat_t)9, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  CHECK_STATUS_EQ(BAD, cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, (cudnnDataType_t)99, 1, 1, 1, 1));
  CHECK_STATUS_EQ(UNSUP, cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 65536, 65536, 2, 1));
  CHECK_STATUS_EQ(BAD, cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 1, 2, 3, 4, 24, 12, 4, 0));
  CHECK_DNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 3, 4, 5));
  CHECK_DNN(cudnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &sn, &sc, &sh, &sw));
  CHECK(dt == CUDNN_DATA_FLOAT && n == 2 && c == 3 && h == 4 && w == 5);
  CHECK(sn == 60 && sc == 1 && sh == 15 && sw == 3);
  int dims[4] = {2, 3, 4, 5}, strides[4] = {60, 20, 5, 1};
  CHECK_DNN(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, dims, strides));
  CHECK_DNN(cudnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &sn, &sc, &sh, &sw));
  CHECK(sn == 60 && sc == 20 && sh == 5 && sw == 1);
  CHECK_STATUS_EQ(UNSUP, cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 9, dims, strides));
  CHECK_DNN(cudnnDestroyTensorDescriptor(t));

  cudnnFilterDescriptor_t f;
  CHECK_DNN(cudnnCreateFilterDescriptor(&f));
  cudnnTensorFormat_t fmt;
  CHECK_STATUS_EQ(BAD, cudnnGetFilter4dDescriptor(f, &dt, &fmt, &n, &c, &h, &w));
  CHECK_STATUS_EQ(BAD, cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 0, 3, 3));
  CHECK_DNN(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 3, 3, 2));
  CHECK_DNN(cudnnGetFilter4dDescriptor(f, &dt, &fmt, &n, &c, &h, &w));
  CHECK(fmt == CUDNN_TENSOR_NCHW && n == 4 && c == 3 && h == 3 && w == 2);
  CHECK_DNN(cudnnDestroyFilterDescriptor(f));

  cudnnConvolutionDescriptor_t cd;
  CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
  CHECK_STATUS_EQ(BAD, cudnnSetConvolution2dDescriptor(cd, -1, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  CHECK_STATUS_EQ(BAD, cudnnSetConvolution2dDescriptor(cd, 0, 0, 0, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  CHECK_STATUS_EQ(BAD, cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, (cudnnConvolutionMode_t)5, CUDNN_DATA_FLOAT));
  CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, 1, 2, 3, 4, 1, 2, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  int ph, pw, u, v, dh, dw;
  cudnnConvolutionMode_t mode;
  CHECK_DNN(cudnnGetConvolution2dDescriptor(cd, &ph, &pw, &u, &v, &dh, &dw, &mode, &dt));
  CHECK(ph == 1 && pw == 2 && u == 3 && v == 4 && dh == 1 && dw == 2 && mode == CUDNN_CONVOLUTION);
  CHECK_DNN(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
  CHECK_STATUS_EQ(BAD, cudnnSetConvolutionMathType(cd, (cudnnMathType_t)17));
  CHECK_DNN(cudnnSetConvolutionGroupCount(cd, 1));
  CHECK_STATUS_EQ(UNSUP, cudnnSetConvolutionGroupCount(cd, 2));
  CHECK_STATUS_EQ(BAD, cudnnSetConvolutionGroupCount(cd, 0));
  CHECK_DNN(cudnnDestroyConvolutionDescriptor(cd));

  cudnnActivationDescriptor_t ad;
  CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
  CHECK_STATUS_EQ(BAD, cudnnSetActivationDescriptor(ad, (cudnnActivationMode_t)42, CUDNN_NOT_PROPAGATE_NAN, 0));
  CHECK_DNN(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN, 6.0));
  cudnnActivationMode_t am;
  cudnnNanPropagation_t nan;
  double coef;
  CHECK_DNN(cudnnGetActivationDescriptor(ad, &am, &nan, &coef));
  CHECK(am == CUDNN_ACTIVATION_CLIPPED_RELU && nan == CUDNN_PROPAGATE_NAN && coef == 6.0);
  CHECK_DNN(cudnnDestroyActivationDescriptor(ad));
}

static void compute_calls(cudnnHandle_t dnn) {
  /* x 1x2x6x6, filter 3x2x3x3, pad 1 → y 1x3x6x6. */
  cudnnTensorDescriptor_t xd = tensor(1, 2, 6, 6), yd = tensor(1, 3, 6, 6), bd = tensor(1, 3, 1, 1);
  cudnnTensorDescriptor_t wrong_y = tensor(1, 3, 5, 6), unset;
  CHECK_DNN(cudnnCreateTensorDescriptor(&unset));
  cudnnFilterDescriptor_t fd, fd_c4;
  CHECK_DNN(cudnnCreateFilterDescriptor(&fd));
  CHECK_DNN(cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 2, 3, 3));
  CHECK_DNN(cudnnCreateFilterDescriptor(&fd_c4));
  CHECK_DNN(cudnnSetFilter4dDescriptor(fd_c4, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 4, 3, 3));
  cudnnConvolutionDescriptor_t cd;
  CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
  CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  cudnnActivationDescriptor_t relu, ident, sigm, relu_nan;
  CHECK_DNN(cudnnCreateActivationDescriptor(&relu));
  CHECK_DNN(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0));
  CHECK_DNN(cudnnCreateActivationDescriptor(&ident));
  CHECK_DNN(cudnnSetActivationDescriptor(ident, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0));
  CHECK_DNN(cudnnCreateActivationDescriptor(&sigm));
  CHECK_DNN(cudnnSetActivationDescriptor(sigm, CUDNN_ACTIVATION_SIGMOID, CUDNN_NOT_PROPAGATE_NAN, 0));
  CHECK_DNN(cudnnCreateActivationDescriptor(&relu_nan));
  CHECK_DNN(cudnnSetActivationDescriptor(relu_nan, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0));

  int n, c, h, w;
  CHECK_DNN(cudnnGetConvolution2dForwardOutputDim(cd, xd, fd, &n, &c, &h, &w));
  CHECK(n == 1 && c == 3 && h == 6 && w == 6);
  CHECK_STATUS_EQ(BAD, cudnnGetConvolution2dForwardOutputDim(cd, xd, fd_c4, &n, &c, &h, &w));
  CHECK_STATUS_EQ(BAD, cudnnGetConvolution2dForwardOutputDim(cd, unset, fd, &n, &c, &h, &w));

  const cudnnConvolutionFwdAlgo_t implicit = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  const cudnnConvolutionFwdAlgo_t precomp = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t ws = 1;
  CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, fd, cd, yd, implicit, &ws));
  CHECK_INT(ws, ==, 0);
  CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, fd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &ws));
  CHECK_INT(ws, >, 0);
  size_t gemm_ws = ws;
  CHECK_STATUS_EQ(BAD, cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, fd, cd, wrong_y, implicit, &ws));
  CHECK_STATUS_EQ(BAD, cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, fd, cd, yd, (cudnnConvolutionFwdAlgo_t)8, &ws));
  int count = 0;
  CHECK_DNN(cudnnGetConvolutionForwardAlgorithmMaxCount(dnn, &count));
  CHECK_INT(count, ==, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  CHECK_DNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, xd, fd, cd, yd, 8, &count, perf));
  CHECK_INT(count, ==, 8);
  CHECK(perf[0].status == CUDNN_STATUS_SUCCESS);
  CHECK_STATUS_EQ(BAD, cudnnGetConvolutionForwardAlgorithm_v7(dnn, xd, fd, cd, yd, 0, &count, perf));

  const float sentinel = 42.0f;
  float *x = dev_fill(72, 1.0f), *wt = dev_fill(54, 1.0f), *y = dev_fill(108, sentinel);
  float *b = dev_fill(3, 1.0f), *z = dev_fill(108, 0.0f);
  float one = 1.0f, zero = 0.0f;
  void *wsp;
  CHECK_CUDA(cudaMalloc(&wsp, gemm_ws));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(NULL, &one, xd, x, fd, wt, cd, implicit, NULL, 0, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, NULL, xd, x, fd, wt, cd, implicit, NULL, 0, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, &one, xd, NULL, fd, wt, cd, implicit, NULL, 0, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, &one, xd, x, fd, wt, cd, implicit, NULL, 0, &zero, wrong_y, y));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, &one, xd, x, fd_c4, wt, cd, implicit, NULL, 0, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, &one, xd, x, fd, wt, cd, (cudnnConvolutionFwdAlgo_t)-1, NULL, 0, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, &one, xd, x, fd, wt, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, NULL, 0, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, &one, xd, x, fd, wt, cd, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, z, gemm_ws - 1, &zero, yd, y));
  cudnnTensorDescriptor_t yd_double;
  CHECK_DNN(cudnnCreateTensorDescriptor(&yd_double));
  CHECK_DNN(cudnnSetTensor4dDescriptor(yd_double, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 1, 3, 6, 6));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionForward(dnn, &one, xd, x, fd, wt, cd, implicit, NULL, 0, &zero, yd_double, y));

  CHECK_STATUS_EQ(BAD, cudnnAddTensor(dnn, &one, tensor(1, 2, 1, 1), b, &one, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnAddTensor(dnn, &one, bd, b, &one, unset, y));
  CHECK_STATUS_EQ(BAD, cudnnAddTensor(dnn, &one, bd, NULL, &one, yd, y));

  CHECK_STATUS_EQ(BAD, cudnnActivationForward(dnn, ident, &one, yd, z, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnActivationForward(dnn, relu, &one, wrong_y, z, &zero, yd, y));
  CHECK_STATUS_EQ(BAD, cudnnActivationForward(dnn, relu, &one, yd, z, NULL, yd, y));
  cudnnTensorDescriptor_t yd_strided;
  CHECK_DNN(cudnnCreateTensorDescriptor(&yd_strided));
  CHECK_DNN(cudnnSetTensor4dDescriptorEx(yd_strided, CUDNN_DATA_FLOAT, 1, 3, 6, 6, 1, 36, 6, 108));
  CHECK_STATUS_EQ(BAD, cudnnActivationForward(dnn, relu, &one, yd, y, &zero, yd_strided, y));

#define FUSED(act, algo, biasd, zd, zp)                                                   \
  cudnnConvolutionBiasActivationForward(dnn, &one, xd, x, fd, wt, cd, algo, wsp, gemm_ws, &zero, zd, zp, \
                                        biasd, b, act, yd, y)
  CHECK_STATUS_EQ(UNSUP, FUSED(sigm, precomp, bd, yd, z));
  CHECK_STATUS_EQ(UNSUP, FUSED(relu_nan, precomp, bd, yd, z));
  CHECK_STATUS_EQ(UNSUP, FUSED(ident, implicit, bd, yd, z));
  CHECK_STATUS_EQ(UNSUP, FUSED(relu, precomp, tensor(1, 3, 6, 6), yd, z));
  CHECK_STATUS_EQ(UNSUP, FUSED(relu, precomp, tensor(2, 3, 1, 1), yd, z));
  CHECK_STATUS_EQ(UNSUP, FUSED(relu, precomp, bd, wrong_y, z));
  CHECK_STATUS_EQ(BAD, FUSED(relu, precomp, bd, yd, NULL));
  CHECK_STATUS_EQ(BAD, FUSED(NULL, precomp, bd, yd, z));
  CHECK_STATUS_EQ(BAD, FUSED(relu, precomp, bd, yd_strided, y));
  CHECK(untouched(y, 108, sentinel));

  /* The accepted forms: ReLU with any algorithm, identity with the precomputed GEMM. */
  CHECK_DNN(FUSED(relu, implicit, bd, yd, z));
  CHECK_DNN(FUSED(ident, precomp, bd, yd, z));
  CHECK(!untouched(y, 108, sentinel));
  CHECK_STATUS_EQ(BAD, cudnnConvolutionBiasActivationForward(dnn, &one, xd, x, fd, wt, cd, precomp, NULL, 0,
                                                             &zero, yd, z, bd, b, ident, yd, y));

  CHECK_STATUS_EQ(BAD, cudnnSetStream(NULL, 0));
  cudaStream_t s;
  CHECK_STATUS_EQ(BAD, cudnnGetStream(dnn, NULL));
  CHECK_DNN(cudnnGetStream(dnn, &s));
  CHECK(s == 0);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(wt));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(z));
  CHECK_CUDA(cudaFree(wsp));
}

/* Run with SIM_FAIL=cudnnCreate:1,cudnnCreateTensorDescriptor:2,cudnnConvolutionForward:2,
 * cudnnAddTensor:1+,cudnnActivationForward:1 */
static int fault_child(void) {
  cudnnHandle_t dnn;
  CHECK_CUDA(cudaFree(0));
  CHECK_STATUS_EQ(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, cudnnCreate(&dnn));
  CHECK_DNN(cudnnCreate(&dnn));
  cudnnTensorDescriptor_t xd = tensor(1, 1, 4, 4), t;
  CHECK_STATUS_EQ(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, cudnnCreateTensorDescriptor(&t));
  cudnnTensorDescriptor_t yd = tensor(1, 1, 4, 4);
  cudnnFilterDescriptor_t fd;
  CHECK_DNN(cudnnCreateFilterDescriptor(&fd));
  CHECK_DNN(cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 1, 1));
  cudnnConvolutionDescriptor_t cd;
  CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
  CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  float *x = dev_fill(16, 2.0f), *wt = dev_fill(1, 3.0f), *y = dev_fill(16, 0.0f);
  float one = 1.0f, zero = 0.0f;
  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  CHECK_DNN(cudnnConvolutionForward(dnn, &one, xd, x, fd, wt, cd, algo, NULL, 0, &zero, yd, y));
  CHECK(untouched(y, 16, 6.0f));
  float two = 2.0f;
  /* The second call fails and must not run: y stays 6, not 12. */
  CHECK_STATUS_EQ(CUDNN_STATUS_EXECUTION_FAILED,
                  cudnnConvolutionForward(dnn, &two, xd, x, fd, wt, cd, algo, NULL, 0, &zero, yd, y));
  CHECK(untouched(y, 16, 6.0f));
  CHECK_DNN(cudnnConvolutionForward(dnn, &two, xd, x, fd, wt, cd, algo, NULL, 0, &zero, yd, y));
  CHECK(untouched(y, 16, 12.0f));
  CHECK_STATUS_EQ(CUDNN_STATUS_EXECUTION_FAILED, cudnnAddTensor(dnn, &one, xd, x, &one, yd, y));
  CHECK_STATUS_EQ(CUDNN_STATUS_EXECUTION_FAILED, cudnnAddTensor(dnn, &one, xd, x, &one, yd, y));
  cudnnActivationDescriptor_t ad;
  CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
  CHECK_DNN(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0));
  CHECK_STATUS_EQ(CUDNN_STATUS_EXECUTION_FAILED, cudnnActivationForward(dnn, ad, &one, xd, x, &zero, yd, y));
  CHECK(untouched(y, 16, 12.0f));
  CHECK_DNN(cudnnDestroyActivationDescriptor(ad));
  CHECK_DNN(cudnnDestroyConvolutionDescriptor(cd));
  CHECK_DNN(cudnnDestroyFilterDescriptor(fd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(xd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(yd));
  CHECK_DNN(cudnnDestroy(dnn));
  printf("dnn-args: fault injection ok\n");
  return 0;
}

int main(int argc, char **argv) {
  (void)argc;
  if (getenv("DNN_ARGS_FAULT_CHILD")) return fault_child();

  CHECK_CUDA(cudaFree(0));
  descriptors();
  cudnnHandle_t dnn;
  CHECK_STATUS_EQ(BAD, cudnnCreate(NULL));
  CHECK_DNN(cudnnCreate(&dnn));
  compute_calls(dnn);
  CHECK_DNN(cudnnDestroy(dnn));
  CHECK_STATUS_EQ(BAD, cudnnDestroy(NULL));
  printf("dnn-args: validation ok\n");

  /* Fault injection needs SIM_FAIL from the start of the process: run again with it. */
  setenv("DNN_ARGS_FAULT_CHILD", "1", 1);
  setenv("SIM_FAIL",
         "cudnnCreate:1,cudnnCreateTensorDescriptor:2,cudnnConvolutionForward:2,"
         "cudnnAddTensor:1+,cudnnActivationForward:1",
         1);
  fflush(stdout);
  execv("/proc/self/exe", argv);
  CHECK_FAIL_("execv: cannot run the fault-injection part");
}
