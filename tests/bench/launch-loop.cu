/* launch-loop.cu — the benchmark program: a tight loop of tiny kernels, launched with <<<>>>.
 *
 * Each iteration launches a gate kernel (below) and then --launches kernels (four kernels in a
 * fixed rotation, so the sequence has a repeated structure) on one stream, and synchronises the
 * stream: the shape of a launch-bound training or inference step. Every kernel adds a 64-bit
 * value to one slot of a device counter array; the value is a constant, except for the first K
 * launches of an iteration (--vary K), whose scalar argument is the iteration number, so that a
 * graph replay of the iteration must update K kernel nodes every time.
 *
 * The program warms up (so that a library that learns repeated sequences has learnt them), then
 * times B blocks of N iterations and prints one line with, for each measure, its minimum over
 * the blocks, per launch:
 *
 *   launch-loop: launches=L vary=K iters=N blocks=B calls_ns=A wall_ns=W cpu_ns=C check=HEX
 *                gate_timeouts=T
 *
 *   L        launches per iteration, the gate included (--launches + 1)
 *   calls_ns wall time (CLOCK_MONOTONIC) inside the launch calls of the --launches kernels
 *   wall_ns  wall time of the whole loop, launches and syncs: what a launch-bound program feels
 *   cpu_ns   the calling thread's CPU time over the whole loop (CLOCK_THREAD_CPUTIME_ID), i.e.
 *            without the time it spends blocked waiting for the device
 *   check    a checksum of the counters: the same whatever executed the launches (replayed or
 *            not), so the driver (tools/bench) can tell that no work was lost or repeated
 *   T        how often the gate gave up waiting (0 unless something stalled the loop)
 *
 * On the CPU simulator each kernel's twin does one addition, so the time measured is host cost;
 * the same program runs unchanged on a GPU.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "sim_kernel.h"

enum { MAX_LAUNCHES = 256 };

/* Four kernels with the same body: a rotation of distinct kernels is what real sequences look
 * like, and it keeps a sequence from being a run of one kernel. */
#define BENCH_KERNEL(name)                                                                  \
  extern "C" __global__ void name(unsigned long long *acc, int slot, unsigned long long v) { \
    if (blockIdx.x == 0 && threadIdx.x == 0) acc[slot] += v;                                 \
  }                                                                                         \
  SIM_KERNEL(name) {                                                                        \
    SIM_ARG(0, unsigned long long *)[SIM_ARG(1, int)] += SIM_ARG(2, unsigned long long);    \
  }
BENCH_KERNEL(bench_k0)
BENCH_KERNEL(bench_k1)
BENCH_KERNEL(bench_k2)
BENCH_KERNEL(bench_k3)

/* The gate: the first launch of every iteration waits (on the device) until the host has
 * issued the rest of the iteration and opened the gate; the host closes it again at the start
 * of the next iteration, when the device is idle. While it waits the device is busy, so the
 * timed launch calls queue work without racing the device for its queue or waking it (on the
 * simulator a wake-up is a system call per launch, several times the cost being measured, and
 * its jitter would swamp it). The flag lives in pinned host memory, which the device reads
 * directly. The wait is bounded: should anything wait for the device to go idle from inside
 * the launch calls (the simulator's graph-exec updates and destroys do), the gate gives up after
 * GATE_TIMEOUT_NS and the loop goes on, slower, with the timeouts counted and printed. */
enum { GATE_TIMEOUT_NS = 20000000 };
static unsigned long gate_timeouts;

extern "C" __global__ void bench_gate(volatile int *open) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    long long t0 = clock64();
    while (!*open && clock64() - t0 < (1ll << 31)) {
    }
  }
}
SIM_KERNEL(bench_gate) {
  volatile int *open = SIM_ARG(0, volatile int *);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned long spins = 1; !__atomic_load_n(open, __ATOMIC_ACQUIRE); spins++) {
    if (spins % 1024) continue;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000000000ll + (t.tv_nsec - t0.tv_nsec) > GATE_TIMEOUT_NS) {
      __atomic_add_fetch(&gate_timeouts, 1, __ATOMIC_RELAXED);
      return;
    }
  }
}

static unsigned long long *acc;
static volatile int *gate;
static cudaStream_t stream;
static int nlaunch = 16, nvary = 0, use_gate = 1;

static double now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* One iteration: the launches, then the stream sync that ends it. `it` is the global
 * iteration number (warm-up included), the varying scalar. Returns the wall time spent in the
 * launch calls alone. */
