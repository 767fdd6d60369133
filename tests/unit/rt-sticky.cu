/* rt-sticky — a device fault is a sticky error in the simulated runtime.
 *
 * A kernel's CPU twin reports a fault through the simulated driver (simctl_kernel_fault, found
 * with dlsym because the program does not link the driver). From then on every runtime call
 * returns cudaErrorIllegalAddress and cudaGetLastError does not clear it, until
 * cudaDeviceReset. Also checks that a failure injected into a runtime function (SIM_FAIL) is an
 * ordinary, non-sticky error.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "sim_kernel.h"

extern "C" __global__ void rt_fault(int *x) { x[0] = 1; }
SIM_KERNEL(rt_fault) {
  void (*fault)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "simctl_kernel_fault");
  if (fault) fault();
}

int main() {
  setenv("SIM_FAIL", "cudaMalloc:1", 1);
  int *d;
  CHECK_STATUS_EQ(cudaErrorMemoryAllocation, cudaMalloc(&d, 64));
  CHECK_STATUS_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMalloc(&d, 64));
  if (!dlsym(RTLD_DEFAULT, "simctl_kernel_fault")) {
    printf("the driver has no simctl_kernel_fault\n");
    return 77;
  }

  rt_fault<<<1, 1>>>(d);
  CHECK_STATUS_EQ(cudaErrorIllegalAddress, cudaDeviceSynchronize());
  CHECK_STATUS_EQ(cudaErrorIllegalAddress, cudaGetLastError());
  CHECK_STATUS_EQ(cudaErrorIllegalAddress, cudaGetLastError());
  CHECK_STATUS_EQ(cudaErrorIllegalAddress, cudaPeekAtLastError());
  int h;
  CHECK_STATUS_EQ(cudaErrorIllegalAddress, cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  cudaStream_t s;
  CHECK_STATUS_EQ(cudaErrorIllegalAddress, cudaStreamCreate(&s));

  CHECK_CUDA(cudaDeviceReset());
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMalloc(&d, 64));
  CHECK_CUDA(cudaMemset(d, 0, 64));
  CHECK_CUDA(cudaFree(d));
  printf("ok\n");
  return 0;
}
