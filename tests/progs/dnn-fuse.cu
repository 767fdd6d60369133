/* dnn-fuse.cu — a legacy-cuDNN network shaped for cuDNN call fusion (src/fuse-dnn.h).
 *
 * Five layers, run for STEPS steps on one handle and stream, each step starting with a runtime
 * kernel that perturbs the input and ending with a stream sync and copies back:
 *   L0  conv (IMPLICIT_GEMM) → bias → relu in place            fusable: conv+bias+act
 *   L1  conv (IMPLICIT_PRECOMP_GEMM) → bias → relu out of place fusable: conv+bias (identity)
 *   L2  conv (IMPLICIT_PRECOMP_GEMM) → bias → relu in place     fusable: conv+bias+act
 *   L3  conv (IMPLICIT_GEMM) → bias → relu out of place         not fusable
 *   L4  conv (IMPLICIT_PRECOMP_GEMM) → bias, no activation      fusable: conv+bias (identity)
 * Every intermediate tensor is printed too (an out-of-place activation must leave conv + bias in
 * its input). The first argument selects a variant that breaks the pattern of L0 in every step:
 *   plain   nothing broken
 *   stream  cudnnSetStream (same stream) between conv and add
 *   handle  add and activation on a second handle (same stream)
 *   beta    conv with beta 1 (accumulates into the previous step's output)
 *   alpha   add with alpha 0.5
 *   desc    the bias descriptor set again (same values) between conv and add
 *   tanh    tanh instead of relu
 *   nan     relu with CUDNN_PROPAGATE_NAN
 *   sync    cudaStreamSynchronize between conv and add
 *   memcpy  a synchronous copy of the conv output between conv and add (printed)
 *   kernel  a kernel copying the conv output between conv and add (copy printed)
 *   thread  another thread synchronises the stream and copies the conv output while the main
 *           thread is between conv and add (printed)
 *   exit    as plain, then one more L0 convolution and return from main without a sync: an
 *           atexit handler copies its output back and prints it and the launches line
 *   spin    L0's output lives in mapped host memory; after L0's conv the host waits, with no
 *           CUDA call, until the conv has written every element (a library that holds the conv
 *           for fusion without bounding the hold makes it wait forever: after 10 s the program
 *           gives up with status 3)
 * Output: `variant: V steps: S`, per step the checksums, then the launches line
 * (`cudnn_calls` = cuDNN compute calls made).
 */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "prog.h"
#include "sim_kernel.h"

enum { BATCH = 2, C0 = 3, H0 = 10, W0 = 10, LAYERS = 5, STEPS = 4, BLOCK = 128, MAXC = 8 };

struct shape {
  int k, r, pad, stride, algo, act; /* act: 0 none, 1 in place, 2 out of place */
};
#define IG CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
#define PG CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
static const struct shape SH[LAYERS] = {
    {8, 3, 1, 1, IG, 1}, {8, 3, 1, 2, PG, 2}, {6, 3, 1, 1, PG, 1}, {6, 1, 0, 1, IG, 2}, {4, 3, 0, 1, PG, 0}};

__host__ __device__ static inline void perturb_body(unsigned long i, float *x, int step, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 0.875f + (float)((i * 5 + (unsigned long)step * 3) % 7) * 0.0625f - 0.125f;
}
extern "C" __global__ void df_perturb(float *x, int step, int n) { perturb_body(PROG_TID(), x, step, n); }
SIM_KERNEL(df_perturb) {
  SIM_FOR_EACH_THREAD(i) perturb_body(i, SIM_ARG(0, float *), SIM_ARG(1, int), SIM_ARG(2, int));
}

__host__ __device__ static inline void copy_body(unsigned long i, float *dst, const float *src, int n) {
  if (i < (unsigned long)n) dst[i] = src[i];
}
extern "C" __global__ void df_copy(float *dst, const float *src, int n) { copy_body(PROG_TID(), dst, src, n); }
SIM_KERNEL(df_copy) {
  SIM_FOR_EACH_THREAD(i) copy_body(i, SIM_ARG(0, float *), SIM_ARG(1, const float *), SIM_ARG(2, int));
}

