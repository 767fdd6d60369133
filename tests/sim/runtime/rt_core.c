/* rt_core.c — loading the driver, errors, devices and contexts of the simulated runtime.
 *
 * The driver is found the way libcudart.so.13 finds it: dlopen("libcuda.so.1"), dlsym of
 * cuGetProcAddress_v2 only, then one getter request per (name, version, flags) in
 * RT_DRIVER_FUNCS, and cuInit(0). A failure there is remembered and returned by every later call
 * (cudaErrorInsufficientDriver when no driver can be loaded).
 *
 * Errors: each thread has a last error, set by every failing call, returned and cleared by
 * cudaGetLastError. Device faults (the driver reports CUDA_ERROR_ILLEGAL_ADDRESS and the like)
 * are sticky: they belong to the device the thread was using, are returned by every later call
 * on that device and never cleared, except by cudaDeviceReset.
 *
 * Devices: each thread has a current device (0 until cudaSetDevice); its primary context is
 * retained once and made current on the thread before the first call that needs it. A context
 * already current on the thread when it first calls the runtime (driver API interop) is used.
 */
#include "rt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define RT_MAX_DEVICES 16

rt_drv_t rt_drv[2];

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_err = cudaSuccess;
static atomic_int sticky[RT_MAX_DEVICES]; /* per device: cudaError_t of a device fault, or 0 */
static atomic_uint generation = 1;      /* bumped by cudaDeviceReset: rebinds every thread */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[RT_MAX_DEVICES];
static int device_count = -1;

static __thread cudaError_t tl_last;
static __thread int tl_dev;
static __thread unsigned tl_bound;      /* generation the thread's context was bound in */
static __thread int tl_bound_dev;
static __thread CUcontext tl_ctx;

/* ---- loading ---- */

static void load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    load_err = cudaErrorInsufficientDriver;
    return;
  }
  CUresult (*getproc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
  *(void **)&getproc = dlsym(h, "cuGetProcAddress_v2");
  if (!getproc) {
    load_err = cudaErrorInsufficientDriver;
    return;
  }
  rt_drv[0].getproc = rt_drv[1].getproc = getproc;
  CUdriverProcAddressQueryResult st;
#define RT_FETCH(name, ver, ptver)                                                          \
  if (getproc(#name, (void **)&rt_drv[0].name, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS) \
    rt_drv[0].name = NULL;                                                                  \
  rt_drv[1].name = rt_drv[0].name;                                                          \
  if ((ptver) != 0 && getproc(#name, (void **)&rt_drv[1].name, (ptver),                    \
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) != CUDA_SUCCESS) \
    rt_drv[1].name = NULL;
  RT_DRIVER_FUNCS(RT_FETCH)
#undef RT_FETCH
  if (!rt_drv[0].cuInit) {
    load_err = cudaErrorInsufficientDriver;
    return;
  }
  CUresult r = rt_drv[0].cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) load_err = cudaErrorNoDevice;
  else if (r != CUDA_SUCCESS) load_err = rt_map(r);
  /* A runtime needs a driver of its own major version or newer (minor version compatibility
   * within a major version). */
  int v = 0;
  if (!load_err && rt_drv[0].cuDriverGetVersion && !rt_drv[0].cuDriverGetVersion(&v) &&
      v < CUDART_VERSION / 1000 * 1000)
    load_err = cudaErrorInsufficientDriver;
}

/* ---- errors ---- */

static int is_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchTimeout:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchFailure:
  case cudaErrorAssert:
  case cudaErrorContained:
  case cudaErrorTensorMemoryLeak:
  case cudaErrorExternalDevice:
    return 1;
  default:
    return 0;
  }
}

cudaError_t rt_ret(cudaError_t err) {
  if (err != cudaSuccess) {
    tl_last = err;
    if (is_sticky(err)) {
      int none = 0;
      atomic_compare_exchange_strong(&sticky[tl_dev], &none, (int)err);
    }
  }
  return err;
}

