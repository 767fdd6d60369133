/* r-validity.cu — what a launch's validity depends on changes after it was made.
 *
 * Usage: r-validity MODE, MODE one of
 *   attr     cudaFuncSetAttribute(MaxDynamicSharedMemorySize) raised to 96 KiB, a launch with
 *            96 KiB, lowered to 64 KiB, a launch with 64 KiB, every iteration: valid CUDA (a
 *            launch's configuration is checked when it is made). A library that submits the
 *            96 KiB launch after the limit dropped loses it: the checksums change;
 *   same     the same limit set before every launch (as FlashAttention does): valid, and a
 *            library that flushed at each setting could graph nothing (the case checks replays);
 *   invalid  every fourth iteration one launch has an impossible block (2048 threads) and must
 *            return cudaErrorInvalidConfiguration, every time; the program prints the status
 *            it got. A library that learned that launch into a sequence would hold it later and
 *            return success;
 *   failsub  the launches count themselves on the device; run under SIM_FAIL=cuLaunchKernel:K
 *            (the K-th driver launch fails; K+: it and every later one), the program notes the failures CUDA
 *            reports to it: by the launch (cudaGetLastError, after checking that
 *            cudaPeekAtLastError agrees) or by a later call (then the error is also the
 *            thread's last error). After each synchronisation, if some launch since the
 *            previous one did not run, a failure must have been reported since: a held launch
 *            whose submission failed unreported is caught there. Prints only whether it held;
 *   failsleep as failsub, with a 20 ms pause (no CUDA call) in the middle of every fourth
 *            iteration: held launches are then submitted by the library's own thread, and a
 *            failure there must be reported to this one.
 * Every mode ends with the launch counts (see prog.h); failed launches are launches made.
 */
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 128, ITERS = 16 };

__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, unsigned m,
                                                 unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] ^ (x[i] >> 5)) * m + c;
}

extern "C" __global__ void vd_step(unsigned *x, unsigned *count, unsigned m, unsigned c, int n) {
  step_body(PROG_TID(), x, m, c, n);
  if (PROG_TID() == 0) atomicAdd(count, 1u);
}
/* Uses its dynamic shared memory as scratch (the size is part of the launch's validity). */
extern "C" __global__ void vd_big(unsigned *x, unsigned *count, unsigned m, unsigned c, int n) {
  extern __shared__ unsigned scratch[];
  scratch[threadIdx.x] = m;
  __syncthreads();
  step_body(PROG_TID(), x, scratch[threadIdx.x], c, n);
  if (PROG_TID() == 0) atomicAdd(count, 1u);
}

SIM_KERNEL(vd_step) {
  SIM_FOR_EACH_THREAD(i)
  step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(2, unsigned), SIM_ARG(3, unsigned), SIM_ARG(4, int));
  SIM_ARG(1, unsigned *)[0] += 1;
}
SIM_KERNEL(vd_big) {
  SIM_FOR_EACH_THREAD(i)
  step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(2, unsigned), SIM_ARG(3, unsigned), SIM_ARG(4, int));
  SIM_ARG(1, unsigned *)[0] += 1;
}

static unsigned *x, *count;
static cudaStream_t s;
static uint64_t total = prog_hash(NULL, 0);

static void report(const char *what) {
  static unsigned h[N];
  unsigned c;
  CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&c, count, sizeof c, cudaMemcpyDeviceToHost));
  uint64_t v = prog_hash(h, sizeof h);
  total = prog_hash(&v, sizeof v, total);
  printf("%s: %016llx count=%u\n", what, (unsigned long long)v, c);
}