static double iteration(unsigned long long it) {
  /* The gate's own launch is left out of the launch-call time: it wakes the idle device, a
   * system call whose cost varies far more than anything measured here. */
  if (use_gate) {
    *gate = 0; /* the device is idle: the last iteration ended with a sync */
    bench_gate<<<1, 1, 0, stream>>>(gate);
  }
  double t0 = now_ns(CLOCK_MONOTONIC);
  for (int i = 0; i < nlaunch; i++) {
    unsigned long long v = i < nvary ? it : (unsigned long long)i + 1;
    switch (i & 3) {
      case 0: bench_k0<<<1, 32, 0, stream>>>(acc, i, v); break;
      case 1: bench_k1<<<1, 32, 0, stream>>>(acc, i, v); break;
      case 2: bench_k2<<<1, 32, 0, stream>>>(acc, i, v); break;
      default: bench_k3<<<1, 32, 0, stream>>>(acc, i, v); break;
    }
  }
  double t1 = now_ns(CLOCK_MONOTONIC);
  if (use_gate) __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return t1 - t0;
}

static long arg_long(int argc, char **argv, int *i, long lo, long hi) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "launch-loop: %s needs a value\n", argv[*i]);
    exit(2);
  }
  char *end;
  long v = strtol(argv[++*i], &end, 10);
  if (*end || v < lo || v > hi) {
    fprintf(stderr, "launch-loop: %s %s: expected an integer in [%ld, %ld]\n", argv[*i - 1],
            argv[*i], lo, hi);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  long iters = 1000, blocks = 5, warmup = 50;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--launches")) nlaunch = (int)arg_long(argc, argv, &i, 1, MAX_LAUNCHES);
    else if (!strcmp(argv[i], "--vary")) nvary = (int)arg_long(argc, argv, &i, 0, MAX_LAUNCHES);
    else if (!strcmp(argv[i], "--iters")) iters = arg_long(argc, argv, &i, 1, 100000000);
    else if (!strcmp(argv[i], "--blocks")) blocks = arg_long(argc, argv, &i, 1, 1000);
    else if (!strcmp(argv[i], "--warmup")) warmup = arg_long(argc, argv, &i, 0, 100000000);
    else if (!strcmp(argv[i], "--no-gate")) use_gate = 0;
    else {
      fprintf(stderr,
              "usage: launch-loop [--launches L] [--vary K] [--iters N] [--blocks B] "
              "[--warmup W] [--no-gate]\n");
      return 2;
    }
  }
  if (nvary > nlaunch) nvary = nlaunch;

  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMalloc((void **)&acc, MAX_LAUNCHES * sizeof *acc));
  CHECK_CUDA(cudaMemset(acc, 0, MAX_LAUNCHES * sizeof *acc));
  CHECK_CUDA(cudaMallocHost((void **)&gate, sizeof *gate));
  CHECK_CUDA(cudaDeviceSynchronize());

  unsigned long long it = 0;
  for (long w = 0; w < warmup; w++) iteration(it++);

  double best_calls = 0, best_wall = 0, best_cpu = 0;
  for (long b = 0; b < blocks; b++) {
    double calls = 0;
    double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long n = 0; n < iters; n++) calls += iteration(it++);
    double c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);
    double per = (double)iters * (nlaunch + use_gate);
    if (b == 0 || calls / (per - iters * use_gate) < best_calls)
      best_calls = calls / (per - iters * use_gate);
    if (b == 0 || (w1 - w0) / per < best_wall) best_wall = (w1 - w0) / per;
    if (b == 0 || (c1 - c0) / per < best_cpu) best_cpu = (c1 - c0) / per;
  }

  static unsigned long long host[MAX_LAUNCHES];
  CHECK_CUDA(cudaMemcpy(host, acc, sizeof host, cudaMemcpyDeviceToHost));
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < MAX_LAUNCHES; i++) h = (h ^ host[i]) * 1099511628211ull;
  CHECK_CUDA(cudaFree(acc));
  CHECK_CUDA(cudaFreeHost((void *)gate));
  CHECK_CUDA(cudaStreamDestroy(stream));
  printf("launch-loop: launches=%d vary=%d iters=%ld blocks=%ld calls_ns=%.1f wall_ns=%.1f "
         "cpu_ns=%.1f check=%016llx gate_timeouts=%lu\n",
         nlaunch + use_gate, nvary, iters, blocks, best_calls, best_wall, best_cpu, h,
         __atomic_load_n(&gate_timeouts, __ATOMIC_RELAXED));
  return 0;
}
