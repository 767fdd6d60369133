/* dnn-compute.cu — what the simulated cuDNN computes, and when.
 *
 * Convolutions (padding, stride, dilation, true convolution and cross-correlation, strided
 * tensors, alpha/beta blending) against a plain double-precision reference computed here;
 * cudnnAddTensor with a broadcast 1xKx1x1 bias; cudnnActivationForward for each mode, in place
 * too; cudnnConvolutionBiasActivationForward equal bit for bit to the unfused sequence
 * conv → add z → add bias → activation, including with infinities and NaNs in the input;
 * and asynchrony: with the handle's stream held back by a host function, the call returns
 * before anything is written, and the result appears once the stream runs.
 * Runs unchanged on a GPU with the real cuDNN (tolerances cover its arithmetic; the bit-exact
 * fused check is the simulator's contract, made only when the simulator's kernels are present).
 */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "dnn-test.h"

static cudnnHandle_t dnn;
static int simulated;


static cudnnTensorDescriptor_t tensor(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t t;
  CHECK_DNN(cudnnCreateTensorDescriptor(&t));
  CHECK_DNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  return t;
}

static void near(float got, double want, double scale, const char *what, size_t i) {
  if (!(fabs(got - want) <= 1e-4 * (scale + 1.0)))
    CHECK_FAIL_("%s[%zu]: got %.8g, want %.8g", what, i, got, want);
}

/* ---- Convolution against a reference ---- */

struct conv_case {
  int n, c, h, w, k, r, s, pad_h, pad_w, u, v, dil_h, dil_w;
  cudnnConvolutionMode_t mode;
  int padded_x; /* x described with Ex strides and a gap after every row */
  float alpha, beta;
  cudnnConvolutionFwdAlgo_t algo;
};

