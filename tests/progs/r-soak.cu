/* r-soak.cu — a sustained, seeded random workload for the reliability soak (rel-soak.sh).
 *
 * Usage: r-soak [ROUNDS [SEED]] (defaults 400 and 1). THREADS threads, each with two
 * non-blocking streams and one buffer per stream, run ROUNDS rounds. Each thread draws, from its
 * own generator seeded by (SEED, thread), a handful of sequence templates (2–12 launches of
 * three kernels, some of which read the other stream's buffer behind an event pair); each round
 * picks a template, a stream, sometimes the half-size shape (a different grid, so sequences
 * change shape), fresh per-launch tags (so graph replays need node updates), and one of several
 * kinds of synchronisation (none, stream sync, event sync, device sync, a copy to the host that
 * is folded into the checksum). Every kernel is an order-sensitive update (x = x*m + tag with a
 * distinct tag per launch), so a lost, duplicated or reordered launch changes the checksum.
 * The schedule depends only on SEED, never on timing, so stdout is the same with and without
 * the library: each thread's checksum, then the launch counts.
 *
 * On stderr, never compared, it reports the figures of the run: threads, streams, launches,
 * duration, and memory: peak RSS (VmHWM) and the resident set (VmRSS) of thread 0 at a
 * quarter of its rounds and at the end, so a caller can check the library's memory stays
 * bounded.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 512, BLOCK = 64, THREADS = 4, TEMPLATES = 6, MAX_STEPS = 12 };

__host__ __device__ static inline void mul_body(unsigned long i, unsigned *x, unsigned tag, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 2654435761u + tag + (unsigned)i;
}
__host__ __device__ static inline void rot_body(unsigned long i, unsigned *x, unsigned tag, int n) {
  if (i < (unsigned long)n) x[i] = ((x[i] << 5) | (x[i] >> 27)) ^ (tag * 40503u + 1u);
}
__host__ __device__ static inline void mix_body(unsigned long i, unsigned *x, const unsigned *y,
                                                unsigned tag, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 3u + y[(i * 7 + 1) % (unsigned long)n] + tag;
}

extern "C" __global__ void r_mul(unsigned *x, unsigned tag, int n) { mul_body(PROG_TID(), x, tag, n); }
extern "C" __global__ void r_rot(unsigned *x, unsigned tag, int n) { rot_body(PROG_TID(), x, tag, n); }
extern "C" __global__ void r_mix(unsigned *x, const unsigned *y, unsigned tag, int n) {
  mix_body(PROG_TID(), x, y, tag, n);
}

SIM_KERNEL(r_mul) {
  SIM_FOR_EACH_THREAD(i) mul_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, int));
}
SIM_KERNEL(r_rot) {
  SIM_FOR_EACH_THREAD(i) rot_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, int));
}
SIM_KERNEL(r_mix) {
  SIM_FOR_EACH_THREAD(i)
  mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, unsigned),
           SIM_ARG(3, int));
}

static int rounds = 400;
static unsigned seed = 1;
static pthread_barrier_t start;
static long rss_quarter_kib, rss_end_kib;

struct worker {
  int id;
  uint64_t hash;
  uint64_t rng;
};

static uint32_t draw(struct worker *w, uint32_t below) { /* xorshift64*, per thread */
  w->rng ^= w->rng >> 12;
  w->rng ^= w->rng << 25;
  w->rng ^= w->rng >> 27;
  return (uint32_t)((w->rng * 0x2545F4914F6CDD1Dull) >> 32) % below;
}

/* A "Vm…:" figure of /proc/self/status in KiB (VmRSS now, VmHWM the peak), -1 if unknown. */
static long vm_kib(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256], fmt[64];
  long kib = -1;
  if (!f) return -1;
  snprintf(fmt, sizeof fmt, "%s: %%ld kB", field);
  while (fgets(line, sizeof line, f))
    if (sscanf(line, fmt, &kib) == 1) break;
  fclose(f);
  return kib;
}

