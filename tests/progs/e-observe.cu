/* e-observe.cu — calls that observe held launches, and calls that do not.
 *
 * Usage: e-observe MODE, MODE one of
 *   poll     the main thread repeats a step of launches on a non-blocking stream, each step
 *            ending with an event recorded there and synchronised on, then reads mapped host
 *            memory the step's last kernel wrote. Meanwhile one thread polls an old event with
 *            cudaEventQuery every few microseconds (as NCCL's watchdog and PyTorch's caching
 *            allocator do), and another creates an event, records it on a stream of its own,
 *            synchronises on it and destroys it, over and over. Neither thread's calls can see
 *            the main thread's launches, so none of them may submit what the main stream holds.
 *            Besides their own pace, after the first launch of every step the main thread has
 *            each of them make one round of its calls and waits until it has (a host wait, no
 *            CUDA call): so in every step at least one poll, record, synchronisation and
 *            destruction comes while the main stream holds launches.
 *   streams  each step: launches on stream H, a synchronisation of another (idle) stream X in
 *            the middle, more launches on H, then cudaStreamQuery(H) polled until it succeeds,
 *            and the host reads what the last kernel wrote. The query of H observes H (a held
 *            launch not submitted first would let it succeed early: stale values); the
 *            synchronisation of X does not (submitting H there splits every step in two).
 *   legacy   each step: launches on a non-blocking stream N, launches on a blocking stream B,
 *            a copy on the legacy default stream of B's result into mapped host memory and a
 *            synchronisation of the legacy stream, more launches on N, then N is synchronised.
 *            The legacy stream waits for B (implicit synchronisation: B's held launches must
 *            be submitted before the copy, or it copies stale values) but not for N (submitting
 *            N there splits its step in two).
 *   alloc    each step: launches, then cudaMalloc, cudaSetDevice, cudaEventQuery of an event
 *            recorded long ago and cudaStreamIsCapturing in the middle of the step, more
 *            launches, then the stream is synchronised and the host reads the result. None of
 *            the calls in the middle observes the launches.
 *   ops      each step: launches on stream S; a cudaMemsetAsync of a buffer with a value that
 *            changes every step and a launch folding it; a copy to the device from pageable
 *            memory that the host overwrites right after the call (allowed: such a copy is
 *            staged at the call, so it must never become a node) and a launch folding it; a
 *            device-to-device copy, a fold into mapped host memory, a copy into pinned host
 *            memory and an event record (two events in turn); a wait on that event by a second
 *            stream, which folds the buffer into mapped memory. The host synchronises on the
 *            event and reads the mapped and pinned memory the first stream wrote, then
 *            synchronises the second stream. The memset, the two copies and the wait are held
 *            as graph nodes (statistics: ops_replayed), updated every step with the new value
 *            and event: a node replayed with an old value, buffer or event changes the values
 *            (or lets the second stream read the buffer too early).
 * The values printed depend on every launch of every step; a launch held past a call that
 * observes it changes them. The test (tests/cases/engine-observe.sh) also checks, from the
 * library's statistics, how many graph launches each step took, which is where a call
 * submitting work it cannot observe shows. Output: a checksum per step and overall, then the
 * launch counts (see prog.h).
 */
#include <cuda_runtime.h>

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "prog.h"
#include "sim_kernel.h"
#include "mix.h"

enum { N = 512, BLOCK = 128 };
static int steps = 120;

static const unsigned GRID = N / BLOCK;
static const int n = N;

/* Three launches that leave in x a function of `it` and of what x held; `between`, when not
 * NULL, is called after the first. */
static void part(unsigned *x, int it, cudaStream_t s, void (*between)(int) = NULL) {
  PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, x, (const unsigned *)x, n);
  if (between) between(it);
  PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s, x, 69069u, (unsigned)it, n);
  PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s, x, 2654435761u, 12345u, n);
}

/* Folds x into the mapped host buffer h (through its device address). */
static void fold(unsigned *h, const unsigned *x, cudaStream_t s) {
  PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, h, x, n);
}

static uint64_t total = prog_hash(NULL, 0);

static void report(int it, const unsigned *h) {
  uint64_t v = prog_hash(h, N * sizeof *h);
  total = prog_hash(&v, sizeof v, total);
  if (it % 10 == 9) printf("step %d: %016llx\n", it, (unsigned long long)v);
}

static unsigned *mapped(void) {
  unsigned *h;
  CHECK_CUDA(cudaHostAlloc((void **)&h, N * sizeof *h, cudaHostAllocMapped));
  memset(h, 0, N * sizeof *h);
  return h;
}

/* ---- poll ---------------------------------------------------------------------------------- */