static void conv_test(const struct conv_case *t) {
  int xrow = t->padded_x ? t->w + 3 : t->w;
  size_t xs = (size_t)t->n * t->c * t->h * xrow, fs = (size_t)t->k * t->c * t->r * t->s;
  float *hx = (float *)malloc(xs * 4), *hf = (float *)malloc(fs * 4);
  fill(hx, xs, 1), fill(hf, fs, 2);

  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t fd;
  cudnnConvolutionDescriptor_t cd;
  CHECK_DNN(cudnnCreateTensorDescriptor(&xd));
  CHECK_DNN(cudnnSetTensor4dDescriptorEx(xd, CUDNN_DATA_FLOAT, t->n, t->c, t->h, t->w,
                                         t->c * t->h * xrow, t->h * xrow, xrow, 1));
  CHECK_DNN(cudnnCreateFilterDescriptor(&fd));
  CHECK_DNN(cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, t->k, t->c, t->r, t->s));
  CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
  CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, t->pad_h, t->pad_w, t->u, t->v, t->dil_h, t->dil_w,
                                            t->mode, CUDNN_DATA_FLOAT));
  int on, oc, oh, ow;
  CHECK_DNN(cudnnGetConvolution2dForwardOutputDim(cd, xd, fd, &on, &oc, &oh, &ow));
  CHECK_INT(on, ==, t->n);
  CHECK_INT(oc, ==, t->k);
  CHECK_INT(oh, ==, (t->h + 2 * t->pad_h - ((t->r - 1) * t->dil_h + 1)) / t->u + 1);
  CHECK_INT(ow, ==, (t->w + 2 * t->pad_w - ((t->s - 1) * t->dil_w + 1)) / t->v + 1);
  yd = tensor(on, oc, oh, ow);
  size_t ys = (size_t)on * oc * oh * ow;
  float *hy0 = (float *)malloc(ys * 4), *hy = (float *)malloc(ys * 4);
  fill(hy0, ys, 3);

  size_t ws_size = 0;
  CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, fd, cd, yd, t->algo, &ws_size));
  void *ws = NULL;
  if (ws_size) CHECK_CUDA(cudaMalloc(&ws, ws_size));
  float *dx = dev_from(hx, xs), *df = dev_from(hf, fs), *dy = dev_from(hy0, ys);
  CHECK_DNN(cudnnConvolutionForward(dnn, &t->alpha, xd, dx, fd, df, cd, t->algo, ws, ws_size,
                                    &t->beta, yd, dy));
  CHECK_CUDA(cudaDeviceSynchronize());
  to_host(hy, dy, ys);

  for (int n = 0; n < on; n++)
    for (int k = 0; k < oc; k++)
      for (int p = 0; p < oh; p++)
        for (int q = 0; q < ow; q++) {
          double acc = 0, mag = 0;
          for (int c = 0; c < t->c; c++)
            for (int r = 0; r < t->r; r++)
              for (int s = 0; s < t->s; s++) {
                int ih = p * t->u - t->pad_h + r * t->dil_h, iw = q * t->v - t->pad_w + s * t->dil_w;
                if (ih < 0 || ih >= t->h || iw < 0 || iw >= t->w) continue;
                int fr = t->mode == CUDNN_CONVOLUTION ? t->r - 1 - r : r;
                int fsx = t->mode == CUDNN_CONVOLUTION ? t->s - 1 - s : s;
                double prod = (double)hx[((size_t)(n * t->c + c) * t->h + ih) * xrow + iw] *
                              hf[((size_t)(k * t->c + c) * t->r + fr) * t->s + fsx];
                acc += prod, mag += fabs(prod);
              }
          size_t i = ((size_t)(n * oc + k) * oh + p) * ow + q;
          double want = t->alpha * acc + (t->beta != 0 ? t->beta * hy0[i] : 0.0);
          near(hy[i], want, mag + fabs(hy0[i]), "conv y", i);
        }

  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(df));
  CHECK_CUDA(cudaFree(dy));
  if (ws) CHECK_CUDA(cudaFree(ws));
  CHECK_DNN(cudnnDestroyTensorDescriptor(xd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(yd));
  CHECK_DNN(cudnnDestroyFilterDescriptor(fd));
  CHECK_DNN(cudnnDestroyConvolutionDescriptor(cd));
  free(hx), free(hf), free(hy0), free(hy);
}

/* ---- Bias addition ---- */

static void bias_test(void) {
  const int N = 2, K = 3, H = 4, W = 5;
  size_t ys = (size_t)N * K * H * W;
  float hb[K] = {0.5f, -1.25f, 2.0f}, *hy0 = (float *)malloc(ys * 4), *hy = (float *)malloc(ys * 4);
  fill(hy0, ys, 7);
  cudnnTensorDescriptor_t bd = tensor(1, K, 1, 1), yd = tensor(N, K, H, W);
  float *db = dev_from(hb, K), *dy = dev_from(hy0, ys);
  float alpha = 1.0f, beta = 1.0f;
  CHECK_DNN(cudnnAddTensor(dnn, &alpha, bd, db, &beta, yd, dy));
  alpha = 2.0f, beta = 0.5f; /* then y = 2 * bias + 0.5 * y */
  CHECK_DNN(cudnnAddTensor(dnn, &alpha, bd, db, &beta, yd, dy));
  CHECK_CUDA(cudaDeviceSynchronize());
  to_host(hy, dy, ys);
  for (size_t i = 0; i < ys; i++) {
    int k = (int)(i / (H * W) % K);
    near(hy[i], 2.0 * hb[k] + 0.5 * (hy0[i] + hb[k]), 4, "bias y", i);
  }
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dy));
  CHECK_DNN(cudnnDestroyTensorDescriptor(bd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(yd));
  free(hy0), free(hy);
}

/* ---- Activations ---- */