/* The runtime and driver enumerations share their values since CUDA 10; a driver code with no
 * runtime counterpart becomes cudaErrorUnknown. */
cudaError_t rt_map(CUresult r) {
  switch ((int)r) {
#define RT_ERR(name, text) case name:
#include "rt_errors.def"
#undef RT_ERR
    return (cudaError_t)r;
  default:
    return cudaErrorUnknown;
  }
}

const char *CUDARTAPI cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define RT_ERR(name, text)                                                                  \
  case name:                                                                                \
    return #name;
#include "rt_errors.def"
#undef RT_ERR
  default:
    return "cudaErrorUnknown";
  }
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error) {
  switch (error) {
#define RT_ERR(name, text)                                                                  \
  case name:                                                                                \
    return text;
#include "rt_errors.def"
#undef RT_ERR
  default:
    return "unrecognized error code";
  }
}

cudaError_t CUDARTAPI cudaGetLastError(void) {
  int s = atomic_load(&sticky[tl_dev]);
  if (s) return (cudaError_t)s;
  cudaError_t e = tl_last;
  tl_last = cudaSuccess;
  return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
  int s = atomic_load(&sticky[tl_dev]);
  return s ? (cudaError_t)s : tl_last;
}

/* ---- contexts ---- */

cudaError_t rt_primary_ctx(int dev, CUcontext *out) {
  cudaError_t e = cudaSuccess;
  if (dev < 0 || dev >= RT_MAX_DEVICES) return cudaErrorInvalidDevice;
  pthread_mutex_lock(&ctx_lock);
  if (!primary[dev]) {
    CUdevice d;
    e = RT_CU(0, cuDeviceGet, &d, dev);
    if (e == cudaSuccess) e = RT_CU(0, cuDevicePrimaryCtxRetain, &primary[dev], d);
  }
  *out = primary[dev];
  pthread_mutex_unlock(&ctx_lock);
  return e;
}

static cudaError_t bind_ctx(void) {
  unsigned gen = atomic_load(&generation);
  if (tl_bound == gen && tl_bound_dev == tl_dev) return cudaSuccess;
  if (tl_bound == 0) {
    /* First call on this thread: a context the program made current itself is used as is. */
    CUcontext cur = NULL;
    CUdevice d;
    if (RT_CU(0, cuCtxGetCurrent, &cur) == cudaSuccess && cur &&
        RT_CU(0, cuCtxGetDevice, &d) == cudaSuccess) {
      tl_dev = tl_bound_dev = (int)d;
      tl_ctx = cur;
      tl_bound = gen;
      return cudaSuccess;
    }
  }
  CUcontext c;
  cudaError_t e = rt_primary_ctx(tl_dev, &c);
  if (e == cudaSuccess) e = RT_CU(0, cuCtxSetCurrent, c);
  if (e != cudaSuccess) return e;
  tl_ctx = c;
  tl_bound = gen;
  tl_bound_dev = tl_dev;
  return cudaSuccess;
}

CUcontext rt_current_ctx(void) { return tl_ctx; }

cudaError_t rt_ready(int want_ctx) {
  pthread_once(&load_once, load);
  if (load_err != cudaSuccess) return load_err;
  int s = atomic_load(&sticky[tl_dev]);
  if (s) return (cudaError_t)s;
  return want_ctx ? bind_ctx() : cudaSuccess;
}

/* ---- devices ---- */

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count) {
  RT_BEGIN_NOCTX("cudaGetDeviceCount", cudaErrorNoDevice);
  if (!count) return rt_ret(cudaErrorInvalidValue);
  if (device_count < 0) {
    int n = 0;
    cudaError_t e = RT_CU(0, cuDeviceGetCount, &n);
    if (e != cudaSuccess) return rt_ret(e);
    device_count = n;
  }
  *count = device_count;
  return cudaSuccess;
}

