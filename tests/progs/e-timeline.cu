/* e-timeline.cu — a training loop whose host and device time per step are close, for the
 * simulator's modelled clock (tests/cases/engine-timeline.sh): does the library leave the GPU
 * idler than a run without it?
 *
 * Usage: e-timeline STEPS LAUNCHES_PER_STEP HOST_NS_BETWEEN_LAUNCHES
 *
 * Each step: 4 × HOST_NS of host work (preparing the step's input), then LAUNCHES_PER_STEP
 * launches, each after HOST_NS of host work (prog_host_work: declared to the simulator's clock,
 * spun on a GPU), cycling through three small elementwise kernels over two device buffers (et_mix,
 * et_add, et_fold, which folds both into a small result) with the step and the launch's index
 * as scalar arguments, so that every launch changes the result, and blocks from a table (each
 * launch's grid covers the buffer); then an asynchronous copy of
 * the result (written by the step's last et_fold) into pinned memory and a
 * cudaStreamSynchronize, as `loss.item()` does, and the host folds the result into the checksum.
 * All work is on one stream created with cudaStreamNonBlocking. Output: the checksum every ten
 * steps, at the end the checksum and the buffer's, then the launch counts. On stderr, the wall
 * time per step of the last three quarters of the steps (tools/gpu-check compares it with and
 * without the library on a GPU; on the simulator the modelled clock is the measure).
 */
#include <cuda_runtime.h>

#include <stdlib.h>
#include <time.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 1024, OUT = 8 };

__host__ __device__ static inline void mix_body(unsigned long i, unsigned *x, unsigned step,
                                                unsigned j) {
  if (i < N) x[i] = (x[i] ^ (step * 0x9e3779b9u + j)) * 0x2545f491u + (unsigned)i;
}

__host__ __device__ static inline void add_body(unsigned long i, const unsigned *x, unsigned *y,
                                                unsigned step, unsigned j) {
  if (i < N) y[i] = y[i] * 3u + x[i] + step + j;
}

/* Thread i < OUT folds the slices [i * N / OUT, (i + 1) * N / OUT) of x and y into out[i]. */
__host__ __device__ static inline void fold_body(unsigned long i, const unsigned *x,
                                                 const unsigned *y, unsigned *out, unsigned step) {
  if (i >= OUT) return;
  unsigned h = step;
  for (unsigned k = (unsigned)i * (N / OUT); k < ((unsigned)i + 1) * (N / OUT); k++)
    h = (h ^ x[k] ^ (y[k] << 1)) * 16777619u;
  out[i] = h;
}

extern "C" __global__ void et_mix(unsigned *x, unsigned step, unsigned j) {
  mix_body(PROG_TID(), x, step, j);
}
extern "C" __global__ void et_add(const unsigned *x, unsigned *y, unsigned step, unsigned j) {
  add_body(PROG_TID(), x, y, step, j);
}
extern "C" __global__ void et_fold(const unsigned *x, const unsigned *y, unsigned *out,
                                   unsigned step) {
  fold_body(PROG_TID(), x, y, out, step);
}

SIM_KERNEL(et_mix) {
  SIM_FOR_EACH_THREAD(i) mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned));
}
SIM_KERNEL(et_add) {
  SIM_FOR_EACH_THREAD(i)
  add_body(i, SIM_ARG(0, const unsigned *), SIM_ARG(1, unsigned *), SIM_ARG(2, unsigned),
           SIM_ARG(3, unsigned));
}
SIM_KERNEL(et_fold) {
  SIM_FOR_EACH_THREAD(i)
  fold_body(i, SIM_ARG(0, const unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, unsigned *),
            SIM_ARG(3, unsigned));
}

/* Launch j's block, in warps (1 to 32), from a fixed table: a step's launches are distinct
 * shapes with no short period, as the kernels of a network's step are, so the library learns
 * the step as one long sequence rather than a repeated short one. */
static unsigned warps_of(int j) { return 1 + (unsigned)((j * 7 + j / 13) % 32); }

int main(int argc, char **argv) {
  int steps = argc == 4 ? atoi(argv[1]) : 0, per_step = argc == 4 ? atoi(argv[2]) : 0;
  long long host_ns = argc == 4 ? atoll(argv[3]) : -1;
  if (steps <= 0 || per_step <= 0 || host_ns < 0) {
    fprintf(stderr, "usage: e-timeline STEPS LAUNCHES_PER_STEP HOST_NS_BETWEEN_LAUNCHES\n");
    return 2;
  }
  cudaStream_t s;
  unsigned *x, *y, *out, *pinned;
  static unsigned h[N];
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  CHECK_CUDA(cudaMalloc((void **)&out, OUT * sizeof *out));
  CHECK_CUDA(cudaMallocHost((void **)&pinned, OUT * sizeof *pinned));
  CHECK_CUDA(cudaMemsetAsync(x, 0, N * sizeof *x, s));
  CHECK_CUDA(cudaMemsetAsync(y, 0, N * sizeof *y, s));
  CHECK_CUDA(cudaMemsetAsync(out, 0, OUT * sizeof *out, s));
  uint64_t total = prog_hash(NULL, 0);
  struct timespec t0 = {0, 0}, t1;
  int timed_from = steps / 4;
  for (int it = 0; it < steps; it++) {
    if (it == timed_from) clock_gettime(CLOCK_MONOTONIC, &t0);
    prog_host_work(4 * (uint64_t)host_ns);
    for (int j = 0; j < per_step; j++) {
      prog_host_work((uint64_t)host_ns);
      unsigned block = 32 * warps_of(j), grid = (N + block - 1) / block;
      switch (j % 3) {
      case 0: PROG_LAUNCH(et_mix, grid, block, 0, s, x, (unsigned)it, (unsigned)j); break;
      case 1: PROG_LAUNCH(et_add, grid, block, 0, s, x, y, (unsigned)it, (unsigned)j); break;
      default: PROG_LAUNCH(et_fold, 1, block, 0, s, x, y, out, (unsigned)it); break;
      }
    }
    CHECK_CUDA(cudaMemcpyAsync(pinned, out, OUT * sizeof *out, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    total = prog_hash(pinned, OUT * sizeof *pinned, total);
    if (it % 10 == 9 || it == steps - 1)
      printf("step %d: %016llx\n", it, (unsigned long long)total);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "e-timeline: %.3f us per step over steps %d to %d (wall clock)\n",
          ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 /
              (steps - timed_from),
          timed_from, steps - 1);
  CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
  uint64_t hx = prog_hash(h, sizeof h);
  CHECK_CUDA(cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost));
  printf("total: %016llx buffers: %016llx %016llx\n", (unsigned long long)total,
         (unsigned long long)hx, (unsigned long long)prog_hash(h, sizeof h));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