static void mode_attr(void) {
  for (int it = 0; it < ITERS; it++) {
    CHECK_CUDA(cudaFuncSetAttribute(vd_big, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 << 10));
    PROG_LAUNCH(vd_big, N / BLOCK, BLOCK, 96 << 10, s, x, count, 69069u, (unsigned)it, N);
    PROG_LAUNCH(vd_step, N / BLOCK, BLOCK, 0, s, x, count, 40503u, 7u, N);
    CHECK_CUDA(cudaFuncSetAttribute(vd_big, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    PROG_LAUNCH(vd_big, N / BLOCK, BLOCK, 64 << 10, s, x, count, 2654435761u, 12345u, N);
    PROG_LAUNCH(vd_step, N / BLOCK, BLOCK, 0, s, x, count, 1103515245u, 1u, N);
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  report("attr");
}

static void mode_same(void) {
  for (int it = 0; it < ITERS; it++) {
    for (int k = 0; k < 4; k++) {
      CHECK_CUDA(cudaFuncSetAttribute(vd_big, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
      PROG_LAUNCH(vd_big, N / BLOCK, BLOCK, 64 << 10, s, x, count, 69069u + 2u * k, (unsigned)it, N);
    }
    report("same");
  }
}

static void mode_invalid(void) {
  for (int it = 0; it < ITERS; it++) {
    PROG_LAUNCH(vd_step, N / BLOCK, BLOCK, 0, s, x, count, 69069u, (unsigned)it, N);
    PROG_LAUNCH(vd_step, N / BLOCK, BLOCK, 0, s, x, count, 40503u, 7u, N);
    PROG_LAUNCH(vd_step, N / BLOCK, BLOCK, 0, s, x, count, 2654435761u, 12345u, N);
    if (it % 4 == 3) {
      /* 2048 threads per block: never valid. */
      vd_step<<<N / 2048 + 1, 2048, 0, s>>>(x, count, 3u, 1u, N);
      cudaError_t e = cudaGetLastError();
      PROG_RT();
      printf("iter %d: impossible launch returned %s\n", it, cudaGetErrorName(e));
    }
    report("invalid");
  }
}

/* failsub: launches and failures reported since the last check. */
static unsigned long launched, failures, windows, ran_before;

/* A launch whose failure is counted, not fatal. */
static void counted_step(unsigned m, unsigned c, unsigned block) {
  vd_step<<<N / block, block, 0, s>>>(x, count, m, c, N);
  cudaError_t peek = cudaPeekAtLastError(), e = cudaGetLastError();
  PROG_RT();
  launched++;
  if (peek != e) {
    fprintf(stderr, "r-validity: cudaPeekAtLastError %d != cudaGetLastError %d\n", peek, e);
    exit(1);
  }
  if (e != cudaSuccess) failures++;
}

/* A call's failure counts as reported; it is also the thread's last error. */
static void counted_call(cudaError_t e) {
  if (e == cudaSuccess) return;
  failures++;
  if (cudaGetLastError() != e) {
    fprintf(stderr, "r-validity: a call's error %d is not the thread's last error\n", e);
    exit(1);
  }
}

/* After a synchronisation: every launch since the last check ran, or some failure was reported
 * since then. (How many launches one report covers is not defined once work is asynchronous;
 * that a loss is never silent is.) */
static void check_window(void) {
  unsigned ran;
  counted_call(cudaStreamSynchronize(s));
  counted_call(cudaMemcpy(&ran, count, sizeof ran, cudaMemcpyDeviceToHost));
  windows++;
  if (ran - ran_before < launched && failures == 0) {
    printf("failsub: window %lu: %lu launches, %u ran, no failure reported\n", windows, launched,
           ran - ran_before);
    exit(2);
  }
  ran_before = ran, launched = 0, failures = 0;
}

static void mode_failsub(int sleepy) {
  for (int it = 0; it < 3 * ITERS; it++) {
    counted_step(69069u, (unsigned)it, BLOCK);
    counted_step(40503u, 7u, BLOCK);
    /* failsleep: a pause in the middle of every fourth iteration, with no CUDA call, longer than
     * the library's default bound on holds: what is held is submitted by another thread, and a
     * failure there must still reach this one. */
    if (sleepy && it % 4 == 1) usleep(20000);
    /* Every fourth iteration the third launch has another block (a launch's structure; its
     * grid is not): held launches diverge from the learned sequence there and are submitted
     * one by one. */
    counted_step(2654435761u, 12345u, it % 4 == 3 ? BLOCK / 2 : BLOCK);
    counted_step(1103515245u, 1u, BLOCK);
    check_window();
  }
  printf("failsub: no launch was lost silently\n");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  CHECK_CUDA(cudaStreamCreate(&s)); /* blocking: the synchronous copies wait for it */
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&count, sizeof *count));
  CHECK_CUDA(cudaMemset(x, 0, N * sizeof *x));
  CHECK_CUDA(cudaMemset(count, 0, sizeof *count));
  CHECK_CUDA(cudaDeviceSynchronize());
  if (!strcmp(mode, "attr"))
    mode_attr();
  else if (!strcmp(mode, "same"))
    mode_same();
  else if (!strcmp(mode, "invalid"))
    mode_invalid();
  else if (!strcmp(mode, "failsub"))
    mode_failsub(0);
  else if (!strcmp(mode, "failsleep"))
    mode_failsub(1);
  else {
    fprintf(stderr, "usage: r-validity attr|same|invalid|failsub|failsleep\n");
    return 2;
  }
  printf("total: %016llx\n", (unsigned long long)total);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(count));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
