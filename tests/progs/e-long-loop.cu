/* e-long-loop.cu — thousands of launches on one stream with no synchronisation until the end.
 *
 * ITERS iterations of 8 launches (four kernels over two buffers of 32-bit integers) on one
 * non-blocking stream, then one cudaStreamSynchronize and the copies back. One launch per
 * iteration (el_step) takes the iteration number by value, so a replayed graph needs a node
 * update every time. Every kernel is an invertible map that does not commute with the others,
 * so a launch dropped, duplicated, reordered or run with a stale argument changes the
 * checksums. Output: the checksums, the number of el_step launches (the deny-list case uses it),
 * then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, ITERS = 500 };

__host__ __device__ static inline void mad_body(unsigned long i, unsigned *x, unsigned m,
                                                unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c; /* m odd: invertible mod 2^32 */
}
__host__ __device__ static inline void rot_body(unsigned long i, unsigned *x, int r, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] << r | x[i] >> (32 - r)) ^ (unsigned)i;
}
__host__ __device__ static inline void mix_body(unsigned long i, unsigned *x, const unsigned *y,
                                                int n) {
  if (i < (unsigned long)n) x[i] += y[(i * 7 + 3) % (unsigned long)n];
}
__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, int step, int n) {
  if (i < (unsigned long)n) x[i] ^= (unsigned)step * 0x9e3779b9u + (unsigned)i;
}

extern "C" __global__ void el_mad(unsigned *x, unsigned m, unsigned c, int n) {
  mad_body(PROG_TID(), x, m, c, n);
}
extern "C" __global__ void el_rot(unsigned *x, int r, int n) { rot_body(PROG_TID(), x, r, n); }
extern "C" __global__ void el_mix(unsigned *x, const unsigned *y, int n) {
  mix_body(PROG_TID(), x, y, n);
}
extern "C" __global__ void el_step(unsigned *x, int step, int n) {
  step_body(PROG_TID(), x, step, n);
}

SIM_KERNEL(el_mad) {
  SIM_FOR_EACH_THREAD(i)
  mad_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(el_rot) {
  SIM_FOR_EACH_THREAD(i) rot_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int), SIM_ARG(2, int));
}
SIM_KERNEL(el_mix) {
  SIM_FOR_EACH_THREAD(i)
  mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, int));
}
SIM_KERNEL(el_step) {
  SIM_FOR_EACH_THREAD(i) step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int), SIM_ARG(2, int));
}

int main(void) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned *x, *y;
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof(unsigned)));
  static unsigned hx[N], hy[N];
  for (int i = 0; i < N; i++) {
    hx[i] = (unsigned)i * 2654435761u;
    hy[i] = (unsigned)i ^ 0x5a5a5a5au;
  }
  /* On the stream itself: a non-blocking stream does not wait for legacy-stream copies. */
  CHECK_CUDA(cudaMemcpyAsync(x, hx, sizeof hx, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMemcpyAsync(y, hy, sizeof hy, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaStreamSynchronize(s));

  const unsigned grid = N / BLOCK;
  int n = N;
  unsigned long steps = 0;
  for (int it = 0; it < ITERS; it++) {
    PROG_LAUNCH(el_mad, grid, BLOCK, 0, s, x, 2654435761u, 12345u, n);
    PROG_LAUNCH(el_rot, grid, BLOCK, 0, s, x, 7, n);
    PROG_LAUNCH(el_mix, grid, BLOCK, 0, s, y, (const unsigned *)x, n);
    PROG_LAUNCH(el_step, grid, BLOCK, 0, s, x, it, n);
    steps++;
    PROG_LAUNCH(el_mad, grid, BLOCK, 0, s, y, 40503u, 977u, n);
    PROG_LAUNCH(el_rot, grid, BLOCK, 0, s, y, 13, n);
    PROG_LAUNCH(el_mix, grid, BLOCK, 0, s, x, (const unsigned *)y, n);
    PROG_LAUNCH(el_mad, grid, BLOCK, 0, s, x, 69069u, 1u, n);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(hx, x, sizeof hx, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost));
  printf("x: %016llx first=%08x last=%08x\n", (unsigned long long)prog_hash(hx, sizeof hx), hx[0],
         hx[N - 1]);
  printf("y: %016llx first=%08x last=%08x\n", (unsigned long long)prog_hash(hy, sizeof hy), hy[0],
         hy[N - 1]);
  printf("el_step launches: %lu\n", steps);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
