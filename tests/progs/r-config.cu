/* r-config.cu — launches and memsets the driver refuses, inside sequences that repeat, and
 * launches after a device fault.
 *
 * Usage: r-config MODE, MODE one of
 *   zerogrid a step with no elements launches <<<0, 128>>> every fourth iteration, unchecked
 *            (as most code leaves launches); the program prints the thread's last error after
 *            each iteration's synchronous copies (cudaErrorInvalidConfiguration once per such
 *            iteration, never a failed copy);
 *   gridyz   every fourth iteration a launch of the same kernel and block with grid.y 65,536;
 *   coop     a cooperative launch (cudaLaunchCooperativeKernel) every iteration; every fourth
 *            iteration it first tries a grid far too large for co-residency, catches
 *            cudaErrorCooperativeLaunchTooLarge and relaunches with the usual grid, as code
 *            that sizes its grid optimistically does;
 *   cluster  cudaLaunchKernelEx with a cluster dimension of 2 every iteration, with a grid of 3
 *            blocks (not a multiple) every fourth;
 *   smem     a kernel's dynamic shared-memory limit raised to 96 KiB, launches with 96 KiB; half
 *            way the limit is lowered to 64 KiB and the same launches must fail;
 *   memset   cudaMemsetAsync of the same size inside each iteration; every fourth iteration it
 *            runs past the end of its allocation, every eighth it writes freed memory (both
 *            must fail at the call);
 *   sticky   at iteration 6 a kernel faults (an illegal address); from then on every launch,
 *            memset and synchronisation returns the sticky error, which the program prints;
 *            then cudaDeviceReset, everything is created again and the iterations run again.
 * Every status a refused call returns is printed, and the checksums of each iteration: a
 * library that held a refused launch (telling it success) or reported its failure from a later
 * call changes the output. Ends with the launch counts (see prog.h); failed launches count.
 */
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 128, GRID = N / BLOCK, ITERS = 16 };

__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, unsigned m,
                                                 unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] ^ (x[i] >> 5)) * m + c;
}

extern "C" __global__ void rc_step(unsigned *x, unsigned m, unsigned c, int n) {
  step_body(PROG_TID(), x, m, c, n);
}
/* The same, launched with a 2-D grid: the row index picks nothing (every row writes the same
 * values), so any grid.y computes the same result. */
extern "C" __global__ void rc_rows(unsigned *x, unsigned m, unsigned c, int n) {
  if (blockIdx.y == 0) step_body(PROG_TID(), x, m, c, n);
}
/* Uses its dynamic shared memory as scratch (the size is part of the launch's validity). */
extern "C" __global__ void rc_big(unsigned *x, unsigned m, unsigned c, int n) {
  extern __shared__ unsigned scratch[];
  scratch[threadIdx.x] = m;
  __syncthreads();
  step_body(PROG_TID(), x, scratch[threadIdx.x], c, n);
}
/* Faults: a store through an address no allocation covers. */
extern "C" __global__ void rc_fault(unsigned *bad) { bad[threadIdx.x] = 1u; }

