/* e-nccl.cu — a kernel named like NCCL's, which must reach the device as soon as it is launched.
 *
 * An NCCL collective kernel waits on the device for its peers, and the host (NCCL's proxy
 * thread, another rank) reacts to it running without any CUDA call in between: holding such a
 * launch back to batch it into a graph deadlocks. This program models that with one process:
 * each of ITERS iterations launches two ordinary kernels, then ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 * which announces in pinned host memory that it started and spins until the host answers; the
 * host waits (making no CUDA call) for the announcement, answers, and launches two more ordinary
 * kernels. The iterations repeat, so the ordinary launches around the collective form repeated
 * sequences a library may replay. If the announcement does not come within TIMEOUT_S seconds
 * the host answers anyway (so nothing hangs), and the program reports the failure and exits 1.
 * Output: a checksum, the number of collective launches, then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, ITERS = 12, TIMEOUT_S = 10 };

struct handshake {
  unsigned started; /* written by the collective: the iteration it runs for, plus one */
  unsigned answer;  /* written by the host: the iteration it answers, plus one */
};

__host__ __device__ static inline void mad_body(unsigned long i, unsigned *x, unsigned m,
                                                unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c;
}

extern "C" __global__ void nc_mad(unsigned *x, unsigned m, unsigned c, int n) {
  mad_body(PROG_TID(), x, m, c, n);
}

/* One thread of one block: the model of a collective waiting for its peers. */
extern "C" __global__ void ncclDevKernel_AllReduce_Sum_f32_RING_LL(struct handshake *hs,
                                                                   unsigned *x, unsigned iter) {
  volatile struct handshake *v = hs;
  v->started = iter + 1;
  __threadfence_system();
  while (v->answer != iter + 1) {
  }
  x[0] += iter;
}

SIM_KERNEL(nc_mad) {
  SIM_FOR_EACH_THREAD(i)
  mad_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(ncclDevKernel_AllReduce_Sum_f32_RING_LL) {
  struct handshake *hs = SIM_ARG(0, struct handshake *);
  unsigned *x = SIM_ARG(1, unsigned *);
  unsigned iter = SIM_ARG(2, unsigned);
  __atomic_store_n(&hs->started, iter + 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&hs->answer, __ATOMIC_ACQUIRE) != iter + 1) {
  }
  x[0] += iter;
}

int main(void) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct handshake *hs;
  CHECK_CUDA(cudaHostAlloc((void **)&hs, sizeof *hs, cudaHostAllocMapped));
  memset(hs, 0, sizeof *hs);
  unsigned *x;
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemsetAsync(x, 0x3c, N * sizeof *x, s));
  const unsigned grid = N / BLOCK;
  int n = N, late = 0;
  unsigned long collectives = 0;
  for (unsigned it = 0; it < ITERS; it++) {
    PROG_LAUNCH(nc_mad, grid, BLOCK, 0, s, x, 69069u, 1u, n);
    PROG_LAUNCH(nc_mad, grid, BLOCK, 0, s, x, 2654435761u, 3u, n);
    PROG_LAUNCH(ncclDevKernel_AllReduce_Sum_f32_RING_LL, 1, 1, 0, s, hs, x, it);
    collectives++;
    uint64_t give_up = prog_now_ns() + (uint64_t)(TIMEOUT_S * 1e9);
    while (__atomic_load_n(&hs->started, __ATOMIC_ACQUIRE) != it + 1 && prog_now_ns() < give_up) {
    }
    if (__atomic_load_n(&hs->started, __ATOMIC_ACQUIRE) != it + 1) late++;
    __atomic_store_n(&hs->answer, it + 1, __ATOMIC_RELEASE);
    PROG_LAUNCH(nc_mad, grid, BLOCK, 0, s, x, 40503u, 5u, n);
    PROG_LAUNCH(nc_mad, grid, BLOCK, 0, s, x, 1103515245u, 7u, n);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  if (late) {
    fprintf(stderr, "e-nccl: the collective kernel did not start within %d s in %d iterations\n",
            TIMEOUT_S, late);
    return 1;
  }
  static unsigned h[N];
  CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
  printf("x: %016llx\n", (unsigned long long)prog_hash(h, sizeof h));
  printf("collective launches: %lu\n", collectives);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFreeHost(hs));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
