/* init.c — initialisation, the device, the primary context and error strings.
 *
 * The simulated machine has SIM_DEVICES identical devices (default 1, at most 16) of compute
 * capability 9.0, each with one context, its primary context; cuCtxCreate is not offered. The
 * current context is a per-thread stack (push/pop/set), as in CUDA. Every call before cuInit
 * returns CUDA_ERROR_NOT_INITIALIZED. Every pair of distinct devices can access each other's
 * memory once cuCtxEnablePeerAccess allows it (as on an NVLink machine).
 * simctl_kernel_fault() lets a CPU twin report a device fault: the context the kernel ran in then
 * carries a sticky CUDA_ERROR_ILLEGAL_ADDRESS that every later call reporting asynchronous errors
 * in that context returns.
 */
#include "drv.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTX_MAGIC 0xC0417E47u
#define CTX_STACK 16

pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t drv_cond = PTHREAD_COND_INITIALIZER;
struct CUctx_st drv_ctxs[DRV_MAX_DEVICES];
int drv_ndev = 1;

static atomic_int initialized;
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;
static __thread CUcontext ctx_stack[CTX_STACK];
static __thread int ctx_depth;

/* A process forked from one that had initialised CUDA cannot use CUDA, and its exit() runs the
 * CUDA runtime's exit handlers, which can wait forever on a lock that another thread of the
 * parent held at the fork: an H200's driver deadlocked so (tests/progs/r-fork.cu, without the
 * preload library). The simulated driver has no such lock to wait on, so it stops the child at
 * exit() with a message instead of letting it pass; _exit() and exec, which run no exit
 * handlers, are what such a child must use (Python's multiprocessing workers do). */
static int forked_after_init;

static void on_fork_child(void) {
  if (atomic_load(&initialized)) forked_after_init = 1;
}

__attribute__((destructor)) static void exit_after_fork(void) {
  if (!forked_after_init) return;
  fprintf(stderr, "sim: exit() in a process forked after CUDA was initialised in its parent: on a "
                  "GPU its exit handlers can deadlock; leave with _exit() or exec\n");
  _exit(70);
}

/* SIM_DEVICES: how many devices the machine has, 1 to DRV_MAX_DEVICES; anything else is
 * reported once and the machine has one. */
static void devices_init(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
  const char *e = getenv("SIM_DEVICES");
  if (e && *e) {
    char *end;
    long n = strtol(e, &end, 10);
    if (*end || n < 1 || n > DRV_MAX_DEVICES)
      fprintf(stderr, "sim: SIM_DEVICES=%s is not a count from 1 to %d; one device\n", e,
              DRV_MAX_DEVICES);
    else
      drv_ndev = (int)n;
  }
  for (int d = 0; d < DRV_MAX_DEVICES; d++) {
    drv_ctxs[d].magic = CTX_MAGIC;
    drv_ctxs[d].dev = d;
  }
}

int drv_valid_ctx(const struct CUctx_st *c) {
  return c >= &drv_ctxs[0] && c < &drv_ctxs[drv_ndev];
}

struct CUctx_st *drv_ctx_current(void) {
  return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult drv_check_init(void) {
  return atomic_load(&initialized) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult drv_ctx(struct CUctx_st **out) {
  CUresult r = drv_check_init();
  if (r) return r;
  if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1]) return CUDA_ERROR_INVALID_CONTEXT;
  struct CUctx_st *c = ctx_stack[ctx_depth - 1];
  /* A released primary context stays current but is unusable until retained again. */
  if (c->retained <= 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (out) *out = c;
  return CUDA_SUCCESS;
}

CUresult drv_async_error(void) {
  struct CUctx_st *c = drv_ctx_current();
  if (!c) c = &drv_ctxs[0];
  pthread_mutex_lock(&drv_lock);
  CUresult r = c->sticky;
  if (!r && c->async_err) {
    r = c->async_err;
    c->async_err = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}

void simctl_kernel_fault(void) {
  struct CUctx_st *c = drv_running_ctx();
  pthread_mutex_lock(&drv_lock);
  c->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
  pthread_mutex_unlock(&drv_lock);
}

CUresult CUDAAPI cuInit(unsigned int flags) {
  DRV_FAIL("cuInit", CUDA_ERROR_NO_DEVICE);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_once(&devices_once, devices_init);
  if (drv_device_start() != 0) return CUDA_ERROR_OPERATING_SYSTEM;
  atomic_store(&initialized, 1);
  return CUDA_SUCCESS;
}

int drv_version(void) {
  static int v;
  int got = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (!got) {
    const char *e = getenv("SIM_DRIVER_VERSION");
    char *end;
    long n = e && *e ? strtol(e, &end, 10) : 0;
    if (e && *e && (*end || n < 11000 || n > DRV_VERSION)) {
      fprintf(stderr, "sim: SIM_DRIVER_VERSION=%s: not a driver version from 11000 to %d\n", e, DRV_VERSION);
      exit(2);
    }
    got = n ? (int)n : DRV_VERSION;
    __atomic_store_n(&v, got, __ATOMIC_RELAXED);
  }
  return got;
}

CUresult CUDAAPI cuDriverGetVersion(int *v) {
  DRV_FAIL("cuDriverGetVersion", CUDA_ERROR_INVALID_VALUE);
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = drv_version();
  return CUDA_SUCCESS;
}

/* cuGetProcAddress_v2 and its CUDA 11.3 form without a status (see getproc.c). */
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  DRV_FAIL("cuGetProcAddress", CUDA_ERROR_NOT_FOUND);
  return drv_get_proc(symbol, pfn, version, flags, status);
}

#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
  DRV_FAIL("cuGetProcAddress", CUDA_ERROR_NOT_FOUND);
  return drv_get_proc(symbol, pfn, version, flags, NULL);
}