static double act_ref(cudnnActivationMode_t m, double coef, double v) {
  switch (m) {
  case CUDNN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-v));
  case CUDNN_ACTIVATION_RELU: return v > 0 ? v : 0;
  case CUDNN_ACTIVATION_TANH: return tanh(v);
  case CUDNN_ACTIVATION_CLIPPED_RELU: return v > 0 ? (v < coef ? v : coef) : 0;
  case CUDNN_ACTIVATION_ELU: return v > 0 ? v : coef * (exp(v) - 1);
  default: return NAN;
  }
}

static void act_test(void) {
  const size_t n = 2 * 3 * 4 * 5;
  float hx[n], hy0[n], hy[n];
  fill(hx, n, 11), fill(hy0, n, 12);
  for (size_t i = 0; i < n; i++) hx[i] *= 3.0f;
  cudnnTensorDescriptor_t td = tensor(2, 3, 4, 5);
  cudnnActivationDescriptor_t ad;
  CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
  const cudnnActivationMode_t modes[] = {CUDNN_ACTIVATION_SIGMOID, CUDNN_ACTIVATION_RELU,
                                         CUDNN_ACTIVATION_TANH, CUDNN_ACTIVATION_CLIPPED_RELU,
                                         CUDNN_ACTIVATION_ELU};
  for (int m = 0; m < 5; m++) {
    double coef = modes[m] == CUDNN_ACTIVATION_ELU ? 0.3 : 1.5;
    CHECK_DNN(cudnnSetActivationDescriptor(ad, modes[m], CUDNN_NOT_PROPAGATE_NAN, coef));
    float *dx = dev_from(hx, n), *dy = dev_from(hy0, n);
    float alpha = 1.0f, beta = 0.0f;
    CHECK_DNN(cudnnActivationForward(dnn, ad, &alpha, td, dx, &beta, td, dy));
    alpha = 0.5f, beta = 2.0f; /* in place: x = 0.5 * act(x) + 2 * x */
    CHECK_DNN(cudnnActivationForward(dnn, ad, &alpha, td, dx, &beta, td, dx));
    CHECK_CUDA(cudaDeviceSynchronize());
    to_host(hy, dy, n);
    for (size_t i = 0; i < n; i++) near(hy[i], act_ref(modes[m], coef, hx[i]), 4, "act y", i);
    to_host(hy, dx, n);
    for (size_t i = 0; i < n; i++)
      near(hy[i], 0.5 * act_ref(modes[m], coef, hx[i]) + 2.0 * hx[i], 8, "act in place", i);
    CHECK_CUDA(cudaFree(dx));
    CHECK_CUDA(cudaFree(dy));
  }
  CHECK_DNN(cudnnDestroyActivationDescriptor(ad));
  CHECK_DNN(cudnnDestroyTensorDescriptor(td));
}

/* ---- Fused equals unfused, bit for bit ---- */

