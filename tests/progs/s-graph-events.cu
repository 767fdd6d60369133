/* s-graph-events.cu — event record and wait nodes act at their own place in a graph.
 *
 * CUDA documents that an event record node records its event once the node's dependencies have
 * completed, and that an event wait node makes the node's dependents (not the whole graph) wait
 * for the event. Each round builds this situation:
 *
 *   stream s2:  host function `gate` (returns once the host opens it), b = 4c, record e2
 *   graph on s1:  K1: a = 3a + i + 1
 *                 ├─ record e1 ── wait e2 ── K2: d = 2a + b
 *                 └─ K3: x = 6a ── record e3        (created after the wait node)
 *   stream s3:  wait e1, wait e3, c = 7a + x
 *   host:       waits until s3 has finished, then opens the gate
 *
 * s3 needs the graph's first part (K1, K3) and nothing after the wait node; the wait node needs
 * s2, which needs the host, which waits for s3. So s3 can finish before the gate opens only when
 * the record nodes record as soon as their own dependencies are done and the wait node holds up
 * only K2: then d = 2a + 4·(7a + 6a) = 54a, with the new a of the round. A device that recorded
 * the events at the end of the launch, or held the whole launch (or every node created after the
 * wait node) until e2, would leave s3 waiting; the host gives up after DEADLINE_S seconds, opens
 * the gate anyway (so the program ends), and s2 then computes b from an old c: the output says
 * `s3-before-gate=no` and `check=MISMATCH`.
 *
 * The first three rounds build the graph with cudaGraphAdd*Node; the next three capture the same
 * work on s1 and a forked stream, the record and wait nodes coming from cudaEventRecordWithFlags
 * (cudaEventRecordExternal) and cudaStreamWaitEvent (cudaEventWaitExternal), as CUDA turns them
 * into nodes during a capture. The gate is the only host function and it waits for the host
 * thread alone, so nothing in the program depends on how a device schedules host functions.
 * Output per round: whether s3 finished before the gate opened, a checksum of d and whether d is
 * 54a; the captured graph's node count; then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 512, BLOCK = 128, GRID = N / BLOCK, ROUNDS = 3, DEADLINE_S = 5 };

__host__ __device__ static inline void step_body(unsigned long i, unsigned *a, int n) {
  if (i < (unsigned long)n) a[i] = a[i] * 3u + (unsigned)i + 1u;
}
__host__ __device__ static inline void mix_body(unsigned long i, unsigned *dst, const unsigned *p,
                                                const unsigned *q, unsigned m, int n) {
  if (i < (unsigned long)n) dst[i] = p[i] * m + q[i];
}

extern "C" __global__ void ge_step(unsigned *a, int n) { step_body(PROG_TID(), a, n); }
extern "C" __global__ void ge_mix(unsigned *dst, const unsigned *p, const unsigned *q,
                                  unsigned m, int n) {
  mix_body(PROG_TID(), dst, p, q, m, n);
}

SIM_KERNEL(ge_step) {
  SIM_FOR_EACH_THREAD(i) step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int));
}
SIM_KERNEL(ge_mix) {
  SIM_FOR_EACH_THREAD(i)
  mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, const unsigned *),
           SIM_ARG(3, unsigned), SIM_ARG(4, int));
}

static int gate_open;

static void CUDART_CB gate(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE)) {
  }
}

struct bufs {
  unsigned *a, *b, *c, *d, *x;
  int n;
};

/* One kernel node of the explicit graph. */
static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t ndeps,
                                   void *func, void **args) {
  cudaKernelNodeParams p;
  memset(&p, 0, sizeof p);
  p.func = func;
  p.gridDim = dim3(GRID);
  p.blockDim = dim3(BLOCK);
  p.kernelParams = args;
  cudaGraphNode_t node;
  CHECK_CUDA(cudaGraphAddKernelNode(&node, g, deps, ndeps, &p));
  return node;
}

/* The graph of the picture above, built node by node. The argument values are copied when the
 * nodes are added. */
static cudaGraph_t build_graph(struct bufs *m, cudaEvent_t e1, cudaEvent_t e2, cudaEvent_t e3) {
  cudaGraph_t g;
  CHECK_CUDA(cudaGraphCreate(&g, 0));
  unsigned two = 2, five = 5;
  void *step_args[] = {&m->a, &m->n};
  void *k2_args[] = {&m->d, &m->a, &m->b, &two, &m->n};
  void *k3_args[] = {&m->x, &m->a, &m->a, &five, &m->n};
  cudaGraphNode_t k1, r1, w, k3, r3;
  k1 = kernel_node(g, NULL, 0, (void *)ge_step, step_args);
  CHECK_CUDA(cudaGraphAddEventRecordNode(&r1, g, &k1, 1, e1));
  CHECK_CUDA(cudaGraphAddEventWaitNode(&w, g, &r1, 1, e2));
  kernel_node(g, &w, 1, (void *)ge_mix, k2_args);
  k3 = kernel_node(g, &k1, 1, (void *)ge_mix, k3_args);
  CHECK_CUDA(cudaGraphAddEventRecordNode(&r3, g, &k3, 1, e3));
  return g;
}

