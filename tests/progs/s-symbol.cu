/* s-symbol.cu — copies to and from __device__ and __constant__ symbols follow stream order.
 *
 * CUDA copies to and from a symbol as to and from device memory: an asynchronous copy runs in
 * its stream after the work queued before it, a synchronous one on the legacy stream after the
 * work queued there; a pageable host source is staged at the call (the program may reuse it at
 * once). Each step of the loop:
 *   1. bump(step) adds to `counter` on stream s, then cudaMemcpyFromSymbolAsync on s copies
 *      counter into pinned host memory, read after cudaStreamSynchronize(s);
 *   2. bump(step) on the legacy stream, then cudaMemcpyFromSymbol into device memory
 *      (device-to-device: it returns at once and runs after the kernel), copied back;
 *   3. cudaMemcpyToSymbolAsync from a pageable host array on s, which the program overwrites
 *      right after the call, then scale() on s reads the constant into out;
 *   4. cudaMemcpyToSymbol from device memory written by a kernel before it, read by scale().
 * Every value printed is fixed by CUDA's ordering rules, so the output is the same under any
 * SIM_SEED; it differs when a symbol copy is performed at the call instead.
 */
#include <cuda_runtime.h>
#include <string.h>

#include "prog.h"
#include "sim_kernel.h"

enum { M = 64, STEPS = 16 };

__device__ int counter[M];
__constant__ float coef[M];

extern "C" __global__ void bump(int step) {
  unsigned long i = PROG_TID();
  if (i < M) counter[i] += step * (int)(i + 1);
}

extern "C" __global__ void scale(const float *x, float *out) {
  unsigned long i = PROG_TID();
  if (i < M) out[i] = x[i] * coef[i];
}

extern "C" __global__ void fill(float *d, float v) {
  unsigned long i = PROG_TID();
  if (i < M) d[i] = v + (float)i;
}

/* The twins name the symbols' host shadows, which is what the simulator runs on. */
#pragma nv_diag_suppress 20091, 20092
SIM_KERNEL(bump) {
  int step = SIM_ARG(0, int);
  SIM_FOR_EACH_THREAD(i) if (i < M) counter[i] += step * (int)(i + 1);
}
SIM_KERNEL(scale) {
  const float *x = SIM_ARG(0, const float *);
  float *out = SIM_ARG(1, float *);
  SIM_FOR_EACH_THREAD(i) if (i < M) out[i] = x[i] * coef[i];
}
SIM_KERNEL(fill) {
  float *d = SIM_ARG(0, float *);
  float v = SIM_ARG(1, float);
  SIM_FOR_EACH_THREAD(i) if (i < M) d[i] = v + (float)i;
}
#pragma nv_diag_default 20091, 20092

int main(void) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int *pinned, *dcount;
  float *x, *out, *dcoef, host[M];
  static float pageable[M];
  CHECK_CUDA(cudaMallocHost(&pinned, M * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&dcount, M * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&x, M * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, M * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dcoef, M * sizeof(float)));
  PROG_LAUNCH(fill, 1, M, 0, 0, x, 1.0f);
  CHECK_CUDA(cudaDeviceSynchronize());
  uint64_t h1 = 1469598103934665603ull, h2 = h1, h3 = h1, h4 = h1;
  for (int step = 1; step <= STEPS; step++) {
    /* 1. FromSymbolAsync into pinned memory, after the kernel in the same stream. */
    PROG_LAUNCH(bump, 1, M, 0, s, step);
    CHECK_CUDA(cudaMemcpyFromSymbolAsync(pinned, counter, M * sizeof(int), 0,
                                         cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    h1 = prog_hash(pinned, M * sizeof(int), h1);
    /* 2. FromSymbol into device memory, after the kernel on the legacy stream. */
    PROG_LAUNCH(bump, 1, M, 0, 0, step);
    CHECK_CUDA(cudaMemcpyFromSymbol(dcount, counter, M * sizeof(int), 0,
                                    cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(pinned, dcount, M * sizeof(int), cudaMemcpyDeviceToHost));
    h2 = prog_hash(pinned, M * sizeof(int), h2);
    /* 3. ToSymbolAsync from pageable memory, overwritten at once. */
    for (int i = 0; i < M; i++) pageable[i] = (float)(step * M + i);
    CHECK_CUDA(cudaMemcpyToSymbolAsync(coef, pageable, sizeof pageable, 0,
                                       cudaMemcpyHostToDevice, s));
    memset(pageable, 0, sizeof pageable);
    PROG_LAUNCH(scale, 1, M, 0, s, x, out);
    CHECK_CUDA(cudaMemcpyAsync(host, out, sizeof host, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    h3 = prog_hash(host, sizeof host, h3);
    /* 4. ToSymbol from device memory a kernel writes just before, on the legacy stream. */
    PROG_LAUNCH(fill, 1, M, 0, 0, dcoef, (float)step);
    CHECK_CUDA(cudaMemcpyToSymbol(coef, dcoef, M * sizeof(float), 0, cudaMemcpyDeviceToDevice));
    PROG_LAUNCH(scale, 1, M, 0, 0, x, out);
    CHECK_CUDA(cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
    h4 = prog_hash(host, sizeof host, h4);
  }
  printf("from-symbol-async: %016llx last=%d\n", (unsigned long long)h1, pinned[M - 1]);
  printf("from-symbol:       %016llx\n", (unsigned long long)h2);
  printf("to-symbol-async:   %016llx\n", (unsigned long long)h3);
  printf("to-symbol:         %016llx\n", (unsigned long long)h4);
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