SIM_KERNEL(rc_step) {
  SIM_FOR_EACH_THREAD(i)
  step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(rc_rows) {
  SIM_FOR_EACH_THREAD(i)
  step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(rc_big) {
  SIM_FOR_EACH_THREAD(i)
  step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(rc_fault) {
  /* The simulated driver's control for a device fault (found at run time: the program does not
   * link the driver). */
  void (*fault)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "simctl_kernel_fault");
  if (fault) fault();
}

static unsigned *x, *y;
static cudaStream_t s;
static uint64_t total = prog_hash(NULL, 0);
static const int n = N;

static void setup(void) {
  CHECK_CUDA(cudaStreamCreate(&s)); /* blocking: the synchronous copies wait for it */
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  CHECK_CUDA(cudaMemset(x, 0, N * sizeof *x));
  CHECK_CUDA(cudaMemset(y, 0, N * sizeof *y));
  CHECK_CUDA(cudaDeviceSynchronize());
}

static void teardown(void) {
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaStreamDestroy(s));
}

static void report(int it) {
  static unsigned h[2 * N];
  CHECK_CUDA(cudaMemcpy(h, x, N * sizeof *x, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h + N, y, N * sizeof *y, cudaMemcpyDeviceToHost));
  uint64_t v = prog_hash(h, sizeof h);
  total = prog_hash(&v, sizeof v, total);
  printf("iter %d: %016llx\n", it, (unsigned long long)v);
}

static void status(int it, const char *what, cudaError_t e) {
  printf("iter %d: %s: %s\n", it, what, cudaGetErrorName(e));
}

/* The status e of a call: when the call is one the driver must refuse, printed (and the thread's
 * last error cleared, for the checked calls after it); otherwise it must be success. */
static void outcome(int it, int refused, const char *what, cudaError_t e) {
  if (!refused) {
    CHECK_CUDA(e);
    return;
  }
  status(it, what, e);
  (void)cudaGetLastError();
}

/* The launches around the one each mode varies: the same every iteration. */
static void before(int it) {
  PROG_LAUNCH(rc_step, GRID, BLOCK, 0, s, x, 69069u, (unsigned)it, n);
  PROG_LAUNCH(rc_step, GRID, BLOCK, 0, s, y, 40503u, 7u, n);
}
static void after(void) {
  PROG_LAUNCH(rc_step, GRID, BLOCK, 0, s, x, 2654435761u, 12345u, n);
  PROG_LAUNCH(rc_step, GRID, BLOCK, 0, s, y, 1103515245u, 1u, n);
}

static void mode_zerogrid(void) {
  for (int it = 0; it < ITERS; it++) {
    before(it);
    after();
    /* A step with no elements: no blocks. Unchecked: the error stays the thread's last. */
    rc_step<<<it % 4 == 3 ? 0 : GRID, BLOCK, 0, s>>>(x, 3u, 1u, n);
    PROG_RT();
    report(it);
    status(it, "last error", cudaGetLastError());
  }
}

static void mode_gridyz(void) {
  for (int it = 0; it < ITERS; it++) {
    before(it);
    rc_rows<<<dim3(GRID, it % 4 == 3 ? 65536 : 1), BLOCK, 0, s>>>(x, 3u, 1u, n);
    cudaError_t e = cudaGetLastError();
    PROG_RT();
    outcome(it, it % 4 == 3, "grid.y 65536", e);
    after();
    report(it);
  }
}

static void mode_coop(void) {
  unsigned m = 3u, c = 1u;
  void *args[] = {&x, &m, &c, (void *)&n};
  for (int it = 0; it < ITERS; it++) {
    before(it);
    if (it % 4 == 3) {
      /* Optimistic: far more blocks than can be co-resident; on refusal, the usual grid. */
      cudaError_t e = cudaLaunchCooperativeKernel((const void *)rc_step, dim3(100000), dim3(BLOCK), args, 0, s);
      PROG_RT();
      status(it, "cooperative 100000 blocks", e);
      if (e == cudaErrorCooperativeLaunchTooLarge) (void)cudaGetLastError();
      if (e == cudaSuccess) {
        after();
        report(it);
        continue;
      }
    }
    CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)rc_step, dim3(GRID), dim3(BLOCK), args, 0, s));
    PROG_RT();
    after();
    report(it);
  }
}

static void mode_cluster(void) {
  unsigned m = 3u, c = 1u;
  void *args[] = {&x, &m, &c, (void *)&n};
  for (int it = 0; it < ITERS; it++) {
    before(it);
    cudaLaunchAttribute at[1];
    memset(at, 0, sizeof at);
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = dim3(it % 4 == 3 ? 3 : GRID);
    cfg.blockDim = dim3(BLOCK);
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    cudaError_t e = cudaLaunchKernelExC(&cfg, (const void *)rc_step, args);
    PROG_RT();
    outcome(it, it % 4 == 3, "cluster 2, grid 3", e);
    after();
    report(it);
  }
}

