/* sim_kernel.h — writing the CPU twin of a kernel for the simulator.
 *
 * On the simulator a kernel named N (its device-side name: the extern "C" name, else the mangled
 * one) runs as the exported host function `void sim_N(dim3 grid, dim3 block, void **args)`,
 * found with dlsym(RTLD_DEFAULT, "sim_N"). `args` holds one pointer per kernel parameter, exactly
 * as the program passed them (or as unpacked from a parameter buffer). The twin runs once per
 * launch, on the simulator's device thread, and iterates the grid itself.
 * Programs must be linked with -rdynamic (nvcc: -Xcompiler -rdynamic).
 *
 *   extern "C" __global__ void scale(float *x, float a, int n) { ... }   // device code
 *   SIM_KERNEL(scale) {                                                   // CPU twin
 *     float *x = SIM_ARG(0, float *); float a = SIM_ARG(1, float); int n = SIM_ARG(2, int);
 *     SIM_FOR_EACH_THREAD(i) if (i < n) x[i] *= a;
 *   }
 *
 * On a GPU the twins are simply unused host functions.
 */
#ifndef SIM_KERNEL_H
#define SIM_KERNEL_H

#include <vector_types.h>

#ifdef __cplusplus
#define SIM_EXTERN_C extern "C"
#else
#define SIM_EXTERN_C
#endif

#define SIM_KERNEL(name)                                                                  \
  SIM_EXTERN_C __attribute__((visibility("default"), used)) void sim_##name(             \
      dim3 sim_grid, dim3 sim_block, void **sim_args)

/* The i-th argument of the launch, as type T. */
#define SIM_ARG(i, T) (*(T *)sim_args[(i)])

/* Total threads in the launch (x dimension only, as 1-D kernels use it). */
#define SIM_THREADS() ((unsigned long)sim_grid.x * sim_block.x)

/* Runs the following statement once per thread of a 1-D launch, with `i` the global index
 * blockIdx.x * blockDim.x + threadIdx.x. */
#define SIM_FOR_EACH_THREAD(i) for (unsigned long i = 0; i < SIM_THREADS(); i++)

#endif
