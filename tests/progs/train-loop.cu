/* train-loop.cu — a training-style loop, the pattern the library exists for.
 *
 * A two-layer perceptron trained for STEPS steps of 20 launches each on one blocking stream:
 * forward (input generation, linear, relu, dropout, linear, softsign, loss), a synchronous
 * cudaMemcpy of the loss to the host, backward (9 launches) issued from a second thread on the
 * same stream, and four SGD updates whose learning rate changes every step. The dropout kernel
 * takes its seed and offset by value and both change every step, as PyTorch's do. The threads
 * hand over with a mutex and condition variable, so the launch order is fixed and the output
 * is deterministic: the loss bits every 10 steps, a checksum of all losses and of the final
 * weights, then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>
#include <pthread.h>

#include "prog.h"
#include "sim_kernel.h"

enum { D = 32, H = 64, O = 16, STEPS = 50, BLOCK = 64 };

/* ---- kernel bodies, shared by the device kernels and their CPU twins ---- */

__host__ __device__ static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A value in [-0.5, 0.5) from a counter, exact in float. */
__host__ __device__ static inline float unit(uint64_t k) {
  return (float)(mix64(k) >> 40) / 16777216.0f - 0.5f;
}

__host__ __device__ static inline void init_body(unsigned long i, float *w, int n, int seed,
                                                 float scale) {
  if (i < (unsigned long)n) w[i] = unit((uint64_t)seed * 1000003u + i) * scale;
}

__host__ __device__ static inline void input_body(unsigned long i, float *x, float *t, int step) {
  if (i < D) x[i] = unit(0x100000000ull + (uint64_t)step * 977u + i);
  /* The target is a fixed function of the input, so the loss can fall. */
  if (i < O) t[i] = unit(0x200000000ull + (uint64_t)step * 977u + i) * 0.25f + 0.1f * (float)(i % 3);
}

__host__ __device__ static inline void linear_body(unsigned long i, const float *W,
                                                   const float *x, const float *b, float *z,
                                                   int in, int out) {
  if (i >= (unsigned long)out) return;
  float s = b[i];
  for (int k = 0; k < in; k++) s += W[i * in + k] * x[k];
  z[i] = s;
}

__host__ __device__ static inline void linear_t_body(unsigned long i, const float *W,
                                                     const float *g, float *gx, int in,
                                                     int out) {
  if (i >= (unsigned long)in) return;
  float s = 0.0f;
  for (int j = 0; j < out; j++) s += W[j * in + i] * g[j];
  gx[i] = s;
}

__host__ __device__ static inline void relu_body(unsigned long i, const float *z, float *a,
                                                 int n) {
  if (i < (unsigned long)n) a[i] = z[i] > 0.0f ? z[i] : 0.0f;
}

__host__ __device__ static inline void relu_bw_body(unsigned long i, const float *g,
                                                    const float *z, float *gz, int n) {
  if (i < (unsigned long)n) gz[i] = z[i] > 0.0f ? g[i] : 0.0f;
}

__host__ __device__ static inline void dropout_body(unsigned long i, const float *a, float *d,
                                                    unsigned long long seed,
                                                    unsigned long long offset, float p, int n) {
  if (i >= (unsigned long)n) return;
  float r = unit(mix64(seed) ^ (offset + i)) + 0.5f;
  d[i] = r >= p ? a[i] / (1.0f - p) : 0.0f;
}

__host__ __device__ static inline float softsign(float z) { return z / (1.0f + fabsf(z)); }

__host__ __device__ static inline void softsign_body(unsigned long i, const float *z, float *y,
                                                     int n) {
  if (i < (unsigned long)n) y[i] = softsign(z[i]);
}

__host__ __device__ static inline void softsign_bw_body(unsigned long i, const float *g,
                                                        const float *z, float *gz, int n) {
  if (i >= (unsigned long)n) return;
  float q = 1.0f + fabsf(z[i]);
  gz[i] = g[i] / (q * q);
}

__host__ __device__ static inline void mse_body(unsigned long i, const float *y, const float *t,
                                                float *loss, int n) {
  if (i != 0) return;
  float s = 0.0f;
  for (int k = 0; k < n; k++) s += (y[k] - t[k]) * (y[k] - t[k]);
  *loss = s / (float)n;
}

__host__ __device__ static inline void mse_grad_body(unsigned long i, const float *y,
                                                     const float *t, float *g, int n) {
  if (i < (unsigned long)n) g[i] = 2.0f * (y[i] - t[i]) / (float)n;
}

__host__ __device__ static inline void outer_body(unsigned long i, const float *g,
                                                  const float *x, float *gW, int out, int in) {
  if (i < (unsigned long)out * in) gW[i] = g[i / in] * x[i % in];
}

