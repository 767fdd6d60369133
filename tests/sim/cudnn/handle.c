/* handle.c — library state of the simulated cuDNN: version queries, status strings, handles,
 * and the way to the driver.
 *
 * Like real cuDNN (whose embedded static runtime does this), the library does not link
 * libcuda: on first use it dlopens libcuda.so.1, takes only cuGetProcAddress_v2 from it with
 * dlsym, and fetches every other driver function through that getter, with the versions the
 * real runtime asks for. A preloaded interposer therefore sees exactly the calls it would see
 * from real cuDNN. Each handle loads the embedded device code (fatbin.S) into the context
 * current at cudnnCreate — the primary context of device 0 is made current first when there is
 * none, as the runtime would — and launches its kernels with cuLaunchKernel on its stream.
 * cudnnDestroy synchronises the context before unloading the module, as cuDNN documents.
 */
#include "dnn.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* The fatbin container of kernels.cu, embedded by fatbin.S. */
extern const unsigned char cudnnsim_fatbin[];

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

static struct {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*primary_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_get)(CUcontext *);
  CUresult (*ctx_set)(CUcontext);
  CUresult (*ctx_push)(CUcontext);
  CUresult (*ctx_pop)(CUcontext *);
  CUresult (*ctx_sync)(void);
  CUresult (*module_load)(CUmodule *, const void *);
  CUresult (*module_unload)(CUmodule);
  CUresult (*module_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void **, void **);
} drv;

static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static cudnnStatus_t drv_status = CUDNN_STATUS_NOT_INITIALIZED;

static void drv_load(void) {
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
      {"cuCtxPushCurrent", 4000, (void **)&drv.ctx_push},
      {"cuCtxPopCurrent", 4000, (void **)&drv.ctx_pop},
      {"cuCtxSynchronize", 2000, (void **)&drv.ctx_sync},
      {"cuModuleLoadData", 2000, (void **)&drv.module_load},
      {"cuModuleUnload", 2000, (void **)&drv.module_unload},
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
                &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS || !*want[i].slot)
      return;
  }
  if (drv.init(0) != CUDA_SUCCESS) return;
  drv_status = CUDNN_STATUS_SUCCESS;
}

/* Makes sure a context is current on this thread, as the runtime inside real cuDNN does
 * lazily: the one already current, else device 0's primary context. */
static cudnnStatus_t current_ctx(CUcontext *out) {
  CUcontext ctx = NULL;
  if (drv.ctx_get(&ctx) != CUDA_SUCCESS) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!ctx) {
    CUdevice dev;
    if (drv.device_get(&dev, 0) != CUDA_SUCCESS || drv.primary_retain(&ctx, dev) != CUDA_SUCCESS ||
        drv.ctx_set(ctx) != CUDA_SUCCESS)
      return CUDNN_STATUS_NOT_INITIALIZED;
  }
  *out = ctx;
  return CUDNN_STATUS_SUCCESS;
}

/* Runs driver calls for handle h in its context: pushes it when another one (or none) is
 * current on this thread. Returns 1 when a push happened and end_ctx must pop. */
static int begin_ctx(cudnnHandle_t h) {
  CUcontext cur = NULL;
  if (drv.ctx_get(&cur) == CUDA_SUCCESS && cur == h->ctx) return 0;
  return drv.ctx_push(h->ctx) == CUDA_SUCCESS;
}

static void end_ctx(int pushed) {
  CUcontext ignored;
  if (pushed) drv.ctx_pop(&ignored);
}

/* ---- Versions and status strings ---- */

/* The version the library reports: SIM_CUDNN_VERSION ("MAJOR.MINOR.PATCH", e.g. 9.26.0, as
 * tools/torch-sim sets it from the cuDNN the installed torch wheel requires, whose check refuses
 * an older minor version), else the headers' CUDNN_MAJOR.CUDNN_MINOR.CUDNN_PATCHLEVEL. A value of
 * another form, or of another major version than the headers', is ignored. */