static int stop;
/* Lockstep with the main thread: `asked` is the step that asked for a round of calls; each
 * helper thread sets its `done` to it once it has made one. */
static int asked, poll_done, record_done;

static void wait_for(const int *done, int it) {
  while (__atomic_load_n(done, __ATOMIC_ACQUIRE) != it && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
    sched_yield();
}

/* Called after the step's first launch (no sequence is shorter than 2, so one is being held
 * there once the step is learned): a round of the other threads' calls. */
static void lockstep(int it) {
  __atomic_store_n(&asked, it + 1, __ATOMIC_RELEASE);
  wait_for(&poll_done, it + 1);
  wait_for(&record_done, it + 1);
}

static void *poller(void *arg) {
  cudaEvent_t old = (cudaEvent_t)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    int it = __atomic_load_n(&asked, __ATOMIC_ACQUIRE);
    cudaError_t e = cudaEventQuery(old);
    if (e != cudaSuccess && e != cudaErrorNotReady) CHECK_CUDA(e);
    __atomic_store_n(&poll_done, it, __ATOMIC_RELEASE);
    /* A few microseconds between polls: usleep would sleep fifty or more (timer slack), and
     * then most steps would pass between two polls. */
    uint64_t t0 = prog_now_ns();
    while (prog_now_ns() - t0 < 3000) sched_yield();
  }
  return NULL;
}

static void *recorder(void *arg) {
  (void)arg;
  cudaStream_t mine;
  CHECK_CUDA(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    int it = __atomic_load_n(&asked, __ATOMIC_ACQUIRE);
    cudaEvent_t ev;
    CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(ev, mine));
    CHECK_CUDA(cudaEventSynchronize(ev));
    CHECK_CUDA(cudaEventDestroy(ev));
    __atomic_store_n(&record_done, it, __ATOMIC_RELEASE);
    usleep(5);
  }
  CHECK_CUDA(cudaStreamDestroy(mine));
  return NULL;
}

static void mode_poll(unsigned *x) {
  cudaStream_t s, other;
  cudaEvent_t done, old;
  pthread_t t1, t2;
  unsigned *h = mapped();
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&old, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventRecord(old, other));
  if (pthread_create(&t1, NULL, poller, old) || pthread_create(&t2, NULL, recorder, NULL)) {
    fprintf(stderr, "e-observe: cannot start threads\n");
    exit(1);
  }
  for (int it = 0; it < steps; it++) {
    part(x, it, s, lockstep);
    part(x, it + 1, s);
    fold(h, x, s);
    CHECK_CUDA(cudaEventRecord(done, s));
    CHECK_CUDA(cudaEventSynchronize(done));
    report(it, h);
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK_CUDA(cudaEventDestroy(done));
  CHECK_CUDA(cudaEventDestroy(old));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaStreamDestroy(other));
  CHECK_CUDA(cudaFreeHost(h));
}

/* ---- streams ------------------------------------------------------------------------------- */

static void mode_streams(unsigned *x) {
  cudaStream_t s, other;
  unsigned *h = mapped();
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  for (int it = 0; it < steps; it++) {
    part(x, it, s);
    CHECK_CUDA(cudaStreamSynchronize(other));
    part(x, it + 1, s);
    fold(h, x, s);
    cudaError_t e;
    while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) (void)cudaGetLastError();
    CHECK_CUDA(e);
    report(it, h);
  }
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaStreamDestroy(other));
  CHECK_CUDA(cudaFreeHost(h));
}

/* ---- legacy -------------------------------------------------------------------------------- */

static void mode_legacy(unsigned *x) {
  cudaStream_t nb, b;
  unsigned *y, *h = mapped(), *hn = mapped();
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  CHECK_CUDA(cudaMemset(y, 0, N * sizeof *y));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreate(&b)); /* blocking: the legacy stream waits for it */
  for (int it = 0; it < steps; it++) {
    part(x, it, nb);
    part(y, it, b);
    CHECK_CUDA(cudaMemcpyAsync(h, y, N * sizeof *y, cudaMemcpyDeviceToHost, 0));
    CHECK_CUDA(cudaStreamSynchronize(0));
    report(it, h);
    part(x, it + 7, nb);
    fold(hn, x, nb);
    CHECK_CUDA(cudaStreamSynchronize(nb));
    report(it, hn);
  }
  CHECK_CUDA(cudaStreamDestroy(nb));
  CHECK_CUDA(cudaStreamDestroy(b));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFreeHost(h));
  CHECK_CUDA(cudaFreeHost(hn));
}

/* ---- alloc --------------------------------------------------------------------------------- */

