/* l-reset.cu — cudaDeviceReset ends everything of the device's primary context.
 *
 * Four rounds; each creates a stream and buffers, runs ITERS steps (three launches, then a copy
 * back: long enough to be learnt and replayed as a graph), prints checksums, and all but the
 * last end with cudaDeviceReset, which destroys the context's memory, streams, modules and
 * graphs (the next runtime call creates the context again). A graph built before a reset
 * belongs to a destroyed context: a library must forget it, and every kernel record of that
 * context, and learn again. Each step also makes a second stream wait for an event and then
 * memset a buffer: a sequence of stream operations only, which names no kernel, and whose graph
 * is the context's all the same. Output: a checksum per step and of the memset buffer per
 * round, then the launch counts.
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, ITERS = 6, ROUNDS = 4 };

extern "C" __global__ void lr_fill(float *x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v + (float)i;
}
extern "C" __global__ void lr_axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void lr_scale(float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * a;
}

SIM_KERNEL(lr_fill) {
  float *x = SIM_ARG(0, float *);
  float v = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) x[i] = v + (float)i;
}
SIM_KERNEL(lr_axpy) {
  float a = SIM_ARG(0, float);
  const float *x = SIM_ARG(1, const float *);
  float *y = SIM_ARG(2, float *);
  int n = SIM_ARG(3, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = a * x[i] + y[i];
}
SIM_KERNEL(lr_scale) {
  float *y = SIM_ARG(0, float *);
  float a = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = y[i] * a;
}

int main(void) {
  float hy[N];
  for (int round = 0; round < ROUNDS; round++) {
    float *x, *y;
    unsigned char *z;
    static unsigned char hz[N];
    cudaStream_t s, s2;
    cudaEvent_t ev;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CHECK_CUDA(cudaMalloc(&x, sizeof hy));
    CHECK_CUDA(cudaMalloc(&y, sizeof hy));
    CHECK_CUDA(cudaMalloc(&z, sizeof hz));
    CHECK_CUDA(cudaMemsetAsync(y, 0, sizeof hy, s));
    CHECK_CUDA(cudaEventRecord(ev, s));
    for (int it = 0; it < ITERS; it++) {
      CHECK_CUDA(cudaStreamWaitEvent(s2, ev, 0));
      CHECK_CUDA(cudaMemsetAsync(z, (round * ITERS + it) & 0xff, sizeof hz, s2));
      PROG_LAUNCH(lr_fill, N / BLOCK, BLOCK, 0, s, x, 0.25f * (float)(round + it), N);
      PROG_LAUNCH(lr_axpy, N / BLOCK, BLOCK, 0, s, 0.5f, x, y, N);
      PROG_LAUNCH(lr_scale, N / BLOCK, BLOCK, 0, s, y, 0.75f, N);
      CHECK_CUDA(cudaMemcpyAsync(hy, y, sizeof hy, cudaMemcpyDeviceToHost, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      printf("round %d step %d: %016llx\n", round, it, (unsigned long long)prog_hash(hy, sizeof hy));
    }
    CHECK_CUDA(cudaStreamSynchronize(s2));
    CHECK_CUDA(cudaMemcpy(hz, z, sizeof hz, cudaMemcpyDeviceToHost));
    printf("round %d memsets: %016llx\n", round, (unsigned long long)prog_hash(hz, sizeof hz));
    if (round < ROUNDS - 1) {
      CHECK_CUDA(cudaDeviceReset()); /* frees everything of the round */
    } else {
      CHECK_CUDA(cudaEventDestroy(ev));
      CHECK_CUDA(cudaStreamDestroy(s2));
      CHECK_CUDA(cudaStreamDestroy(s));
      CHECK_CUDA(cudaFree(x));
      CHECK_CUDA(cudaFree(y));
      CHECK_CUDA(cudaFree(z));
    }
  }
  prog_print_floats("y", hy, N);
  prog_print_launches();
  return 0;
}
