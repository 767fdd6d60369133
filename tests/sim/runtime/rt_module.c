/* rt_module.c — registration of nvcc-compiled device code, kernel launches and function queries.
 *
 * nvcc 13 registers each translation unit's fatbin from a constructor
 * (__cudaRegisterFatBinary with the 0x466243B1 wrapper, then __cudaRegisterFunction per kernel:
 * host stub → device name, __cudaRegisterVar/ManagedVar per device global) and launches with
 * __cudaGetKernel(&handle, stub) once, then __cudaLaunchKernel[_ptsz](handle, …).
 *
 * A fatbin is loaded into the driver with cuLibraryLoadData at the first use of one of its
 * kernels, and each kernel is looked up with cuLibraryGetKernel; the cudaKernel_t handed out is
 * that CUkernel, and launches pass it, cast to CUfunction, to the getter-fetched cuLaunchKernel
 * (cuLaunchKernelEx, cuLaunchCooperativeKernel). Argument pointers pass through unchanged. A stub
 * that was never registered is cudaErrorInvalidDeviceFunction.
 *
 * Device globals are backed by host memory: the host shadow variable nvcc emits for each
 * __device__/__constant__ variable (the memory a kernel's CPU twin sees when it names the
 * variable), and a zeroed host block for each __managed__ one. Symbol copies go through the
 * driver's unified-address copies. A symbol's storage is declared to the driver as device memory
 * (simctl_symbol_track) when the runtime first resolves it, so that those copies, and copies
 * through its cudaGetSymbolAddress pointer, follow stream order as device copies do, instead
 * of being taken for pageable host memory (whose copies to device memory read it at the call).
 */
#include "rt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RT_FATBIN_MAGIC 0x466243B1u
#define RT_NBUCKETS 4096

typedef struct rt_fatbin {
  const void *data;        /* the fatbin container (first member: handles are void **) */
  CUlibrary lib;
  int dead;
  struct rt_fatbin *next_dead; /* unregistered ones stay reachable: their library is kept */
} rt_fatbin_t;

static rt_fatbin_t *dead_fatbins;

typedef struct rt_func {
  const void *stub;
  const char *name;
  rt_fatbin_t *fb;
  _Atomic(CUkernel) kernel;
  struct rt_func *next;    /* hash chain by stub */
} rt_func_t;

typedef struct rt_var {
  const void *host;        /* the symbol as the program names it */
  void *dev;               /* its storage */
  size_t size;
  int tracked;             /* declared to the driver as device memory (under mod_lock) */
  rt_fatbin_t *fb;
  struct rt_var *next;
} rt_var_t;

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_func_t *funcs[RT_NBUCKETS];
static rt_var_t *vars[RT_NBUCKETS];

static size_t bucket(const void *p) { return ((uintptr_t)p >> 4) * 2654435761u % RT_NBUCKETS; }

/* ---- the driver's view of symbol storage ---- */

/* The simulated driver's simctl_symbol_track/untrack (tests/sim/driver/drv.h), or NULL. */
static void *simctl(const char *name) { return dlsym(RTLD_DEFAULT, name); }

static void symbol_untrack(const void *p) {
  void (*fn)(const void *);
  *(void **)&fn = simctl("simctl_symbol_untrack");
  if (fn) fn(p);
}

/* Declares v's storage to the driver once (mod_lock held). */
static void symbol_track(rt_var_t *v) {
  int (*fn)(const void *, size_t);
  if (v->tracked || v->size == 0) return;
  *(void **)&fn = simctl("simctl_symbol_track");
  v->tracked = fn && fn(v->dev, v->size) == 0;
}

/* ---- registration ---- */

void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin) {
  const struct { int magic, version; const void *data; void *extra; } *w = fatCubin;
  rt_fatbin_t *fb = calloc(1, sizeof *fb);
  if (!fb) return NULL;
  /* A wrapper with another magic is kept as raw image data, as the real runtime accepts both. */
  fb->data = w && (unsigned)w->magic == RT_FATBIN_MAGIC ? w->data : fatCubin;
  return (void **)fb;
}

void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle) { (void)fatCubinHandle; }