/* The same work captured on s1, with K3 on the forked stream s4. */
static cudaGraph_t capture_graph(struct bufs *m, cudaStream_t s1, cudaStream_t s4,
                                 cudaEvent_t e1, cudaEvent_t e2, cudaEvent_t e3) {
  cudaEvent_t fork, join;
  CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaGraph_t g;
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  PROG_LAUNCH(ge_step, GRID, BLOCK, 0, s1, m->a, m->n);
  CHECK_CUDA(cudaEventRecordWithFlags(e1, s1, cudaEventRecordExternal));
  CHECK_CUDA(cudaEventRecord(fork, s1));
  CHECK_CUDA(cudaStreamWaitEvent(s4, fork, 0));
  PROG_LAUNCH(ge_mix, GRID, BLOCK, 0, s4, m->x, (const unsigned *)m->a, (const unsigned *)m->a,
              5u, m->n);
  CHECK_CUDA(cudaEventRecordWithFlags(e3, s4, cudaEventRecordExternal));
  CHECK_CUDA(cudaStreamWaitEvent(s1, e2, cudaEventWaitExternal));
  PROG_LAUNCH(ge_mix, GRID, BLOCK, 0, s1, m->d, (const unsigned *)m->a, (const unsigned *)m->b,
              2u, m->n);
  CHECK_CUDA(cudaEventRecord(join, s4));
  CHECK_CUDA(cudaStreamWaitEvent(s1, join, 0));
  CHECK_CUDA(cudaStreamEndCapture(s1, &g));
  CHECK_CUDA(cudaEventDestroy(fork));
  CHECK_CUDA(cudaEventDestroy(join));
  return g;
}

/* Polls s until its work is done or DEADLINE_S seconds have passed; 1 when done. */
static int finished_in_time(cudaStream_t s) {
  uint64_t t0 = prog_now_ns();
  for (;;) {
    cudaError_t q = cudaStreamQuery(s);
    if (q == cudaSuccess) return 1;
    if (q != cudaErrorNotReady) CHECK_CUDA(q);
    if (prog_now_ns() - t0 > (uint64_t)DEADLINE_S * 1000000000u) return 0;
  }
}

/* One round as pictured: s2's gated work, the graph, s3's work; the host opens the gate once
 * s3 is done (or at the deadline). Prints the round's line; updates the host model of a. */
static void round_run(const char *label, int r, cudaGraphExec_t exec, struct bufs *m,
                      cudaStream_t s1, cudaStream_t s2, cudaStream_t s3, cudaEvent_t e1,
                      cudaEvent_t e2, cudaEvent_t e3, unsigned *host_a) {
  __atomic_store_n(&gate_open, 0, __ATOMIC_RELEASE);
  CHECK_CUDA(cudaLaunchHostFunc(s2, gate, NULL));
  PROG_LAUNCH(ge_mix, GRID, BLOCK, 0, s2, m->b, (const unsigned *)m->c, (const unsigned *)m->c,
              3u, m->n);
  CHECK_CUDA(cudaEventRecord(e2, s2));
  CHECK_CUDA(cudaGraphLaunch(exec, s1));
  CHECK_CUDA(cudaStreamWaitEvent(s3, e1, 0));
  CHECK_CUDA(cudaStreamWaitEvent(s3, e3, 0));
  PROG_LAUNCH(ge_mix, GRID, BLOCK, 0, s3, m->c, (const unsigned *)m->a, (const unsigned *)m->x,
              7u, m->n);
  int early = finished_in_time(s3);
  __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
  CHECK_CUDA(cudaDeviceSynchronize());

  static unsigned d[N];
  CHECK_CUDA(cudaMemcpy(d, m->d, sizeof d, cudaMemcpyDeviceToHost));
  int ok = 1;
  for (int i = 0; i < N; i++) {
    step_body((unsigned long)i, host_a, N);
    ok &= d[i] == host_a[i] * 54u;
  }
  printf("%s round %d: s3-before-gate=%s d=%016llx check=%s\n", label, r, early ? "yes" : "no",
         (unsigned long long)prog_hash(d, sizeof d), ok ? "ok" : "MISMATCH");
}

int main(void) {
  struct bufs m;
  m.n = N;
  unsigned **all[] = {&m.a, &m.b, &m.c, &m.d, &m.x};
  for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
    CHECK_CUDA(cudaMalloc((void **)all[i], N * sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(*all[i], 0, N * sizeof(unsigned)));
  }
  static unsigned host_a[N];
  cudaStream_t s1, s2, s3, s4;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s4, cudaStreamNonBlocking));
  cudaEvent_t e1, e2, e3;
  CHECK_CUDA(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&e3, cudaEventDisableTiming));
  CHECK_CUDA(cudaDeviceSynchronize());

  cudaGraph_t g = build_graph(&m, e1, e2, e3);
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
  for (int r = 0; r < ROUNDS; r++) round_run("built", r, exec, &m, s1, s2, s3, e1, e2, e3, host_a);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(g));

  g = capture_graph(&m, s1, s4, e1, e2, e3);
  size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(g, NULL, &nodes));
  printf("captured nodes: %zu\n", nodes);
  CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
  for (int r = 0; r < ROUNDS; r++)
    round_run("captured", r, exec, &m, s1, s2, s3, e1, e2, e3, host_a);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(g));

  for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) CHECK_CUDA(cudaFree(*all[i]));
  CHECK_CUDA(cudaEventDestroy(e1));
  CHECK_CUDA(cudaEventDestroy(e2));
  CHECK_CUDA(cudaEventDestroy(e3));
  CHECK_CUDA(cudaStreamDestroy(s1));
  CHECK_CUDA(cudaStreamDestroy(s2));
  CHECK_CUDA(cudaStreamDestroy(s3));
  CHECK_CUDA(cudaStreamDestroy(s4));
  prog_print_launches();
  return 0;
}
