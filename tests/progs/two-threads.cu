/* two-threads.cu — two threads launching on one shared stream in a fixed interleaving.
 *
 * A schedule string says which thread issues each of the SLOTS launches; the threads take turns
 * under a mutex and condition variable, so the launch order on the stream is the schedule's.
 * Each launch applies an affine map that depends on the thread and the slot, and affine maps do
 * not commute, so the final buffer (printed as a checksum, with a snapshot halfway) reveals any
 * reordering, loss or duplication of launches; the program also replays the schedule on the
 * host and checks both bit for bit (the values stay short binary fractions, so the arithmetic
 * is exact on any device). Ends with the launch counts (see prog.h).
 */
#include <cuda_runtime.h>
#include <pthread.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 512, BLOCK = 128 };
static const char SCHEDULE[] = "ABBABAAABBBABAABABBBAAAB";
static const int SLOTS = sizeof SCHEDULE - 1;

__host__ __device__ static inline void step_body(unsigned long i, float *x, float m, float c,
                                                 int slot, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c + (float)((i + (unsigned long)slot) % 5) * 0.125f;
}

extern "C" __global__ void tt_step(float *x, float m, float c, int slot, int n) {
  step_body(PROG_TID(), x, m, c, slot, n);
}

SIM_KERNEL(tt_step) {
  SIM_FOR_EACH_THREAD(i)
  step_body(i, SIM_ARG(0, float *), SIM_ARG(1, float), SIM_ARG(2, float), SIM_ARG(3, int),
            SIM_ARG(4, int));
}

static cudaStream_t stream;
static float *x;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int slot; /* next slot of SCHEDULE to issue */
static float snapshot[N];

static void coefficients(char who, float *m, float *c) {
  *m = who == 'A' ? 0.5f : -1.0f;
  *c = who == 'A' ? 1.0f : 2.5f;
}

static void *worker(void *arg) {
  const char me = *(const char *)arg;
  float m, c;
  coefficients(me, &m, &c);
  for (;;) {
    pthread_mutex_lock(&mu);
    while (slot < SLOTS && SCHEDULE[slot] != me) pthread_cond_wait(&cv, &mu);
    if (slot == SLOTS) {
      pthread_mutex_unlock(&mu);
      return NULL;
    }
    /* Issue while holding the turn, so the next thread's launch comes after this one. */
    PROG_LAUNCH(tt_step, (N + BLOCK - 1) / BLOCK, BLOCK, 0, stream, x, m, c, slot, (int)N);
    if (slot == SLOTS / 2) {
      CHECK_CUDA(cudaMemcpyAsync(snapshot, x, sizeof snapshot, cudaMemcpyDeviceToHost, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    }
    slot++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
}

int main(void) {
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof(float)));
  CHECK_CUDA(cudaMemsetAsync(x, 0, N * sizeof(float), stream));

  static const char ids[2] = {'A', 'B'};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    CHECK_INT(pthread_create(&th[i], NULL, worker, (void *)&ids[i]), ==, 0);
  for (int i = 0; i < 2; i++) CHECK_INT(pthread_join(th[i], NULL), ==, 0);

  static float host[N];
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(host, x, sizeof host, cudaMemcpyDeviceToHost));
  static float ref[N];
  for (int k = 0; k < SLOTS; k++) {
    float m, c;
    coefficients(SCHEDULE[k], &m, &c);
    for (unsigned long i = 0; i < N; i++) step_body(i, ref, m, c, k, N);
    if (k == SLOTS / 2 && memcmp(ref, snapshot, sizeof ref) != 0)
      CHECK_FAIL_("halfway result differs from the host's: launches reordered, lost or repeated");
  }
  if (memcmp(ref, host, sizeof ref) != 0)
    CHECK_FAIL_("final result differs from the host's: launches reordered, lost or repeated");
  prog_print_floats("halfway", snapshot, N);
  prog_print_floats("final", host, N);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(stream));
  prog_print_launches();
  return 0;
}