void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle) {
  rt_fatbin_t *fb = (rt_fatbin_t *)fatCubinHandle;
  if (!fb) return;
  pthread_mutex_lock(&mod_lock);
  for (size_t b = 0; b < RT_NBUCKETS; b++) {
    for (rt_func_t **p = &funcs[b]; *p;) {
      rt_func_t *f = *p;
      if (f->fb == fb) {
        *p = f->next;
        free(f);
      } else {
        p = &f->next;
      }
    }
    for (rt_var_t **p = &vars[b]; *p;) {
      rt_var_t *v = *p;
      if (v->fb == fb) {
        *p = v->next;
        if (v->tracked) symbol_untrack(v->dev);
        free(v);
      } else {
        p = &v->next;
      }
    }
  }
  /* The library stays loaded: this runs from atexit, when the driver may already be shutting
   * down, and the kernels may still be referenced by instantiated graphs. */
  fb->dead = 1;
  fb->next_dead = dead_fatbins;
  dead_fatbins = fb;
  pthread_mutex_unlock(&mod_lock);
}

void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                      const char *deviceName, int thread_limit, uint3 *tid,
                                      uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
  (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
  rt_func_t *f = calloc(1, sizeof *f);
  if (!f) return;
  f->stub = hostFun;
  f->name = deviceName;
  f->fb = (rt_fatbin_t *)fatCubinHandle;
  pthread_mutex_lock(&mod_lock);
  size_t b = bucket(hostFun);
  f->next = funcs[b];
  funcs[b] = f;
  pthread_mutex_unlock(&mod_lock);
}

static void add_var(void **handle, const void *host, void *dev, size_t size) {
  rt_var_t *v = calloc(1, sizeof *v);
  if (!v) return;
  v->host = host;
  v->dev = dev;
  v->size = size;
  v->fb = (rt_fatbin_t *)handle;
  pthread_mutex_lock(&mod_lock);
  size_t b = bucket(host);
  v->next = vars[b];
  vars[b] = v;
  pthread_mutex_unlock(&mod_lock);
}

void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                 const char *deviceName, int ext, size_t size, int constant,
                                 int global) {
  (void)deviceAddress, (void)deviceName, (void)ext, (void)constant, (void)global;
  add_var(fatCubinHandle, hostVar, hostVar, size);
}

void CUDARTAPI __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                        char *deviceAddress, const char *deviceName, int ext,
                                        size_t size, int constant, int global) {
  (void)deviceAddress, (void)deviceName, (void)ext, (void)constant, (void)global;
  void *mem = calloc(1, size ? size : 1);
  if (!mem) return;
  *hostVarPtrAddress = mem;
  /* Host code names a managed variable through that pointer, so the symbol a program passes is
   * the block itself. */
  add_var(fatCubinHandle, mem, mem, size);
}

char CUDARTAPI __cudaInitModule(void **fatCubinHandle) {
  (void)fatCubinHandle;
  return 1;
}

/* Textures and surfaces are not simulated; registering one is harmless. */
struct textureReference;
struct surfaceReference;
void CUDARTAPI __cudaRegisterTexture(void **h, const struct textureReference *hostVar,
                                     const void **deviceAddress, const char *deviceName, int dim,
                                     int norm, int ext) {
  (void)h, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)dim, (void)norm, (void)ext;
}

void CUDARTAPI __cudaRegisterSurface(void **h, const struct surfaceReference *hostVar,
                                     const void **deviceAddress, const char *deviceName, int dim,
                                     int ext) {
  (void)h, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)dim, (void)ext;
}

/* ---- lookups ---- */

static rt_func_t *find_func(const void *stub) {
  pthread_mutex_lock(&mod_lock);
  rt_func_t *f = funcs[bucket(stub)];
  while (f && f->stub != stub) f = f->next;
  pthread_mutex_unlock(&mod_lock);
  return f;
}

static rt_func_t *find_func_by_kernel(CUkernel k) {
  if (!k) return NULL;
  pthread_mutex_lock(&mod_lock);
  rt_func_t *hit = NULL;
  for (size_t b = 0; b < RT_NBUCKETS && !hit; b++)
    for (rt_func_t *f = funcs[b]; f && !hit; f = f->next)
      if (atomic_load(&f->kernel) == k) hit = f;
  pthread_mutex_unlock(&mod_lock);
  return hit;
}

