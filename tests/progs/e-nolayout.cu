/* e-nolayout.cu — driver-API kernels whose parameter layout nobody but the driver knows.
 *
 * Usage: e-nolayout [KERNEL_DIR]   (default: $BUILD/tests/kernels, else build/tests/kernels)
 *
 * The program reads prog-driver.cubin into a heap buffer, loads it with cuModuleLoadData, then
 * overwrites the buffer and frees it before launching anything: the driver keeps what it needs
 * of a loaded image, and programs (Triton, JIT compilers) do discard theirs. Run under
 * SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+ it models a driver older than 12.4,
 * which cannot describe a kernel's parameters: then no one outside the driver can learn pd_axpy's
 * layout (its image is gone), and a library that copies kernel arguments for graph nodes must
 * pass those launches through. Runtime kernels of the executable keep their layouts in the
 * registered fatbin, which stays in memory.
 *
 * Each of ITERS iterations runs four runtime launches, a synchronous copy, four driver launches
 * with kernelParams (cuLaunchKernel from cudaGetDriverEntryPointByVersion, the scale changing
 * every time), and another synchronous copy. Output: the checksums after each iteration, then
 * the launch counts (see prog.h). The program itself never asks for parameter layouts.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, GRID = N / BLOCK, ITERS = 10 };

/* CPU twins of tests/kernels/prog-driver.cu. */
#include "prog-driver-twins.h"

__host__ __device__ static inline void half_body(unsigned long i, float *y, float c, int n) {
  if (i < (unsigned long)n) y[i] = y[i] * 0.5f + c;
}
extern "C" __global__ void nl_half(float *y, float c, int n) { half_body(PROG_TID(), y, c, n); }
SIM_KERNEL(nl_half) {
  SIM_FOR_EACH_THREAD(i) half_body(i, SIM_ARG(0, float *), SIM_ARG(1, float), SIM_ARG(2, int));
}

static PFN_cuModuleLoadData_v2000 p_cuModuleLoadData;
static PFN_cuModuleGetFunction_v2000 p_cuModuleGetFunction;
static PFN_cuModuleUnload_v2000 p_cuModuleUnload;
static PFN_cuLaunchKernel_v4000 p_cuLaunchKernel;

static void get(const char *name, void **fn, int version) {
  cudaDriverEntryPointQueryResult q;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q));
  CHECK_INT(q, ==, cudaDriverEntryPointSuccess);
}

int main(int argc, char **argv) {
  char path[4096];
  if (argc > 1)
    snprintf(path, sizeof path, "%s/prog-driver.cubin", argv[1]);
  else
    snprintf(path, sizeof path, "%s/tests/kernels/prog-driver.cubin",
             getenv("BUILD") ? getenv("BUILD") : "build");

  CHECK_CUDA(cudaFree(0)); /* the primary context, current on this thread */
  get("cuModuleLoadData", (void **)&p_cuModuleLoadData, 2000);
  get("cuModuleGetFunction", (void **)&p_cuModuleGetFunction, 2000);
  get("cuModuleUnload", (void **)&p_cuModuleUnload, 2000);
  get("cuLaunchKernel", (void **)&p_cuLaunchKernel, 4000);

  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "e-nolayout: cannot open %s\n", path);
    return 1;
  }
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long size = ftell(f);
  CHECK(size > 0);
  rewind(f);
  void *image = aligned_alloc(8, ((size_t)size + 7) & ~(size_t)7);
  CHECK(image != NULL);
  CHECK(fread(image, 1, (size_t)size, f) == (size_t)size);
  fclose(f);
  CUmodule mod;
  CUfunction axpy;
  CHECK_CU(p_cuModuleLoadData(&mod, image));
  CHECK_CU(p_cuModuleGetFunction(&axpy, mod, "pd_axpy"));
  memset(image, 0xa5, (size_t)size); /* the image is gone: only the driver knows the layout */
  free(image);

  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  float *x, *y;
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  static float hx[N], hy[N];
  for (int i = 0; i < N; i++) {
    hx[i] = (float)(i % 13) * 0.25f;
    hy[i] = 1.0f;
  }
  CHECK_CUDA(cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(y, hy, sizeof hy, cudaMemcpyHostToDevice));

  int n = N;
  for (int it = 0; it < ITERS; it++) {
    for (int k = 0; k < 4; k++)
      PROG_LAUNCH(nl_half, GRID, BLOCK, 0, s, y, 0.125f * (float)k, n);
    CHECK_CUDA(cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost));
    printf("iter %d runtime: %016llx\n", it, (unsigned long long)prog_hash(hy, sizeof hy));
    for (int k = 0; k < 4; k++) {
      float a = 0.5f + 0.25f * (float)k - 0.125f * (float)it;
      void *params[] = {&a, &x, &y, &n};
      CHECK_CU(p_cuLaunchKernel(axpy, GRID, 1, 1, BLOCK, 1, 1, 0, (CUstream)s, params, NULL));
      PROG_DRV();
    }
    CHECK_CUDA(cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost));
    printf("iter %d driver: %016llx\n", it, (unsigned long long)prog_hash(hy, sizeof hy));
  }
  prog_print_floats("y", hy, N);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CU(p_cuModuleUnload(mod));
  prog_print_launches();
  return 0;
}
