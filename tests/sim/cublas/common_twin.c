/* common_twin.c — the CPU twins of kernels.cu, which the simulated driver runs in place of the
 * kernels (found with dlsym as sim_<kernel>). One call runs the whole grid: every element of C
 * of every batch (grid.y). */
#include "cublas/gemm.h"
#include "sim_kernel.h"

static void run(dim3 grid, void **args) {
  const gemm_t *p = args[0];
  const void *A = *(const void **)args[1], *B = *(const void **)args[2];
  void *C = *(void **)args[3];
  long long count = (long long)p->m * p->n;
  for (unsigned b = 0; b < grid.y; b++)
    for (long long i = 0; i < count; i++) gemm_elem(p, A, B, C, i, b);
}

SIM_KERNEL(cublassim_sgemm) { (void)sim_block; run(sim_grid, sim_args); }
SIM_KERNEL(cublasltsim_sgemm) { (void)sim_block; run(sim_grid, sim_args); }
