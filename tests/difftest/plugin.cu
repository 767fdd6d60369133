/* plugin.cu — a plugin the differential test programs dlopen, run and dlclose
 * (tests/difftest/gen.py, dt_plugin_open in dt.h). Built twice from this file:
 * libdt-plugin-a.so (kernel dtp_a(float *y, int n)) and, with -DDT_PLUGIN_B, libdt-plugin-b.so
 * (kernel dtp_b(int n, float *y), the other parameter order). Both have the same layout, so the
 * second one dlopened after the first is dlclosed usually lands at the same address and its
 * kernel's host stub has the address the first one's had: a library that keys kernels by stub
 * address must forget the first one when its fatbin is unregistered.
 *
 * dt_plugin_run launches its kernel three times on stream s (scalar `it` changing) and returns
 * the number of launches, which the program adds to its own count. */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

#ifndef DT_PLUGIN_B
extern "C" __global__ void dtp_a(float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * 0.5f + 1.0f;
}
SIM_KERNEL(dtp_a) {
  float *y = SIM_ARG(0, float *);
  int n = SIM_ARG(1, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = y[i] * 0.5f + 1.0f;
}
extern "C" __attribute__((visibility("default"))) int dt_plugin_run(float *y, int n, int it, cudaStream_t s) {
  for (int k = 0; k < 3; k++) {
    dtp_a<<<(n + 127) / 128, 128, 0, s>>>(y, n - (it + k) % 2);
    CHECK_CUDA(cudaGetLastError());
  }
  return 3;
}
#else
extern "C" __global__ void dtp_b(int n, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * -0.25f + 0.5f;
}
SIM_KERNEL(dtp_b) {
  int n = SIM_ARG(0, int);
  float *y = SIM_ARG(1, float *);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = y[i] * -0.25f + 0.5f;
}
extern "C" __attribute__((visibility("default"))) int dt_plugin_run(float *y, int n, int it, cudaStream_t s) {
  for (int k = 0; k < 3; k++) {
    dtp_b<<<(n + 127) / 128, 128, 0, s>>>(n - (it + k) % 2, y);
    CHECK_CUDA(cudaGetLastError());
  }
  return 3;
}
#endif
