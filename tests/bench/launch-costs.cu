/* launch-costs.cu — what launches, graph launches and node updates cost on this machine, and
 * what a step of small kernels takes when it is launched one by one, as one graph, or as graphs
 * of c kernels each: the figures the library's chunking and guard trade against each other.
 *
 * Usage: launch-costs [ROUNDS]   (default 200)
 *
 * Each figure is the median over ROUNDS rounds, in nanoseconds, printed as one line
 *   launch-costs: NAME=VALUE …
 * per group (the tool's lines are its whole output):
 *   host   launch_ns (one cudaLaunchKernel), graph_launch_ns_N (one cudaGraphLaunch of a graph
 *          of N kernel nodes in a chain, N = 1 2 4 8 16 32 64), update_ns (one
 *          cudaGraphExecKernelNodeSetParams that changes a scalar), enable_ns (one
 *          cudaGraphNodeSetEnabled);
 *   step   step_ns_launches (64 kernels launched one by one, then a stream synchronisation:
 *          wall time from the first call to the end of the synchronisation), step_ns_graph (the
 *          same 64 as one graph), step_ns_chunks_C (as 64/C graphs of C kernels, C = 1 2 4 8 16
 *          32), step_ns_updates_U (one graph, U of its nodes updated first, U = 8 32).
 * Host figures time the call alone, with the device kept busy by a gate kernel so that no call
 * waits for it; the step figures include the device's execution and the synchronisation.
 * Then `launch-costs: check=HEX`: a checksum of the work the kernels did, the same whatever
 * ran them. On the CPU simulator the figures are its own modelled costs; on a GPU they are the
 * machine's (tools/gpu-check runs it).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "sim_kernel.h"

enum { STEP = 64, MAX_NODES = 64 };

__host__ __device__ static inline void add_body(unsigned long long *acc, int slot,
                                                unsigned long long v) {
  acc[slot] += v;
}
extern "C" __global__ void lc_add(unsigned long long *acc, int slot, unsigned long long v) {
  if (blockIdx.x == 0 && threadIdx.x == 0) add_body(acc, slot, v);
}
SIM_KERNEL(lc_add) {
  add_body(SIM_ARG(0, unsigned long long *), SIM_ARG(1, int), SIM_ARG(2, unsigned long long));
}

/* Spins on the device until the host sets *flag (pinned memory), at most ~50 ms. */
__host__ __device__ static inline void gate_body(volatile int *flag) {
#ifdef __CUDA_ARCH__
  long long t0 = clock64();
  while (!*flag && clock64() - t0 < 100000000ll) {
  }
#else
  (void)flag; /* the simulator runs the gate at once: its calls never wait for the device */
#endif
}
extern "C" __global__ void lc_gate(volatile int *flag) { gate_body(flag); }
SIM_KERNEL(lc_gate) { gate_body(SIM_ARG(0, volatile int *)); }

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static unsigned long long *acc;
static int *flag;
static cudaStream_t s;
static unsigned long long expect_sum;

static void launch(int slot, unsigned long long v) {
  lc_add<<<1, 32, 0, s>>>(acc, slot, v);
  expect_sum += v;
}

/* Opens a gate on the device (the stream is busy until gate_open). */
static void gate_close(void) {
  *(volatile int *)flag = 0;
  lc_gate<<<1, 1, 0, s>>>(flag);
}
static void gate_open(void) { *(volatile int *)flag = 1; }

/* A graph of n lc_add nodes in a chain, captured from the stream, instantiated; with `nodes`,
 * its nodes there and the graph (which they belong to) in *keep, else the graph is destroyed. */
