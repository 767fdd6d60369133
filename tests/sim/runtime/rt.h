/* rt.h — internals shared by the files of the simulated CUDA runtime (libcudart.so.13).
 *
 * The runtime is a thin layer over the driver, as the real one is: it has no device of its own
 * and no link-time dependency on libcuda. At first use it dlopens libcuda.so.1, takes
 * cuGetProcAddress_v2 with dlsym and asks it for every driver function in RT_DRIVER_FUNCS, by
 * (name, version) for the legacy flavour (flags 0) and, where the driver has one, for the
 * per-thread default stream flavour (flags 2). Every runtime function forwards to those
 * pointers, so whoever intercepts the getter sees all the work.
 *
 * Each exported function starts with RT_BEGIN (fault injection, initialisation, sticky error,
 * current context) and returns through rt_ret, which records the thread's last error. Internal
 * helpers return cudaSuccess or the cudaError_t the API must return; they are named rt_* and
 * kept out of the export list by libcudart.map.
 */
#ifndef SIM_RT_H
#define SIM_RT_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#include "common/simcommon.h"

#if CUDART_VERSION >= 13000
#define RT_VERSION 13000
#else
/* Built against the CUDA 12 headers, these sources are libcudart.so.12 (tests/sim/runtime12 has
 * the 12-only code). 12.x's cuda.h names the 11.3 ABI cuStreamGetCaptureInfo; the runtime asks
 * for the 12.3 one, which cuda.h 12 declares as cuStreamGetCaptureInfo_v3. */
#define RT_VERSION 12090
#undef cuStreamGetCaptureInfo
#define cuStreamGetCaptureInfo cuStreamGetCaptureInfo_v3
#endif

/* (cuda.h name, version of the legacy flavour, version of the per-thread flavour or 0). The
 * versions are those the real libcudart.so.13 and .12 ask for (tests/sim/facts); each pointer
 * has the type of the cuda.h declaration, which is the signature of that version. */
