/* kernels.cu — device code of the simulated cuBLAS and cuBLASLt (gemm.h), built by nvcc into the
 * fatbin both libraries embed (fatbin.S) and load through the driver; the simulated driver runs
 * the CPU twins in common_twin.c in their place. */
#include "gemm.h"

__device__ static void gemm_thread(const gemm_t &p, const void *A, const void *B, void *C) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)p.m * p.n) gemm_elem(&p, A, B, C, i, blockIdx.y);
}

extern "C" __global__ void cublassim_sgemm(gemm_t p, const void *A, const void *B, void *C) {
  gemm_thread(p, A, B, C);
}

extern "C" __global__ void cublasltsim_sgemm(gemm_t p, const void *A, const void *B, void *C) {
  gemm_thread(p, A, B, C);
}