__host__ __device__ static inline void copy_body(unsigned long i, const float *s, float *d,
                                                 int n) {
  if (i < (unsigned long)n) d[i] = s[i];
}

__host__ __device__ static inline void sgd_body(unsigned long i, float *w, const float *g,
                                                float lr, int n) {
  if (i < (unsigned long)n) w[i] -= lr * g[i];
}

/* ---- device kernels ---- */

extern "C" __global__ void tl_init(float *w, int n, int seed, float scale) {
  init_body(PROG_TID(), w, n, seed, scale);
}
extern "C" __global__ void tl_input(float *x, float *t, int step) {
  input_body(PROG_TID(), x, t, step);
}
extern "C" __global__ void tl_linear(const float *W, const float *x, const float *b, float *z,
                                     int in, int out) {
  linear_body(PROG_TID(), W, x, b, z, in, out);
}
extern "C" __global__ void tl_linear_t(const float *W, const float *g, float *gx, int in,
                                       int out) {
  linear_t_body(PROG_TID(), W, g, gx, in, out);
}
extern "C" __global__ void tl_relu(const float *z, float *a, int n) {
  relu_body(PROG_TID(), z, a, n);
}
extern "C" __global__ void tl_relu_bw(const float *g, const float *z, float *gz, int n) {
  relu_bw_body(PROG_TID(), g, z, gz, n);
}
extern "C" __global__ void tl_dropout(const float *a, float *d, unsigned long long seed,
                                      unsigned long long offset, float p, int n) {
  dropout_body(PROG_TID(), a, d, seed, offset, p, n);
}
extern "C" __global__ void tl_softsign(const float *z, float *y, int n) {
  softsign_body(PROG_TID(), z, y, n);
}
extern "C" __global__ void tl_softsign_bw(const float *g, const float *z, float *gz, int n) {
  softsign_bw_body(PROG_TID(), g, z, gz, n);
}
extern "C" __global__ void tl_mse(const float *y, const float *t, float *loss, int n) {
  mse_body(PROG_TID(), y, t, loss, n);
}
extern "C" __global__ void tl_mse_grad(const float *y, const float *t, float *g, int n) {
  mse_grad_body(PROG_TID(), y, t, g, n);
}
extern "C" __global__ void tl_outer(const float *g, const float *x, float *gW, int out, int in) {
  outer_body(PROG_TID(), g, x, gW, out, in);
}
extern "C" __global__ void tl_copy(const float *s, float *d, int n) {
  copy_body(PROG_TID(), s, d, n);
}
extern "C" __global__ void tl_sgd(float *w, const float *g, float lr, int n) {
  sgd_body(PROG_TID(), w, g, lr, n);
}

/* ---- CPU twins for the simulator ---- */

SIM_KERNEL(tl_init) {
  SIM_FOR_EACH_THREAD(i)
  init_body(i, SIM_ARG(0, float *), SIM_ARG(1, int), SIM_ARG(2, int), SIM_ARG(3, float));
}
SIM_KERNEL(tl_input) {
  SIM_FOR_EACH_THREAD(i) input_body(i, SIM_ARG(0, float *), SIM_ARG(1, float *), SIM_ARG(2, int));
}
SIM_KERNEL(tl_linear) {
  SIM_FOR_EACH_THREAD(i)
  linear_body(i, SIM_ARG(0, const float *), SIM_ARG(1, const float *), SIM_ARG(2, const float *),
              SIM_ARG(3, float *), SIM_ARG(4, int), SIM_ARG(5, int));
}
SIM_KERNEL(tl_linear_t) {
  SIM_FOR_EACH_THREAD(i)
  linear_t_body(i, SIM_ARG(0, const float *), SIM_ARG(1, const float *), SIM_ARG(2, float *),
                SIM_ARG(3, int), SIM_ARG(4, int));
}
SIM_KERNEL(tl_relu) {
  SIM_FOR_EACH_THREAD(i) relu_body(i, SIM_ARG(0, const float *), SIM_ARG(1, float *), SIM_ARG(2, int));
}
SIM_KERNEL(tl_relu_bw) {
  SIM_FOR_EACH_THREAD(i)
  relu_bw_body(i, SIM_ARG(0, const float *), SIM_ARG(1, const float *), SIM_ARG(2, float *),
               SIM_ARG(3, int));
}
SIM_KERNEL(tl_dropout) {
  SIM_FOR_EACH_THREAD(i)
  dropout_body(i, SIM_ARG(0, const float *), SIM_ARG(1, float *), SIM_ARG(2, unsigned long long),
               SIM_ARG(3, unsigned long long), SIM_ARG(4, float), SIM_ARG(5, int));
}
SIM_KERNEL(tl_softsign) {
  SIM_FOR_EACH_THREAD(i)
  softsign_body(i, SIM_ARG(0, const float *), SIM_ARG(1, float *), SIM_ARG(2, int));
}
SIM_KERNEL(tl_softsign_bw) {
  SIM_FOR_EACH_THREAD(i)
  softsign_bw_body(i, SIM_ARG(0, const float *), SIM_ARG(1, const float *), SIM_ARG(2, float *),
                   SIM_ARG(3, int));
}
SIM_KERNEL(tl_mse) {
  SIM_FOR_EACH_THREAD(i)
  mse_body(i, SIM_ARG(0, const float *), SIM_ARG(1, const float *), SIM_ARG(2, float *),
           SIM_ARG(3, int));
}
SIM_KERNEL(tl_mse_grad) {
  SIM_FOR_EACH_THREAD(i)
  mse_grad_body(i, SIM_ARG(0, const float *), SIM_ARG(1, const float *), SIM_ARG(2, float *),
                SIM_ARG(3, int));
}
SIM_KERNEL(tl_outer) {
  SIM_FOR_EACH_THREAD(i)
  outer_body(i, SIM_ARG(0, const float *), SIM_ARG(1, const float *), SIM_ARG(2, float *),
             SIM_ARG(3, int), SIM_ARG(4, int));
}
SIM_KERNEL(tl_copy) {
  SIM_FOR_EACH_THREAD(i) copy_body(i, SIM_ARG(0, const float *), SIM_ARG(1, float *), SIM_ARG(2, int));
}
SIM_KERNEL(tl_sgd) {
  SIM_FOR_EACH_THREAD(i)
  sgd_body(i, SIM_ARG(0, float *), SIM_ARG(1, const float *), SIM_ARG(2, float), SIM_ARG(3, int));
}

