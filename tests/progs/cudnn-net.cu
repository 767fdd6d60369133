/* cudnn-net.cu — a small convolution network with the legacy cuDNN API.
 *
 * Three layers of convolution → add bias → relu (cudnnConvolutionForward, cudnnAddTensor,
 * cudnnActivationForward), NCHW float, run for ITERS iterations on one stream. Before each
 * iteration a runtime kernel perturbs the input, so each iteration computes something new, and
 * a synchronous copy brings the output back. Output: the output checksum of every iteration as
 * exact bits, then `launches: runtime=R driver=0 cudnn_calls=K` with K the cuDNN compute calls
 * (see prog.h: the kernels each call launches are cuDNN's business).
 */
#include <cuda_runtime.h>
#include <cudnn.h>

#include "prog.h"
#include "sim_kernel.h"

enum { BATCH = 2, C0 = 3, H0 = 12, W0 = 12, LAYERS = 3, ITERS = 4, BLOCK = 128 };

struct layer_shape {
  int k, r, pad, stride; /* output channels, square filter size, padding, stride */
};
static const struct layer_shape SHAPES[LAYERS] = {{8, 3, 1, 1}, {8, 3, 1, 2}, {4, 3, 0, 1}};

__host__ __device__ static inline void perturb_body(unsigned long i, float *x, int iter, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 0.875f + (float)((i * 5 + (unsigned long)iter * 3) % 7) * 0.0625f;
}

extern "C" __global__ void dn_perturb(float *x, int iter, int n) {
  perturb_body(PROG_TID(), x, iter, n);
}

SIM_KERNEL(dn_perturb) {
  SIM_FOR_EACH_THREAD(i) perturb_body(i, SIM_ARG(0, float *), SIM_ARG(1, int), SIM_ARG(2, int));
}

struct layer {
  cudnnTensorDescriptor_t in_desc, out_desc, bias_desc;
  cudnnFilterDescriptor_t w_desc;
  cudnnConvolutionDescriptor_t conv;
  float *w, *bias, *out;
  int c, h, wd;     /* output channels, height, width */
  size_t out_count;
};

static float value_of(int layer, int i, float scale) {
  return (float)((i * 37 + layer * 11) % 23 - 11) * scale;
}

