/* e-cut.cu — a training-style step whose second half is cut early by the program's own calls.
 *
 * Each of STEPS steps runs two phases of LEN launches on one blocking stream, each ended by
 * cudaStreamSynchronize: phase A (a_first, then LEN - 1 mix launches) and phase B (b_first, then
 * mix launches). In the first WARM steps phase B runs whole before the program copies its
 * running value to the host (cudaMemcpyAsync + cudaStreamSynchronize, like a loss.item()); from
 * step WARM on, the copy comes after only K launches of phase B, the rest of B after it. A
 * library that learned B whole therefore holds K launches of it each later step and must submit
 * them when the copy comes: exactly STEPS - WARM cuts of K launches, by cudaMemcpyAsync followed
 * by cudaStreamSynchronize, while phase A is replayed every step.
 *
 * Usage: e-cut [K [STEPS [WARM [HOST_NS]]]]  (defaults 15, 20, 3, 0; 1 <= K < LEN). HOST_NS: host
 * work before each launch (prog_host_work), the pace of a framework between its ops; a library
 * that cuts its graphs by that pace sees launches at least that far apart, however fast the
 * machine. Output: the host's value after every step and a checksum of all of them, then the
 * launch counts.
 */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { LEN = 40, BLOCK = 32 };

__host__ __device__ static inline void first_body(unsigned long i, unsigned *v, unsigned salt) {
  if (i == 0) *v = (*v ^ salt) * 2654435761u;
}
__host__ __device__ static inline void mix_body(unsigned long i, unsigned *v, int k) {
  if (i == 0) *v = (*v + (unsigned)k) * 0x01000193u;
}

extern "C" __global__ void ec_a_first(unsigned *v) { first_body(PROG_TID(), v, 0xa5a5u); }
extern "C" __global__ void ec_b_first(unsigned *v) { first_body(PROG_TID(), v, 0x5a5au); }
extern "C" __global__ void ec_mix(unsigned *v, int k) { mix_body(PROG_TID(), v, k); }

SIM_KERNEL(ec_a_first) { SIM_FOR_EACH_THREAD(i) first_body(i, SIM_ARG(0, unsigned *), 0xa5a5u); }
SIM_KERNEL(ec_b_first) { SIM_FOR_EACH_THREAD(i) first_body(i, SIM_ARG(0, unsigned *), 0x5a5au); }
SIM_KERNEL(ec_mix) { SIM_FOR_EACH_THREAD(i) mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int)); }

int main(int argc, char **argv) {
  int k = argc > 1 ? atoi(argv[1]) : 15, steps = argc > 2 ? atoi(argv[2]) : 20,
      warm = argc > 3 ? atoi(argv[3]) : 3, host_ns = argc > 4 ? atoi(argv[4]) : 0;
  if (k < 1 || k >= LEN || steps < 1 || warm < 0 || host_ns < 0) {
    fprintf(stderr, "usage: e-cut [K [STEPS [WARM [HOST_NS]]]] with 1 <= K < %d\n", LEN);
    return 2;
  }
  cudaStream_t s;
  unsigned *v, h = 0;
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaMalloc((void **)&v, sizeof *v));
  CHECK_CUDA(cudaMemsetAsync(v, 0, sizeof *v, s));
  uint64_t all = prog_hash(NULL, 0);
  for (int step = 0; step < steps; step++) {
    int cut_at = step < warm ? LEN : k;
    if (host_ns) prog_host_work((uint64_t)host_ns);
    PROG_LAUNCH(ec_a_first, 1, BLOCK, 0, s, v);
    for (int i = 1; i < LEN; i++) {
      if (host_ns) prog_host_work((uint64_t)host_ns);
      PROG_LAUNCH(ec_mix, 1, BLOCK, 0, s, v, step + i);
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < LEN; i++) {
      if (i == cut_at) {
        CHECK_CUDA(cudaMemcpyAsync(&h, v, sizeof h, cudaMemcpyDeviceToHost, s));
        CHECK_CUDA(cudaStreamSynchronize(s));
      }
      if (host_ns) prog_host_work((uint64_t)host_ns);
      if (i == 0)
        PROG_LAUNCH(ec_b_first, 1, BLOCK, 0, s, v);
      else
        PROG_LAUNCH(ec_mix, 1, BLOCK, 0, s, v, 1000 + i);
    }
    if (cut_at == LEN) {
      CHECK_CUDA(cudaMemcpyAsync(&h, v, sizeof h, cudaMemcpyDeviceToHost, s));
    }
    CHECK_CUDA(cudaStreamSynchronize(s));
    printf("step %d: %08x\n", step, h);
    all = prog_hash(&h, sizeof h, all);
  }
  printf("all: %016llx\n", (unsigned long long)all);
  CHECK_CUDA(cudaFree(v));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
