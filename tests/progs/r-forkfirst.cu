/* r-forkfirst.cu — a child forked before any CUDA use does its CUDA work in the child.
 *
 * The parent makes no CUDA call at all (its kernels are registered as it loads, nothing more),
 * forks one child and waits for it: a launcher forking its workers before any of them touches
 * the GPU, as CUDA allows (a child may not use CUDA once its parent has). The child repeats a
 * short sequence of launches with a synchronisation and a copy now and then, prints a checksum
 * at each, its launch counts, and exits 0. The parent then prints the child's exit status. With
 * the library the child's repeated launches are replayed (one statistics file per process:
 * AUTOGRAPH_STATS with %p), where a library that treats every forked child as one of a CUDA
 * parent passes them all through. Output: the child's lines, then the parent's.
 */
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 512, BLOCK = 128, ITERS = 60, REPORT = 10 };

__host__ __device__ static inline void ff_body(unsigned long i, unsigned *x, unsigned m,
                                               unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c + (unsigned)i;
}
extern "C" __global__ void ff_mad(unsigned *x, unsigned m, unsigned c, int n) {
  ff_body(PROG_TID(), x, m, c, n);
}
SIM_KERNEL(ff_mad) {
  SIM_FOR_EACH_THREAD(i)
  ff_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}

static int child(void) {
  unsigned *x;
  static unsigned h[N];
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemsetAsync(x, 0, N * sizeof *x, s));
  for (int it = 0; it < ITERS; it++) {
    PROG_LAUNCH(ff_mad, N / BLOCK, BLOCK, 0, s, x, 69069u, (unsigned)it, N);
    PROG_LAUNCH(ff_mad, N / BLOCK, BLOCK, 0, s, x, 40503u, 7u, N);
    PROG_LAUNCH(ff_mad, N / BLOCK, BLOCK, 0, s, x, 1103515245u, 12345u, N);
    PROG_LAUNCH(ff_mad, N / BLOCK, BLOCK, 0, s, x, 22695477u, 1u, N);
    CHECK_CUDA(cudaStreamSynchronize(s));
    if (it % REPORT == REPORT - 1) {
      CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
      printf("child iter %d: %016llx\n", it, (unsigned long long)prog_hash(h, sizeof h));
    }
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  fflush(stdout);
  return 0;
}

int main(void) {
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) exit(child());
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  printf("parent: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
