/* e-stress.cu — several threads launching repeated sequences at the same time.
 *
 * THREADS threads, each with two non-blocking streams and buffers of its own, run ITERS
 * iterations at once: five launches on the first stream, an event that the second stream waits
 * on, three launches on the second stream that read the first one's result, an event back so
 * the next iteration does not overwrite what is still being read, and every SYNC_EVERY
 * iterations a cudaStreamSynchronize and a copy of the result to the host. The threads start
 * together behind a barrier and never wait for each other, so their launches interleave in an
 * order that changes from run to run; every thread's results depend only on its own launches,
 * so the output is deterministic. A library that let one thread's flush or replay submit
 * another thread's launches out of order, drop or duplicate one, or deadlock between threads
 * changes the checksums or hangs. Output: each thread's checksum, then the launch counts.
 */
#include <cuda_runtime.h>
#include <pthread.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, THREADS = 4, ITERS = 60, SYNC_EVERY = 5 };

__host__ __device__ static inline void mad_body(unsigned long i, unsigned *x, unsigned m,
                                                unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c;
}
__host__ __device__ static inline void fold_body(unsigned long i, unsigned *d, const unsigned *s,
                                                 int n) {
  if (i < (unsigned long)n) d[i] = (d[i] ^ s[(i * 5 + 1) % (unsigned long)n]) * 0x2545f491u + 1u;
}

extern "C" __global__ void st_mad(unsigned *x, unsigned m, unsigned c, int n) {
  mad_body(PROG_TID(), x, m, c, n);
}
extern "C" __global__ void st_fold(unsigned *d, const unsigned *s, int n) {
  fold_body(PROG_TID(), d, s, n);
}

SIM_KERNEL(st_mad) {
  SIM_FOR_EACH_THREAD(i)
  mad_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(st_fold) {
  SIM_FOR_EACH_THREAD(i)
  fold_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, int));
}

static pthread_barrier_t start;

struct worker {
  int id;
  uint64_t hash;
};

static void *work(void *p) {
  struct worker *w = (struct worker *)p;
  cudaStream_t a, b;
  cudaEvent_t produced, consumed;
  unsigned *x, *y;
  static __thread unsigned h[N];
  const unsigned grid = N / BLOCK;
  int n = N;
  CHECK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  CHECK_CUDA(cudaMemsetAsync(x, w->id + 1, N * sizeof *x, a));
  CHECK_CUDA(cudaMemsetAsync(y, w->id + 7, N * sizeof *y, b));
  CHECK_CUDA(cudaStreamSynchronize(a));
  CHECK_CUDA(cudaStreamSynchronize(b));
  w->hash = prog_hash(NULL, 0);
  pthread_barrier_wait(&start);
  for (int it = 0; it < ITERS; it++) {
    CHECK_CUDA(cudaStreamWaitEvent(a, consumed, 0));
    PROG_LAUNCH(st_mad, grid, BLOCK, 0, a, x, 69069u, (unsigned)it, n);
    PROG_LAUNCH(st_fold, grid, BLOCK, 0, a, x, (const unsigned *)x, n);
    PROG_LAUNCH(st_mad, grid, BLOCK, 0, a, x, 2654435761u, (unsigned)w->id, n);
    PROG_LAUNCH(st_fold, grid, BLOCK, 0, a, x, (const unsigned *)x, n);
    PROG_LAUNCH(st_mad, grid, BLOCK, 0, a, x, 40503u, 5u, n);
    CHECK_CUDA(cudaEventRecord(produced, a));
    CHECK_CUDA(cudaStreamWaitEvent(b, produced, 0));
    PROG_LAUNCH(st_fold, grid, BLOCK, 0, b, y, (const unsigned *)x, n);
    PROG_LAUNCH(st_mad, grid, BLOCK, 0, b, y, 1103515245u, 12345u, n);
    PROG_LAUNCH(st_fold, grid, BLOCK, 0, b, y, (const unsigned *)y, n);
    CHECK_CUDA(cudaEventRecord(consumed, b));
    if (it % SYNC_EVERY == SYNC_EVERY - 1) {
      CHECK_CUDA(cudaStreamSynchronize(b));
      CHECK_CUDA(cudaMemcpyAsync(h, y, sizeof h, cudaMemcpyDeviceToHost, b));
      CHECK_CUDA(cudaStreamSynchronize(b));
      w->hash = prog_hash(h, sizeof h, w->hash);
    }
  }
  CHECK_CUDA(cudaStreamSynchronize(a));
  CHECK_CUDA(cudaStreamSynchronize(b));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaEventDestroy(produced));
  CHECK_CUDA(cudaEventDestroy(consumed));
  CHECK_CUDA(cudaStreamDestroy(a));
  CHECK_CUDA(cudaStreamDestroy(b));
  return NULL;
}

int main(void) {
  CHECK_CUDA(cudaFree(0)); /* initialise before the threads race */
  CHECK_INT(pthread_barrier_init(&start, NULL, THREADS), ==, 0);
  pthread_t t[THREADS];
  static struct worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    CHECK_INT(pthread_create(&t[i], NULL, work, &w[i]), ==, 0);
  }
  for (int i = 0; i < THREADS; i++) CHECK_INT(pthread_join(t[i], NULL), ==, 0);
  for (int i = 0; i < THREADS; i++)
    printf("thread %d: %016llx\n", i, (unsigned long long)w[i].hash);
  pthread_barrier_destroy(&start);
  prog_print_launches();
  return 0;
}