static void mode_alloc(unsigned *x) {
  cudaStream_t s, other;
  cudaEvent_t old;
  unsigned *h = mapped();
  void *blocks[64] = {0};
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&old, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventRecord(old, other));
  for (int it = 0; it < steps; it++) {
    part(x, it, s);
    if (it < 64) CHECK_CUDA(cudaMalloc(&blocks[it], 256));
    CHECK_CUDA(cudaSetDevice(0));
    cudaError_t e = cudaEventQuery(old);
    if (e != cudaSuccess && e != cudaErrorNotReady) CHECK_CUDA(e);
    (void)cudaGetLastError();
    cudaStreamCaptureStatus st;
    CHECK_CUDA(cudaStreamIsCapturing(s, &st));
    part(x, it + 1, s);
    fold(h, x, s);
    CHECK_CUDA(cudaStreamSynchronize(s));
    report(it, h);
  }
  for (int i = 0; i < 64; i++) CHECK_CUDA(cudaFree(blocks[i]));
  CHECK_CUDA(cudaEventDestroy(old));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaStreamDestroy(other));
  CHECK_CUDA(cudaFreeHost(h));
}

/* ---- ops ----------------------------------------------------------------------------------- */

static void mode_ops(unsigned *x) {
  cudaStream_t s, s2;
  cudaEvent_t ev[2];
  unsigned *y, *z, *w, *h = mapped(), *hy = mapped(), *hz;
  static unsigned pg[N]; /* pageable */
  CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
  CHECK_CUDA(cudaMalloc((void **)&z, N * sizeof *z));
  CHECK_CUDA(cudaMalloc((void **)&w, N * sizeof *w));
  CHECK_CUDA(cudaMallocHost((void **)&hz, N * sizeof *hz)); /* pinned */
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  for (int i = 0; i < 2; i++) CHECK_CUDA(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
  for (int it = 0; it < steps; it++) {
    part(x, it, s);
    CHECK_CUDA(cudaMemsetAsync(y, (it * 37) & 0xff, N * sizeof *y, s));
    PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, y, (const unsigned *)x, n);
    /* A copy from pageable memory is staged at the call: the buffer may change right after. */
    for (int i = 0; i < N; i++) pg[i] = (unsigned)(it * 3 + i);
    CHECK_CUDA(cudaMemcpyAsync(w, pg, N * sizeof *w, cudaMemcpyHostToDevice, s));
    memset(pg, 0xee, sizeof pg);
    PROG_LAUNCH(mx_acc, GRID, BLOCK, 0, s, y, (const unsigned *)w, n);
    CHECK_CUDA(cudaMemcpyAsync(z, y, N * sizeof *z, cudaMemcpyDeviceToDevice, s));
    fold(hy, z, s);
    CHECK_CUDA(cudaMemcpyAsync(hz, z, N * sizeof *z, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaEventRecord(ev[it & 1], s));
    CHECK_CUDA(cudaStreamWaitEvent(s2, ev[it & 1], 0));
    fold(h, y, s2);
    PROG_LAUNCH(mx_mad, GRID, BLOCK, 0, s2, h, 1103515245u, (unsigned)it, n);
    /* The event covers the fold into hy and the copy into hz: once it completes the host may
     * read them. */
    CHECK_CUDA(cudaEventSynchronize(ev[it & 1]));
    report(it, hy);
    report(it, hz);
    CHECK_CUDA(cudaStreamSynchronize(s2));
    report(it, h);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < 2; i++) CHECK_CUDA(cudaEventDestroy(ev[i]));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaStreamDestroy(s2));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(z));
  CHECK_CUDA(cudaFree(w));
  CHECK_CUDA(cudaFreeHost(h));
  CHECK_CUDA(cudaFreeHost(hy));
  CHECK_CUDA(cudaFreeHost(hz));
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*run)(unsigned *);
  } modes[] = {{"poll", mode_poll}, {"streams", mode_streams}, {"legacy", mode_legacy},
               {"alloc", mode_alloc}, {"ops", mode_ops}};
  int m = -1;
  for (int i = 0; argc >= 2 && i < (int)(sizeof modes / sizeof modes[0]); i++)
    if (strcmp(argv[1], modes[i].name) == 0) m = i;
  if (m < 0 || argc > 3 || (argc == 3 && (steps = atoi(argv[2])) <= 0)) {
    fprintf(stderr, "usage: e-observe poll|streams|legacy|alloc|ops [STEPS]\n");
    return 2;
  }
  unsigned *x;
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemset(x, 0x5a, N * sizeof *x));
  CHECK_CUDA(cudaDeviceSynchronize());
  modes[m].run(x);
  printf("%s: %016llx\n", modes[m].name, (unsigned long long)total);
  CHECK_CUDA(cudaFree(x));
  prog_print_launches();
  return 0;
}