static void fused_test(cudnnActivationMode_t mode, float alpha1, float alpha2, int specials) {
  const int N = 2, C = 3, H = 7, W = 6, K = 4, R = 3, S = 3;
  const size_t xs = (size_t)N * C * H * W, fs = (size_t)K * C * R * S, ys = (size_t)N * K * H * W;
  float *hx = (float *)malloc(xs * 4), *hf = (float *)malloc(fs * 4), hb[K];
  float *hz = (float *)malloc(ys * 4), *h1 = (float *)malloc(ys * 4), *h2 = (float *)malloc(ys * 4);
  fill(hx, xs, 21), fill(hf, fs, 22), fill(hb, K, 23), fill(hz, ys, 24);
  if (specials) { /* infinities and NaNs must travel the same way through both paths */
    hx[5] = INFINITY, hx[40] = -INFINITY, hx[77] = NAN, hz[3] = NAN, hz[9] = -INFINITY;
  }
  cudnnTensorDescriptor_t xd = tensor(N, C, H, W), yd = tensor(N, K, H, W), bd = tensor(1, K, 1, 1);
  cudnnFilterDescriptor_t fd;
  CHECK_DNN(cudnnCreateFilterDescriptor(&fd));
  CHECK_DNN(cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S));
  cudnnConvolutionDescriptor_t cd;
  CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
  CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  cudnnActivationDescriptor_t ad;
  CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
  CHECK_DNN(cudnnSetActivationDescriptor(ad, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t ws_size;
  CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, fd, cd, yd, algo, &ws_size));
  void *ws = NULL;
  if (ws_size) CHECK_CUDA(cudaMalloc(&ws, ws_size));
  float *dx = dev_from(hx, xs), *df = dev_from(hf, fs), *db = dev_from(hb, K);
  float *dz = dev_from(hz, ys), *d1 = dev_from(hz, ys), *d2 = dev_from(hz, ys);

  /* Fused, with z in its own buffer, then fused in place (z == y). */
  CHECK_DNN(cudnnConvolutionBiasActivationForward(dnn, &alpha1, xd, dx, fd, df, cd, algo, ws, ws_size,
                                                  &alpha2, yd, dz, bd, db, ad, yd, d1));
  float *d3 = dev_from(hz, ys);
  CHECK_DNN(cudnnConvolutionBiasActivationForward(dnn, &alpha1, xd, dx, fd, df, cd, algo, ws, ws_size,
                                                  &alpha2, yd, d3, bd, db, ad, yd, d3));
  /* Unfused: y = alpha1 * conv; y = alpha2 * z + y; y = bias + y; y = act(y). */
  float zero = 0.0f, one = 1.0f;
  CHECK_DNN(cudnnConvolutionForward(dnn, &alpha1, xd, dx, fd, df, cd, algo, ws, ws_size, &zero, yd, d2));
  if (alpha2 != 0.0f) CHECK_DNN(cudnnAddTensor(dnn, &alpha2, yd, dz, &one, yd, d2));
  CHECK_DNN(cudnnAddTensor(dnn, &one, bd, db, &one, yd, d2));
  if (mode != CUDNN_ACTIVATION_IDENTITY)
    CHECK_DNN(cudnnActivationForward(dnn, ad, &one, yd, d2, &zero, yd, d2));
  CHECK_CUDA(cudaDeviceSynchronize());
  to_host(h1, d1, ys);
  to_host(h2, d2, ys);
  if (simulated) {
    for (size_t i = 0; i < ys; i++)
      if (memcmp(&h1[i], &h2[i], 4) != 0)
        CHECK_FAIL_("fused y[%zu] = %a, unfused %a (act %d, alpha1 %g, alpha2 %g)", i, h1[i], h2[i],
                    (int)mode, alpha1, alpha2);
    to_host(h1, d3, ys);
    CHECK(memcmp(h1, h2, ys * 4) == 0);
  }
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(df));
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dz));
  CHECK_CUDA(cudaFree(d1));
  CHECK_CUDA(cudaFree(d2));
  CHECK_CUDA(cudaFree(d3));
  if (ws) CHECK_CUDA(cudaFree(ws));
  CHECK_DNN(cudnnDestroyTensorDescriptor(xd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(yd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(bd));
  CHECK_DNN(cudnnDestroyFilterDescriptor(fd));
  CHECK_DNN(cudnnDestroyConvolutionDescriptor(cd));
  CHECK_DNN(cudnnDestroyActivationDescriptor(ad));
  free(hx), free(hf), free(hz), free(h1), free(h2);
}

/* ---- Asynchrony: the work waits for the handle's stream ---- */

static volatile int gate_open;

static void CUDART_CB gate(void *) {
  for (int i = 0; i < 20000 && !__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE); i++) usleep(500); /* gives up after 10 s */
}

