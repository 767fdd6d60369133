/* launch-count.cu — the program whose instructions `make bench` counts with callgrind.
 *
 * It launches --launches kernels (default 10,000) on one stream, four kernels in a fixed rotation,
 * with a stream synchronisation after every --every launches (default 50), all inside
 * bench_counted(); tools/bench runs it under `valgrind --tool=callgrind
 * --toggle-collect=bench_counted`, with and without the library, so the count covers exactly the
 * launching thread's work inside that function: the launch calls and the syncs (their share
 * included), never the simulator's device thread or start-up. A warm-up pass of the same loop
 * runs first, so that every kernel has been seen once (first sight learns a kernel's layout,
 * which is a one-time cost, not the path every launch takes).
 *
 * It prints "launch-count: launches=N every=E check=HEX"; the checksum is the same whatever ran
 * the launches. The same program runs unchanged on a GPU.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sim_kernel.h"

#define COUNT_KERNEL(name)                                                                   \
  extern "C" __global__ void name(unsigned long long *acc, int slot, unsigned long long v) { \
    if (blockIdx.x == 0 && threadIdx.x == 0) acc[slot] += v;                                 \
  }                                                                                          \
  SIM_KERNEL(name) { SIM_ARG(0, unsigned long long *)[SIM_ARG(1, int)] += SIM_ARG(2, unsigned long long); }
COUNT_KERNEL(count_k0)
COUNT_KERNEL(count_k1)
COUNT_KERNEL(count_k2)
COUNT_KERNEL(count_k3)

static __attribute__((noinline)) void loop(unsigned long long *acc, cudaStream_t s, long n,
                                           long every) {
  for (long i = 0; i < n; i++) {
    switch (i & 3) {
      case 0: count_k0<<<1, 32, 0, s>>>(acc, 0, 1); break;
      case 1: count_k1<<<1, 32, 0, s>>>(acc, 1, 2); break;
      case 2: count_k2<<<1, 32, 0, s>>>(acc, 2, 3); break;
      default: count_k3<<<1, 32, 0, s>>>(acc, 3, 4); break;
    }
    if ((i + 1) % every == 0) CHECK_CUDA(cudaStreamSynchronize(s));
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
}

/* Not inlined and exported under fixed names: callgrind collects only inside bench_counted. */
extern "C" __attribute__((noinline, visibility("default"))) void bench_warmup(
    unsigned long long *acc, cudaStream_t s, long n, long every) {
  loop(acc, s, n, every);
}
extern "C" __attribute__((noinline, visibility("default"))) void bench_counted(
    unsigned long long *acc, cudaStream_t s, long n, long every) {
  loop(acc, s, n, every);
}

int main(int argc, char **argv) {
  long n = 10000, every = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--launches")) n = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--every")) every = atol(argv[i + 1]);
  }
  if (argc % 2 == 0 || n < 1 || every < 1) {
    fprintf(stderr, "usage: launch-count [--launches N] [--every E]  (N, E >= 1)\n");
    return 2;
  }
  unsigned long long *acc, host[4];
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaMalloc((void **)&acc, sizeof host));
  CHECK_CUDA(cudaMemset(acc, 0, sizeof host));
  CHECK_CUDA(cudaDeviceSynchronize());
  bench_warmup(acc, s, 4 * every, every);
  bench_counted(acc, s, n, every);
  CHECK_CUDA(cudaMemcpy(host, acc, sizeof host, cudaMemcpyDeviceToHost));
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < 4; i++) h = (h ^ host[i]) * 1099511628211ull;
  CHECK_CUDA(cudaFree(acc));
  CHECK_CUDA(cudaStreamDestroy(s));
  printf("launch-count: launches=%ld every=%ld check=%016llx\n", n, every, h);
  return 0;
}