const void *rt_stub_of(CUkernel k) {
  rt_func_t *f = find_func_by_kernel(k);
  return f ? f->stub : NULL;
}

static cudaError_t load_kernel(rt_func_t *f, CUkernel *out) {
  CUkernel k = atomic_load(&f->kernel);
  if (k) {
    *out = k;
    return cudaSuccess;
  }
  cudaError_t e = cudaSuccess;
  pthread_mutex_lock(&mod_lock);
  rt_fatbin_t *fb = f->fb;
  if (!fb->lib) e = RT_CU(0, cuLibraryLoadData, &fb->lib, fb->data, NULL, NULL, 0, NULL, NULL, 0);
  if (e == cudaSuccess && !(k = atomic_load(&f->kernel))) {
    CUresult r = rt_drv[0].cuLibraryGetKernel ? rt_drv[0].cuLibraryGetKernel(&k, fb->lib, f->name)
                                              : CUDA_ERROR_NOT_SUPPORTED;
    /* A kernel missing from the image is an invalid device function to the runtime. */
    e = r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction : rt_map(r);
    if (e == cudaSuccess) atomic_store(&f->kernel, k);
  }
  pthread_mutex_unlock(&mod_lock);
  if (e == cudaSuccess) *out = k;
  return e;
}

cudaError_t rt_kernel_of(const void *func, CUkernel *out) {
  if (!func) return cudaErrorInvalidDeviceFunction;
  rt_func_t *f = find_func(func);
  if (f) return load_kernel(f, out);
  /* Since CUDA 12 a cudaKernel_t is accepted wherever a stub is. */
  if (find_func_by_kernel((CUkernel)func)) {
    *out = (CUkernel)func;
    return cudaSuccess;
  }
  return cudaErrorInvalidDeviceFunction;
}

static rt_var_t *find_var(const void *symbol) {
  pthread_mutex_lock(&mod_lock);
  rt_var_t *v = vars[bucket(symbol)];
  while (v && v->host != symbol) v = v->next;
  pthread_mutex_unlock(&mod_lock);
  return v;
}

/* The storage of a device symbol, range-checked: cudaErrorInvalidSymbol if unknown. */
cudaError_t rt_symbol(const void *symbol, size_t offset, size_t count, char **out, size_t *size);
cudaError_t rt_symbol(const void *symbol, size_t offset, size_t count, char **out, size_t *size) {
  rt_var_t *v = find_var(symbol);
  if (!v) return cudaErrorInvalidSymbol;
  pthread_mutex_lock(&mod_lock);
  symbol_track(v);
  pthread_mutex_unlock(&mod_lock);
  if (offset > v->size || count > v->size - offset) return cudaErrorInvalidValue;
  *out = (char *)v->dev + offset;
  if (size) *size = v->size;
  return cudaSuccess;
}

/* ---- call configuration ---- */

typedef struct rt_config {
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
} rt_config_t;

#define RT_CONFIG_DEPTH 32
static __thread rt_config_t configs[RT_CONFIG_DEPTH];
static __thread int nconfigs;

unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                               struct CUstream_st *stream);
unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                               struct CUstream_st *stream) {
  if (nconfigs == RT_CONFIG_DEPTH) return 1;
  configs[nconfigs++] = (rt_config_t){gridDim, blockDim, sharedMem, stream};
  return 0;
}

cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                 void *stream);
cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                 void *stream) {
  if (nconfigs == 0) return cudaErrorMissingConfiguration;
  rt_config_t *c = &configs[--nconfigs];
  *gridDim = c->grid;
  *blockDim = c->block;
  *sharedMem = c->shmem;
  *(cudaStream_t *)stream = c->stream;
  return cudaSuccess;
}

/* ---- launches ---- */

/* The driver reports an impossible launch shape as an invalid value; the runtime calls it an
 * invalid configuration. */
static cudaError_t launch_result(cudaError_t e) {
  return e == cudaErrorInvalidValue ? cudaErrorInvalidConfiguration : e;
}