static void mode_smem(void) {
  CHECK_CUDA(cudaFuncSetAttribute(rc_big, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 << 10));
  for (int it = 0; it < ITERS; it++) {
    if (it == ITERS / 2)
      CHECK_CUDA(cudaFuncSetAttribute(rc_big, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    before(it);
    rc_big<<<GRID, BLOCK, 96 << 10, s>>>(x, 3u, 1u, n);
    cudaError_t e = cudaGetLastError();
    PROG_RT();
    outcome(it, it >= ITERS / 2, "96 KiB above a 64 KiB limit", e);
    after();
    report(it);
  }
}

static void mode_memset(void) {
  unsigned *freed;
  CHECK_CUDA(cudaMalloc((void **)&freed, N * sizeof *freed));
  CHECK_CUDA(cudaFree(freed));
  for (int it = 0; it < ITERS; it++) {
    /* Two launches of different kernels, then the memset, which ends the sequence: the same
     * entries every iteration, whatever the memset's destination (not part of its structure). */
    PROG_LAUNCH(rc_step, GRID, BLOCK, 0, s, x, 69069u, (unsigned)it, n);
    PROG_LAUNCH(rc_rows, GRID, BLOCK, 0, s, y, 40503u, 7u, n);
    unsigned *dst = y + N / 2;
    const char *what = NULL;
    if (it % 8 == 7) dst = freed, what = "memset of freed memory";
    else if (it % 4 == 3) dst = y + 3 * N / 4, what = "memset past the end";
    cudaError_t e = cudaMemsetAsync(dst, it & 0xff, N / 2 * sizeof *y, s);
    outcome(it, what != NULL, what, e);
    after();
    report(it);
  }
}

static void mode_sticky(void) {
  const int fault_at = 6;
  for (int it = 0; it < ITERS; it++) {
    if (it < fault_at) {
      before(it);
      after();
      report(it);
      continue;
    }
    if (it == fault_at) {
      rc_fault<<<1, 1, 0, s>>>((unsigned *)NULL);
      PROG_RT();
      status(it, "synchronize after the fault", cudaStreamSynchronize(s));
    }
    /* Every call now returns the fault. */
    rc_step<<<GRID, BLOCK, 0, s>>>(x, 69069u, (unsigned)it, n);
    PROG_RT();
    status(it, "launch", cudaGetLastError());
    rc_step<<<GRID, BLOCK, 0, s>>>(y, 40503u, 7u, n);
    PROG_RT();
    status(it, "launch", cudaGetLastError());
    status(it, "memset", cudaMemsetAsync(y, 0, N * sizeof *y, s));
    status(it, "synchronize", cudaStreamSynchronize(s));
  }
  /* A reset ends the fault: the same iterations again, as at the start. */
  CHECK_CUDA(cudaDeviceReset());
  setup();
  for (int it = 0; it < ITERS; it++) {
    before(it);
    after();
    report(it);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  static const struct {
    const char *name;
    void (*run)(void);
  } modes[] = {{"zerogrid", mode_zerogrid}, {"gridyz", mode_gridyz}, {"coop", mode_coop},
               {"cluster", mode_cluster},   {"smem", mode_smem},     {"memset", mode_memset},
               {"sticky", mode_sticky}};
  void (*run)(void) = NULL;
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
    if (!strcmp(mode, modes[i].name)) run = modes[i].run;
  if (!run) {
    fprintf(stderr, "usage: r-config zerogrid|gridyz|coop|cluster|smem|memset|sticky\n");
    return 2;
  }
  setup();
  run();
  printf("total: %016llx\n", (unsigned long long)total);
  teardown();
  prog_print_launches();
  return 0;
}
