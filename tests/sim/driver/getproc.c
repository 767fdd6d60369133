/* getproc.c — cuGetProcAddress: the driver's entry points by (name, version, flags).
 *
 * One table lists every function the simulated driver implements: the base name a caller asks
 * for, the CUDA version that introduced that ABI, the legacy-stream symbol and, where one
 * exists, the per-thread default stream symbol (_ptsz/_ptds). A request for (name, version,
 * flags) is answered with the newest ABI whose version is <= the requested one; flag
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM selects the per-thread symbol where there is one
 * at that version: the per-thread forms date from CUDA 7.0 (cudaTypedefs.h gives each one the
 * version of its ABI or 7000, whichever is later), and below it the legacy form is given, as
 * documented (an H200's driver gave no per-thread form of cuLaunchKernel at 4000 either).
 * Names the table lacks answer CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
 * a version older than every listed ABI answers CUDA_ERROR_NOT_FOUND with
 * CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT; a version newer than the driver's is
 * CUDA_ERROR_INVALID_VALUE, as documented.
 */
#include "drv.h"

#include <string.h>

/* X(name, version, symbol); XP(name, version, legacy symbol, per-thread symbol) */
#define DRV_PROCS(X, XP)                                                                        \
  /* Not simulated (unsupported.c): found, and answering CUDA_ERROR_NOT_SUPPORTED. */            \
  X("cuMemAddressFree", 10020, cuMemAddressFree)                                        \
  X("cuMemAddressReserve", 10020, cuMemAddressReserve)                                  \
  X("cuMemCreate", 10020, cuMemCreate)                                                  \
  X("cuMemRelease", 10020, cuMemRelease)                                                \
  X("cuMemMap", 10020, cuMemMap)                                                        \
  X("cuMemUnmap", 10020, cuMemUnmap)                                                    \
  X("cuMemSetAccess", 10020, cuMemSetAccess)                                            \
  X("cuMemExportToShareableHandle", 10020, cuMemExportToShareableHandle)                \
  X("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle)            \
  X("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity)              \
  X("cuMemGetAllocationPropertiesFromHandle", 10020, cuMemGetAllocationPropertiesFromHandle) \
  X("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle)                  \
  X("cuMulticastCreate", 12010, cuMulticastCreate)                                      \
  X("cuMulticastAddDevice", 12010, cuMulticastAddDevice)                                \
  X("cuMulticastBindMem", 12010, cuMulticastBindMem)                                    \
  X("cuMulticastUnbind", 12010, cuMulticastUnbind)                                      \
  X("cuGreenCtxCreate", 12040, cuGreenCtxCreate)                                        \
  X("cuGreenCtxDestroy", 12040, cuGreenCtxDestroy)                                      \
  X("cuGreenCtxStreamCreate", 12050, cuGreenCtxStreamCreate)                            \
  X("cuCtxFromGreenCtx", 12040, cuCtxFromGreenCtx)                                      \
  X("cuDeviceGetDevResource", 12040, cuDeviceGetDevResource)                            \
  X("cuDevResourceGenerateDesc", 12040, cuDevResourceGenerateDesc)                      \
  X("cuDevSmResourceSplitByCount", 12040, cuDevSmResourceSplitByCount)                  \
  X("cuLogsRegisterCallback", 12080, cuLogsRegisterCallback)                            \
  X("cuLogsUnregisterCallback", 12080, cuLogsUnregisterCallback)                        \
  XP("cuStreamWriteValue32", 11070, cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz) \
  X("cuInit", 2000, cuInit)                                                             \
  X("cuDriverGetVersion", 2020, cuDriverGetVersion)                                     \
  X("cuGetProcAddress", 11030, cuGetProcAddress)                                        \
  X("cuGetProcAddress", 12000, cuGetProcAddress_v2)                                     \
  X("cuGetErrorName", 6000, cuGetErrorName)                                             \
  X("cuGetErrorString", 6000, cuGetErrorString)                                         \
  X("cuDeviceGet", 2000, cuDeviceGet)                                                   \
  X("cuDeviceGetCount", 2000, cuDeviceGetCount)                                         \
  X("cuDeviceGetName", 2000, cuDeviceGetName)                                           \
  X("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2)                                      \
  X("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute)                                 \
  X("cuDeviceGetUuid", 9020, cuDeviceGetUuid)                                           \
  X("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2)                                       \
  X("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId)                                   \
  X("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer)                               \
  X("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess)                               \
  X("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess)                             \
  X("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain)                         \
  X("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease)                       \
  X("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2)                   \
  X("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags)                     \
  X("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2)                 \
  X("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState)                     \
  X("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset)                           \
  X("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2)                       \
  X("cuCtxGetCurrent", 4000, cuCtxGetCurrent)                                           \
  X("cuCtxSetCurrent", 4000, cuCtxSetCurrent)                                           \
  X("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2)                                      \
  X("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2)                                        \
  X("cuCtxGetDevice", 2000, cuCtxGetDevice)                                             \
  X("cuCtxGetDevice", 13000, cuCtxGetDevice_v2)                                         \
  X("cuCtxGetFlags", 7000, cuCtxGetFlags)                                               \
  X("cuCtxGetApiVersion", 3020, cuCtxGetApiVersion)                                     \
  X("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange)                   \
  X("cuCtxGetLimit", 3010, cuCtxGetLimit)                                               \
  X("cuCtxSetLimit", 3010, cuCtxSetLimit)                                               \
  X("cuCtxGetCacheConfig", 3020, cuCtxGetCacheConfig)                                   \
  X("cuCtxSetCacheConfig", 3020, cuCtxSetCacheConfig)                                   \
  X("cuCtxSynchronize", 2000, cuCtxSynchronize)                                         \
  X("cuCtxSynchronize", 13000, cuCtxSynchronize_v2)                                     \
  X("cuMemGetInfo", 3020, cuMemGetInfo_v2)                                              \
  X("cuMemAlloc", 3020, cuMemAlloc_v2)                                                  \
  X("cuMemAllocManaged", 6000, cuMemAllocManaged)                                       \
  X("cuMemAllocPitch", 3020, cuMemAllocPitch_v2)                                        \
  X("cuMemFree", 3020, cuMemFree_v2)                                                    \
  X("cuMemAllocHost", 3020, cuMemAllocHost_v2)                                          \
  X("cuMemHostAlloc", 2020, cuMemHostAlloc)                                             \
  X("cuMemFreeHost", 2000, cuMemFreeHost)                                               \
  X("cuMemHostRegister", 4000, cuMemHostRegister)                                       \
  X("cuMemHostRegister", 6050, cuMemHostRegister_v2)                                    \
  X("cuMemHostUnregister", 4000, cuMemHostUnregister)                                   \
  X("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2)                    \
  X("cuMemHostGetFlags", 2030, cuMemHostGetFlags)                                       \
  X("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2)                              \
  X("cuPointerGetAttribute", 4000, cuPointerGetAttribute)                               \
  X("cuPointerGetAttributes", 7000, cuPointerGetAttributes)                             \
  XP("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz)                       \
  XP("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz)                          \
  XP("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds)                                             \
  XP("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz)                              \
  XP("cuMemcpyPeer", 4000, cuMemcpyPeer, cuMemcpyPeer_ptds)                                 \
  XP("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz)                  \
  XP("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds)                           \
  XP("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds)                           \
  XP("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds)                           \
  XP("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz)            \
  XP("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz)            \
  XP("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz)            \
  XP("cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds)                                 \
  XP("cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds)      \
  XP("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz)                  \
  XP("cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds)                                 \
  XP("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz)                  \
  XP("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds)                                 \
  XP("cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds)                              \
  XP("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds)                              \
  XP("cuMemsetD2D8", 3020, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds)                           \
  XP("cuMemsetD2D16", 3020, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds)                        \
  XP("cuMemsetD2D32", 3020, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds)                        \
  XP("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz)                        \
  XP("cuMemsetD16Async", 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz)                     \
  XP("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz)                     \
  XP("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz)                  \
  XP("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz)               \
  XP("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz)               \
  X("cuStreamCreate", 2000, cuStreamCreate)                                             \
  X("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority)                     \
  XP("cuStreamGetPriority", 5050, cuStreamGetPriority, cuStreamGetPriority_ptsz)            \
  XP("cuStreamGetFlags", 5050, cuStreamGetFlags, cuStreamGetFlags_ptsz)                     \
  XP("cuStreamGetId", 12000, cuStreamGetId, cuStreamGetId_ptsz)                             \
  XP("cuStreamGetCtx", 9020, cuStreamGetCtx, cuStreamGetCtx_ptsz)                           \
  XP("cuStreamGetDevice", 12080, cuStreamGetDevice, cuStreamGetDevice_ptsz)                 \
  X("cuStreamDestroy", 2000, cuStreamDestroy)                                           \
  X("cuStreamDestroy", 4000, cuStreamDestroy_v2)                                        \
  XP("cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz)                  \
  XP("cuStreamAddCallback", 5000, cuStreamAddCallback, cuStreamAddCallback_ptsz)            \
  XP("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz)            \
  XP("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz)                              \
  XP("cuLaunchHostFunc", 10000, cuLaunchHostFunc, cuLaunchHostFunc_ptsz)                    \
  X("cuEventCreate", 2000, cuEventCreate)                                               \
  XP("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz)                              \
  XP("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz)  \
  X("cuEventQuery", 2000, cuEventQuery)                                                 \
  X("cuEventSynchronize", 2000, cuEventSynchronize)                                     \
  X("cuEventDestroy", 2000, cuEventDestroy)                                             \
  X("cuEventDestroy", 4000, cuEventDestroy_v2)                                          \
  X("cuEventElapsedTime", 2000, cuEventElapsedTime)                                     \
  X("cuEventElapsedTime", 12080, cuEventElapsedTime_v2)                                 \
  X("cuModuleLoadData", 2000, cuModuleLoadData)                                         \
  X("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx)                                     \
  X("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary)                               \
  X("cuModuleUnload", 2000, cuModuleUnload)                                             \
  X("cuModuleGetFunction", 2000, cuModuleGetFunction)                                   \
  X("cuModuleGetFunctionCount", 12040, cuModuleGetFunctionCount)                        \
  X("cuModuleEnumerateFunctions", 12040, cuModuleEnumerateFunctions)                    \
  X("cuModuleGetLoadingMode", 11070, cuModuleGetLoadingMode)                            \
  X("cuLibraryLoadData", 12000, cuLibraryLoadData)                                      \
  X("cuLibraryUnload", 12000, cuLibraryUnload)                                          \
  X("cuLibraryGetKernel", 12000, cuLibraryGetKernel)                                    \
  X("cuLibraryGetModule", 12000, cuLibraryGetModule)                                    \
  X("cuLibraryGetKernelCount", 12040, cuLibraryGetKernelCount)                          \
  X("cuLibraryEnumerateKernels", 12040, cuLibraryEnumerateKernels)                      \
  X("cuKernelGetFunction", 12000, cuKernelGetFunction)                                  \
  X("cuKernelGetLibrary", 12050, cuKernelGetLibrary)                                    \
  X("cuKernelGetName", 12030, cuKernelGetName)                                          \
  X("cuKernelGetParamInfo", 12040, cuKernelGetParamInfo)                                \
  X("cuKernelGetAttribute", 12000, cuKernelGetAttribute)                                \
  X("cuKernelSetAttribute", 12000, cuKernelSetAttribute)                                \
  X("cuKernelSetCacheConfig", 12000, cuKernelSetCacheConfig)                            \
  X("cuFuncGetName", 12030, cuFuncGetName)                                              \
  X("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo)                                    \
  X("cuFuncGetAttribute", 2020, cuFuncGetAttribute)                                     \
  X("cuFuncSetAttribute", 9000, cuFuncSetAttribute)                                     \
  X("cuFuncSetCacheConfig", 3000, cuFuncSetCacheConfig)                                 \
  X("cuFuncGetModule", 11000, cuFuncGetModule)                                          \
  X("cuFuncIsLoaded", 12040, cuFuncIsLoaded)                                            \
  X("cuFuncLoad", 12040, cuFuncLoad)                                                    \
  XP("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz)                           \
  XP("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz)                    \
  XP("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz)                                                         \
  X("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,                                 \
    cuOccupancyMaxActiveBlocksPerMultiprocessor)                                        \
  X("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 7000,                       \
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)                               \
  X("cuGraphCreate", 10000, cuGraphCreate)                                              \
  X("cuGraphDestroy", 10000, cuGraphDestroy)                                            \
  X("cuGraphClone", 10000, cuGraphClone)                                                \
  X("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode)                                \
  X("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2)                             \
  X("cuGraphKernelNodeGetParams", 10000, cuGraphKernelNodeGetParams)                    \
  X("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2)                 \
  X("cuGraphKernelNodeSetParams", 10000, cuGraphKernelNodeSetParams)                    \
  X("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2)                 \
  X("cuGraphKernelNodeGetAttribute", 11000, cuGraphKernelNodeGetAttribute)              \
  X("cuGraphKernelNodeSetAttribute", 11000, cuGraphKernelNodeSetAttribute)              \
  X("cuGraphAddMemcpyNode", 10000, cuGraphAddMemcpyNode)                                \
  X("cuGraphAddMemsetNode", 10000, cuGraphAddMemsetNode)                                \
  X("cuGraphAddEmptyNode", 10000, cuGraphAddEmptyNode)                                  \
  X("cuGraphAddHostNode", 10000, cuGraphAddHostNode)                                    \
  X("cuGraphAddEventRecordNode", 11010, cuGraphAddEventRecordNode)                      \
  X("cuGraphAddEventWaitNode", 11010, cuGraphAddEventWaitNode)                          \
  X("cuGraphGetNodes", 10000, cuGraphGetNodes)                                          \
  X("cuGraphGetRootNodes", 10000, cuGraphGetRootNodes)                                  \
  X("cuGraphNodeGetType", 10000, cuGraphNodeGetType)                                    \
  X("cuGraphNodeGetDependencies", 10000, cuGraphNodeGetDependencies)                    \
  X("cuGraphInstantiate", 11000, cuGraphInstantiate_v2)                                 \
  X("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags)                  \
  XP("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz)                                                      \
  X("cuGraphExecGetFlags", 12000, cuGraphExecGetFlags)                                  \
  XP("cuGraphUpload", 11010, cuGraphUpload, cuGraphUpload_ptsz)                             \
  XP("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz)                             \
  X("cuGraphExecDestroy", 10000, cuGraphExecDestroy)                                    \
  X("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams)            \
  X("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2)         \
  X("cuGraphExecMemsetNodeSetParams", 10020, cuGraphExecMemsetNodeSetParams)            \
  X("cuGraphNodeSetEnabled", 11060, cuGraphNodeSetEnabled)                              \
  X("cuGraphNodeGetEnabled", 11060, cuGraphNodeGetEnabled)                              \
  X("cuGraphExecMemcpyNodeSetParams", 10020, cuGraphExecMemcpyNodeSetParams)            \
  X("cuGraphExecEventRecordNodeSetEvent", 11010, cuGraphExecEventRecordNodeSetEvent)    \
  X("cuGraphExecEventWaitNodeSetEvent", 11010, cuGraphExecEventWaitNodeSetEvent)        \
  X("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2)                                   \
  XP("cuStreamBeginCapture", 10000, cuStreamBeginCapture, cuStreamBeginCapture_ptsz)        \
  XP("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz)  \
  XP("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz)              \
  XP("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz)           \
  XP("cuStreamGetCaptureInfo", 10010, cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_ptsz)  \
  XP("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz)                                                         \
  XP("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz)                                                         \
  X("cuThreadExchangeStreamCaptureMode", 10010, cuThreadExchangeStreamCaptureMode)