#define RT_DRIVER_FUNCS(X)                                                                  \
  X(cuInit, 2000, 0)                                                                        \
  X(cuDriverGetVersion, 2020, 0)                                                            \
  X(cuDeviceGet, 2000, 0)                                                                   \
  X(cuDeviceGetCount, 2000, 0)                                                              \
  X(cuDeviceGetName, 2000, 0)                                                               \
  X(cuDeviceTotalMem, 3020, 0)                                                              \
  X(cuDeviceGetAttribute, 2000, 0)                                                          \
  X(cuDevicePrimaryCtxRetain, 7000, 0)                                                      \
  X(cuDevicePrimaryCtxReset, 7000, 0)                                                       \
  X(cuDevicePrimaryCtxSetFlags, 11000, 0)                                                   \
  X(cuCtxSetCurrent, 4000, 0)                                                               \
  X(cuCtxGetCurrent, 4000, 0)                                                               \
  X(cuCtxGetDevice, 2000, 0)                                                                \
  X(cuCtxSynchronize, 2000, 0)                                                              \
  X(cuLibraryLoadData, 12000, 0)                                                            \
  X(cuLibraryUnload, 12000, 0)                                                              \
  X(cuLibraryGetKernel, 12000, 0)                                                           \
  X(cuKernelGetFunction, 12000, 0)                                                          \
  X(cuKernelGetAttribute, 12000, 0)                                                         \
  X(cuKernelSetAttribute, 12000, 0)                                                         \
  X(cuMemGetInfo, 3020, 0)                                                                  \
  X(cuMemAlloc, 3020, 0)                                                                    \
  X(cuMemFree, 3020, 0)                                                                     \
  X(cuMemAllocManaged, 6000, 0)                                                             \
  X(cuMemHostAlloc, 2020, 0)                                                                \
  X(cuMemFreeHost, 2000, 0)                                                                 \
  X(cuMemHostRegister, 6050, 0)                                                             \
  X(cuMemHostUnregister, 4000, 0)                                                           \
  X(cuPointerGetAttribute, 4000, 0)                                                         \
  X(cuMemAllocAsync, 11020, 11020)                                                          \
  X(cuMemFreeAsync, 11020, 11020)                                                           \
  X(cuMemcpy, 4000, 7000)                                                                   \
  X(cuMemcpyAsync, 4000, 7000)                                                              \
  X(cuMemcpyPeer, 4000, 7000)                                                               \
  X(cuMemcpyPeerAsync, 4000, 7000)                                                          \
  X(cuMemcpyHtoD, 3020, 7000)                                                               \
  X(cuMemcpyHtoDAsync, 3020, 7000)                                                          \
  X(cuMemcpyDtoH, 3020, 7000)                                                               \
  X(cuMemcpyDtoHAsync, 3020, 7000)                                                          \
  X(cuMemcpyDtoD, 3020, 7000)                                                               \
  X(cuMemcpyDtoDAsync, 3020, 7000)                                                          \
  X(cuMemcpy2DUnaligned, 3020, 7000)                                                        \
  X(cuMemcpy2DAsync, 3020, 7000)                                                            \
  X(cuMemcpy3D, 3020, 7000)                                                                 \
  X(cuMemcpy3DAsync, 3020, 7000)                                                            \
  X(cuMemsetD8, 3020, 7000)                                                                 \
  X(cuMemsetD8Async, 3020, 7000)                                                            \
  X(cuMemsetD2D8, 3020, 7000)                                                               \
  X(cuMemsetD2D8Async, 3020, 7000)                                                          \
  X(cuLaunchKernel, 4000, 7000)                                                             \
  X(cuLaunchKernelEx, 11060, 11060)                                                         \
  X(cuLaunchCooperativeKernel, 9000, 9000)                                                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000, 0)                          \
  X(cuLaunchHostFunc, 10000, 10000)                                                         \
  X(cuEventCreate, 2000, 0)                                                                 \
  X(cuEventRecord, 2000, 7000)                                                              \
  X(cuEventRecordWithFlags, 11010, 11010)                                                   \
  X(cuEventQuery, 2000, 0)                                                                  \
  X(cuEventSynchronize, 2000, 0)                                                            \
  X(cuEventDestroy, 4000, 0)                                                                \
  X(cuEventElapsedTime, 12080, 0)                                                           \
  X(cuStreamCreate, 2000, 0)                                                                \
  X(cuStreamCreateWithPriority, 5050, 0)                                                    \
  X(cuStreamGetPriority, 5050, 7000)                                                        \
  X(cuStreamGetFlags, 5050, 7000)                                                           \
  X(cuStreamDestroy, 4000, 0)                                                               \
  X(cuStreamWaitEvent, 3020, 7000)                                                          \
  X(cuStreamAddCallback, 5000, 7000)                                                        \
  X(cuStreamSynchronize, 2000, 7000)                                                        \
  X(cuStreamQuery, 2000, 7000)                                                              \
  X(cuStreamBeginCapture, 10010, 10010)                                                     \
  X(cuStreamEndCapture, 10000, 10000)                                                       \
  X(cuStreamIsCapturing, 10000, 10000)                                                      \
  X(cuStreamGetCaptureInfo, 12030, 12030)                                                   \
  X(cuThreadExchangeStreamCaptureMode, 10010, 0)                                            \
  X(cuGraphCreate, 10000, 0)                                                                \
  X(cuGraphDestroy, 10000, 0)                                                               \
  X(cuGraphGetNodes, 10000, 0)                                                              \
  X(cuGraphAddKernelNode, 12000, 0)                                                         \
  X(cuGraphKernelNodeGetParams, 12000, 0)                                                   \
  X(cuGraphKernelNodeSetParams, 12000, 0)                                                   \
  X(cuGraphAddMemcpyNode, 10000, 0)                                                         \
  X(cuGraphAddMemsetNode, 10000, 0)                                                         \
  X(cuGraphAddHostNode, 10000, 0)                                                           \
  X(cuGraphAddEmptyNode, 10000, 0)                                                          \
  X(cuGraphAddEventRecordNode, 11010, 0)                                                    \
  X(cuGraphAddEventWaitNode, 11010, 0)                                                      \
  X(cuGraphInstantiateWithFlags, 11040, 0)                                                  \
  X(cuGraphUpload, 11010, 11010)                                                            \
  X(cuGraphLaunch, 10000, 10000)                                                            \
  X(cuGraphExecDestroy, 10000, 0)                                                           \
  X(cuGraphExecKernelNodeSetParams, 12000, 0)                                               \
  X(cuGraphExecEventRecordNodeSetEvent, 11010, 0)                                           \
  X(cuGraphExecEventWaitNodeSetEvent, 11010, 0)                                             \
  X(cuGraphNodeSetEnabled, 11060, 0)                                                        \
  X(cuGraphNodeGetEnabled, 11060, 0)                                                        \
  X(cuGraphExecUpdate, 12000, 0)