/* ---- the model ---- */

static cudaStream_t stream;
static float *W1, *b1, *W2, *b2, *x, *t, *z1, *a1, *d1, *z2, *y, *loss;
static float *gy, *gz2, *gW2, *gb2, *gd1, *ga1, *gz1, *gW1, *gb1;

static unsigned grid_for(int n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

static unsigned long long seed_of(int step) { return 0x5eed0000ull + 7ull * step; }
static unsigned long long offset_of(int step) { return (unsigned long long)step * H; }
static const float P_DROP = 0.25f;

static void forward(int step) {
  PROG_LAUNCH(tl_input, 1, BLOCK, 0, stream, x, t, step);
  PROG_LAUNCH(tl_linear, grid_for(H), BLOCK, 0, stream, W1, x, b1, z1, (int)D, (int)H);
  PROG_LAUNCH(tl_relu, grid_for(H), BLOCK, 0, stream, z1, a1, (int)H);
  PROG_LAUNCH(tl_dropout, grid_for(H), BLOCK, 0, stream, a1, d1, seed_of(step), offset_of(step),
              P_DROP, (int)H);
  PROG_LAUNCH(tl_linear, grid_for(O), BLOCK, 0, stream, W2, d1, b2, z2, (int)H, (int)O);
  PROG_LAUNCH(tl_softsign, grid_for(O), BLOCK, 0, stream, z2, y, (int)O);
  PROG_LAUNCH(tl_mse, 1, 1, 0, stream, y, t, loss, (int)O);
}

static void backward(int step) {
  PROG_LAUNCH(tl_mse_grad, grid_for(O), BLOCK, 0, stream, y, t, gy, (int)O);
  PROG_LAUNCH(tl_softsign_bw, grid_for(O), BLOCK, 0, stream, gy, z2, gz2, (int)O);
  PROG_LAUNCH(tl_outer, grid_for(O * H), BLOCK, 0, stream, gz2, d1, gW2, (int)O, (int)H);
  PROG_LAUNCH(tl_copy, grid_for(O), BLOCK, 0, stream, gz2, gb2, (int)O);
  PROG_LAUNCH(tl_linear_t, grid_for(H), BLOCK, 0, stream, W2, gz2, gd1, (int)H, (int)O);
  /* The same seed and offset regenerate the forward mask. */
  PROG_LAUNCH(tl_dropout, grid_for(H), BLOCK, 0, stream, gd1, ga1, seed_of(step), offset_of(step),
              P_DROP, (int)H);
  PROG_LAUNCH(tl_relu_bw, grid_for(H), BLOCK, 0, stream, ga1, z1, gz1, (int)H);
  PROG_LAUNCH(tl_outer, grid_for(H * D), BLOCK, 0, stream, gz1, x, gW1, (int)H, (int)D);
  PROG_LAUNCH(tl_copy, grid_for(H), BLOCK, 0, stream, gz1, gb1, (int)H);
}

static void update(int step) {
  float lr = 0.05f / (1.0f + 0.02f * (float)step);
  PROG_LAUNCH(tl_sgd, grid_for(H * D), BLOCK, 0, stream, W1, gW1, lr, (int)(H * D));
  PROG_LAUNCH(tl_sgd, grid_for(H), BLOCK, 0, stream, b1, gb1, lr, (int)H);
  PROG_LAUNCH(tl_sgd, grid_for(O * H), BLOCK, 0, stream, W2, gW2, lr, (int)(O * H));
  PROG_LAUNCH(tl_sgd, grid_for(O), BLOCK, 0, stream, b2, gb2, lr, (int)O);
}

/* ---- the backward thread and its hand-over ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn_step = -1; /* step the backward thread must run; -1 none, -2 stop */

static void *backward_thread(void *unused) {
  (void)unused;
  for (;;) {
    pthread_mutex_lock(&mu);
    while (turn_step == -1) pthread_cond_wait(&cv, &mu);
    int step = turn_step;
    pthread_mutex_unlock(&mu);
    if (step == -2) return NULL;
    backward(step);
    pthread_mutex_lock(&mu);
    turn_step = -1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
}

/* Hands `step` (or -2: stop) to the backward thread and waits until it has issued it. */
static void hand_over(int step) {
  pthread_mutex_lock(&mu);
  turn_step = step;
  pthread_cond_broadcast(&cv);
  if (step != -2)
    while (turn_step != -1) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

int main(void) {
  CHECK_CUDA(cudaStreamCreate(&stream));
  const int sizes[] = {H * D, H, O * H, O, D, O, H, H, H, O, O, 1,
                       O, O, O * H, O, H, H, H, H * D, H};
  float **bufs[] = {&W1, &b1, &W2, &b2, &x, &t, &z1, &a1, &d1, &z2, &y, &loss,
                    &gy, &gz2, &gW2, &gb2, &gd1, &ga1, &gz1, &gW1, &gb1};
  size_t total = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += (size_t)sizes[i];
  float *pool;
  CHECK_CUDA(cudaMalloc((void **)&pool, total * sizeof(float)));
  for (size_t i = 0, at = 0; i < sizeof sizes / sizeof sizes[0]; at += (size_t)sizes[i], i++)
    *bufs[i] = pool + at;

  PROG_LAUNCH(tl_init, grid_for(H * D), BLOCK, 0, stream, W1, (int)(H * D), 1, 0.35f);
  PROG_LAUNCH(tl_init, grid_for(O * H), BLOCK, 0, stream, W2, (int)(O * H), 2, 0.25f);
  CHECK_CUDA(cudaMemsetAsync(b1, 0, H * sizeof(float), stream));
  CHECK_CUDA(cudaMemsetAsync(b2, 0, O * sizeof(float), stream));

  pthread_t bw;
  CHECK_INT(pthread_create(&bw, NULL, backward_thread, NULL), ==, 0);

  uint64_t loss_hash = prog_hash(NULL, 0);
  for (int step = 0; step < STEPS; step++) {
    forward(step);
    float host_loss;
    CHECK_CUDA(cudaMemcpy(&host_loss, loss, sizeof host_loss, cudaMemcpyDeviceToHost));
    loss_hash = prog_hash(&host_loss, sizeof host_loss, loss_hash);
    if (step % 10 == 0 || step == STEPS - 1)
      printf("step %d loss %08x\n", step, prog_fbits(host_loss));
    hand_over(step);
    update(step);
  }
  hand_over(-2);
  CHECK_INT(pthread_join(bw, NULL), ==, 0);
  CHECK_CUDA(cudaStreamSynchronize(stream));

  static float host[H * D];
  printf("losses: %016llx\n", (unsigned long long)loss_hash);
  CHECK_CUDA(cudaMemcpy(host, W1, sizeof(float) * H * D, cudaMemcpyDeviceToHost));
  prog_print_floats("W1", host, H * D);
  CHECK_CUDA(cudaMemcpy(host, b1, sizeof(float) * H, cudaMemcpyDeviceToHost));
  prog_print_floats("b1", host, H);
  CHECK_CUDA(cudaMemcpy(host, W2, sizeof(float) * O * H, cudaMemcpyDeviceToHost));
  prog_print_floats("W2", host, O * H);
  CHECK_CUDA(cudaMemcpy(host, b2, sizeof(float) * O, cudaMemcpyDeviceToHost));
  prog_print_floats("b2", host, O);

  CHECK_CUDA(cudaFree(pool));
  CHECK_CUDA(cudaStreamDestroy(stream));
  prog_print_launches();
  return 0;
}
