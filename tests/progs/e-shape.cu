/* e-shape.cu — an inference-style loop over batches whose last batch is smaller.
 *
 * BATCHES full batches of FULL rows and one last batch of LAST rows run through the same six
 * launches on one blocking stream: two over the fixed-size weights (their grid never changes),
 * then four over the batch (their grid follows the batch size), then a synchronous cudaMemcpy
 * of the batch's result. On the last batch the grids of the four launches over the batch differ
 * from every earlier one: a library replaying the sequence as a graph must launch them with
 * these grids (the grid is not part of a launch's structure: the graph's nodes are updated) or
 * not replay them; replaying the full-size grids would process rows past the end of the batch
 * (they exist in the buffer, so the result changes instead of faulting). Output: a checksum per batch and of all results, then the launch counts.
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { F = 32, FULL = 128, LAST = 40, BATCHES = 12, BLOCK = 32 };
enum { ROWS = FULL * BATCHES + LAST };

__host__ __device__ static inline void wprep_body(unsigned long i, unsigned *w, int step, int n) {
  if (i < (unsigned long)n) w[i] = w[i] * 69069u + (unsigned)step;
}
__host__ __device__ static inline void input_body(unsigned long i, unsigned *x, int first,
                                                  int rows) {
  if (i < (unsigned long)rows) x[i] = (unsigned)(first + (int)i) * 2654435761u;
}
__host__ __device__ static inline void apply_body(unsigned long i, const unsigned *w,
                                                  const unsigned *x, unsigned *y, int rows) {
  if (i >= (unsigned long)rows) return;
  unsigned s = 0;
  for (int k = 0; k < F; k++) s = s * 31u + (w[k] ^ (x[i] >> (k % 29)));
  y[i] = s;
}
__host__ __device__ static inline void act_body(unsigned long i, unsigned *y, int rows) {
  if (i < (unsigned long)rows) y[i] = (y[i] ^ (y[i] >> 15)) * 0x2c1b3c6du;
}
__host__ __device__ static inline void sum_body(unsigned long i, const unsigned *y, unsigned *out,
                                                int rows) {
  if (i != 0) return;
  unsigned s = 0;
  for (int r = 0; r < rows; r++) s = s * 0x01000193u + y[r];
  *out = s;
}

extern "C" __global__ void es_wprep(unsigned *w, int step, int n) {
  wprep_body(PROG_TID(), w, step, n);
}
extern "C" __global__ void es_input(unsigned *x, int first, int rows) {
  input_body(PROG_TID(), x, first, rows);
}
extern "C" __global__ void es_apply(const unsigned *w, const unsigned *x, unsigned *y, int rows) {
  apply_body(PROG_TID(), w, x, y, rows);
}
extern "C" __global__ void es_act(unsigned *y, int rows) { act_body(PROG_TID(), y, rows); }
extern "C" __global__ void es_sum(const unsigned *y, unsigned *out, int rows) {
  sum_body(PROG_TID(), y, out, rows);
}

SIM_KERNEL(es_wprep) {
  SIM_FOR_EACH_THREAD(i) wprep_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int), SIM_ARG(2, int));
}
SIM_KERNEL(es_input) {
  SIM_FOR_EACH_THREAD(i) input_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int), SIM_ARG(2, int));
}
SIM_KERNEL(es_apply) {
  SIM_FOR_EACH_THREAD(i)
  apply_body(i, SIM_ARG(0, const unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, unsigned *),
             SIM_ARG(3, int));
}
SIM_KERNEL(es_act) {
  SIM_FOR_EACH_THREAD(i) act_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int));
}
SIM_KERNEL(es_sum) {
  SIM_FOR_EACH_THREAD(i)
  sum_body(i, SIM_ARG(0, const unsigned *), SIM_ARG(1, unsigned *), SIM_ARG(2, int));
}

int main(void) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  unsigned *w, *x, *y, *out;
  CHECK_CUDA(cudaMalloc((void **)&w, F * sizeof *w));
  CHECK_CUDA(cudaMalloc((void **)&x, FULL * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&y, FULL * sizeof *y));
  CHECK_CUDA(cudaMalloc((void **)&out, sizeof *out));
  CHECK_CUDA(cudaMemsetAsync(w, 0x5a, F * sizeof *w, s));
  /* Rows past a short batch hold earlier data, so processing them changes the sum. */
  CHECK_CUDA(cudaMemsetAsync(x, 0, FULL * sizeof *x, s));
  CHECK_CUDA(cudaMemsetAsync(y, 0, FULL * sizeof *y, s));

  uint64_t all = prog_hash(NULL, 0);
  for (int b = 0, first = 0; b <= BATCHES; b++) {
    int rows = b < BATCHES ? FULL : LAST;
    unsigned grid = (unsigned)((rows + BLOCK - 1) / BLOCK);
    PROG_LAUNCH(es_wprep, 1, BLOCK, 0, s, w, b, (int)F);
    PROG_LAUNCH(es_wprep, 1, BLOCK, 0, s, w, b + 1000, (int)F);
    PROG_LAUNCH(es_input, grid, BLOCK, 0, s, x, first, rows);
    PROG_LAUNCH(es_apply, grid, BLOCK, 0, s, (const unsigned *)w, (const unsigned *)x, y, rows);
    PROG_LAUNCH(es_act, grid, BLOCK, 0, s, y, rows);
    PROG_LAUNCH(es_sum, 1, 1, 0, s, (const unsigned *)y, out, rows);
    unsigned h;
    CHECK_CUDA(cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost));
    printf("batch %d rows %d: %08x\n", b, rows, h);
    all = prog_hash(&h, sizeof h, all);
    first += rows;
  }
  printf("all: %016llx\n", (unsigned long long)all);
  CHECK_CUDA(cudaFree(w));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
