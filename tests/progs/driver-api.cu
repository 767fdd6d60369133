/* driver-api.cu — a program that uses only the driver API, reached the way cuBLAS, cuDNN and
 * Triton reach it: dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), and every other driver
 * function from that getter. The executable does not link libcuda.
 *
 * Usage: driver-api [KERNEL_DIR]   (default: $BUILD/tests/kernels, else build/tests/kernels)
 *
 * It loads prog-driver.cubin with cuModuleLoadData (falling back to prog-driver.fatbin, whose
 * PTX any later GPU compiles, on a GPU the sm_90 cubin cannot run on) and prog-driver.z.fatbin (zstd-compressed) with
 * cuLibraryLoadData, prints every kernel's parameter layout from cuFuncGetParamInfo and
 * cuKernelGetParamInfo, and launches in ITERS rounds with cuLaunchKernel (kernelParams, and
 * `extra` with CU_LAUNCH_PARAM_BUFFER_POINTER), with a CUkernel passed as the CUfunction, and
 * with cuLaunchKernelEx without and with a launch attribute. Output: the layouts, checksums of
 * the results as exact bits, then the launch counts (see prog.h).
 *
 * The CPU twins of the kernels in tests/kernels/prog-driver.cu are defined here, since the
 * simulator looks them up in the executable.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, GRID = N / BLOCK, ITERS = 3 };

/* CPU twins of tests/kernels/prog-driver.cu. */
#include "prog-driver-twins.h"

/* ---- driver functions, all from cuGetProcAddress ---- */

static PFN_cuGetProcAddress_v12000 get_proc;
#define DRIVER_FUNCS(X)                                                                   \
  X(cuInit, 2000)                                                                         \
  X(cuDeviceGet, 2000)                                                                    \
  X(cuDevicePrimaryCtxRetain, 7000)                                                       \
  X(cuDevicePrimaryCtxRelease, 11000)                                                     \
  X(cuCtxSetCurrent, 4000)                                                                \
  X(cuModuleLoadData, 2000)                                                               \
  X(cuModuleGetFunction, 2000)                                                            \
  X(cuModuleUnload, 2000)                                                                 \
  X(cuLibraryLoadData, 12000)                                                             \
  X(cuLibraryGetKernel, 12000)                                                            \
  X(cuLibraryUnload, 12000)                                                               \
  X(cuFuncGetParamInfo, 12040)                                                            \
  X(cuKernelGetParamInfo, 12040)                                                          \
  X(cuMemAlloc, 3020)                                                                     \
  X(cuMemFree, 3020)                                                                      \
  X(cuMemcpyHtoD, 3020)                                                                   \
  X(cuMemcpyDtoH, 3020)                                                                   \
  X(cuMemsetD32, 3020)                                                                    \
  X(cuStreamCreate, 2000)                                                                 \
  X(cuStreamSynchronize, 2000)                                                            \
  X(cuStreamDestroy, 4000)                                                                \
  X(cuLaunchKernel, 4000)                                                                 \
  X(cuLaunchKernelEx, 11060)

#define DECLARE(name, ver) static PFN_##name##_v##ver p_##name;
DRIVER_FUNCS(DECLARE)

static void resolve(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "driver-api: %s\n", dlerror());
    exit(1);
  }
  get_proc = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
  CHECK(get_proc != NULL);
  CUdriverProcAddressQueryResult found;
#define RESOLVE(name, ver)                                                                \
  CHECK_CU(get_proc(#name, (void **)&p_##name, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, \
                    &found));                                                             \
  CHECK_INT(found, ==, CU_GET_PROC_ADDRESS_SUCCESS);                                      \
  CHECK(p_##name != NULL);
  DRIVER_FUNCS(RESOLVE)
}

static void *read_file(const char *dir, const char *name, size_t *size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "driver-api: cannot open %s\n", path);
    exit(1);
  }
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  CHECK(n > 0);
  rewind(f);
  /* 8-byte aligned, as the driver expects of an image in memory. */
  void *buf = aligned_alloc(8, ((size_t)n + 7) & ~(size_t)7);
  CHECK(buf != NULL);
  CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* Prints the layout of `f` (or of `k` when f is NULL); stores it in off/size, returns the
 * parameter count. The first index past the end must be refused with CUDA_ERROR_INVALID_VALUE. */
static int print_layout(const char *name, CUfunction f, CUkernel k, size_t *off, size_t *size) {
  int i = 0;
  for (;; i++) {
    CUresult r = f ? p_cuFuncGetParamInfo(f, (size_t)i, &off[i], &size[i])
                   : p_cuKernelGetParamInfo(k, (size_t)i, &off[i], &size[i]);
    if (r == CUDA_ERROR_INVALID_VALUE) break;
    CHECK_CU(r);
    CHECK(i < 16);
  }
  printf("%s %s:", f ? "function" : "kernel", name);
  for (int j = 0; j < i; j++) printf(" %zu@%zu", size[j], off[j]);
  printf("\n");
  return i;
}

