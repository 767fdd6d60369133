/* r-exit.cu — the ways a process ends while the library may hold launches.
 *
 * Usage: r-exit MODE
 *   main-return  repeats a sequence ITERS times on a stream and returns from main without
 *                synchronising: whatever the library holds must be submitted (or the process
 *                end cleanly) and the statistics written at exit must account for every launch.
 *   thread-exit  a second thread repeats the sequence and calls exit(0) right after its last
 *                launch, while the main thread waits in pthread_join; the program's own atexit
 *                handler (registered before CUDA is touched, so it runs before the library's)
 *                copies the result back, which must see every launch, and prints it.
 *   loop         repeats the sequence with a sync every few iterations, for up to 60 s; prints
 *                "running" once the library has had time to learn the sequence, so a caller can
 *                send a fatal signal at a moment when launches are likely held.
 * Output: the result's checksum (not in loop mode) and the launch counts.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, ITERS = 500 };

__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, unsigned tag, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] ^ tag) * 747796405u + 2891336453u;
}
extern "C" __global__ void rx_step(unsigned *x, unsigned tag, int n) { step_body(PROG_TID(), x, tag, n); }
SIM_KERNEL(rx_step) {
  SIM_FOR_EACH_THREAD(i) step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, int));
}

static cudaStream_t s;
static unsigned *x;

static void setup(void) {
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemsetAsync(x, 1, N * sizeof *x, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
}

static void iteration(int it) {
  for (unsigned k = 0; k < 5; k++)
    PROG_LAUNCH(rx_step, N / BLOCK, BLOCK, 0, s, x, (unsigned)it * 5 + k, N);
}

static void print_result(void) {
  static unsigned h[N];
  CHECK_CUDA(cudaMemcpyAsync(h, x, sizeof h, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  printf("result: %016llx\n", (unsigned long long)prog_hash(h, sizeof h));
  prog_print_launches();
  fflush(stdout);
}

static void *exiting_thread(void *unused) {
  (void)unused;
  for (int it = 0; it < ITERS; it++) iteration(it);
  exit(0); /* from this thread, with launches possibly held; main is in pthread_join */
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "main-return";
  if (strcmp(mode, "thread-exit") == 0) {
    CHECK_INT(atexit(print_result), ==, 0);
    setup();
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, exiting_thread, NULL), ==, 0);
    pthread_join(t, NULL);
    CHECK_FAIL_("exit() in the other thread returned");
  }
  setup();
  if (strcmp(mode, "main-return") == 0) {
    for (int it = 0; it < ITERS; it++) iteration(it);
    prog_print_launches(); /* no synchronisation at all before the process ends */
    return 0;
  }
  CHECK(strcmp(mode, "loop") == 0);
  time_t end = time(NULL) + 60;
  for (int it = 0; time(NULL) < end; it++) {
    iteration(it);
    if (it % 16 == 15) CHECK_CUDA(cudaStreamSynchronize(s));
    if (it == 200) {
      printf("running\n");
      fflush(stdout);
    }
  }
  prog_print_launches();
  return 0;
}