static void async_test(void) {
  const size_t n = 1 * 2 * 8 * 8;
  float hx[n], hy[n], sentinel[n];
  fill(hx, n, 31);
  for (size_t i = 0; i < n; i++) sentinel[i] = -7.0f;
  cudaStream_t s, side;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CHECK_DNN(cudnnSetStream(dnn, s));
  cudaStream_t got;
  CHECK_DNN(cudnnGetStream(dnn, &got));
  CHECK(got == s);
  cudnnTensorDescriptor_t td = tensor(1, 2, 8, 8);
  cudnnActivationDescriptor_t ad;
  CHECK_DNN(cudnnCreateActivationDescriptor(&ad));
  CHECK_DNN(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  float *dx = dev_from(hx, n), *dy = dev_from(sentinel, n);
  /* The uploads ran on the legacy stream, which the non-blocking side stream does not wait for. */
  CHECK_CUDA(cudaDeviceSynchronize());

  gate_open = 0;
  CHECK_CUDA(cudaLaunchHostFunc(s, gate, NULL));
  float one = 1.0f, zero = 0.0f;
  CHECK_DNN(cudnnActivationForward(dnn, ad, &one, td, dx, &zero, td, dy));
  /* The call has returned but its stream is held: y is untouched. */
  CHECK_CUDA(cudaMemcpyAsync(hy, dy, sizeof hy, cudaMemcpyDeviceToHost, side));
  CHECK_CUDA(cudaStreamSynchronize(side));
  CHECK(memcmp(hy, sentinel, sizeof hy) == 0);
  CHECK_INT(cudaStreamQuery(s), ==, cudaErrorNotReady);
  __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpyAsync(hy, dy, sizeof hy, cudaMemcpyDeviceToHost, side));
  CHECK_CUDA(cudaStreamSynchronize(side));
  for (size_t i = 0; i < n; i++) near(hy[i], hx[i] > 0 ? hx[i] : 0, 1, "async y", i);

  CHECK_DNN(cudnnSetStream(dnn, 0));
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dy));
  CHECK_DNN(cudnnDestroyActivationDescriptor(ad));
  CHECK_DNN(cudnnDestroyTensorDescriptor(td));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaStreamDestroy(side));
}

int main(void) {
  CHECK_CUDA(cudaFree(0));
  simulated = dlsym(RTLD_DEFAULT, "sim_cudnnsim_conv_bias_act_fwd") != NULL;
  CHECK_DNN(cudnnCreate(&dnn));

  const struct conv_case cases[] = {
      {1, 1, 5, 5, 1, 3, 3, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, 0, 1.0f, 0.0f,
       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM},
      {2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, 0, 1.0f, 0.0f,
       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM},
      {2, 3, 9, 8, 4, 3, 2, 2, 1, 2, 3, 1, 1, CUDNN_CONVOLUTION, 1, 1.0f, 0.0f,
       CUDNN_CONVOLUTION_FWD_ALGO_GEMM},
      {1, 2, 11, 10, 3, 3, 3, 2, 2, 1, 2, 2, 2, CUDNN_CROSS_CORRELATION, 1, 2.0f, 0.5f,
       CUDNN_CONVOLUTION_FWD_ALGO_DIRECT},
      {3, 4, 6, 6, 5, 1, 1, 0, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, 0, -0.5f, 1.0f,
       CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_test(&cases[i]);
  bias_test();
  act_test();
  fused_test(CUDNN_ACTIVATION_RELU, 1.0f, 0.0f, 0);
  fused_test(CUDNN_ACTIVATION_RELU, 1.0f, 0.0f, 1);
  fused_test(CUDNN_ACTIVATION_RELU, 0.5f, 0.75f, 0);
  fused_test(CUDNN_ACTIVATION_RELU, 1.0f, 1.0f, 1);
  fused_test(CUDNN_ACTIVATION_IDENTITY, 2.0f, -1.5f, 0);
  fused_test(CUDNN_ACTIVATION_IDENTITY, 1.0f, 0.0f, 1);
  async_test();

  CHECK_DNN(cudnnDestroy(dnn));
  printf("dnn-compute: ok\n");
  return 0;
}
