/* l-images.cu — images read after they are gone.
 *
 * Usage: l-images [KERNEL_DIR [PLUGIN_DIR [jit]]]   (defaults: ../kernels and ../plugins next
 * to this program; `jit`: leave the plugin out, m1's kernels are then m3's)
 *
 * Three modules are loaded with cuModuleLoadData from memory that does not outlive the load,
 * as the driver allows (it keeps its own copy of an image):
 *   - m1 from the read-only data of a plugin (tests/plugins/l-image.c, holding the l-image
 *     cubin), which is then dlclosed: its pages are unmapped;
 *   - m2 and m3 from one static buffer, as a JIT that reuses its output buffer does: the
 *     prog-driver cubin is written there and loaded, then the l-image cubin is written over it
 *     and loaded, then the buffer is filled with garbage.
 * l_tick has no parameters: a driver that describes parameters says so with
 * CUDA_ERROR_INVALID_VALUE for parameter 0; run under
 * SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+ (a driver before 12.4) no driver
 * describes anything and only what was read from the images while they existed tells the
 * layouts. Each of ITERS steps launches l_tick and l_scale of m1, pd_axpy of m2, l_scale and
 * l_tick of m3, then copies y back. Output: a checksum per step, how many times l_tick ran (on
 * the simulator: counted by its CPU twin; on a GPU the line reads 0 either way), then the
 * launch counts.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, GRID = N / BLOCK, ITERS = 8 };

#include "prog-driver-twins.h"

static unsigned ticks; /* l_tick's runs, counted by its twin on the device thread */

/* CPU twins of tests/kernels/l-image.cu. */
SIM_KERNEL(l_tick) {
  (void)sim_args;
  if (sim_grid.x && sim_block.x) __atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED);
}
SIM_KERNEL(l_scale) {
  float *y = SIM_ARG(0, float *);
  float a = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = y[i] * a + 1.0f;
}

static PFN_cuModuleLoadData_v2000 p_cuModuleLoadData;
static PFN_cuModuleGetFunction_v2000 p_cuModuleGetFunction;
static PFN_cuLaunchKernel_v4000 p_cuLaunchKernel;

static void get(const char *name, void **fn, int version) {
  cudaDriverEntryPointQueryResult q;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q));
  CHECK_INT(q, ==, cudaDriverEntryPointSuccess);
}

/* The JIT's output buffer, reused for every image it produces. */
static unsigned char jit[1 << 16] __attribute__((aligned(64)));

/* "Compiles" an image into the JIT buffer: here, reads a file there. */
static void jit_emit(const char *dir, const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "l-images: cannot open %s\n", path);
    exit(1);
  }
  size_t n = fread(jit, 1, sizeof jit, f);
  CHECK(n > 0 && n < sizeof jit && feof(f));
  fclose(f);
}

static void here(char *out, size_t size, const char *argv0, const char *sub) {
  snprintf(out, size, "%s", argv0);
  char *slash = strrchr(out, '/');
  if (slash) *slash = 0; else snprintf(out, size, ".");
  strncat(out, sub, size - strlen(out) - 1);
}

int main(int argc, char **argv) {
  char kdir[4096], pdir[4096], path[4200];
  if (argc > 1) snprintf(kdir, sizeof kdir, "%s", argv[1]); else here(kdir, sizeof kdir, argv[0], "/../kernels");
  if (argc > 2) snprintf(pdir, sizeof pdir, "%s", argv[2]); else here(pdir, sizeof pdir, argv[0], "/../plugins");

  CHECK_CUDA(cudaFree(0)); /* the primary context, current on this thread */
  get("cuModuleLoadData", (void **)&p_cuModuleLoadData, 2000);
  get("cuModuleGetFunction", (void **)&p_cuModuleGetFunction, 2000);
  get("cuLaunchKernel", (void **)&p_cuLaunchKernel, 4000);

  /* m1: from a plugin's read-only data; the plugin is then unloaded. */
  int jit_only = argc > 3 && !strcmp(argv[3], "jit");
  CUmodule m1, m2, m3;
  CUfunction tick1 = NULL, scale1 = NULL, axpy2, tick3, scale3;
  if (!jit_only) {
    snprintf(path, sizeof path, "%s/l-image.so", pdir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "l-images: %s\n", dlerror());
      return 1;
    }
    const void *(*image)(void) = (const void *(*)(void))dlsym(h, "l_image");
    CHECK(image != NULL);
    CHECK_CU(p_cuModuleLoadData(&m1, image()));
    CHECK(dlclose(h) == 0);
    CHECK(dlopen(path, RTLD_NOW | RTLD_NOLOAD) == NULL); /* unmapped */
    CHECK_CU(p_cuModuleGetFunction(&tick1, m1, "l_tick"));
    CHECK_CU(p_cuModuleGetFunction(&scale1, m1, "l_scale"));
  }

  /* m2, m3: one buffer, two images, then garbage. */
  jit_emit(kdir, "prog-driver.cubin");
  CHECK_CU(p_cuModuleLoadData(&m2, jit));
  jit_emit(kdir, "l-image.cubin");
  CHECK_CU(p_cuModuleLoadData(&m3, jit));
  memset(jit, 0xa5, sizeof jit);
  CHECK_CU(p_cuModuleGetFunction(&axpy2, m2, "pd_axpy"));
  CHECK_CU(p_cuModuleGetFunction(&tick3, m3, "l_tick"));
  CHECK_CU(p_cuModuleGetFunction(&scale3, m3, "l_scale"));
  if (jit_only) tick1 = tick3, scale1 = scale3;

  float *x, *y, hy[N];
  for (int i = 0; i < N; i++) hy[i] = 0.01f * (float)i;
  CHECK_CUDA(cudaMalloc(&x, sizeof hy));
  CHECK_CUDA(cudaMalloc(&y, sizeof hy));
  CHECK_CUDA(cudaMemcpy(x, hy, sizeof hy, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(y, hy, sizeof hy, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  int n = N;
  for (int it = 0; it < ITERS; it++) {
    float a = 0.5f + 0.125f * (float)(it % 4), b = 0.75f, c = -0.5f;
    void *p_scale[] = {&y, &a, &n};
    void *p_axpy[] = {&c, &x, &y, &n};
    void *p_scale3[] = {&y, &b, &n};
    CHECK_CU(p_cuLaunchKernel(tick1, GRID, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
    CHECK_CU(p_cuLaunchKernel(scale1, GRID, 1, 1, BLOCK, 1, 1, 0, s, p_scale, NULL));
    CHECK_CU(p_cuLaunchKernel(axpy2, GRID, 1, 1, BLOCK, 1, 1, 0, s, p_axpy, NULL));
    CHECK_CU(p_cuLaunchKernel(scale3, GRID, 1, 1, BLOCK, 1, 1, 0, s, p_scale3, NULL));
    CHECK_CU(p_cuLaunchKernel(tick3, GRID, 1, 1, BLOCK, 1, 1, 0, s, NULL, NULL));
    for (int j = 0; j < 5; j++) PROG_DRV();
    CHECK_CUDA(cudaMemcpyAsync(hy, y, sizeof hy, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    printf("step %d: %016llx\n", it, (unsigned long long)prog_hash(hy, sizeof hy));
  }
  prog_print_floats("y", hy, N);
  printf("l_tick ran %u times\n", __atomic_load_n(&ticks, __ATOMIC_RELAXED));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  prog_print_launches();
  return 0;
}
