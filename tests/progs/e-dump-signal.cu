/* e-dump-signal.cu — a loop that asks for a sequence dump in the middle of its run.
 *
 * STEPS steps of five launches and a stream synchronisation on one stream; the second launch
 * takes the step number by value, the fifth works on buffer x or y in turn (a pointer argument
 * that changes every step). Half way through,
 * when something installed a SIGUSR1 handler (the library does, under AUTOGRAPH_DUMP), the
 * program raises SIGUSR1 itself, makes one more CUDA call (the intercepted call that writes
 * the dump) and, when E_DUMP_COPY names a file, copies the file AUTOGRAPH_DUMP names there,
 * so that a test can read the dump the signal produced before the exit dump replaces it. When
 * E_DUMP_SLEEP_MS is set, at three quarters it sleeps that long, makes one CUDA call and copies
 * the dump to E_DUMP_INTERVAL_COPY (for AUTOGRAPH_DUMP_INTERVAL). Without a handler nothing is
 * raised; the output is the same either way: a checksum and the launch counts (see prog.h).
 */
#include <cuda_runtime.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, STEPS = 40 };

__host__ __device__ static inline void ds_body(unsigned long i, unsigned *x, unsigned m,
                                               unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c;
}

extern "C" __global__ void ds_mad(unsigned *x, unsigned m, unsigned c, int n) {
  ds_body(PROG_TID(), x, m, c, n);
}

SIM_KERNEL(ds_mad) {
  SIM_FOR_EACH_THREAD(i)
  ds_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}

/* Copies the dump to the file named by env variable `to_env` (a test's eyes only). */
static void copy_dump(const char *to_env) {
  const char *from = getenv("AUTOGRAPH_DUMP"), *to = getenv(to_env);
  if (!from || !to) return;
  FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
  char buf[4096];
  size_t n;
  while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
  if (in) fclose(in);
  if (out) fclose(out);
}

int main(void) {
  cudaStream_t s;
  unsigned *x, *y;
  static unsigned hx[N], hy[N];
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaMalloc((void **)&x, sizeof hx));
  CHECK_CUDA(cudaMalloc((void **)&y, sizeof hy));
  CHECK_CUDA(cudaMemset(x, 0, sizeof hx));
  CHECK_CUDA(cudaMemset(y, 0, sizeof hy));
  const unsigned grid = N / BLOCK;
  for (int step = 0; step < STEPS; step++) {
    PROG_LAUNCH(ds_mad, grid, BLOCK, 0, s, x, 2654435761u, 12345u, N);
    PROG_LAUNCH(ds_mad, grid, BLOCK, 0, s, x, 40503u, (unsigned)step, N);
    PROG_LAUNCH(ds_mad, grid, BLOCK, 0, s, x, 69069u, 1u, N);
    PROG_LAUNCH(ds_mad, grid, BLOCK, 0, s, x, 1103515245u, 7u, N);
    PROG_LAUNCH(ds_mad, grid, BLOCK, 0, s, (step & 1) ? y : x, 3u, 1u, N);
    CHECK_CUDA(cudaStreamSynchronize(s));
    if (step == STEPS / 2) {
      struct sigaction old;
      if (sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler != SIG_DFL &&
          old.sa_handler != SIG_IGN) {
        raise(SIGUSR1);
        CHECK_CUDA(cudaStreamSynchronize(s));
        copy_dump("E_DUMP_COPY");
      }
    }
    if (step == 3 * STEPS / 4 && getenv("E_DUMP_SLEEP_MS")) {
      long ms = atol(getenv("E_DUMP_SLEEP_MS"));
      struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
      CHECK_CUDA(cudaStreamSynchronize(s));
      copy_dump("E_DUMP_INTERVAL_COPY");
    }
  }
  CHECK_CUDA(cudaMemcpy(hx, x, sizeof hx, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost));
  printf("x: %016llx first=%08x last=%08x\n", (unsigned long long)prog_hash(hx, sizeof hx), hx[0],
         hx[N - 1]);
  printf("y: %016llx first=%08x last=%08x\n", (unsigned long long)prog_hash(hy, sizeof hy), hy[0],
         hy[N - 1]);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
