/* e-capture.cu — a program that captures and replays a CUDA graph of its own.
 *
 * As torch.cuda.graph and torch.compile(mode="reduce-overhead") do: the step (five launches
 * with fixed arguments on a non-blocking stream) first runs eagerly WARMUP times, with a copy
 * and a stream synchronisation after each, so a library that learns repeated sequences knows
 * it; then the
 * program captures the same five launches on that stream (cudaStreamBeginCapture, global
 * mode), instantiates the graph and launches it REPLAYS times, copying the result after each.
 * Launches on a capturing stream must reach the capture untouched: a library that held them
 * and submitted them after cudaStreamEndCapture would run them once, eagerly, and leave the
 * captured graph empty (or, replaying its own graph into the capture, change the program's
 * graph); either way the copies after the replays differ. Output: a checksum after every eager
 * step and every replay, the captured node count, then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, WARMUP = 5, REPLAYS = 8, CAPTURED = 5 };

__host__ __device__ static inline void mad_body(unsigned long i, unsigned *x, unsigned m,
                                                unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c;
}
__host__ __device__ static inline void fold_body(unsigned long i, unsigned *d, const unsigned *s,
                                                 int n) {
  if (i < (unsigned long)n) d[i] = (d[i] ^ s[(i + 1) % (unsigned long)n]) * 0x2545f491u + 3u;
}

extern "C" __global__ void ec_mad(unsigned *x, unsigned m, unsigned c, int n) {
  mad_body(PROG_TID(), x, m, c, n);
}
extern "C" __global__ void ec_fold(unsigned *d, const unsigned *s, int n) {
  fold_body(PROG_TID(), d, s, n);
}

SIM_KERNEL(ec_mad) {
  SIM_FOR_EACH_THREAD(i)
  mad_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(ec_fold) {
  SIM_FOR_EACH_THREAD(i)
  fold_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, int));
}

static const unsigned GRID = N / BLOCK;

static void step(unsigned *x, unsigned *y, cudaStream_t s) {
  int n = N;
  PROG_LAUNCH(ec_mad, GRID, BLOCK, 0, s, x, 69069u, 1u, n);
  PROG_LAUNCH(ec_fold, GRID, BLOCK, 0, s, y, (const unsigned *)x, n);
  PROG_LAUNCH(ec_mad, GRID, BLOCK, 0, s, y, 2654435761u, 7u, n);
  PROG_LAUNCH(ec_fold, GRID, BLOCK, 0, s, x, (const unsigned *)y, n);
  PROG_LAUNCH(ec_mad, GRID, BLOCK, 0, s, x, 40503u, 11u, n);
}

static void show(const char *what, int i, unsigned *x, cudaStream_t s) {
  static unsigned h[N];
  CHECK_CUDA(cudaMemcpyAsync(h, x, sizeof h, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  printf("%s %d: %016llx\n", what, i, (unsigned long long)prog_hash(h, sizeof h));
}

int main(void) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned *x, *y;
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  CHECK_CUDA(cudaMemsetAsync(x, 0x11, N * sizeof *x, s));
  CHECK_CUDA(cudaMemsetAsync(y, 0x22, N * sizeof *y, s));

  for (int i = 0; i < WARMUP; i++) {
    step(x, y, s);
    show("eager", i, x, s);
  }

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  step(x, y, s);
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, NULL, &nodes));
  printf("captured nodes: %zu\n", nodes);
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  show("after capture", 0, x, s); /* capture ran nothing: x is as the last eager step left it */

  for (int i = 0; i < REPLAYS; i++) {
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    show("replay", i, x, s);
  }
  /* Eager again after the replays: the library may replay its own graph here. */
  for (int i = 0; i < WARMUP; i++) {
    step(x, y, s);
    show("eager again", i, x, s);
  }

  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaStreamDestroy(s));
  printf("captured launches: %d\n", CAPTURED);
  prog_print_launches();
  return 0;
}