static void reported_version(int v[3]) {
  v[0] = CUDNN_MAJOR, v[1] = CUDNN_MINOR, v[2] = CUDNN_PATCHLEVEL;
  const char *e = getenv("SIM_CUDNN_VERSION");
  int a, b, c, n = 0;
  if (e && sscanf(e, "%d.%d.%d%n", &a, &b, &c, &n) == 3 && !e[n] && a == CUDNN_MAJOR && b >= 0 &&
      b < 100 && c >= 0 && c < 100)
    v[0] = a, v[1] = b, v[2] = c;
}

size_t cudnnGetVersion(void) {
  int v[3];
  reported_version(v);
  return (size_t)v[0] * 10000 + (size_t)v[1] * 100 + (size_t)v[2];
}

size_t cudnnGetMaxDeviceVersion(void) { return CUDNN_MAX_DEVICE_VERSION; }

size_t cudnnGetCudartVersion(void) { return CUDART_VERSION; }

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int *value) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!value) return CUDNN_STATUS_BAD_PARAM;
  int v[3];
  reported_version(v);
  switch (type) {
  case MAJOR_VERSION: *value = v[0]; break;
  case MINOR_VERSION: *value = v[1]; break;
  case PATCH_LEVEL: *value = v[2]; break;
  default: return CUDNN_STATUS_BAD_PARAM;
  }
  return CUDNN_STATUS_SUCCESS;
}

#define DNN_STATUSES(X)                                                                   \
  X(SUCCESS) X(NOT_INITIALIZED) X(SUBLIBRARY_VERSION_MISMATCH)                            \
  X(SERIALIZATION_VERSION_MISMATCH) X(DEPRECATED) X(LICENSE_ERROR)                        \
  X(RUNTIME_IN_PROGRESS) X(RUNTIME_FP_OVERFLOW) X(SUBLIBRARY_LOADING_FAILED)              \
  X(BAD_PARAM) X(BAD_PARAM_NULL_POINTER) X(BAD_PARAM_MISALIGNED_POINTER)                  \
  X(BAD_PARAM_NOT_FINALIZED) X(BAD_PARAM_OUT_OF_BOUND) X(BAD_PARAM_SIZE_INSUFFICIENT)     \
  X(BAD_PARAM_STREAM_MISMATCH) X(BAD_PARAM_SHAPE_MISMATCH) X(BAD_PARAM_DUPLICATED_ENTRIES) \
  X(BAD_PARAM_ATTRIBUTE_TYPE) X(BAD_PARAM_CUDA_GRAPH_MISMATCH)                            \
  X(BAD_PARAM_DESCRIPTOR_TYPE) X(NOT_SUPPORTED) X(NOT_SUPPORTED_GRAPH_PATTERN)            \
  X(NOT_SUPPORTED_SHAPE) X(NOT_SUPPORTED_DATA_TYPE) X(NOT_SUPPORTED_LAYOUT)               \
  X(NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER) X(NOT_SUPPORTED_INCOMPATIBLE_CUDART)          \
  X(NOT_SUPPORTED_ARCH_MISMATCH) X(NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)            \
  X(NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE) X(NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)     \
  X(NOT_SUPPORTED_PADDING) X(NOT_SUPPORTED_BAD_LAUNCH_PARAM)                              \
  X(NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API) X(NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)           \
  X(INTERNAL_ERROR) X(INTERNAL_ERROR_COMPILATION_FAILED)                                  \
  X(INTERNAL_ERROR_UNEXPECTED_VALUE) X(INTERNAL_ERROR_HOST_ALLOCATION_FAILED)             \
  X(INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) X(INTERNAL_ERROR_BAD_LAUNCH_PARAM)           \
  X(INTERNAL_ERROR_TEXTURE_CREATION_FAILED) X(EXECUTION_FAILED)                           \
  X(EXECUTION_FAILED_CUDA_DRIVER) X(EXECUTION_FAILED_CUBLAS) X(EXECUTION_FAILED_CUDART)   \
  X(EXECUTION_FAILED_CURAND)