static void *work(void *p) {
  struct worker *w = (struct worker *)p;
  cudaStream_t s[2];
  cudaEvent_t ev[2];
  unsigned *x[2];
  static __thread unsigned h[N];
  int steps[TEMPLATES], kind[TEMPLATES][MAX_STEPS];
  w->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 20) ^ (uint64_t)(w->id + 1) * 0x100000001b3ull;
  for (int t = 0; t < TEMPLATES; t++) {
    steps[t] = 2 + (int)draw(w, MAX_STEPS - 1);
    for (int k = 0; k < steps[t]; k++) kind[t][k] = (int)draw(w, 7) % 3; /* mostly mul/rot */
  }
  for (int i = 0; i < 2; i++) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    CHECK_CUDA(cudaMalloc((void **)&x[i], N * sizeof(unsigned)));
    CHECK_CUDA(cudaMemsetAsync(x[i], w->id * 2 + i + 1, N * sizeof(unsigned), s[i]));
    CHECK_CUDA(cudaStreamSynchronize(s[i]));
  }
  w->hash = prog_hash(NULL, 0);
  pthread_barrier_wait(&start);
  for (int r = 0; r < rounds; r++) {
    int t = (int)draw(w, TEMPLATES), a = (int)draw(w, 2), b = 1 - a;
    int n = draw(w, 8) == 0 ? N / 2 : N; /* a shape change now and then */
    unsigned grid = (unsigned)n / BLOCK;
    for (int k = 0; k < steps[t]; k++) {
      unsigned tag = (unsigned)r * 131u + (unsigned)k * 7u + (unsigned)t;
      switch (kind[t][k]) {
        case 0: PROG_LAUNCH(r_mul, grid, BLOCK, 0, s[a], x[a], tag, n); break;
        case 1: PROG_LAUNCH(r_rot, grid, BLOCK, 0, s[a], x[a], tag, n); break;
        default:
          /* Read the other stream's buffer: wait for what it wrote, and make it wait for the
           * read before it writes again. */
          CHECK_CUDA(cudaEventRecord(ev[b], s[b]));
          CHECK_CUDA(cudaStreamWaitEvent(s[a], ev[b], 0));
          PROG_LAUNCH(r_mix, grid, BLOCK, 0, s[a], x[a], (const unsigned *)x[b], tag, n);
          CHECK_CUDA(cudaEventRecord(ev[a], s[a]));
          CHECK_CUDA(cudaStreamWaitEvent(s[b], ev[a], 0));
          break;
      }
    }
    switch (draw(w, 10)) {
      case 0: CHECK_CUDA(cudaStreamSynchronize(s[a])); break;
      case 1:
        CHECK_CUDA(cudaEventRecord(ev[a], s[a]));
        CHECK_CUDA(cudaEventSynchronize(ev[a]));
        break;
      case 2: CHECK_CUDA(cudaDeviceSynchronize()); break;
      case 3:
        CHECK_CUDA(cudaMemcpyAsync(h, x[a], sizeof h, cudaMemcpyDeviceToHost, s[a]));
        CHECK_CUDA(cudaStreamSynchronize(s[a]));
        w->hash = prog_hash(h, sizeof h, w->hash);
        break;
      default: break; /* keep going: long runs without any synchronisation */
    }
    if (w->id == 0 && r == rounds / 4) rss_quarter_kib = vm_kib("VmRSS");
  }
  for (int i = 0; i < 2; i++) {
    CHECK_CUDA(cudaStreamSynchronize(s[i]));
    CHECK_CUDA(cudaMemcpy(h, x[i], sizeof h, cudaMemcpyDeviceToHost));
    w->hash = prog_hash(h, sizeof h, w->hash);
    CHECK_CUDA(cudaFree(x[i]));
    CHECK_CUDA(cudaEventDestroy(ev[i]));
    CHECK_CUDA(cudaStreamDestroy(s[i]));
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) rounds = atoi(argv[1]);
  if (argc > 2) seed = (unsigned)strtoul(argv[2], NULL, 0);
  CHECK(rounds >= 4);
  uint64_t t0 = prog_now_ns();
  CHECK_CUDA(cudaFree(0)); /* initialise before the threads race */
  CHECK_INT(pthread_barrier_init(&start, NULL, THREADS), ==, 0);
  pthread_t t[THREADS];
  static struct worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    CHECK_INT(pthread_create(&t[i], NULL, work, &w[i]), ==, 0);
  }
  for (int i = 0; i < THREADS; i++) CHECK_INT(pthread_join(t[i], NULL), ==, 0);
  rss_end_kib = vm_kib("VmRSS");
  printf("rounds=%d seed=%u\n", rounds, seed);
  for (int i = 0; i < THREADS; i++)
    printf("thread %d: %016llx\n", i, (unsigned long long)w[i].hash);
  pthread_barrier_destroy(&start);
  fprintf(stderr,
          "soak: threads=%d streams=%d launches=%lu duration_s=%.2f peak_rss_kib=%ld "
          "rss_quarter_kib=%ld rss_end_kib=%ld\n",
          THREADS, 2 * THREADS, prog_runtime_launches_,
          (double)(prog_now_ns() - t0) * 1e-9,
          vm_kib("VmHWM"), rss_quarter_kib, rss_end_kib);
  prog_print_launches();
  return 0;
}
