/* common_drv.c — the way of the simulated cuBLAS and cuBLASLt to the driver.
 *
 * Like the real libraries (whose embedded static runtime does this), they do not link libcuda:
 * on first use they dlopen libcuda.so.1, take only cuGetProcAddress_v2 with dlsym and fetch every
 * other driver function through it, then load their embedded device code with cuModuleLoadData
 * and launch its kernels with cuLaunchKernel on the caller's stream. A preloaded interposer
 * therefore sees cuBLAS's launches as driver launches, as it would with the real libraries.
 * The module is loaded once, in the context current at the first call (PyTorch uses the primary
 * context of device 0; the simulated device has no other).
 */
#include "cublas/common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char cublassim_fatbin[];

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

static struct {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*primary_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_get)(CUcontext *);
  CUresult (*ctx_set)(CUcontext);
  CUresult (*module_load)(CUmodule *, const void *);
  CUresult (*module_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void **, void **);
} drv;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ready = -1;
static CUfunction fn_blas, fn_lt;

static void load(void) {
  static const struct {
    const char *name;
    int version;
    void **slot;
  } want[] = {
      {"cuInit", 2000, (void **)&drv.init},
      {"cuDeviceGet", 2000, (void **)&drv.device_get},
      {"cuDevicePrimaryCtxRetain", 7000, (void **)&drv.primary_retain},
      {"cuCtxGetCurrent", 4000, (void **)&drv.ctx_get},
      {"cuCtxSetCurrent", 4000, (void **)&drv.ctx_set},
      {"cuModuleLoadData", 2000, (void **)&drv.module_load},
      {"cuModuleGetFunction", 2000, (void **)&drv.module_function},
      {"cuLaunchKernel", 4000, (void **)&drv.launch},
  };
  /* Never closed: the library may be called until the process ends. */
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  getproc_fn getproc = (getproc_fn)dlsym(lib, "cuGetProcAddress_v2");
  if (!getproc) return;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *want[i].slot = NULL;
    if (getproc(want[i].name, want[i].slot, want[i].version, CU_GET_PROC_ADDRESS_DEFAULT,
                &found) != CUDA_SUCCESS || !*want[i].slot)
      return;
  }
  if (drv.init(0) != CUDA_SUCCESS) return;
  CUcontext ctx = NULL;
  if (drv.ctx_get(&ctx) != CUDA_SUCCESS) return;
  if (!ctx) {
    CUdevice dev;
    if (drv.device_get(&dev, 0) || drv.primary_retain(&ctx, dev) || drv.ctx_set(ctx)) return;
  }
  CUmodule mod;
  if (drv.module_load(&mod, cublassim_fatbin) != CUDA_SUCCESS ||
      drv.module_function(&fn_blas, mod, GEMM_K_BLAS) != CUDA_SUCCESS ||
      drv.module_function(&fn_lt, mod, GEMM_K_LT) != CUDA_SUCCESS)
    return;
  ready = 0;
}

int simblas_init(void) {
  pthread_once(&once, load);
  return ready;
}

CUresult simblas_gemm(const char *kname, cudaStream_t s, const gemm_t *p, int batch,
                      const void *A, const void *B, void *C) {
  if (simblas_init()) return CUDA_ERROR_NOT_INITIALIZED;
  long long count = (long long)p->m * p->n;
  if (count <= 0 || batch <= 0) return CUDA_SUCCESS;
  long long blocks = (count + GEMM_BLOCK - 1) / GEMM_BLOCK;
  if (blocks > 0x7fffffffLL || batch > 65535) return CUDA_ERROR_INVALID_VALUE;
  gemm_t params = *p;
  void *args[] = {&params, &A, &B, &C};
  CUfunction f = strcmp(kname, GEMM_K_LT) == 0 ? fn_lt : fn_blas;
  return drv.launch(f, (unsigned)blocks, (unsigned)batch, 1, GEMM_BLOCK, 1, 1, 0, (CUstream)s,
                    args, NULL);
}

int simblas_unsupported(int status, const char *name) {
  if (getenv("SIM_LOG_UNSUPPORTED")) fprintf(stderr, "sim: %s is not simulated\n", name);
  return status;
}
