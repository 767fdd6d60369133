/* rt-launch — kernel registration and launches through the simulated runtime.
 *
 * Covers <<<>>> launches of several registered kernels (extern "C" and mangled template names),
 * cudaLaunchKernel, cudaLaunchKernelExC with an attribute, cudaLaunchCooperativeKernel, the
 * cudaKernel_t of cudaGetKernel, cudaFuncGetName/GetAttributes, an unregistered stub and a kernel
 * without a CPU twin, last-error semantics, and that launches really go through the driver's
 * cuLaunchKernel (SIM_FAIL=cuLaunchKernel:1 makes the first <<<>>> fail).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "sim_kernel.h"

extern "C" __global__ void rt_scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
SIM_KERNEL(rt_scale) {
  float *x = SIM_ARG(0, float *);
  float a = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  SIM_FOR_EACH_THREAD(i) if ((int)i < n) x[i] *= a;
}

extern "C" __global__ void rt_add(int *x, int v) { x[threadIdx.x] += v; }
SIM_KERNEL(rt_add) {
  int *x = SIM_ARG(0, int *);
  int v = SIM_ARG(1, int);
  for (unsigned i = 0; i < sim_block.x; i++) x[i] += v;
}

template <typename T> __global__ void rt_fill(T *x, T v) { x[threadIdx.x] = v; }
/* The twin of rt_fill<int>, under its mangled name. */
SIM_KERNEL(_Z7rt_fillIiEvPT_S0_) {
  int *x = SIM_ARG(0, int *);
  int v = SIM_ARG(1, int);
  for (unsigned i = 0; i < sim_block.x; i++) x[i] = v;
}

/* A kernel whose CPU twin is missing. */
extern "C" __global__ void rt_no_twin(int *x) { x[0] = 1; }

static void not_a_kernel(int *) {}

int main() {
  /* Set before the first CUDA call: each simulated library reads SIM_FAIL once. */
  setenv("SIM_FAIL", "cuLaunchKernel:1", 1);

  int *d;
  CHECK_CUDA(cudaMalloc(&d, 8 * sizeof(int)));
  CHECK_CUDA(cudaMemset(d, 0, 8 * sizeof(int)));

  /* The first launch fails in the driver: proof it went through the fetched cuLaunchKernel. */
  rt_add<<<1, 8>>>(d, 1);
  cudaError_t first = cudaGetLastError();
  CHECK(first != cudaSuccess);
  CHECK_INT(cudaGetLastError(), ==, cudaSuccess); /* not sticky: cleared */

  rt_add<<<1, 8>>>(d, 2);
  CHECK_CUDA(cudaGetLastError());
  rt_fill<int><<<1, 4>>>(d + 4, 7);
  CHECK_CUDA(cudaGetLastError());
  int h[8];
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 4; i++) CHECK_INT(h[i], ==, 2);
  for (int i = 4; i < 8; i++) CHECK_INT(h[i], ==, 7);

  /* Explicit launches of a host stub. */
  float *x;
  float hx[64];
  for (int i = 0; i < 64; i++) hx[i] = (float)i;
  CHECK_CUDA(cudaMalloc(&x, sizeof hx));
  CHECK_CUDA(cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice));
  float a = 2.f;
  int n = 64;
  void *args[] = {&x, &a, &n};
  CHECK_CUDA(cudaLaunchKernel((const void *)rt_scale, dim3(2), dim3(32), args, 0, 0));

  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributePriority;
  attr[0].val.priority = 0;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(64);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  a = 3.f;
  CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)rt_scale, args));
  a = 0.5f;
  CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)rt_scale, dim3(1), dim3(64), args, 0, 0));
  CHECK_CUDA(cudaMemcpy(hx, x, sizeof hx, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; i++) CHECK(hx[i] == (float)i * 3.f);

  /* cudaKernel_t: a CUkernel, accepted where a stub is. */
  cudaKernel_t k;
  CHECK_CUDA(cudaGetKernel(&k, (const void *)rt_scale));
  CHECK(k != NULL);
  a = 2.f;
  CHECK_CUDA(cudaLaunchKernel((const void *)k, dim3(1), dim3(64), args, 0, 0));
  const char *name = NULL;
  CHECK_CUDA(cudaFuncGetName(&name, (const void *)rt_scale));
  CHECK_STR(name, "rt_scale");
  CHECK_CUDA(cudaFuncGetName(&name, (const void *)rt_fill<int>));
  CHECK_STR(name, "_Z7rt_fillIiEvPT_S0_");
  cudaFunction_t fn;
  CHECK_CUDA(cudaGetFuncBySymbol(&fn, (const void *)rt_scale));
  CHECK(fn != NULL);
  struct cudaFuncAttributes fa;
  CHECK_CUDA(cudaFuncGetAttributes(&fa, (const void *)rt_scale));
  CHECK_INT(fa.maxThreadsPerBlock, >, 0);
  CHECK_CUDA(cudaFuncSetAttribute((const void *)rt_scale,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));

  /* An unregistered stub: an invalid device function, recorded as the last error. */
  CHECK_STATUS_EQ(cudaErrorInvalidDeviceFunction,
                  cudaLaunchKernel((const void *)not_a_kernel, dim3(1), dim3(1), args, 0, 0));
  CHECK_STATUS_EQ(cudaErrorInvalidDeviceFunction, cudaPeekAtLastError());
  CHECK_STATUS_EQ(cudaErrorInvalidDeviceFunction, cudaGetLastError());
  CHECK_CUDA(cudaGetLastError());
  CHECK_STATUS_EQ(cudaErrorInvalidDeviceFunction, cudaFuncGetName(&name, (const void *)not_a_kernel));
  (void)cudaGetLastError();

  /* A kernel without a CPU twin fails, and the failure is not sticky. */
  rt_no_twin<<<1, 1>>>(d);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  CHECK(e != cudaSuccess);
  (void)cudaGetLastError();
  rt_add<<<1, 8>>>(d, 1);
  CHECK_CUDA(cudaGetLastError());

  /* An impossible shape is an invalid configuration. */
  rt_add<<<1, 4096>>>(d, 1);
  CHECK_STATUS_EQ(cudaErrorInvalidConfiguration, cudaGetLastError());

  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_INT(h[0], ==, 3);
  CHECK_STR(cudaGetErrorName(cudaErrorInvalidDeviceFunction), "cudaErrorInvalidDeviceFunction");
  CHECK(cudaGetErrorString(cudaErrorMemoryAllocation)[0] != '\0');
  CHECK_CUDA(cudaFree(d));
  CHECK_CUDA(cudaFree(x));
  printf("ok\n");
  return 0;
}