typedef struct rt_drv {
#define RT_FIELD(name, ver, ptver) __typeof__(&name) name;
  RT_DRIVER_FUNCS(RT_FIELD)
#undef RT_FIELD
  /* The getter itself, for cudaGetDriverEntryPoint. */
  CUresult (*getproc)(const char *symbol, void **pfn, int version, cuuint64_t flags,
                      CUdriverProcAddressQueryResult *status);
} rt_drv_t;

/* [0] legacy default stream flavour, [1] per-thread; functions without a per-thread flavour
 * hold the legacy pointer in both. */
extern rt_drv_t rt_drv[2];

/* Calls driver function fn in flavour pt (0 legacy, 1 per-thread) and maps its result; a function
 * the driver does not have reports cudaErrorNotSupported. */
#define RT_CU(pt, fn, ...)                                                                  \
  (rt_drv[(pt)].fn ? rt_map(rt_drv[(pt)].fn(__VA_ARGS__)) : cudaErrorNotSupported)

/* First statement of every API function: fault injection, then initialisation, the sticky error
 * and the calling thread's context. RT_BEGIN_NOCTX for functions that need no context. */
#define RT_BEGIN(api, failerr)                                                              \
  do {                                                                                      \
    if (simc_should_fail(api)) return rt_ret(failerr);                                      \
    cudaError_t rt_e_ = rt_ready(1);                                                        \
    if (rt_e_ != cudaSuccess) return rt_ret(rt_e_);                                         \
  } while (0)
#define RT_BEGIN_NOCTX(api, failerr)                                                        \
  do {                                                                                      \
    if (simc_should_fail(api)) return rt_ret(failerr);                                      \
    cudaError_t rt_e_ = rt_ready(0);                                                        \
    if (rt_e_ != cudaSuccess) return rt_ret(rt_e_);                                         \
  } while (0)

/* Defines the legacy-stream entry point `name` and its per-thread twin `name##sfx`, both
 * forwarding to rt_##name(pt, args…). */
#define RT_UNPAREN(...) __VA_ARGS__
#define RT_DUAL(name, sfx, params, args)                                                    \
  cudaError_t CUDARTAPI name params { return rt_##name(0, RT_UNPAREN args); }              \
  cudaError_t CUDARTAPI name##sfx params { return rt_##name(1, RT_UNPAREN args); }

/* ---- rt_core.c ---- */
/* Loads the driver (once), then checks the sticky error and, when want_ctx, makes the calling
 * thread's device context current. */
cudaError_t rt_ready(int want_ctx);
/* Records err as the thread's last error (sticky errors process-wide) and returns it. */
cudaError_t rt_ret(cudaError_t err);
/* The runtime error for a driver result. */
cudaError_t rt_map(CUresult r);
/* The context the runtime uses on this thread (valid after rt_ready(1)). */
CUcontext rt_current_ctx(void);
/* The primary context of device dev, retained on first use. */
cudaError_t rt_primary_ctx(int dev, CUcontext *out);

/* ---- rt_module.c ---- */
/* The CUkernel behind a host stub (or a cudaKernel_t handed in as one), loading its fatbin into
 * the driver on first use; cudaErrorInvalidDeviceFunction when func is unknown. */
cudaError_t rt_kernel_of(const void *func, CUkernel *out);
/* The host stub registered for kernel k, or NULL. */
const void *rt_stub_of(CUkernel k);

#if CUDART_VERSION < 13000
/* ---- runtime12/rt12.c ---- */
/* Fills the cudaDeviceProp fields of CUDA 12 that CUDA 13 dropped, from driver device d. */
void rt12_props(struct cudaDeviceProp *prop, CUdevice d);
#endif

#endif
