/* e-flush.cu — repeated launch sequences broken by calls that order work, one kind per mode.
 *
 * Usage: e-flush MODE, MODE one of
 *   copy    a synchronous cudaMemcpy reads an intermediate result in the middle of each
 *           iteration's launches on a blocking stream;
 *   event   launches on one non-blocking stream, an event recorded there and waited on by a
 *           second non-blocking stream whose launches read the first one's result (and the
 *           reverse, so the next iteration does not overwrite what is still being read);
 *   legacy  launches on a blocking stream, one on the legacy default stream that reads them,
 *           launches on a second blocking stream that read that one;
 *   hostfn  launches that write pinned host memory, then a host function (cudaLaunchHostFunc)
 *           that reads it, between two sequences of launches;
 *   poll    launches that write pinned host memory, an event recorded after them and polled
 *           with cudaEventQuery until it completes (clearing the not-ready error with
 *           cudaGetLastError, as PyTorch does), then the host reads that memory directly.
 * Each iteration repeats the same launches (ITERS times, the iteration number passed by value
 * to one of them), so a library that builds graphs of repeated sequences replays them. The
 * values the host sees at each ordering point depend on every launch issued before it: a
 * launch held back past the ordering call (not flushed first) makes them stale and changes the
 * printed checksums. Arithmetic is on 32-bit integers, exact on any device. Output: a checksum
 * per iteration and overall, then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>

#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"
#include "mix.h"

enum { N = 512, BLOCK = 128, ITERS = 12 };

__host__ __device__ static inline void set_body(unsigned long i, unsigned *x, int it, int n) {
  if (i < (unsigned long)n) x[i] = (unsigned)it * 0x01000193u + (unsigned)i * 2654435761u;
}
extern "C" __global__ void ef_set(unsigned *x, int it, int n) { set_body(PROG_TID(), x, it, n); }

SIM_KERNEL(ef_set) {
  SIM_FOR_EACH_THREAD(i) set_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int), SIM_ARG(2, int));
}
static const unsigned GRID = N / BLOCK;
static const int n = N;

/* Four launches that leave in x a function of `it` and of everything x held before. */
static void produce(unsigned *x, int it, cudaStream_t s) {
  PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, x, (const unsigned *)x, n); /* x = f(x): keeps history */
  PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s, x, 69069u, (unsigned)it, n);
  PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s, x, 2654435761u, 12345u, n);
  PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s, x, 40503u, 7u, n);
}

/* Four launches that fold x into d. */
static void consume(unsigned *d, const unsigned *x, cudaStream_t s) {
  PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, d, x, n);
  PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s, d, 1103515245u, 12345u, n);
  PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, d, x, n);
  PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s, d, 134775813u, 1u, n);
}

static uint64_t total = prog_hash(NULL, 0);

static void report(int it, const unsigned *h) {
  uint64_t v = prog_hash(h, N * sizeof *h);
  total = prog_hash(&v, sizeof v, total);
  printf("iter %d: %016llx\n", it, (unsigned long long)v);
}

static void mode_copy(unsigned *x, unsigned *d) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s)); /* blocking: cudaMemcpy (legacy stream) waits for it */
  static unsigned h[N];
  for (int it = 0; it < ITERS; it++) {
    produce(x, it, s);
    CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
    report(it, h);
    consume(d, x, s);
  }
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  report(ITERS, h);
  CHECK_CUDA(cudaStreamDestroy(s));
}

static void mode_event(unsigned *x, unsigned *d) {
  cudaStream_t s1, s2;
  cudaEvent_t produced, consumed;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  static unsigned h[N];
  for (int it = 0; it < ITERS; it++) {
    CHECK_CUDA(cudaStreamWaitEvent(s1, consumed, 0)); /* d's reads of x are done */
    produce(x, it, s1);
    CHECK_CUDA(cudaEventRecord(produced, s1));
    CHECK_CUDA(cudaStreamWaitEvent(s2, produced, 0));
    consume(d, x, s2);
    CHECK_CUDA(cudaEventRecord(consumed, s2));
  }
  CHECK_CUDA(cudaStreamSynchronize(s2));
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  report(ITERS, h);
  CHECK_CUDA(cudaEventDestroy(produced));
  CHECK_CUDA(cudaEventDestroy(consumed));
  CHECK_CUDA(cudaStreamDestroy(s1));
  CHECK_CUDA(cudaStreamDestroy(s2));
}