/* ---- devices ---- */

static CUresult check_dev(CUdevice d) {
  CUresult r = drv_check_init();
  if (r) return r;
  return d >= 0 && d < drv_ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
  DRV_FAIL("cuDeviceGet", CUDA_ERROR_INVALID_DEVICE);
  CUresult r = drv_check_init();
  if (r) return r;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= drv_ndev) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *n) {
  DRV_FAIL("cuDeviceGetCount", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_check_init();
  if (r) return r;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = drv_ndev;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice d) {
  DRV_FAIL("cuDeviceGetName", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", "CUDA Simulator (sm_90)");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  DRV_FAIL("cuDeviceTotalMem", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = DRV_TOTAL_MEM;
  return CUDA_SUCCESS;
}

/* Values of an H100-class part; unlisted attributes are 0 (feature absent). */
static int attribute(CUdevice_attribute a, CUdevice d) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return DRV_MAX_SHMEM_DEFAULT;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return DRV_SMS;
  case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: return 0;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH: return 131072;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH: return 131072;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT: return 65536;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: return 16384;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT: return 16384;
  case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: return 16384;
  case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 1 + d;
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
  case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: return 0;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 50 * 1024 * 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return DRV_CC_MAJOR;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return DRV_CC_MINOR;
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: return 0;
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: return d;
  case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: return 2;
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: return 0;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return DRV_MAX_SHMEM_OPTIN;
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
  case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 32 * 1024 * 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return 1;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
  case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: return 4;
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
  default: return 0;
  }
}

CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  DRV_FAIL("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  if (!v || a <= 0 || a >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *v = attribute(a, d);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
  DRV_FAIL("cuDeviceGetUuid", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  if (!u) return CUDA_ERROR_INVALID_VALUE;
  char id[16] = "sim-device-0000";
  id[13] = (char)('0' + d / 10);
  id[14] = (char)('0' + d % 10);
  memcpy(u->bytes, id, sizeof u->bytes);
  return CUDA_SUCCESS;
}

#undef cuDeviceGetUuid
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *u, CUdevice d) { return cuDeviceGetUuid_v2(u, d); }

