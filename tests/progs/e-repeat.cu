/* e-repeat.cu — a network of identical blocks: in every step the same body of P launches runs
 * once per layer, back to back, on that layer's own buffer (its pointer differs from layer to
 * layer, and is the same in every step), then a fold of every layer into a small result, an
 * asynchronous copy of it into pinned memory and a cudaStreamSynchronize (the `loss.item()`).
 *
 * Usage: e-repeat STEPS LAYERS [SHORT]
 *
 * With SHORT > 0, every fourth step runs SHORT layers instead of LAYERS (a batch that takes a
 * shorter path). The body's launches are three elementwise kernels over the layer's buffer with
 * blocks from a fixed table and the launch's position as a scalar argument, so that a body's
 * launches have distinct shapes and the library's segmenter cuts inside it at the same places
 * in every layer. Output: the checksum every ten steps, at the end the checksum and every
 * buffer's, then the launch counts.
 */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, P = 24, MAXL = 32 };

__host__ __device__ static inline void scale_body(unsigned long i, unsigned *x, unsigned j) {
  if (i < N) x[i] = x[i] * 2654435761u + j;
}
__host__ __device__ static inline void mix_body(unsigned long i, unsigned *x, unsigned j) {
  if (i < N) x[i] ^= (x[i] >> 7) + j * 40503u;
}
__host__ __device__ static inline void shift_body(unsigned long i, unsigned *x, unsigned j) {
  if (i < N) x[i] = (x[i] << 3 | x[i] >> 29) + j;
}
/* out[0] folds every layer's buffer (one thread: the order is fixed). */
__host__ __device__ static inline void fold_body(unsigned long i, unsigned *const *xs, int layers,
                                                 unsigned *out, unsigned step) {
  if (i != 0) return;
  unsigned h = step;
  for (int l = 0; l < layers; l++)
    for (int k = 0; k < N; k++) h = (h ^ xs[l][k]) * 16777619u;
  out[0] = h;
}

extern "C" __global__ void er_scale(unsigned *x, unsigned j) { scale_body(PROG_TID(), x, j); }
extern "C" __global__ void er_mix(unsigned *x, unsigned j) { mix_body(PROG_TID(), x, j); }
extern "C" __global__ void er_shift(unsigned *x, unsigned j) { shift_body(PROG_TID(), x, j); }
extern "C" __global__ void er_fold(unsigned *const *xs, int layers, unsigned *out, unsigned step) {
  fold_body(PROG_TID(), xs, layers, out, step);
}
SIM_KERNEL(er_scale) { SIM_FOR_EACH_THREAD(i) scale_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned)); }
SIM_KERNEL(er_mix) { SIM_FOR_EACH_THREAD(i) mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned)); }
SIM_KERNEL(er_shift) { SIM_FOR_EACH_THREAD(i) shift_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned)); }
SIM_KERNEL(er_fold) {
  SIM_FOR_EACH_THREAD(i)
  fold_body(i, SIM_ARG(0, unsigned *const *), SIM_ARG(1, int), SIM_ARG(2, unsigned *), SIM_ARG(3, unsigned));
}

/* Launch j of a body: its block, in warps (1 to 8), from a fixed table. */
static unsigned warps_of(int j) { return 1 + (unsigned)((j * 5 + j / 7) % 8); }

int main(int argc, char **argv) {
  int steps = argc >= 3 ? atoi(argv[1]) : 0, layers = argc >= 3 ? atoi(argv[2]) : 0;
  int shorter = argc >= 4 ? atoi(argv[3]) : 0;
  if (steps <= 0 || layers <= 0 || layers > MAXL || shorter < 0 || shorter > layers || argc > 4) {
    fprintf(stderr, "usage: e-repeat STEPS LAYERS [SHORT]  (1 <= SHORT <= LAYERS <= %d)\n", MAXL);
    return 2;
  }
  cudaStream_t s;
  unsigned *x[MAXL], **xs, *out, *pinned;
  static unsigned h[N];
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int l = 0; l < layers; l++) {
    CHECK_CUDA(cudaMalloc((void **)&x[l], N * sizeof(unsigned)));
    CHECK_CUDA(cudaMemsetAsync(x[l], l, N * sizeof(unsigned), s));
  }
  CHECK_CUDA(cudaMalloc((void **)&xs, MAXL * sizeof *xs));
  CHECK_CUDA(cudaMemcpyAsync(xs, x, (size_t)layers * sizeof *xs, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMalloc((void **)&out, sizeof *out));
  CHECK_CUDA(cudaMallocHost((void **)&pinned, sizeof *pinned));
  uint64_t total = prog_hash(NULL, 0);
  for (int it = 0; it < steps; it++) {
    int ls = shorter && it % 4 == 3 ? shorter : layers;
    for (int l = 0; l < ls; l++)
      for (int j = 0; j < P; j++) {
        unsigned block = 32 * warps_of(j), grid = (N + block - 1) / block;
        switch (j % 3) {
        case 0: PROG_LAUNCH(er_scale, grid, block, 0, s, x[l], (unsigned)j); break;
        case 1: PROG_LAUNCH(er_mix, grid, block, 0, s, x[l], (unsigned)j); break;
        default: PROG_LAUNCH(er_shift, grid, block, 0, s, x[l], (unsigned)j); break;
        }
      }
    PROG_LAUNCH(er_fold, 1, 32, 0, s, (unsigned *const *)xs, layers, out, (unsigned)it);
    CHECK_CUDA(cudaMemcpyAsync(pinned, out, sizeof *out, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    total = prog_hash(pinned, sizeof *pinned, total);
    if (it % 10 == 9 || it == steps - 1) printf("step %d: %016llx\n", it, (unsigned long long)total);
  }
  printf("total: %016llx\n", (unsigned long long)total);
  for (int l = 0; l < layers; l++) {
    CHECK_CUDA(cudaMemcpy(h, x[l], sizeof h, cudaMemcpyDeviceToHost));
    printf("layer %d: %016llx\n", l, (unsigned long long)prog_hash(h, sizeof h));
  }
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(xs));
  for (int l = 0; l < layers; l++) CHECK_CUDA(cudaFree(x[l]));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