typedef struct proc {
  const char *name;
  int version;
  void *legacy, *ptds;
} proc_t;

/* The table names real exported symbols; several are not declared by cuda.h (old ABIs, the
 * per-thread variants), so each is referenced by its symbol name through an asm label. */
#define X(name, ver, fn) extern void drv_proc_##fn(void) __asm__(#fn);
#define XP(name, ver, fn, pt)                                                               \
  extern void drv_proc_##fn(void) __asm__(#fn);                                             \
  extern void drv_proc_##pt(void) __asm__(#pt);
DRV_PROCS(X, XP)
#undef X
#undef XP

static const proc_t procs[] = {
#define X(name, ver, fn) {name, ver, (void *)drv_proc_##fn, NULL},
#define XP(name, ver, fn, pt) {name, ver, (void *)drv_proc_##fn, (void *)drv_proc_##pt},
    DRV_PROCS(X, XP)
#undef X
#undef XP
};

/* Returns CUDA_SUCCESS with *pfn set, or the lookup failure with *status set. */
static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status) {
  *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  *pfn = NULL;
  const proc_t *best = NULL;
  int found = 0;
  for (size_t i = 0; i < AG_ARRAY_SIZE(procs); i++) {
    if (strcmp(procs[i].name, symbol) != 0) continue;
    found = 1;
    if (procs[i].version <= version && (!best || procs[i].version > best->version)) best = &procs[i];
  }
  if (!best) {
    if (found) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->ptds && version >= 7000
             ? best->ptds
             : best->legacy;
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult drv_get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                      CUdriverProcAddressQueryResult *status) {
  CUdriverProcAddressQueryResult st;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    return CUDA_ERROR_INVALID_VALUE;
  if (version > drv_version()) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = lookup(symbol, pfn, version, flags, &st);
  if (status) *status = st;
  return r;
}
