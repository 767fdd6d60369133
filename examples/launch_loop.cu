/* launch_loop.cu — the effect without Python: a loop of small kernels, like one launch-bound step.
 *
 * Each step launches --kernels small kernels (three kinds in rotation, each one pass over a
 * vector of --n unsigned integers) on one stream and then synchronises the stream, as a
 * training step does when it reads its loss. One argument changes every step (the step number,
 * as a dropout seed or a learning rate would), so a library that replays the step as a graph
 * must update it each time. The arithmetic is on unsigned integers, so the result is exact on
 * any device and on the CPU simulator; the program prints
 *
 *   launch_loop: steps=S kernels=K n=N
 *   median_step_us: T        median wall time of one step (launches + sync)
 *   checksum: HEX16          FNV-1a of the final vector: identical with and without the library
 *
 * Build: `make` (examples/build.mk) → build/examples/launch_loop. Run on a GPU as it is, on the
 * simulator with LD_LIBRARY_PATH=build/sim, with the library under tools/autograph.
 * Exit status 0, 2 on a bad option, 1 on a CUDA error.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/sim/sim_kernel.h"

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "launch_loop: %s failed: %s\n", #call, cudaGetErrorString(e_));      \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

/* The bodies are shared by the device kernels and their CPU twins, so both compute the same. */
__host__ __device__ static inline void mix_body(unsigned long i, uint32_t *x, uint32_t k, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] ^ (k + (uint32_t)i)) * 2654435761u;
}
__host__ __device__ static inline void add_body(unsigned long i, uint32_t *x, const uint32_t *y,
                                                int n) {
  if (i < (unsigned long)n) x[i] += y[(i + 1) % (unsigned long)n] >> 3;
}
__host__ __device__ static inline void rot_body(unsigned long i, uint32_t *x, int r, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] << r) | (x[i] >> (32 - r));
}

#define TID() ((unsigned long)blockIdx.x * blockDim.x + threadIdx.x)
extern "C" __global__ void ll_mix(uint32_t *x, uint32_t k, int n) { mix_body(TID(), x, k, n); }
extern "C" __global__ void ll_add(uint32_t *x, const uint32_t *y, int n) {
  add_body(TID(), x, y, n);
}
extern "C" __global__ void ll_rot(uint32_t *x, int r, int n) { rot_body(TID(), x, r, n); }

SIM_KERNEL(ll_mix) {
  SIM_FOR_EACH_THREAD(i) mix_body(i, SIM_ARG(0, uint32_t *), SIM_ARG(1, uint32_t), SIM_ARG(2, int));
}
SIM_KERNEL(ll_add) {
  SIM_FOR_EACH_THREAD(i)
  add_body(i, SIM_ARG(0, uint32_t *), SIM_ARG(1, const uint32_t *), SIM_ARG(2, int));
}
SIM_KERNEL(ll_rot) {
  SIM_FOR_EACH_THREAD(i) rot_body(i, SIM_ARG(0, uint32_t *), SIM_ARG(1, int), SIM_ARG(2, int));
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static long opt_long(int argc, char **argv, int *i, long lo, long hi) {
  char *end = NULL;
  long v = *i + 1 < argc ? strtol(argv[*i + 1], &end, 10) : 0;
  if (!end || *end || v < lo || v > hi) {
    fprintf(stderr, "launch_loop: %s needs an integer in [%ld, %ld]\n", argv[*i], lo, hi);
    exit(2);
  }
  ++*i;
  return v;
}

int main(int argc, char **argv) {
  long steps = 200, kernels = 24, n = 4096, warmup = 5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--steps")) steps = opt_long(argc, argv, &i, 1, 10000000);
    else if (!strcmp(argv[i], "--kernels")) kernels = opt_long(argc, argv, &i, 1, 100000);
    else if (!strcmp(argv[i], "--n")) n = opt_long(argc, argv, &i, 2, 1 << 26);
    else if (!strcmp(argv[i], "--warmup")) warmup = opt_long(argc, argv, &i, 0, 10000000);
    else {
      fprintf(stderr, "usage: launch_loop [--steps S] [--kernels K] [--n N] [--warmup W]\n");
      return 2;
    }
  }

  cudaStream_t s;
  uint32_t *x, *y;
  size_t bytes = (size_t)n * sizeof *x;
  uint32_t *host = (uint32_t *)malloc(bytes);
  double *times = (double *)malloc((size_t)steps * sizeof *times);
  if (!host || !times) return 1;
  for (long i = 0; i < n; i++) host[i] = (uint32_t)i * 40503u + 1u;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMalloc((void **)&x, bytes));
  CHECK(cudaMalloc((void **)&y, bytes));
  CHECK(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, host, bytes, cudaMemcpyHostToDevice));

  unsigned block = 256, grid = (unsigned)((n + block - 1) / block);
  int ni = (int)n;
  for (long st = 0; st < warmup + steps; st++) {
    double t0 = now_us();
    for (long k = 0; k < kernels; k++) {
      switch (k % 3) {
        case 0: ll_mix<<<grid, block, 0, s>>>(x, (uint32_t)(st * 1000 + k), ni); break;
        case 1: ll_add<<<grid, block, 0, s>>>(k % 2 ? x : y, k % 2 ? y : x, ni); break;
        default: ll_rot<<<grid, block, 0, s>>>(x, (int)(k % 31) + 1, ni); break;
      }
      CHECK(cudaGetLastError());
    }
    CHECK(cudaStreamSynchronize(s));
    if (st >= warmup) times[st - warmup] = now_us() - t0;
  }

  CHECK(cudaMemcpy(host, x, bytes, cudaMemcpyDeviceToHost));
  uint64_t h = 1469598103934665603ull;
  for (long i = 0; i < n; i++)
    for (int b = 0; b < 4; b++) h = (h ^ ((host[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
  qsort(times, (size_t)steps, sizeof *times, cmp_double);
  double med = steps % 2 ? times[steps / 2] : (times[steps / 2 - 1] + times[steps / 2]) / 2;
  printf("launch_loop: steps=%ld kernels=%ld n=%ld\n", steps, kernels, n);
  printf("median_step_us: %.1f\n", med);
  printf("checksum: %016llx\n", (unsigned long long)h);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaStreamDestroy(s));
  free(host);
  free(times);
  return 0;
}