CUresult CUDAAPI cuDeviceGetPCIBusId(char *buf, int len, CUdevice d) {
  DRV_FAIL("cuDeviceGetPCIBusId", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  if (!buf || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(buf, (size_t)len, "0000:%02x:00.0", 1 + d);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
  DRV_FAIL("cuDeviceCanAccessPeer", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (!r) r = check_dev(peer);
  if (r) return r;
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  *can = d != peer;
  return CUDA_SUCCESS;
}

/* Peer access from the current context to the memory of peer's device: one grant per pair and
 * direction; the current context itself is not a peer (CUDA_ERROR_INVALID_CONTEXT). */
CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  DRV_FAIL("cuCtxEnablePeerAccess", CUDA_ERROR_INVALID_VALUE);
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (!drv_valid_ctx(peer) || peer == c || peer->retained <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  if (c->peers & (1u << peer->dev)) r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  else c->peers |= 1u << peer->dev;
  pthread_mutex_unlock(&drv_lock);
  return r;
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peer) {
  DRV_FAIL("cuCtxDisablePeerAccess", CUDA_ERROR_INVALID_VALUE);
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (!drv_valid_ctx(peer)) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&drv_lock);
  if (!(c->peers & (1u << peer->dev))) r = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  else c->peers &= ~(1u << peer->dev);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

/* ---- primary context ---- */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  DRV_FAIL("cuDevicePrimaryCtxRetain", CUDA_ERROR_OUT_OF_MEMORY);
  CUresult r = check_dev(d);
  if (r) return r;
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  drv_ctxs[d].retained++;
  pthread_mutex_unlock(&drv_lock);
  *c = &drv_ctxs[d];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  DRV_FAIL("cuDevicePrimaryCtxRelease", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  int destroyed = 0;
  struct CUctx_st *c = &drv_ctxs[d];
  pthread_mutex_lock(&drv_lock);
  if (c->retained <= 0) r = CUDA_ERROR_INVALID_CONTEXT;
  else if (--c->retained == 0) {
    drv_sync_ctx_locked(c);
    c->gen++;
    c->peers = 0;
    destroyed = 1;
  }
  pthread_mutex_unlock(&drv_lock);
  if (destroyed) drv_modules_ctx_destroyed(c);
  return r;
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned int flags) {
  DRV_FAIL("cuDevicePrimaryCtxSetFlags", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  if (flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                          CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                          CU_CTX_SYNC_MEMOPS))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  drv_ctxs[d].flags = flags;
  pthread_mutex_unlock(&drv_lock);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active) {
  DRV_FAIL("cuDevicePrimaryCtxGetState", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  *flags = drv_ctxs[d].flags;
  *active = drv_ctxs[d].retained > 0;
  pthread_mutex_unlock(&drv_lock);
  return CUDA_SUCCESS;
}

/* Reset destroys the context's resources on a real device; here it waits for all work, clears
 * the errors, and destroys the context's modules and graph execs (libraries are
 * context-independent); memory stays allocated. */
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice d) {
  DRV_FAIL("cuDevicePrimaryCtxReset", CUDA_ERROR_INVALID_VALUE);
  CUresult r = check_dev(d);
  if (r) return r;
  struct CUctx_st *c = &drv_ctxs[d];
  pthread_mutex_lock(&drv_lock);
  drv_sync_ctx_locked(c);
  c->sticky = c->async_err = CUDA_SUCCESS;
  c->retained = 0;
  c->flags = 0;
  c->peers = 0;
  c->gen++;
  pthread_mutex_unlock(&drv_lock);
  drv_modules_ctx_destroyed(c);
  return CUDA_SUCCESS;
}

/* The v1 names of CUDA < 11 have the same signatures. */
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxSetFlags
#undef cuDevicePrimaryCtxReset
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice d) { return cuDevicePrimaryCtxRelease_v2(d); }
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned int f) {
  return cuDevicePrimaryCtxSetFlags_v2(d, f);
}
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice d) { return cuDevicePrimaryCtxReset_v2(d); }

/* ---- current context ---- */

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) {
  DRV_FAIL("cuCtxGetCurrent", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_check_init();
  if (r) return r;
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
  DRV_FAIL("cuCtxSetCurrent", CUDA_ERROR_INVALID_CONTEXT);
  CUresult r = drv_check_init();
  if (r) return r;
  if (c && !drv_valid_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx_depth == 0) {
    if (!c) return CUDA_SUCCESS;
    ctx_depth = 1;
  }
  ctx_stack[ctx_depth - 1] = c;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext c) {
  DRV_FAIL("cuCtxPushCurrent", CUDA_ERROR_INVALID_CONTEXT);
  CUresult r = drv_check_init();
  if (r) return r;
  if (!drv_valid_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx_depth == CTX_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
  ctx_stack[ctx_depth++] = c;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *c) {
  DRV_FAIL("cuCtxPopCurrent", CUDA_ERROR_INVALID_CONTEXT);
  CUresult r = drv_check_init();
  if (r) return r;
  if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1]) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext top = ctx_stack[--ctx_depth];
  if (c) *c = top;
  return CUDA_SUCCESS;
}

