/* r-fork.cu — fork with and without exec while another thread is inside the library.
 *
 * Usage: r-fork [FORKS] (default 24: at least that many, more until the launcher ends). Before touching CUDA the program forks one child that
 * never uses CUDA and sends a computed value back through a pipe (a DataLoader worker forked
 * early). Then a launcher thread repeats a short sequence ITERS times on its stream (so the
 * library learns it, holds launches and replays graphs), synchronising now and then, while the
 * main thread forks FORKS children as fast as it can, each at whatever point the launcher
 * happens to be. The children do what DataLoader workers and subprocess do after fork: half call
 * into the dynamic linker and libc through the library (dlsym of CUDA and libc names, dlopen of
 * an already loaded library, malloc), compute a value, write it to a pipe and leave with _exit()
 * (as Python's multiprocessing workers do); the other half exec /bin/true (which the preload
 * enters again). Only the early child leaves with exit(), running atexit handlers (the
 * library's among them): in a child forked after CUDA was initialised, exit() runs the CUDA
 * runtime's exit handlers, which can wait forever on a lock that another thread of the parent
 * held at the fork (an H200 deadlocked so without the library), and the simulated driver stops
 * such a child with a message. A child that has not finished within 20 s has
 * deadlocked on a lock inherited from the parent: the parent kills it and fails. The children
 * never write to stdout; the parent checks each one's value and exit status (0). Output: the
 * early child's value, that every child answered, the launcher's checksum, the launch counts;
 * on stderr the number of children.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, ITERS = 3000, SYNC_EVERY = 64 };

__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, unsigned tag, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 1664525u + tag + (unsigned)i;
}
extern "C" __global__ void rf_step(unsigned *x, unsigned tag, int n) { step_body(PROG_TID(), x, tag, n); }
SIM_KERNEL(rf_step) {
  SIM_FOR_EACH_THREAD(i) step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, int));
}

static volatile int launcher_done;
static uint64_t launcher_hash;

static void *launcher(void *unused) {
  (void)unused;
  cudaStream_t s;
  unsigned *x;
  static unsigned h[N];
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemsetAsync(x, 3, N * sizeof *x, s));
  launcher_hash = prog_hash(NULL, 0);
  for (int it = 0; it < ITERS; it++) {
    for (unsigned k = 0; k < 4; k++) PROG_LAUNCH(rf_step, N / BLOCK, BLOCK, 0, s, x, (unsigned)it * 4 + k, N);
    if (it % SYNC_EVERY == SYNC_EVERY - 1) {
      CHECK_CUDA(cudaMemcpyAsync(h, x, sizeof h, cudaMemcpyDeviceToHost, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
      launcher_hash = prog_hash(h, sizeof h, launcher_hash);
    }
  }
  CHECK_CUDA(cudaMemcpyAsync(h, x, sizeof h, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  launcher_hash = prog_hash(h, sizeof h, launcher_hash);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  __atomic_store_n(&launcher_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* What a child computes: enough libc and dynamic-linker work to need their locks. */
static unsigned child_value(int i) {
  unsigned v = (unsigned)i * 2654435761u;
  void *p = dlsym(RTLD_DEFAULT, "cudaLaunchKernel");
  void *q = dlsym(RTLD_NEXT, "malloc");
  void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void *m = malloc(1000 + (size_t)i);
  v += (p != NULL) + 2u * (q != NULL) + 4u * (h != NULL) + 8u * (m != NULL);
  free(m);
  if (h) dlclose(h);
  return v;
}

/* Set in a child. Its leak check at exit() is off (the LeakSanitizer runtime, when present,
 * asks this function): memory that the parent's other threads held only in their own variables
 * at the fork (an operation being queued, say) is unreachable in the child, where those threads
 * do not exist, so the check would report what no code of the child could have freed. */
static volatile int in_child;
extern "C" __attribute__((visibility("default"))) int __lsan_is_turned_off(void) { return in_child; }

/* Forks one child; returns its pid and the read end of its pipe. */
static pid_t spawn(int i, int *rd) {
  int fd[2];
  CHECK_INT(pipe(fd), ==, 0);
  fflush(NULL); /* nothing buffered may be written twice */
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    in_child = 1;
    close(fd[0]);
    if (i % 2 == 1) {
      unsigned v = (unsigned)i;
      if (write(fd[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(3);
      execl("/bin/true", "true", (char *)NULL);
      _exit(4);
    }
    unsigned v = child_value(i);
    if (write(fd[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(3);
    if (i == 0) exit(0); /* the early child: CUDA was not initialised yet */
    _exit(0);
  }
  close(fd[1]);
  *rd = fd[0];
  return pid;
}

/* Waits for the child at most 20 s; returns its exit status, or fails on a hang. */
static int reap(pid_t pid) {
  int status;
  for (int waited_ms = 0; waited_ms < 20000; waited_ms++) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    CHECK(r >= 0);
    if (r == pid) {
      CHECK(WIFEXITED(status));
      return WEXITSTATUS(status);
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  CHECK_FAIL_("child %d did not finish within 20 s: deadlocked after fork", (int)pid);
  return -1;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 24;
  int rd;
  unsigned v = 0;
  /* A worker forked before CUDA is touched at all. */
  pid_t early = spawn(0, &rd);
  CHECK_INT(reap(early), ==, 0);
  CHECK(read(rd, &v, sizeof v) == (ssize_t)sizeof v);
  close(rd);
  printf("early child: %08x\n", v);

  CHECK_CUDA(cudaFree(0));
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, launcher, NULL), ==, 0);
  /* At least `forks` children, and more until the launcher is done, so that forks land in
   * every phase of its work. Each child's value must be what the parent computes itself. */
  int n = 0;
  for (int i = 1; i <= forks || !__atomic_load_n(&launcher_done, __ATOMIC_ACQUIRE); i++, n++) {
    CHECK(i < 100000);
    pid_t pid = spawn(i, &rd);
    CHECK_INT(reap(pid), ==, 0);
    CHECK(read(rd, &v, sizeof v) == (ssize_t)sizeof v);
    close(rd);
    CHECK_INT(v, ==, i % 2 == 1 ? (unsigned)i : child_value(i));
  }
  CHECK_INT(pthread_join(t, NULL), ==, 0);
  fprintf(stderr, "r-fork: %d children forked while the launcher ran\n", n);
  printf("children: all answered, all exited 0\n");
  printf("launcher: %016llx\n", (unsigned long long)launcher_hash);
  prog_print_launches();
  return 0;
}