int main(void) {
  cudaStream_t s;
  /* Blocking: it must wait for the setup copies, made on the legacy default stream. */
  CHECK_CUDA(cudaStreamCreate(&s));
  cudnnHandle_t h;
  CHECK_DNN(cudnnCreate(&h));
  CHECK_DNN(cudnnSetStream(h, s));
  cudnnActivationDescriptor_t relu;
  CHECK_DNN(cudnnCreateActivationDescriptor(&relu));
  CHECK_DNN(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));

  const int in_count = BATCH * C0 * H0 * W0;
  float *x;
  CHECK_CUDA(cudaMalloc((void **)&x, in_count * sizeof(float)));
  static float host[BATCH * C0 * H0 * W0];
  for (int i = 0; i < in_count; i++) host[i] = value_of(9, i, 0.125f);
  CHECK_CUDA(cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice));

  struct layer L[LAYERS];
  size_t ws_size = 0;
  int c = C0, hh = H0, ww = W0;
  for (int l = 0; l < LAYERS; l++) {
    struct layer *y = &L[l];
    const struct layer_shape *sh = &SHAPES[l];
    CHECK_DNN(cudnnCreateTensorDescriptor(&y->in_desc));
    CHECK_DNN(cudnnSetTensor4dDescriptor(y->in_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, BATCH, c, hh, ww));
    CHECK_DNN(cudnnCreateFilterDescriptor(&y->w_desc));
    CHECK_DNN(cudnnSetFilter4dDescriptor(y->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, sh->k, c, sh->r, sh->r));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&y->conv));
    CHECK_DNN(cudnnSetConvolution2dDescriptor(y->conv, sh->pad, sh->pad, sh->stride, sh->stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    int n, oc, oh, ow;
    CHECK_DNN(cudnnGetConvolution2dForwardOutputDim(y->conv, y->in_desc, y->w_desc, &n, &oc, &oh, &ow));
    CHECK_INT(n, ==, BATCH);
    CHECK_INT(oc, ==, sh->k);
    CHECK_INT(oh, ==, (hh + 2 * sh->pad - sh->r) / sh->stride + 1);
    CHECK_INT(ow, ==, (ww + 2 * sh->pad - sh->r) / sh->stride + 1);
    CHECK_DNN(cudnnCreateTensorDescriptor(&y->out_desc));
    CHECK_DNN(cudnnSetTensor4dDescriptor(y->out_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, oc, oh, ow));
    CHECK_DNN(cudnnCreateTensorDescriptor(&y->bias_desc));
    CHECK_DNN(cudnnSetTensor4dDescriptor(y->bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, oc, 1, 1));
    size_t ws = 0;
    CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(h, y->in_desc, y->w_desc, y->conv, y->out_desc,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &ws));
    if (ws > ws_size) ws_size = ws;

    const int w_count = sh->k * c * sh->r * sh->r;
    static float hw[8 * 8 * 3 * 3], hb[8];
    for (int i = 0; i < w_count; i++) hw[i] = value_of(l, i, 0.03125f);
    for (int i = 0; i < oc; i++) hb[i] = value_of(l + 5, i, 0.0625f) + 0.5f;
    CHECK_CUDA(cudaMalloc((void **)&y->w, w_count * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&y->bias, oc * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(y->w, hw, w_count * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(y->bias, hb, oc * sizeof(float), cudaMemcpyHostToDevice));
    y->c = oc;
    y->h = oh;
    y->wd = ow;
    y->out_count = (size_t)n * oc * oh * ow;
    CHECK_CUDA(cudaMalloc((void **)&y->out, y->out_count * sizeof(float)));
    c = oc;
    hh = oh;
    ww = ow;
  }
  void *ws = NULL;
  if (ws_size) CHECK_CUDA(cudaMalloc(&ws, ws_size));

  const float one = 1.0f, zero = 0.0f;
  static float result[BATCH * 8 * 12 * 12];
  for (int it = 0; it < ITERS; it++) {
    PROG_LAUNCH(dn_perturb, (in_count + BLOCK - 1) / BLOCK, BLOCK, 0, s, x, it, in_count);
    const float *in = x;
    for (int l = 0; l < LAYERS; l++) {
      struct layer *y = &L[l];
      CHECK_DNN(cudnnConvolutionForward(h, &one, y->in_desc, in, y->w_desc, y->w, y->conv,
                                        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, ws, ws_size, &zero,
                                        y->out_desc, y->out));
      PROG_DNN();
      CHECK_DNN(cudnnAddTensor(h, &one, y->bias_desc, y->bias, &one, y->out_desc, y->out));
      PROG_DNN();
      CHECK_DNN(cudnnActivationForward(h, relu, &one, y->out_desc, y->out, &zero, y->out_desc, y->out));
      PROG_DNN();
      in = y->out;
    }
    const struct layer *last = &L[LAYERS - 1];
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(result, last->out, last->out_count * sizeof(float), cudaMemcpyDeviceToHost));
    size_t positive = 0;
    for (size_t i = 0; i < last->out_count; i++) positive += result[i] > 0.0f;
    printf("iter %d: %zu/%zu positive, ", it, positive, last->out_count);
    prog_print_floats("out", result, last->out_count);
  }
  /* A middle layer too, so a wrong first or second layer cannot hide behind relu zeros. */
  CHECK_CUDA(cudaMemcpy(result, L[0].out, L[0].out_count * sizeof(float), cudaMemcpyDeviceToHost));
  prog_print_floats("layer0", result, L[0].out_count);

  for (int l = 0; l < LAYERS; l++) {
    CHECK_DNN(cudnnDestroyTensorDescriptor(L[l].in_desc));
    CHECK_DNN(cudnnDestroyTensorDescriptor(L[l].out_desc));
    CHECK_DNN(cudnnDestroyTensorDescriptor(L[l].bias_desc));
    CHECK_DNN(cudnnDestroyFilterDescriptor(L[l].w_desc));
    CHECK_DNN(cudnnDestroyConvolutionDescriptor(L[l].conv));
    CHECK_CUDA(cudaFree(L[l].w));
    CHECK_CUDA(cudaFree(L[l].bias));
    CHECK_CUDA(cudaFree(L[l].out));
  }
  if (ws) CHECK_CUDA(cudaFree(ws));
  CHECK_CUDA(cudaFree(x));
  CHECK_DNN(cudnnDestroyActivationDescriptor(relu));
  CHECK_DNN(cudnnDestroy(h));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches_cudnn();
  return 0;
}