static CUresult ctx_get_device(CUdevice *d, CUcontext c) {
  CUresult r = c ? drv_check_init() : drv_ctx(NULL);
  if (r) return r;
  if (c && !drv_valid_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  *d = (c ? c : drv_ctx_current())->dev;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *d) {
  DRV_FAIL("cuCtxGetDevice", CUDA_ERROR_INVALID_CONTEXT);
  return ctx_get_device(d, NULL);
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *d, CUcontext c) {
  DRV_FAIL("cuCtxGetDevice", CUDA_ERROR_INVALID_CONTEXT);
  return ctx_get_device(d, c);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags) {
  DRV_FAIL("cuCtxGetFlags", CUDA_ERROR_INVALID_CONTEXT);
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = c->flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext c, unsigned int *v) {
  DRV_FAIL("cuCtxGetApiVersion", CUDA_ERROR_INVALID_CONTEXT);
  CUresult r = c ? drv_check_init() : drv_ctx(NULL);
  if (r) return r;
  if (c && !drv_valid_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 3020;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  DRV_FAIL("cuCtxGetStreamPriorityRange", CUDA_ERROR_INVALID_CONTEXT);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetLimit(size_t *v, CUlimit limit) {
  DRV_FAIL("cuCtxGetLimit", CUDA_ERROR_INVALID_VALUE);
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (!v || (unsigned)limit >= CU_LIMIT_MAX || limit >= 16) return CUDA_ERROR_INVALID_VALUE;
  static const size_t defaults[CU_LIMIT_MAX] = {
      [CU_LIMIT_STACK_SIZE] = 1024, [CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
      [CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20, [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
      [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32};
  pthread_mutex_lock(&drv_lock);
  *v = c->limits[limit] ? c->limits[limit] : defaults[limit];
  pthread_mutex_unlock(&drv_lock);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t v) {
  DRV_FAIL("cuCtxSetLimit", CUDA_ERROR_INVALID_VALUE);
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if ((unsigned)limit >= CU_LIMIT_MAX || limit >= 16) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  c->limits[limit] = v;
  pthread_mutex_unlock(&drv_lock);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *cfg) {
  DRV_FAIL("cuCtxGetCacheConfig", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!cfg) return CUDA_ERROR_INVALID_VALUE;
  *cfg = CU_FUNC_CACHE_PREFER_NONE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache cfg) {
  DRV_FAIL("cuCtxSetCacheConfig", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  return (unsigned)cfg <= CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* cuCtxSynchronize is a synchronising call: it fails inside any active capture. */
static CUresult ctx_sync(CUcontext c) {
  CUresult r = c ? drv_check_init() : drv_ctx(&c);
  if (r) return r;
  if (!drv_valid_ctx(c)) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&drv_lock);
  r = drv_capture_any_locked();
  if (!r) drv_sync_ctx_locked(c);
  pthread_mutex_unlock(&drv_lock);
  return r ? r : drv_async_error();
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  DRV_FAIL("cuCtxSynchronize", CUDA_ERROR_INVALID_VALUE);
  return ctx_sync(NULL);
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext c) {
  DRV_FAIL("cuCtxSynchronize", CUDA_ERROR_INVALID_VALUE);
  return ctx_sync(c);
}

/* ---- errors ---- */

#define DRV_ERRORS(X)                                                                      \
  X(CUDA_SUCCESS, "no error")                                                              \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                          \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                             \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                    \
  X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                      \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                            \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                   \
  X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                            \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                  \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device") \
  X(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid")                           \
  X(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS")   \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                  \
  X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")    \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                        \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                              \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")         \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch")     \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                               \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,                                              \
    "part or all of the requested memory range is already mapped")                        \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region") \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,                                                 \
    "peer access is already enabled")                                                      \
  X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled")                \
  X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                                   \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                   \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,                                                  \
    "operation failed due to a previous error during capture")                            \
  X(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences") \
  X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began") \
  X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED,                                                     \
    "capturing stream has unjoined work")                                                  \
  X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION,                                                    \
    "dependency created on uncaptured work in another stream")                             \
  X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,                                                     \
    "operation would make the legacy stream depend on a capturing blocking stream")        \
  X(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream") \
  X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,                                                 \
    "attempt to terminate a thread-local capture sequence from another thread")            \
  X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update") \
  X(CUDA_ERROR_UNKNOWN, "unknown error")

CUresult CUDAAPI cuGetErrorName(CUresult e, const char **s) {
  DRV_FAIL("cuGetErrorName", CUDA_ERROR_INVALID_VALUE);
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
#define X(code, text) case code: *s = #code; return CUDA_SUCCESS;
    DRV_ERRORS(X)
#undef X
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuGetErrorString(CUresult e, const char **s) {
  DRV_FAIL("cuGetErrorString", CUDA_ERROR_INVALID_VALUE);
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
#define X(code, text) case code: *s = text; return CUDA_SUCCESS;
    DRV_ERRORS(X)
#undef X
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}