const char *cudnnGetErrorString(cudnnStatus_t status) {
  switch ((int)status) {
#define DNN_STATUS_CASE(s)                                                                \
  case CUDNN_STATUS_##s: return "CUDNN_STATUS_" #s;
    DNN_STATUSES(DNN_STATUS_CASE)
#undef DNN_STATUS_CASE
  case 2001: return "CUDNN_STATUS_INVALID_VALUE"; /* the deprecated alias without a twin */
  default: return "CUDNN_UNKNOWN_STATUS_FOUND";
  }
}

/* ---- Handles ---- */

int dnn_handle_ok(cudnnHandle_t h) { return h && h->magic == DNN_MAGIC_HANDLE; }

static const char *const kernel_names[DNN_K_COUNT] = {
    CUDNNSIM_K_CONV,          CUDNNSIM_K_ADD,      CUDNNSIM_K_ACT,
    CUDNNSIM_K_CBA,           CUDNNSIM_K_CONV_BWD_DATA, CUDNNSIM_K_CONV_BWD_FILTER,
    CUDNNSIM_K_BN_TRAIN,      CUDNNSIM_K_BN_INFER, CUDNNSIM_K_BN_BWD,
    CUDNNSIM_K_RNN_FWD,       CUDNNSIM_K_RNN_BWD_GATE, CUDNNSIM_K_RNN_BWD_DX,
    CUDNNSIM_K_RNN_BWD_W,     CUDNNSIM_K_RNN_DROP_INIT, CUDNNSIM_K_OPGRAPH};

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  pthread_once(&drv_once, drv_load);
  if (drv_status != CUDNN_STATUS_SUCCESS) return drv_status;

  cudnnStatus_t st;
  CUcontext ctx;
  if ((st = current_ctx(&ctx)) != CUDNN_STATUS_SUCCESS) return st;
  cudnnHandle_t h = calloc(1, sizeof *h);
  if (!h) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  h->ctx = ctx;
  CUresult rc = drv.module_load(&h->module, cudnnsim_fatbin);
  if (rc != CUDA_SUCCESS) {
    st = rc == CUDA_ERROR_NO_BINARY_FOR_GPU ? CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH
                                            : CUDNN_STATUS_NOT_INITIALIZED;
    goto fail_free;
  }
  for (int k = 0; k < DNN_K_COUNT; k++) {
    if (drv.module_function(&h->fn[k], h->module, kernel_names[k]) != CUDA_SUCCESS) {
      st = CUDNN_STATUS_INTERNAL_ERROR;
      goto fail_unload;
    }
  }
  h->magic = DNN_MAGIC_HANDLE;
  *handle = h;
  return CUDNN_STATUS_SUCCESS;

fail_unload:
  drv.module_unload(h->module);
fail_free:
  free(h);
  return st;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR);
  if (!dnn_handle_ok(handle)) return CUDNN_STATUS_BAD_PARAM;
  /* The module's kernels may still be queued; cuDNN documents that destroying a handle
   * synchronises the device. */
  int pushed = begin_ctx(handle);
  drv.ctx_sync();
  drv.module_unload(handle->module);
  end_ctx(pushed);
  handle->magic = 0;
  free(handle);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_handle_ok(handle)) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *streamId) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_handle_ok(handle) || !streamId) return CUDNN_STATUS_BAD_PARAM;
  *streamId = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t dnn_launch(cudnnHandle_t h, dnn_kernel_t k, long long count, void **args) {
  if (count <= 0) return CUDNN_STATUS_SUCCESS;
  long long blocks = (count + CUDNNSIM_BLOCK - 1) / CUDNNSIM_BLOCK;
  if (blocks > 0x7fffffffLL) return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
  int pushed = begin_ctx(h);
  CUresult rc = drv.launch(h->fn[k], (unsigned)blocks, 1, 1, CUDNNSIM_BLOCK, 1, 1, 0,
                           (CUstream)h->stream, args, NULL);
  end_ctx(pushed);
  return rc == CUDA_SUCCESS ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
}