static void mode_legacy(unsigned *x, unsigned *d) {
  cudaStream_t a, b;
  CHECK_CUDA(cudaStreamCreate(&a));
  CHECK_CUDA(cudaStreamCreate(&b));
  unsigned *y;
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  CHECK_CUDA(cudaMemset(y, 0, N * sizeof *y));
  static unsigned h[N];
  for (int it = 0; it < ITERS; it++) {
    produce(x, it, a);
    /* The legacy stream waits for a's launches before it and b's launches wait for it. */
    PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, 0, y, (const unsigned *)x, n);
    consume(d, y, b);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  report(ITERS, h);
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaStreamDestroy(a));
  CHECK_CUDA(cudaStreamDestroy(b));
}

struct host_ctx {
  const unsigned *pinned;
  uint64_t hash;
};

static void CUDART_CB fold_pinned(void *p) {
  struct host_ctx *c = (struct host_ctx *)p;
  c->hash = prog_hash(c->pinned, N * sizeof *c->pinned, c->hash);
}

static void mode_hostfn(unsigned *x, unsigned *d) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  unsigned *pinned; /* written by kernels through the unified address, read by the host */
  CHECK_CUDA(cudaHostAlloc((void **)&pinned, N * sizeof *pinned, cudaHostAllocMapped));
  memset(pinned, 0, N * sizeof *pinned);
  static struct host_ctx ctx = {pinned, prog_hash(NULL, 0)};
  ctx.pinned = pinned;
  for (int it = 0; it < ITERS; it++) {
    produce(x, it, s);
    PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, pinned, (const unsigned *)x, n);
    CHECK_CUDA(cudaLaunchHostFunc(s, fold_pinned, &ctx));
    consume(d, x, s);
    PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, pinned, (const unsigned *)d, n);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  printf("host function: %016llx\n", (unsigned long long)ctx.hash);
  report(ITERS, pinned);
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaStreamDestroy(s));
}

static void mode_poll(unsigned *x, unsigned *d) {
  cudaStream_t s;
  cudaEvent_t ev;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  unsigned *pinned;
  CHECK_CUDA(cudaHostAlloc((void **)&pinned, N * sizeof *pinned, cudaHostAllocMapped));
  memset(pinned, 0, N * sizeof *pinned);
  static unsigned h[N];
  for (int it = 0; it < ITERS; it++) {
    produce(x, it, s);
    consume(d, x, s);
    PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, pinned, (const unsigned *)d, n);
    CHECK_CUDA(cudaEventRecord(ev, s));
    cudaError_t e;
    while ((e = cudaEventQuery(ev)) == cudaErrorNotReady) (void)cudaGetLastError();
    CHECK_CUDA(e);
    memcpy(h, pinned, sizeof h);
    report(it, h);
  }
  CHECK_CUDA(cudaEventDestroy(ev));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaStreamDestroy(s));
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*run)(unsigned *, unsigned *);
  } modes[] = {{"copy", mode_copy}, {"event", mode_event}, {"legacy", mode_legacy},
               {"hostfn", mode_hostfn}, {"poll", mode_poll}};
  int m = -1;
  for (int i = 0; argc == 2 && i < (int)(sizeof modes / sizeof modes[0]); i++)
    if (strcmp(argv[1], modes[i].name) == 0) m = i;
  if (m < 0) {
    fprintf(stderr, "usage: e-flush copy|event|legacy|hostfn|poll\n");
    return 2;
  }
  unsigned *x, *d;
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&d, N * sizeof *d));
  cudaStream_t init;
  CHECK_CUDA(cudaStreamCreateWithFlags(&init, cudaStreamNonBlocking));
  PROG_LAUNCH(ef_set, GRID, BLOCK, 0, init, x, -1, n);
  PROG_LAUNCH(ef_set, GRID, BLOCK, 0, init, d, -2, n);
  CHECK_CUDA(cudaStreamSynchronize(init));
  CHECK_CUDA(cudaStreamDestroy(init));
  modes[m].run(x, d);
  printf("%s: %016llx\n", modes[m].name, (unsigned long long)total);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(d));
  prog_print_launches();
  return 0;
}