struct layer {
  cudnnTensorDescriptor_t in_d, out_d, bias_d;
  cudnnFilterDescriptor_t w_d;
  cudnnConvolutionDescriptor_t conv;
  float *w, *bias, *y, *a; /* a: the out-of-place activation's output, else y */
  size_t count;
};

static struct layer L[LAYERS];
static const char *variant = "plain";
static cudaStream_t s;
static float host[BATCH * MAXC * H0 * W0];
static float *probe;

static float value_of(int layer, int i, float scale) { return (float)((i * 37 + layer * 11) % 23 - 11) * scale; }

static void print_dev(const char *label, const float *p, size_t n) {
  CHECK_CUDA(cudaMemcpy(host, p, n * sizeof(float), cudaMemcpyDeviceToHost));
  prog_print_floats(label, host, n);
}

static void *thread_main(void *arg) {
  (void)arg;
  CHECK_CUDA(cudaStreamSynchronize(s));
  static float h2[BATCH * MAXC * H0 * W0];
  CHECK_CUDA(cudaMemcpy(h2, L[0].y, L[0].count * sizeof(float), cudaMemcpyDeviceToHost));
  prog_print_floats("thread-probe", h2, L[0].count);
  return NULL;
}

static void at_end(void) {
  /* The held convolution must have run before this copy. */
  print_dev("exit-y0", L[0].y, L[0].count);
  prog_print_launches_cudnn();
  fflush(stdout);
}

static int is(const char *v) { return strcmp(variant, v) == 0; }

/* spin: L0's output as the host sees it, and the value no result has (all bits set: a NaN the
 * layers never compute). */
static unsigned *spin_host;
static const unsigned SPIN_MARK = 0xffffffffu;

/* Waits without a CUDA call until every element of spin_host is written (no longer the mark). */
static void spin_wait(size_t count) {
  uint64_t t0 = prog_now_ns();
  for (size_t i = 0; i < count;) {
    if (__atomic_load_n(&spin_host[i], __ATOMIC_ACQUIRE) != SPIN_MARK) {
      i++;
      continue;
    }
    if (prog_now_ns() - t0 > 10000000000ull) {
      printf("spin: the convolution never ran (the host waited 10 s)\n");
      fflush(stdout);
      _exit(3);
    }
  }
}