static cudaError_t check_device(int dev) {
  int n;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return e;
  return dev >= 0 && dev < n && dev < RT_MAX_DEVICES ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t CUDARTAPI cudaGetDevice(int *device) {
  RT_BEGIN_NOCTX("cudaGetDevice", cudaErrorInvalidValue);
  if (!device) return rt_ret(cudaErrorInvalidValue);
  *device = tl_dev;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
  RT_BEGIN_NOCTX("cudaSetDevice", cudaErrorInvalidDevice);
  cudaError_t e = check_device(device);
  if (e != cudaSuccess) return rt_ret(e);
  tl_dev = device;
  /* cudaSetDevice initialises the device's primary context at once (CUDA 12+). */
  return rt_ret(bind_ctx());
}

cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int flags) {
  RT_BEGIN_NOCTX("cudaSetDeviceFlags", cudaErrorInvalidValue);
  CUdevice d;
  cudaError_t e = RT_CU(0, cuDeviceGet, &d, tl_dev);
  /* cudaDeviceMapHost is always on; the driver takes the scheduling flags. */
  if (e == cudaSuccess) e = RT_CU(0, cuDevicePrimaryCtxSetFlags, d, flags & ~(unsigned)cudaDeviceMapHost);
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  RT_BEGIN_NOCTX("cudaDeviceGetAttribute", cudaErrorInvalidValue);
  if (!value) return rt_ret(cudaErrorInvalidValue);
  cudaError_t e = check_device(device);
  CUdevice d;
  if (e == cudaSuccess) e = RT_CU(0, cuDeviceGet, &d, device);
  /* cudaDeviceAttr and CUdevice_attribute share their values. */
  if (e == cudaSuccess) e = RT_CU(0, cuDeviceGetAttribute, value, (CUdevice_attribute)attr, d);
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  RT_BEGIN_NOCTX("cudaGetDeviceProperties", cudaErrorInvalidValue);
  if (!prop) return rt_ret(cudaErrorInvalidValue);
  cudaError_t e = check_device(device);
  CUdevice d;
  if (e == cudaSuccess) e = RT_CU(0, cuDeviceGet, &d, device);
  if (e != cudaSuccess) return rt_ret(e);
  memset(prop, 0, sizeof *prop);
  e = RT_CU(0, cuDeviceGetName, prop->name, (int)sizeof prop->name, d);
  size_t total = 0;
  if (e == cudaSuccess) e = RT_CU(0, cuDeviceTotalMem, &total, d);
  if (e != cudaSuccess) return rt_ret(e);
  prop->totalGlobalMem = total;
  int v;
  /* Attributes the driver does not know are left 0, as a property the device lacks. */
#define RT_PROP(field, attr)                                                                \
  if (RT_CU(0, cuDeviceGetAttribute, &v, attr, d) == cudaSuccess) prop->field = v;
  RT_PROP(sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
  RT_PROP(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
  RT_PROP(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE)
  RT_PROP(memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH)
  RT_PROP(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
  RT_PROP(maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)
  RT_PROP(maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)
  RT_PROP(maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
  RT_PROP(maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)
  RT_PROP(maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)
  RT_PROP(maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)
  RT_PROP(totalConstMem, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)
  RT_PROP(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
  RT_PROP(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
  RT_PROP(textureAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)
  RT_PROP(multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
  RT_PROP(integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED)
  RT_PROP(canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
  RT_PROP(concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)
  RT_PROP(ECCEnabled, CU_DEVICE_ATTRIBUTE_ECC_ENABLED)
  RT_PROP(pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
  RT_PROP(pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
  RT_PROP(pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
  RT_PROP(asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
  RT_PROP(unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
  RT_PROP(memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
  RT_PROP(l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
  RT_PROP(maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
  RT_PROP(streamPrioritiesSupported, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED)
  RT_PROP(sharedMemPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
  RT_PROP(regsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)
  RT_PROP(managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)
  RT_PROP(concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
  RT_PROP(cooperativeLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
  RT_PROP(sharedMemPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
  RT_PROP(maxBlocksPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
  RT_PROP(reservedSharedMemPerBlock, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
  RT_PROP(memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
#undef RT_PROP
#if CUDART_VERSION < 13000
  rt12_props(prop, d);
#endif
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  RT_BEGIN("cudaDeviceSynchronize", cudaErrorUnknown);
  return rt_ret(RT_CU(0, cuCtxSynchronize));
}

cudaError_t CUDARTAPI cudaDeviceReset(void) {
  if (simc_should_fail("cudaDeviceReset")) return rt_ret(cudaErrorInvalidValue);
  pthread_once(&load_once, load);
  if (load_err != cudaSuccess) return rt_ret(load_err);
  CUdevice d;
  cudaError_t e = RT_CU(0, cuDeviceGet, &d, tl_dev);
  if (e == cudaSuccess) e = RT_CU(0, cuDevicePrimaryCtxReset, d);
  if (e != cudaSuccess) return rt_ret(e);
  /* The device starts over: no fault, and every thread binds the context again. */
  pthread_mutex_lock(&ctx_lock);
  primary[tl_dev] = NULL;
  pthread_mutex_unlock(&ctx_lock);
  atomic_store(&sticky[tl_dev], 0);
  atomic_fetch_add(&generation, 1);
  tl_last = cudaSuccess;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int *driverVersion) {
  if (simc_should_fail("cudaDriverGetVersion")) return rt_ret(cudaErrorInvalidValue);
  if (!driverVersion) return rt_ret(cudaErrorInvalidValue);
  pthread_once(&load_once, load);
  /* Without a driver the documented answer is 0, with success. */
  if (!rt_drv[0].cuDriverGetVersion) {
    *driverVersion = 0;
    return cudaSuccess;
  }
  return rt_ret(RT_CU(0, cuDriverGetVersion, driverVersion));
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *runtimeVersion) {
  if (simc_should_fail("cudaRuntimeGetVersion")) return rt_ret(cudaErrorInvalidValue);
  if (!runtimeVersion) return rt_ret(cudaErrorInvalidValue);
  *runtimeVersion = RT_VERSION;
  return cudaSuccess;
}

/* ---- driver entry points ---- */

static cudaError_t entry_point(int pt, const char *symbol, void **funcPtr, unsigned version,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *status) {
  if (!symbol || !funcPtr) return cudaErrorInvalidValue;
  /* cudaEnableDefault follows how the caller was built: the _ptsz entry points are per-thread. */
  cuuint64_t f = flags == cudaEnableDefault && pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                  : (cuuint64_t)flags;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r = rt_drv[0].getproc(symbol, funcPtr, (int)version, f, &st);
  if (status) *status = (enum cudaDriverEntryPointQueryResult)st;
  return rt_map(r);
}

static cudaError_t rt_cudaGetDriverEntryPoint(int pt, const char *symbol, void **funcPtr,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *status) {
  RT_BEGIN_NOCTX("cudaGetDriverEntryPoint", cudaErrorInvalidValue);
  return rt_ret(entry_point(pt, symbol, funcPtr, RT_VERSION, flags, status));
}
RT_DUAL(cudaGetDriverEntryPoint, _ptsz,
        (const char *symbol, void **funcPtr, unsigned long long flags,
         enum cudaDriverEntryPointQueryResult *driverStatus),
        (symbol, funcPtr, flags, driverStatus))

static cudaError_t rt_cudaGetDriverEntryPointByVersion(
    int pt, const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *status) {
  RT_BEGIN_NOCTX("cudaGetDriverEntryPointByVersion", cudaErrorInvalidValue);
  return rt_ret(entry_point(pt, symbol, funcPtr, cudaVersion, flags, status));
}
RT_DUAL(cudaGetDriverEntryPointByVersion, _ptsz,
        (const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
         enum cudaDriverEntryPointQueryResult *driverStatus),
        (symbol, funcPtr, cudaVersion, flags, driverStatus))
