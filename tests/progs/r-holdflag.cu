/* r-holdflag.cu — the host waits on device-written memory without calling CUDA.
 *
 * Each iteration launches `produce` (three kernels) and then `raise_flag`, which writes the
 * iteration number into host memory allocated with cudaHostAllocMapped; the host then spins on
 * that flag with no CUDA call at all, as persistent kernels, proxies and GPU→CPU progress flags
 * do. Without a bound on holds, a library that holds the launches once the sequence is learned
 * never submits them and the program hangs: the spin gives up after SPIN_LIMIT_S seconds and
 * the program fails at once rather than at the test runner's limit.
 * The flag is read and written atomically (the twin runs on the simulator's device thread).
 * Output: the value of x after every fourth iteration and overall, then the launch counts.
 */
#include <cuda_runtime.h>

#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 128, ITERS = 24, SPIN_LIMIT_S = 20 };

__host__ __device__ static inline void mix_body(unsigned long i, unsigned *x, unsigned m,
                                                unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] ^ (x[i] >> 7)) * m + c;
}

extern "C" __global__ void hf_mix(unsigned *x, unsigned m, unsigned c, int n) {
  mix_body(PROG_TID(), x, m, c, n);
}
extern "C" __global__ void hf_raise(volatile int *flag, int it) {
  if (PROG_TID() == 0) {
    __threadfence_system();
    *flag = it;
  }
}

SIM_KERNEL(hf_mix) {
  SIM_FOR_EACH_THREAD(i)
  mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(hf_raise) { __atomic_store_n(SIM_ARG(0, int *), SIM_ARG(1, int), __ATOMIC_RELEASE); }

static void produce(unsigned *x, int it, cudaStream_t s) {
  PROG_LAUNCH(hf_mix, N / BLOCK, BLOCK, 0, s, x, 69069u, (unsigned)it, N);
  PROG_LAUNCH(hf_mix, N / BLOCK, BLOCK, 0, s, x, 2654435761u, 12345u, N);
  PROG_LAUNCH(hf_mix, N / BLOCK, BLOCK, 0, s, x, 40503u, 7u, N);
}

/* Spins until *flag == want, with no CUDA call; exits the program after SPIN_LIMIT_S seconds. */
static void wait_flag(int *flag, int want) {
  uint64_t t0 = prog_now_ns();
  for (unsigned long spins = 0;; spins++) {
    if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == want) return;
    if ((spins & 1023) == 0) {
      if (prog_now_ns() - t0 > (uint64_t)SPIN_LIMIT_S * 1000000000u) {
        fprintf(stderr, "r-holdflag: iteration %d never raised its flag: a launch was held and "
                        "never submitted\n", want);
        exit(3);
      }
    }
  }
}

int main(void) {
  unsigned *x;
  int *flag;
  cudaStream_t s;
  static unsigned h[N];
  uint64_t total = prog_hash(NULL, 0);
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemset(x, 0, N * sizeof *x));
  CHECK_CUDA(cudaHostAlloc((void **)&flag, sizeof *flag, cudaHostAllocMapped));
  *flag = -1;
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int it = 0; it < ITERS; it++) {
    produce(x, it, s);
    PROG_LAUNCH(hf_raise, 1, 1, 0, s, flag, it);
    wait_flag(flag, it);
    if (it % 4 == 3) {
      CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
      uint64_t v = prog_hash(h, sizeof h);
      total = prog_hash(&v, sizeof v, total);
      printf("iter %d: %016llx\n", it, (unsigned long long)v);
    }
  }
  printf("total: %016llx\n", (unsigned long long)total);
  CHECK_CUDA(cudaFreeHost(flag));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
