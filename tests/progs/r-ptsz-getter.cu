/* r-ptsz-getter.cu — a per-thread driver entry point asked for below its version, then at it.
 *
 * cuLaunchKernel has a per-thread form (cuLaunchKernel_ptsz) whose entry in cudaTypedefs.h has
 * version 7000. Before any other CUDA call the program asks the driver's getter for
 * cuLaunchKernel at version 4000 with the per-thread flag: there is no per-thread form at 4000,
 * so the driver answers with the legacy form (as documented) or with none (as an H200's driver
 * did); never with the per-thread one. Then it asks at 7000 and gets the per-thread form, and
 * launches through it with stream 0, which goes to the calling thread's per-thread default
 * stream. A library that answered with its legacy wrapper (around the per-thread function)
 * would treat them as launches on the legacy stream, hold them and submit them there; the case
 * checks that none is held and that every launch was seen.
 * Output: a checksum per iteration, then the launch counts (all driver launches).
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 128, ITERS = 12 };

__host__ __device__ static inline void mad_body(unsigned long i, unsigned *x, unsigned m,
                                                unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c;
}
extern "C" __global__ void pg_mad(unsigned *x, unsigned m, unsigned c, int n) {
  mad_body(PROG_TID(), x, m, c, n);
}
SIM_KERNEL(pg_mad) {
  SIM_FOR_EACH_THREAD(i)
  mad_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

int main(void) {
  unsigned *x;
  static unsigned h[N];
  void *p = NULL;
  cudaFunction_t f;
  CUdriverProcAddressQueryResult st;
  /* First of all, before the runtime fetches its own entry points. */
  CHECK(cuInit(0) == CUDA_SUCCESS);
  void *legacy = NULL;
  CHECK(cuGetProcAddress("cuLaunchKernel", &legacy, 4000, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                         &st) == CUDA_SUCCESS);
  CHECK(legacy != NULL && st == CU_GET_PROC_ADDRESS_SUCCESS);
  CUresult r = cuGetProcAddress("cuLaunchKernel", &p, 4000,
                                CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
  CHECK(r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || p == NULL || p == legacy);
  CHECK(cuGetProcAddress("cuLaunchKernel", &p, 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                         &st) == CUDA_SUCCESS);
  CHECK(p != NULL && p != legacy && st == CU_GET_PROC_ADDRESS_SUCCESS);
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemset(x, 0, N * sizeof *x));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaGetFuncBySymbol(&f, (const void *)pg_mad));
  launch_fn launch = (launch_fn)p;
  for (int it = 0; it < ITERS; it++) {
    static const unsigned m[3] = {69069u, 40503u, 1103515245u};
    for (int k = 0; k < 3; k++) {
      unsigned c = (unsigned)(it * 3 + k);
      int n = N;
      void *args[] = {&x, (void *)&m[k], &c, &n};
      CHECK(launch((CUfunction)f, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS);
      PROG_DRV();
    }
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
    CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
    printf("iter %d: %016llx\n", it, (unsigned long long)prog_hash(h, sizeof h));
  }
  CHECK_CUDA(cudaFree(x));
  prog_print_launches();
  return 0;
}