int main(int argc, char **argv) {
  if (argc > 1) variant = argv[1];
  static const char *const known[] = {"plain", "stream", "handle", "beta", "alpha", "desc", "tanh",
                                      "nan", "sync", "memcpy", "kernel", "thread", "exit", "spin"};
  int ok = 0;
  for (size_t i = 0; i < sizeof known / sizeof *known; i++) ok |= is(known[i]);
  if (!ok) {
    fprintf(stderr, "unknown variant %s\n", variant);
    return 2;
  }
  printf("variant: %s steps: %d\n", variant, STEPS);

  CHECK_CUDA(cudaStreamCreate(&s));
  /* Static: the exit variant returns without cleaning up, and what it still owns must stay
   * reachable (a leak checker would report objects only a dead stack frame pointed to). */
  static cudnnHandle_t h, h2;
  CHECK_DNN(cudnnCreate(&h));
  CHECK_DNN(cudnnSetStream(h, s));
  CHECK_DNN(cudnnCreate(&h2));
  CHECK_DNN(cudnnSetStream(h2, s));
  static cudnnActivationDescriptor_t relu, act0;
  CHECK_DNN(cudnnCreateActivationDescriptor(&relu));
  CHECK_DNN(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  CHECK_DNN(cudnnCreateActivationDescriptor(&act0));
  if (is("tanh"))
    CHECK_DNN(cudnnSetActivationDescriptor(act0, CUDNN_ACTIVATION_TANH, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  else
    CHECK_DNN(cudnnSetActivationDescriptor(act0, CUDNN_ACTIVATION_RELU,
                                           is("nan") ? CUDNN_PROPAGATE_NAN : CUDNN_NOT_PROPAGATE_NAN, 0.0));

  const int in_count = BATCH * C0 * H0 * W0;
  static float *x;
  CHECK_CUDA(cudaMalloc((void **)&x, in_count * sizeof(float)));
  for (int i = 0; i < in_count; i++) host[i] = value_of(9, i, 0.125f);
  CHECK_CUDA(cudaMemcpy(x, host, in_count * sizeof(float), cudaMemcpyHostToDevice));

  size_t ws_size = 0;
  int c = C0, hh = H0, ww = W0;
  for (int l = 0; l < LAYERS; l++) {
    struct layer *y = &L[l];
    const struct shape *sh = &SH[l];
    CHECK_DNN(cudnnCreateTensorDescriptor(&y->in_d));
    CHECK_DNN(cudnnSetTensor4dDescriptor(y->in_d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, BATCH, c, hh, ww));
    CHECK_DNN(cudnnCreateFilterDescriptor(&y->w_d));
    CHECK_DNN(cudnnSetFilter4dDescriptor(y->w_d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, sh->k, c, sh->r, sh->r));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&y->conv));
    CHECK_DNN(cudnnSetConvolution2dDescriptor(y->conv, sh->pad, sh->pad, sh->stride, sh->stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    int n, oc, oh, ow;
    CHECK_DNN(cudnnGetConvolution2dForwardOutputDim(y->conv, y->in_d, y->w_d, &n, &oc, &oh, &ow));
    CHECK_DNN(cudnnCreateTensorDescriptor(&y->out_d));
    CHECK_DNN(cudnnSetTensor4dDescriptor(y->out_d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, oc, oh, ow));
    CHECK_DNN(cudnnCreateTensorDescriptor(&y->bias_d));
    CHECK_DNN(cudnnSetTensor4dDescriptor(y->bias_d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, oc, 1, 1));
    size_t ws = 0;
    CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(h, y->in_d, y->w_d, y->conv, y->out_d,
                                                      (cudnnConvolutionFwdAlgo_t)sh->algo, &ws));
    if (ws > ws_size) ws_size = ws;
    const int w_count = sh->k * c * sh->r * sh->r;
    static float hw[MAXC * MAXC * 3 * 3], hb[MAXC];
    for (int i = 0; i < w_count; i++) hw[i] = value_of(l, i, 0.03125f);
    for (int i = 0; i < oc; i++) hb[i] = value_of(l + 5, i, 0.0625f) + 0.25f;
    CHECK_CUDA(cudaMalloc((void **)&y->w, w_count * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&y->bias, oc * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(y->w, hw, w_count * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(y->bias, hb, oc * sizeof(float), cudaMemcpyHostToDevice));
    y->count = (size_t)n * oc * oh * ow;
    if (l == 0 && is("spin")) {
      /* Mapped host memory: with unified addressing the device uses the host's pointer. */
      CHECK_CUDA(cudaHostAlloc((void **)&spin_host, y->count * sizeof(float), cudaHostAllocMapped));
      y->y = (float *)(void *)spin_host;
    } else {
      CHECK_CUDA(cudaMalloc((void **)&y->y, y->count * sizeof(float)));
    }
    CHECK_CUDA(cudaMemset(y->y, 0, y->count * sizeof(float)));
    y->a = y->y;
    if (sh->act == 2) CHECK_CUDA(cudaMalloc((void **)&y->a, y->count * sizeof(float)));
    c = oc, hh = oh, ww = ow;
  }
  static void *ws;
  if (ws_size) CHECK_CUDA(cudaMalloc(&ws, ws_size));
  CHECK_CUDA(cudaMalloc((void **)&probe, L[0].count * sizeof(float)));
  CHECK_CUDA(cudaMemset(probe, 0, L[0].count * sizeof(float)));

  const float one = 1.0f, zero = 0.0f, half = 0.5f;
  if (is("spin")) CHECK_CUDA(cudaDeviceSynchronize()); /* the host writes L0's output next */
  for (int step = 0; step < STEPS; step++) {
    PROG_LAUNCH(df_perturb, (in_count + BLOCK - 1) / BLOCK, BLOCK, 0, s, x, step, in_count);
    const float *in = x;
    for (int l = 0; l < LAYERS; l++) {
      struct layer *y = &L[l];
      const struct shape *sh = &SH[l];
      int v0 = l == 0; /* the layer the variants break */
      if (v0 && is("spin"))
        for (size_t i = 0; i < y->count; i++) __atomic_store_n(&spin_host[i], SPIN_MARK, __ATOMIC_RELEASE);
      CHECK_DNN(cudnnConvolutionForward(h, &one, y->in_d, in, y->w_d, y->w, y->conv,
                                        (cudnnConvolutionFwdAlgo_t)sh->algo, ws, ws_size,
                                        v0 && is("beta") ? &one : &zero, y->out_d, y->y));
      PROG_DNN();
      if (v0) {
        if (is("spin")) spin_wait(y->count);
        if (is("stream")) CHECK_DNN(cudnnSetStream(h, s));
        if (is("desc"))
          CHECK_DNN(cudnnSetTensor4dDescriptor(y->bias_d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, sh->k, 1, 1));
        if (is("sync")) CHECK_CUDA(cudaStreamSynchronize(s));
        if (is("memcpy")) print_dev("memcpy-probe", y->y, y->count);
        if (is("kernel"))
          PROG_LAUNCH(df_copy, ((int)y->count + BLOCK - 1) / BLOCK, BLOCK, 0, s, probe, y->y, (int)y->count);
        if (is("thread")) {
          pthread_t t;
          if (pthread_create(&t, NULL, thread_main, NULL) != 0) return 3;
          pthread_join(t, NULL);
        }
      }
      cudnnHandle_t hb = v0 && is("handle") ? h2 : h;
      CHECK_DNN(cudnnAddTensor(hb, v0 && is("alpha") ? &half : &one, y->bias_d, y->bias, &one, y->out_d, y->y));
      PROG_DNN();
      if (sh->act) {
        CHECK_DNN(cudnnActivationForward(hb, v0 ? act0 : relu, &one, y->out_d, y->y, &zero, y->out_d, y->a));
        PROG_DNN();
      }
      in = y->a;
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    printf("step %d:\n", step);
    for (int l = 0; l < LAYERS; l++) {
      char label[32];
      snprintf(label, sizeof label, "  y%d", l);
      print_dev(label, L[l].y, L[l].count);
      if (L[l].a != L[l].y) {
        snprintf(label, sizeof label, "  a%d", l);
        print_dev(label, L[l].a, L[l].count);
      }
    }
    if (is("kernel")) print_dev("  kernel-probe", probe, L[0].count);
  }
  if (is("exit")) {
    CHECK_DNN(cudnnConvolutionForward(h, &one, L[0].in_d, x, L[0].w_d, L[0].w, L[0].conv,
                                      (cudnnConvolutionFwdAlgo_t)SH[0].algo, ws, ws_size, &zero,
                                      L[0].out_d, L[0].y));
    PROG_DNN();
    atexit(at_end);
    return 0; /* no sync, no cleanup: the held convolution must still run */
  }
  for (int l = 0; l < LAYERS; l++) {
    CHECK_DNN(cudnnDestroyTensorDescriptor(L[l].in_d));
    CHECK_DNN(cudnnDestroyTensorDescriptor(L[l].out_d));
    CHECK_DNN(cudnnDestroyTensorDescriptor(L[l].bias_d));
    CHECK_DNN(cudnnDestroyFilterDescriptor(L[l].w_d));
    CHECK_DNN(cudnnDestroyConvolutionDescriptor(L[l].conv));
    if (L[l].a != L[l].y) CHECK_CUDA(cudaFree(L[l].a));
    CHECK_CUDA(cudaFree(L[l].w));
    CHECK_CUDA(cudaFree(L[l].bias));
    if (l == 0 && is("spin")) CHECK_CUDA(cudaFreeHost(spin_host));
    else CHECK_CUDA(cudaFree(L[l].y));
  }
  if (ws) CHECK_CUDA(cudaFree(ws));
  CHECK_CUDA(cudaFree(probe));
  CHECK_CUDA(cudaFree(x));
  CHECK_DNN(cudnnDestroyActivationDescriptor(relu));
  CHECK_DNN(cudnnDestroyActivationDescriptor(act0));
  CHECK_DNN(cudnnDestroy(h));
  CHECK_DNN(cudnnDestroy(h2));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches_cudnn();
  return 0;
}