static cudaGraphExec_t make_graph(int n, cudaGraphNode_t *nodes, cudaGraph_t *keep, unsigned long long v) {
  cudaGraph_t g;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; i++) lc_add<<<1, 32, 0, s>>>(acc, i % 8, v);
  CHECK_CUDA(cudaStreamEndCapture(s, &g));
  if (nodes) {
    size_t m = (size_t)n;
    CHECK_CUDA(cudaGraphGetNodes(g, nodes, &m));
    CHECK_INT((int)m, ==, n);
  }
  cudaGraphExec_t e;
  CHECK_CUDA(cudaGraphInstantiate(&e, g, 0));
  if (nodes)
    *keep = g; /* exec nodes are addressed through the graph's nodes */
  else
    CHECK_CUDA(cudaGraphDestroy(g));
  return e;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 200;
  if (rounds < 3 || rounds > 100000) {
    fprintf(stderr, "usage: launch-costs [ROUNDS] (3 to 100000)\n");
    return 2;
  }
  double *t = (double *)malloc((size_t)rounds * sizeof *t);
  CHECK(t);
  CHECK_CUDA(cudaMalloc((void **)&acc, 8 * sizeof *acc));
  CHECK_CUDA(cudaMemset(acc, 0, 8 * sizeof *acc));
  CHECK_CUDA(cudaHostAlloc((void **)&flag, sizeof *flag, cudaHostAllocDefault));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaDeviceSynchronize());

  /* Host: one launch, the device held busy by the gate. */
  for (int r = 0; r < rounds; r++) {
    gate_close();
    double t0 = now_ns();
    for (int i = 0; i < 16; i++) launch(i % 8, 1);
    t[r] = (now_ns() - t0) / 16;
    gate_open();
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  printf("launch-costs: launch_ns=%.0f", median(t, rounds));

  /* Host: one graph launch of n nodes. */
  for (int n = 1; n <= MAX_NODES; n *= 2) {
    cudaGraphExec_t e = make_graph(n, NULL, NULL, 1);
    for (int r = 0; r < rounds; r++) {
      gate_close();
      double t0 = now_ns();
      for (int i = 0; i < 4; i++) CHECK_CUDA(cudaGraphLaunch(e, s));
      t[r] = (now_ns() - t0) / 4;
      gate_open();
      CHECK_CUDA(cudaStreamSynchronize(s));
      expect_sum += 4ull * (unsigned long long)n;
    }
    printf(" graph_launch_ns_%d=%.0f", n, median(t, rounds));
    CHECK_CUDA(cudaGraphExecDestroy(e));
  }

  /* Host: node updates and enables, on a graph of 16 nodes. */
  cudaGraphNode_t nodes[MAX_NODES];
  cudaGraph_t g16, gupd;
  cudaGraphExec_t e16 = make_graph(16, nodes, &g16, 1);
  cudaKernelNodeParams p;
  CHECK_CUDA(cudaGraphKernelNodeGetParams(nodes[0], &p));
  int slot = 0;
  void *args[3] = {&acc, &slot, NULL};
  for (int r = 0; r < rounds; r++) {
    unsigned long long v = 1 + (unsigned long long)(r % 2);
    args[2] = &v;
    p.kernelParams = args;
    double t0 = now_ns();
    CHECK_CUDA(cudaGraphExecKernelNodeSetParams(e16, nodes[0], &p));
    t[r] = now_ns() - t0;
  }
  printf(" update_ns=%.0f", median(t, rounds));
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ns();
    CHECK_CUDA(cudaGraphNodeSetEnabled(e16, nodes[15], (unsigned)(r % 2)));
    t[r] = now_ns() - t0;
  }
  CHECK_CUDA(cudaGraphNodeSetEnabled(e16, nodes[15], 1));
  printf(" enable_ns=%.0f\n", median(t, rounds));
  /* The last update set v = 1 + (rounds - 1) % 2 on node 0: run the graph once to count it. */
  CHECK_CUDA(cudaGraphLaunch(e16, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  expect_sum += 15 + 1 + (unsigned long long)((rounds - 1) % 2);

  /* Steps of 64 kernels: one by one, one graph, graphs of C, one graph with U updates. */
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ns();
    for (int i = 0; i < STEP; i++) launch(i % 8, 1);
    CHECK_CUDA(cudaStreamSynchronize(s));
    t[r] = now_ns() - t0;
  }
  printf("launch-costs: step_ns_launches=%.0f", median(t, rounds));
  cudaGraphExec_t whole = make_graph(STEP, NULL, NULL, 1);
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ns();
    CHECK_CUDA(cudaGraphLaunch(whole, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    t[r] = now_ns() - t0;
    expect_sum += STEP;
  }
  printf(" step_ns_graph=%.0f", median(t, rounds));
  for (int c = 1; c <= 32; c *= 2) {
    cudaGraphExec_t part = make_graph(c, NULL, NULL, 1);
    for (int r = 0; r < rounds; r++) {
      double t0 = now_ns();
      for (int i = 0; i < STEP / c; i++) CHECK_CUDA(cudaGraphLaunch(part, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      t[r] = now_ns() - t0;
      expect_sum += STEP;
    }
    printf(" step_ns_chunks_%d=%.0f", c, median(t, rounds));
    CHECK_CUDA(cudaGraphExecDestroy(part));
  }
  cudaGraphNode_t sn[STEP];
  cudaGraphExec_t upd = make_graph(STEP, sn, &gupd, 1);
  for (int u = 8; u <= 32; u *= 4) {
    unsigned long long v = 1;
    for (int r = 0; r < rounds; r++) {
      double t0 = now_ns();
      for (int i = 0; i < u; i++) {
        cudaKernelNodeParams q;
        CHECK_CUDA(cudaGraphKernelNodeGetParams(sn[i], &q));
        int sl = i % 8;
        void *a[3] = {&acc, &sl, &v};
        q.kernelParams = a;
        CHECK_CUDA(cudaGraphExecKernelNodeSetParams(upd, sn[i], &q));
      }
      CHECK_CUDA(cudaGraphLaunch(upd, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      t[r] = now_ns() - t0;
      expect_sum += STEP;
    }
    printf(" step_ns_updates_%d=%.0f", u, median(t, rounds));
  }
  printf("\n");

  unsigned long long h[8], sum = 0;
  CHECK_CUDA(cudaMemcpy(h, acc, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 8; i++) sum += h[i];
  CHECK(sum == expect_sum);
  printf("launch-costs: check=%016llx\n", sum);
  CHECK_CUDA(cudaGraphExecDestroy(e16));
  CHECK_CUDA(cudaGraphExecDestroy(whole));
  CHECK_CUDA(cudaGraphExecDestroy(upd));
  CHECK_CUDA(cudaGraphDestroy(g16));
  CHECK_CUDA(cudaGraphDestroy(gupd));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFreeHost(flag));
  CHECK_CUDA(cudaFree(acc));
  free(t);
  return 0;
}
