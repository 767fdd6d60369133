/* r-late.cu — CUDA libraries loaded after start: their launches are intercepted like the
 * program's own (counted, and replayed as graphs once they repeat).
 *
 * One source, three builds (tests/fuzz/build.mk builds the two libraries next to the program):
 *   r-late              the program (no macro);
 *   libr-late-a.so      -DR_LATE_LIB=a: kernels and a run function, no dependency on the others;
 *   libr-late-b.so      -DR_LATE_LIB=b: the same with other kernel names;
 *   libr-late-loader.so -DR_LATE_LOADER: a library whose constructor dlopens libr-late-a.so and
 *                       launches its kernels from inside the constructor.
 * The program, with no CUDA library but the runtime linked in, dlopens libr-late-loader.so (so
 * libr-late-a.so is loaded, and launches, from another library's constructor), then dlopens
 * libr-late-b.so from a second thread and runs its kernels on that thread, then runs both
 * libraries' sequences again from the main thread. The libraries are opened RTLD_GLOBAL so that
 * the simulator finds their kernels' CPU twins with dlsym(RTLD_DEFAULT). Output: each run's
 * checksum and the total launch counts (the libraries report how many they made).
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog.h"
#include "sim_kernel.h"

#define R_CAT_(a, b) a##b
#define R_CAT(a, b) R_CAT_(a, b)

/* The run function every kernel library exports: `iters` repetitions of a 4-launch sequence on
 * a fresh stream, returns the result's checksum and adds the launches made to *launches. */
typedef uint64_t (*r_late_run_fn)(int iters, unsigned seed, unsigned long *launches);

#if defined(R_LATE_LIB)
enum { N = 128, BLOCK = 32 };
#define KSTEP R_CAT(rl_step_, R_LATE_LIB)
#define KMIX R_CAT(rl_mix_, R_LATE_LIB)
/* SIM_KERNEL pastes its argument; this level expands KSTEP and KMIX first. */
#define R_SIM_KERNEL(name) SIM_KERNEL(name)

__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, unsigned tag, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 22695477u + tag;
}
__host__ __device__ static inline void mix_body(unsigned long i, unsigned *x, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 5u + (unsigned)i;
}
extern "C" __global__ void KSTEP(unsigned *x, unsigned tag, int n) { step_body(PROG_TID(), x, tag, n); }
extern "C" __global__ void KMIX(unsigned *x, int n) { mix_body(PROG_TID(), x, n); }
R_SIM_KERNEL(KSTEP) {
  SIM_FOR_EACH_THREAD(i) step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, int));
}
R_SIM_KERNEL(KMIX) {
  SIM_FOR_EACH_THREAD(i) mix_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, int));
}

extern "C" __attribute__((visibility("default"))) uint64_t R_CAT(r_late_run_, R_LATE_LIB)(
    int iters, unsigned seed, unsigned long *launches) {
  cudaStream_t s;
  unsigned *x;
  static unsigned h[N];
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemsetAsync(x, (int)seed, N * sizeof *x, s));
  for (int it = 0; it < iters; it++) {
    PROG_LAUNCH(KSTEP, N / BLOCK, BLOCK, 0, s, x, (unsigned)it, N);
    PROG_LAUNCH(KMIX, N / BLOCK, BLOCK, 0, s, x, N);
    PROG_LAUNCH(KSTEP, N / BLOCK, BLOCK, 0, s, x, seed, N);
    PROG_LAUNCH(KMIX, N / BLOCK, BLOCK, 0, s, x, N);
  }
  CHECK_CUDA(cudaMemcpyAsync(h, x, sizeof h, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  *launches += prog_runtime_launches_;
  prog_runtime_launches_ = 0;
  return prog_hash(h, sizeof h);
}

#elif defined(R_LATE_LOADER)
/* Set by the constructor, read by the program through dlsym. */
extern "C" __attribute__((visibility("default"))) uint64_t r_late_loader_hash;
extern "C" __attribute__((visibility("default"))) unsigned long r_late_loader_launches;
uint64_t r_late_loader_hash;
unsigned long r_late_loader_launches;

__attribute__((constructor)) static void load_and_launch(void) {
  Dl_info self;
  char path[4096];
  CHECK(dladdr((void *)load_and_launch, &self) && self.dli_fname);
  snprintf(path, sizeof path, "%s", self.dli_fname);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
           "libr-late-a.so");
  void *a = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!a) CHECK_FAIL_("dlopen %s: %s", path, dlerror());
  r_late_run_fn run = (r_late_run_fn)dlsym(a, "r_late_run_a");
  CHECK(run);
  r_late_loader_hash = run(40, 5, &r_late_loader_launches);
}

#else
static char dir[4096];
static unsigned long lib_launches;

static void *open_lib(const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) CHECK_FAIL_("dlopen %s: %s", path, dlerror());
  return h;
}

static void *thread_open_b(void *out) {
  void *b = open_lib("libr-late-b.so");
  r_late_run_fn run = (r_late_run_fn)dlsym(b, "r_late_run_b");
  CHECK(run);
  *(uint64_t *)out = run(40, 9, &lib_launches);
  return b;
}

int main(void) {
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  CHECK(n > 0);
  dir[n] = '\0';
  *strrchr(dir, '/') = '\0';
  CHECK_CUDA(cudaFree(0));

  void *loader = open_lib("libr-late-loader.so");
  uint64_t *h0 = (uint64_t *)dlsym(loader, "r_late_loader_hash");
  unsigned long *n0 = (unsigned long *)dlsym(loader, "r_late_loader_launches");
  CHECK(h0 && n0);
  lib_launches += *n0;
  printf("constructor of a loader, library a: %016llx\n", (unsigned long long)*h0);

  pthread_t t;
  uint64_t hb = 0;
  void *b = NULL;
  CHECK_INT(pthread_create(&t, NULL, thread_open_b, &hb), ==, 0);
  CHECK_INT(pthread_join(t, &b), ==, 0);
  printf("thread, library b: %016llx\n", (unsigned long long)hb);

  void *a = dlopen(NULL, RTLD_NOW);
  r_late_run_fn run_a = (r_late_run_fn)dlsym(RTLD_DEFAULT, "r_late_run_a");
  r_late_run_fn run_b = (r_late_run_fn)dlsym(b, "r_late_run_b");
  CHECK(a && run_a && run_b);
  printf("main, library a: %016llx\n", (unsigned long long)run_a(60, 11, &lib_launches));
  printf("main, library b: %016llx\n", (unsigned long long)run_b(60, 13, &lib_launches));
  prog_runtime_launches_ += lib_launches;
  prog_print_launches();
  return 0;
}
#endif
