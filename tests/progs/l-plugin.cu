/* l-plugin.cu — kernel records must not outlive their module.
 *
 * Usage: l-plugin [PLUGIN_DIR]   (default: ../plugins next to this program)
 *
 * Plugin A (tests/plugins/l-plugin.cu: kernel pkA(int *x, int a)) is dlopened, run for ITERS
 * steps (four launches by host stub, then a copy back: long enough to be learnt and replayed
 * as a graph), and dlclosed, which unregisters its fatbin. Plugin B (pkB(int a, int *x), the
 * same code otherwise) is then loaded where A was, so that its host stub has A's address: the
 * program checks that it does and that each plugin really left the process. B runs the same
 * steps, then A is loaded and run once more. A library that kept A's kernel record under the
 * stub's address would take B's launches for A's and replay A's graph with B's arguments.
 * Output: a checksum after each step, then the launch counts.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, ITERS = 8 };

/* CPU twins of the plugins' kernels (the simulator finds them in the executable). */
SIM_KERNEL(pkA) {
  int *x = SIM_ARG(0, int *);
  int a = SIM_ARG(1, int);
  SIM_FOR_EACH_THREAD(i) x[i] = (int)(2u * (unsigned)x[i] + (unsigned)a); /* wraps */
}
SIM_KERNEL(pkB) {
  int a = SIM_ARG(0, int);
  int *x = SIM_ARG(1, int *);
  SIM_FOR_EACH_THREAD(i) x[i] = (int)(3u * (unsigned)x[i] + (unsigned)a); /* wraps */
}

typedef const void *(*stub_fn)(void);
typedef int (*step_fn)(int *x, int n, int step, cudaStream_t s);

static char dir[4096];

/* Loads plugin `name`, runs it, unloads it; returns where its kernel's host stub was. */
static const void *run(const char *name, int *d, cudaStream_t s) {
  char path[4200];
  int hx[N];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "l-plugin: %s\n", dlerror());
    exit(1);
  }
  stub_fn stub = (stub_fn)dlsym(h, "plugin_stub");
  step_fn step = (step_fn)dlsym(h, "plugin_step");
  CHECK(stub != NULL && step != NULL);
  const void *at = stub();
  for (int it = 0; it < ITERS; it++) {
    CHECK_INT(step(d, N, it, s), ==, 0);
    for (int j = 0; j < 4; j++) PROG_RT();
    CHECK_CUDA(cudaMemcpyAsync(hx, d, sizeof hx, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    printf("%s %d: %016llx first=%d last=%d\n", name, it,
           (unsigned long long)prog_hash(hx, sizeof hx), hx[0], hx[N - 1]);
  }
  CHECK(dlclose(h) == 0);
  /* Really gone: its fatbin was unregistered and its pages unmapped. */
  CHECK(dlopen(path, RTLD_NOW | RTLD_NOLOAD) == NULL);
  return at;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
  } else {
    snprintf(dir, sizeof dir, "%s", argv[0]);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    strncat(dir, "/../plugins", sizeof dir - strlen(dir) - 1);
  }
  int *d;
  cudaStream_t s;
  CHECK_CUDA(cudaMalloc(&d, N * sizeof *d));
  CHECK_CUDA(cudaMemset(d, 0, N * sizeof *d));
  CHECK_CUDA(cudaStreamCreate(&s));

  const void *a = run("l-plugin-a.so", d, s);
  const void *b = run("l-plugin-b.so", d, s);
  const void *a2 = run("l-plugin-a.so", d, s);
  if (a != b || a != a2) {
    fprintf(stderr, "l-plugin: the plugins' stubs are not at one address (%p %p %p): the test "
            "cannot show what it is for\n", a, b, a2);
    return 2;
  }
  printf("stubs of pkA, pkB, pkA at one address: yes\n");
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(d));
  prog_print_launches();
  return 0;
}