static cudaError_t launch(int pt, CUkernel k, dim3 g, dim3 b, void **args, size_t shmem,
                          cudaStream_t s, int coop) {
  if (coop)
    return launch_result(RT_CU(pt, cuLaunchCooperativeKernel, (CUfunction)k, g.x, g.y, g.z, b.x,
                               b.y, b.z, (unsigned)shmem, s, args));
  return launch_result(RT_CU(pt, cuLaunchKernel, (CUfunction)k, g.x, g.y, g.z, b.x, b.y, b.z,
                             (unsigned)shmem, s, args, NULL));
}

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *func) {
  RT_BEGIN("__cudaGetKernel", cudaErrorInvalidDeviceFunction);
  if (!kernel) return rt_ret(cudaErrorInvalidValue);
  CUkernel k;
  cudaError_t e = rt_kernel_of(func, &k);
  if (e == cudaSuccess) *kernel = (cudaKernel_t)k;
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr) {
  RT_BEGIN("cudaGetKernel", cudaErrorInvalidDeviceFunction);
  if (!kernelPtr) return rt_ret(cudaErrorInvalidValue);
  CUkernel k;
  cudaError_t e = rt_kernel_of(entryFuncAddr, &k);
  if (e == cudaSuccess) *kernelPtr = (cudaKernel_t)k;
  return rt_ret(e);
}

static cudaError_t rt___cudaLaunchKernel(int pt, cudaKernel_t kernel, dim3 g, dim3 b, void **args,
                                         size_t shmem, cudaStream_t s) {
  RT_BEGIN("__cudaLaunchKernel", cudaErrorLaunchOutOfResources);
  /* nvcc ignores a failed __cudaGetKernel and launches a null handle. */
  if (!kernel) return rt_ret(cudaErrorInvalidDeviceFunction);
  return rt_ret(launch(pt, (CUkernel)kernel, g, b, args, shmem, s, 0));
}
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                         void **args, size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                              void **args, size_t sharedMem, cudaStream_t stream);
RT_DUAL(__cudaLaunchKernel, _ptsz,
        (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
         cudaStream_t stream),
        (kernel, gridDim, blockDim, args, sharedMem, stream))

static cudaError_t launch_stub(int pt, const char *api, const void *func, dim3 g, dim3 b,
                               void **args, size_t shmem, cudaStream_t s, int coop) {
  RT_BEGIN(api, cudaErrorLaunchOutOfResources);
  CUkernel k;
  cudaError_t e = rt_kernel_of(func, &k);
  if (e == cudaSuccess) e = launch(pt, k, g, b, args, shmem, s, coop);
  return rt_ret(e);
}

static cudaError_t rt_cudaLaunchKernel(int pt, const void *func, dim3 g, dim3 b, void **args,
                                       size_t shmem, cudaStream_t s) {
  return launch_stub(pt, "cudaLaunchKernel", func, g, b, args, shmem, s, 0);
}
RT_DUAL(cudaLaunchKernel, _ptsz,
        (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
         cudaStream_t stream),
        (func, gridDim, blockDim, args, sharedMem, stream))

static cudaError_t rt_cudaLaunchCooperativeKernel(int pt, const void *func, dim3 g, dim3 b,
                                                  void **args, size_t shmem, cudaStream_t s) {
  return launch_stub(pt, "cudaLaunchCooperativeKernel", func, g, b, args, shmem, s, 1);
}
RT_DUAL(cudaLaunchCooperativeKernel, _ptsz,
        (const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
         cudaStream_t stream),
        (func, gridDim, blockDim, args, sharedMem, stream))

_Static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute),
               "runtime and driver launch attributes share their layout");

static cudaError_t rt_cudaLaunchKernelExC(int pt, const cudaLaunchConfig_t *config,
                                          const void *func, void **args) {
  RT_BEGIN("cudaLaunchKernelExC", cudaErrorLaunchOutOfResources);
  if (!config) return rt_ret(cudaErrorInvalidValue);
  CUkernel k;
  cudaError_t e = rt_kernel_of(func, &k);
  if (e != cudaSuccess) return rt_ret(e);
  CUlaunchConfig c = {
      .gridDimX = config->gridDim.x, .gridDimY = config->gridDim.y,
      .gridDimZ = config->gridDim.z, .blockDimX = config->blockDim.x,
      .blockDimY = config->blockDim.y, .blockDimZ = config->blockDim.z,
      .sharedMemBytes = (unsigned)config->dynamicSmemBytes, .hStream = config->stream,
      .attrs = (CUlaunchAttribute *)config->attrs, .numAttrs = config->numAttrs,
  };
  return rt_ret(launch_result(RT_CU(pt, cuLaunchKernelEx, &c, (CUfunction)k, args, NULL)));
}
RT_DUAL(cudaLaunchKernelExC, _ptsz, (const cudaLaunchConfig_t *config, const void *func, void **args),
        (config, func, args))

