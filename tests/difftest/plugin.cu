/* plugin.cu — a plugin the differential test programs dlopen, run and dlclose
 * (tests/difftest/gen.py, dt_plugin_open in dt.h). Built twice from this file:
 * libdt-plugin-a.so (kernel dtp_a(float *y, int n)) and, with -DDT_PLUGIN_B, libdt-plugin-b.so
 * (kernel dtp_b(int n, float *y): another layout). Functions aligned to 64 bytes (build.mk)
 * give both the same code layout, so the second one dlopened after the first is dlclosed
 * usually lands at the same address and its kernel's host stub has the address the first
 * one's had: a library that keys kernels by stub address must forget the first one when its
 * fatbin is unregistered.
 *
 * The CPU twins of dtp_a and dtp_b live in the program (tests/difftest/dt.h): a twin inside the
 * plugin would be found with dlsym(RTLD_DEFAULT), which pins the plugin (glibc records a
 * dependency on the object a symbol came from), and dlclose would never unload it.
 *
 * dt_plugin_run launches its kernel three times on stream s (scalar `it` changing), waits for
 * the stream (as a plugin handing results back would) and returns the number of launches, which
 * the program adds to its own count. */
#include <cuda_runtime.h>

#include "prog.h"

/* Launches by host stub with cudaLaunchKernel, as code built by CUDA 12's nvcc (or an explicit
 * launch) does: the stub's address is what identifies the kernel. */
#define DT_PLUGIN_LAUNCH(k, y, n, s)                                                         \
  do {                                                                                     \
    float *y_ = (y);                                                                       \
    int n_ = (n);                                                                          \
    void *args_[] = {&y_, &n_};                                                            \
    CHECK_CUDA(cudaLaunchKernel((const void *)k, dim3((n_ + 127) / 128), dim3(128), args_, 0, s)); \
  } while (0)

#define DT_PLUGIN_LAUNCH_NY(k, y, n, s)                                                      \
  do {                                                                                     \
    float *y_ = (y);                                                                       \
    int n_ = (n);                                                                          \
    void *args_[] = {&n_, &y_};                                                            \
    CHECK_CUDA(cudaLaunchKernel((const void *)k, dim3((n_ + 127) / 128), dim3(128), args_, 0, s)); \
  } while (0)

#ifndef DT_PLUGIN_B
extern "C" __global__ void dtp_a(float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * 0.5f + 1.0f;
}
extern "C" __attribute__((visibility("default"))) int dt_plugin_run(float *y, int n, int it, cudaStream_t s) {
  for (int k = 0; k < 3; k++) {
    DT_PLUGIN_LAUNCH(dtp_a, y, n - (it + k) % 2, s);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  return 3;
}
#else
extern "C" __global__ void dtp_b(int n, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * -0.25f + 0.5f;
}
extern "C" __attribute__((visibility("default"))) int dt_plugin_run(float *y, int n, int it, cudaStream_t s) {
  for (int k = 0; k < 3; k++) {
    DT_PLUGIN_LAUNCH_NY(dtp_b, y, n - (it + k) % 2, s);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  return 3;
}
#endif
