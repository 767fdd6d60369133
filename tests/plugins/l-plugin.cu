/* l-plugin.cu — a plugin that tests/progs/l-plugin.cu loads, runs and unloads, built twice:
 * plugin A has the kernel pkA(int *x, int a), plugin B (-DPLUGIN_B) the kernel pkB(int a,
 * int *x): same name length, parameters in the other order. Everything else is the same code,
 * so the two objects have the same layout and, loaded where the other was, B's host stub lies
 * at A's old address (the program checks it).
 *
 * The plugin launches through cudaLaunchKernel with the host stub, as code built by older nvcc
 * and generic launchers do: the handle a launch names is then the stub's address.
 */
#include <cuda_runtime.h>

#ifdef PLUGIN_B
/* x = 3 * x + a */
extern "C" __global__ void pkB(int a, int *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  x[i] = (int)(3u * (unsigned)x[i] + (unsigned)a); /* wraps */
}
#define PK pkB
#define PK_ARGS(x, a) {&(a), &(x)}
#else
/* x = 2 * x + a */
extern "C" __global__ void pkA(int *x, int a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  x[i] = (int)(2u * (unsigned)x[i] + (unsigned)a); /* wraps */
}
#define PK pkA
#define PK_ARGS(x, a) {&(x), &(a)}
#endif

/* The kernel's host stub. */
extern "C" __attribute__((visibility("default"))) const void *plugin_stub(void) {
  return (const void *)PK;
}

/* One step: four launches of the kernel on `s` over n ints (n a multiple of 64). Returns the
 * first launch error, or cudaSuccess. */
extern "C" __attribute__((visibility("default"))) int plugin_step(int *x, int n, int step,
                                                                  cudaStream_t s) {
  int err = cudaSuccess;
  for (int j = 0; j < 4; j++) {
    int a = 4 * step + j;
    void *args[2] = PK_ARGS(x, a);
    cudaError_t r = cudaLaunchKernel(plugin_stub(), dim3((unsigned)n / 64), dim3(64), args, 0, s);
    if (r != cudaSuccess && err == cudaSuccess) err = r;
  }
  return err;
}