static void check_layout(const size_t *off, const size_t *size, int n, const size_t *want_off,
                         const size_t *want_size, int want_n) {
  CHECK_INT(n, ==, want_n);
  for (int i = 0; i < n; i++) {
    CHECK_INT(off[i], ==, want_off[i]);
    CHECK_INT(size[i], ==, want_size[i]);
  }
}

/* The parameter buffers for `extra` launches, laid out as the device expects. */
struct pair_args {
  struct pd_pair p;
  unsigned long long k;
  float *y;
  int n;
};
struct mixed_args {
  char c;
  double d;
  short s;
  float4 v;
  int *out;
  int n;
};

int main(int argc, char **argv) {
  char dir[4096];
  if (argc > 1)
    snprintf(dir, sizeof dir, "%s", argv[1]);
  else
    snprintf(dir, sizeof dir, "%s/tests/kernels", getenv("BUILD") ? getenv("BUILD") : "build");

  resolve();
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CHECK_CU(p_cuInit(0));
  CHECK_CU(p_cuDeviceGet(&dev, 0));
  CHECK_CU(p_cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(p_cuCtxSetCurrent(ctx));
  /* Blocking: it must wait for the copies and the memset below, which run on the legacy
   * default stream (a pageable host-to-device copy may return before its data has landed). */
  CHECK_CU(p_cuStreamCreate(&s, CU_STREAM_DEFAULT));

  size_t cubin_size, zfat_size;
  void *cubin = read_file(dir, "prog-driver.cubin", &cubin_size);
  void *zfat = read_file(dir, "prog-driver.z.fatbin", &zfat_size);
  CUmodule mod;
  CUresult r = p_cuModuleLoadData(&mod, cubin);
  if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_SOURCE) {
    /* A GPU that cannot run sm_90 code: the plain fatbin carries PTX for it. */
    size_t fat_size;
    void *fat = read_file(dir, "prog-driver.fatbin", &fat_size);
    r = p_cuModuleLoadData(&mod, fat);
    free(fat);
  }
  CHECK_CU(r);
  CUfunction f_axpy, f_mixed, f_pair;
  CHECK_CU(p_cuModuleGetFunction(&f_axpy, mod, "pd_axpy"));
  CHECK_CU(p_cuModuleGetFunction(&f_mixed, mod, "pd_mixed"));
  CHECK_CU(p_cuModuleGetFunction(&f_pair, mod, "pd_pair"));
  CUlibrary lib;
  CHECK_CU(p_cuLibraryLoadData(&lib, zfat, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel k_axpy, k_pair;
  CHECK_CU(p_cuLibraryGetKernel(&k_axpy, lib, "pd_axpy"));
  CHECK_CU(p_cuLibraryGetKernel(&k_pair, lib, "pd_pair"));

  size_t off[16], size[16];
  static const size_t axpy_off[] = {0, 8, 16, 24}, axpy_size[] = {4, 8, 8, 4};
  static const size_t mixed_off[] = {offsetof(mixed_args, c), offsetof(mixed_args, d),
                                     offsetof(mixed_args, s), offsetof(mixed_args, v),
                                     offsetof(mixed_args, out), offsetof(mixed_args, n)};
  static const size_t mixed_size[] = {1, 8, 2, 16, 8, 4};
  static const size_t pair_off[] = {offsetof(pair_args, p), offsetof(pair_args, k),
                                    offsetof(pair_args, y), offsetof(pair_args, n)};
  static const size_t pair_size[] = {16, 8, 8, 4};
  check_layout(off, size, print_layout("pd_axpy", f_axpy, NULL, off, size), axpy_off, axpy_size, 4);
  check_layout(off, size, print_layout("pd_mixed", f_mixed, NULL, off, size), mixed_off,
               mixed_size, 6);
  check_layout(off, size, print_layout("pd_pair", f_pair, NULL, off, size), pair_off, pair_size, 4);
  check_layout(off, size, print_layout("pd_axpy", NULL, k_axpy, off, size), axpy_off, axpy_size, 4);
  check_layout(off, size, print_layout("pd_pair", NULL, k_pair, off, size), pair_off, pair_size, 4);

  CUdeviceptr x, y, out;
  CHECK_CU(p_cuMemAlloc(&x, N * sizeof(float)));
  CHECK_CU(p_cuMemAlloc(&y, N * sizeof(float)));
  CHECK_CU(p_cuMemAlloc(&out, N * sizeof(int)));
  static float hx[N], hy[N];
  static int hout[N];
  for (int i = 0; i < N; i++) {
    hx[i] = (float)(i % 13) * 0.5f;
    hy[i] = 1.0f;
  }
  CHECK_CU(p_cuMemcpyHtoD(x, hx, sizeof hx));
  CHECK_CU(p_cuMemcpyHtoD(y, hy, sizeof hy));
  CHECK_CU(p_cuMemsetD32(out, 1, N));

  int n = N;
  for (int it = 0; it < ITERS; it++) {
    /* kernelParams, on a CUfunction from the cubin module. */
    float a = 0.5f + (float)it;
    void *axpy_params[] = {&a, &x, &y, &n};
    CHECK_CU(p_cuLaunchKernel(f_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, axpy_params, NULL));
    PROG_DRV();

    /* extra, with a packed buffer. */
    struct pair_args pa;
    memset(&pa, 0, sizeof pa);
    pa.p.a = 0.75f;
    pa.p.b = -0.5 * it;
    pa.k = 1000ull * it + 3;
    pa.y = (float *)y;
    pa.n = n;
    /* The kernel's parameters end at n: sizeof pa counts the struct's trailing padding, which
     * a driver refuses (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES on an H200). */
    size_t pa_size = offsetof(struct pair_args, n) + sizeof pa.n;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &pa, CU_LAUNCH_PARAM_BUFFER_SIZE, &pa_size,
                     CU_LAUNCH_PARAM_END};
    CHECK_CU(p_cuLaunchKernel(f_pair, GRID, 1, 1, BLOCK, 1, 1, 0, s, NULL, extra));
    PROG_DRV();

    /* A CUkernel from the compressed fatbin, passed where a CUfunction goes. */
    a = -0.25f;
    CHECK_CU(p_cuLaunchKernel((CUfunction)k_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, axpy_params, NULL));
    PROG_DRV();

    /* cuLaunchKernelEx without attributes. */
    char c = (char)(5 + it);
    double d = 2.5 * it;
    short sh = (short)-3;
    float4 v = make_float4(1.0f, 2.0f, 0.5f, (float)it);
    void *mixed_params[] = {&c, &d, &sh, &v, &out, &n};
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = GRID;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = BLOCK;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    CHECK_CU(p_cuLaunchKernelEx(&cfg, f_mixed, mixed_params, NULL));
    PROG_DRV();

    /* cuLaunchKernelEx with an attribute, on a CUkernel, with kernelParams. */
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr.value.priority = 0;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    struct pd_pair p = {1.5f, 0.25};
    unsigned long long k = 7ull + it;
    void *pair_params[] = {&p, &k, &y, &n};
    CHECK_CU(p_cuLaunchKernelEx(&cfg, (CUfunction)k_pair, pair_params, NULL));
    PROG_DRV();

    /* extra on a kernel with a 16-byte-aligned member. */
    struct mixed_args ma;
    memset(&ma, 0, sizeof ma);
    ma.c = c;
    ma.d = d + 1.0;
    ma.s = sh;
    ma.v = v;
    ma.out = (int *)out;
    ma.n = n;
    size_t ma_size = offsetof(struct mixed_args, n) + sizeof ma.n;
    void *extra2[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &ma, CU_LAUNCH_PARAM_BUFFER_SIZE, &ma_size,
                      CU_LAUNCH_PARAM_END};
    CHECK_CU(p_cuLaunchKernel(f_mixed, GRID, 1, 1, BLOCK, 1, 1, 0, s, NULL, extra2));
    PROG_DRV();

    CHECK_CU(p_cuStreamSynchronize(s));
    CHECK_CU(p_cuMemcpyDtoH(hy, y, sizeof hy));
    CHECK_CU(p_cuMemcpyDtoH(hout, out, sizeof hout));
    printf("iter %d: y %016llx out %016llx\n", it, (unsigned long long)prog_hash(hy, sizeof hy),
           (unsigned long long)prog_hash(hout, sizeof hout));
  }
  prog_print_floats("y", hy, N);
  printf("out: first=%d last=%d\n", hout[0], hout[N - 1]);

  CHECK_CU(p_cuMemFree(x));
  CHECK_CU(p_cuMemFree(y));
  CHECK_CU(p_cuMemFree(out));
  CHECK_CU(p_cuStreamDestroy(s));
  CHECK_CU(p_cuLibraryUnload(lib));
  CHECK_CU(p_cuModuleUnload(mod));
  CHECK_CU(p_cuDevicePrimaryCtxRelease(dev));
  free(cubin);
  free(zfat);
  prog_print_launches();
  return 0;
}