/* ---- function queries ---- */

cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr) {
  RT_BEGIN("cudaGetFuncBySymbol", cudaErrorInvalidDeviceFunction);
  if (!functionPtr) return rt_ret(cudaErrorInvalidValue);
  CUkernel k;
  cudaError_t e = rt_kernel_of(symbolPtr, &k);
  CUfunction f = NULL;
  if (e == cudaSuccess) e = RT_CU(0, cuKernelGetFunction, &f, k);
  if (e == cudaSuccess) *functionPtr = (cudaFunction_t)f;
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaFuncGetName(const char **name, const void *func) {
  RT_BEGIN_NOCTX("cudaFuncGetName", cudaErrorInvalidDeviceFunction);
  if (!name) return rt_ret(cudaErrorInvalidValue);
  rt_func_t *f = func ? find_func(func) : NULL;
  if (!f) f = find_func_by_kernel((CUkernel)func);
  if (!f) return rt_ret(cudaErrorInvalidDeviceFunction);
  *name = f->name;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
  RT_BEGIN("cudaFuncGetAttributes", cudaErrorInvalidDeviceFunction);
  if (!attr) return rt_ret(cudaErrorInvalidValue);
  CUkernel k;
  cudaError_t e = rt_kernel_of(func, &k);
  if (e != cudaSuccess) return rt_ret(e);
  CUdevice dev;
  e = RT_CU(0, cuCtxGetDevice, &dev);
  if (e != cudaSuccess) return rt_ret(e);
  memset(attr, 0, sizeof *attr);
  int v;
#define RT_FATTR(field, a)                                                                  \
  e = RT_CU(0, cuKernelGetAttribute, &v, a, k, dev);                                        \
  if (e != cudaSuccess) return rt_ret(e);                                                   \
  attr->field = v;
  RT_FATTR(maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
  RT_FATTR(sharedSizeBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
  RT_FATTR(constSizeBytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)
  RT_FATTR(localSizeBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
  RT_FATTR(numRegs, CU_FUNC_ATTRIBUTE_NUM_REGS)
  RT_FATTR(ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION)
  RT_FATTR(binaryVersion, CU_FUNC_ATTRIBUTE_BINARY_VERSION)
  RT_FATTR(cacheModeCA, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA)
  RT_FATTR(maxDynamicSharedSizeBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
  RT_FATTR(preferredShmemCarveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
#undef RT_FATTR
  return cudaSuccess;
}

/* Occupancy is the driver's answer for the function's CUkernel (the simulated driver takes a
 * CUkernel wherever a CUfunction goes); the flags have the CU_OCCUPANCY_* values. */
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  RT_BEGIN("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", cudaErrorInvalidValue);
  if (!numBlocks) return rt_ret(cudaErrorInvalidValue);
  CUkernel k;
  cudaError_t e = rt_kernel_of(func, &k);
  if (e != cudaSuccess) return rt_ret(e);
  return rt_ret(RT_CU(0, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, numBlocks,
                      (CUfunction)k, blockSize, dynamicSMemSize, flags));
}

cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks,
                                                                    const void *func,
                                                                    int blockSize,
                                                                    size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize,
                                                                cudaOccupancyDefault);
}

cudaError_t CUDARTAPI cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr,
                                           int value) {
  RT_BEGIN("cudaFuncSetAttribute", cudaErrorInvalidValue);
  CUkernel k;
  cudaError_t e = rt_kernel_of(func, &k);
  CUdevice dev;
  if (e == cudaSuccess) e = RT_CU(0, cuCtxGetDevice, &dev);
  /* cudaFuncAttribute and CUfunction_attribute share their values. */
  if (e == cudaSuccess)
    e = RT_CU(0, cuKernelSetAttribute, (CUfunction_attribute)attr, value, k, dev);
  return rt_ret(e);
}
