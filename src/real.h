/* real.h — the real driver and runtime functions the engine calls itself.
 *
 * The engine never calls dlsym: the entry points (shims/cuda.c) resolve this table once, through
 * the real cuGetProcAddress_v2 they captured, and hand it over with ag__real_set_resolver; the
 * engine calls ag__real_ready() before its first use. Every pointer may be NULL (an older
 * driver); the engine checks the ones it needs and passes launches through when one is
 * missing. All entries are legacy-default-stream variants: the engine names streams explicitly
 * (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a handle), so the flavour never matters.
 * Unit tests may fill ag__real directly.
 */
#ifndef AG_REAL_H
#define AG_REAL_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "ag.h"

#define AG_REAL_DRV_MAP(XX)                                               \
  XX(cuLaunchKernel, 4000)                                                \
  XX(cuLaunchKernelEx, 11060)                                             \
  XX(cuCtxGetCurrent, 4000)                                               \
  XX(cuCtxPushCurrent, 4000)                                              \
  XX(cuCtxPopCurrent, 4000)                                               \
  XX(cuCtxGetDevice, 2000)                                                \
  XX(cuDriverGetVersion, 2020)                                            \
  XX(cuFuncGetParamInfo, 12040)                                           \
  XX(cuKernelGetParamInfo, 12040)                                         \
  XX(cuKernelGetFunction, 12000)                                          \
  XX(cuFuncGetName, 12030)                                                \
  XX(cuFuncGetModule, 11000)                                              \
  XX(cuStreamIsCapturing, 10000)                                          \
  XX(cuThreadExchangeStreamCaptureMode, 10010)                            \
  XX(cuStreamGetFlags, 5050)                                              \
  XX(cuStreamQuery, 2000)                                                 \
  XX(cuMemsetD8Async, 3020)                                               \
  XX(cuEventRecord, 2000)                                                 \
  XX(cuStreamWaitEvent, 3020)                                             \
  XX(cuGraphAddMemsetNode, 10000)                                         \
  XX(cuGraphAddEventRecordNode, 11010)                                    \
  XX(cuGraphAddEventWaitNode, 11010)                                      \
  XX(cuGraphExecMemsetNodeSetParams, 10020)                               \
  XX(cuGraphExecEventRecordNodeSetEvent, 11010)                           \
  XX(cuGraphExecEventWaitNodeSetEvent, 11010)                             \
  XX(cuMemcpyAsync, 4000)                                                 \
  XX(cuGraphAddMemcpyNode, 10000)                                         \
  XX(cuGraphExecMemcpyNodeSetParams, 10020)                               \
  XX(cuPointerGetAttribute, 4000)                                         \
  XX(cuPointerGetAttributes, 7000)                                        \
  XX(cuFuncGetAttribute, 2020)                                            \
  XX(cuDeviceGetAttribute, 2000)                                          \
  XX(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)                   \
  XX(cuGraphCreate, 10000)                                                \
  XX(cuGraphDestroy, 10000)                                               \
  XX(cuGraphAddKernelNode, 12000)                                         \
  XX(cuGraphKernelNodeSetAttribute, 11000)                                \
  XX(cuGraphInstantiateWithFlags, 11040)                                  \
  XX(cuGraphExecDestroy, 10000)                                           \
  XX(cuGraphExecKernelNodeSetParams, 12000)                               \
  XX(cuGraphNodeSetEnabled, 11060)                                        \
  XX(cuGraphLaunch, 10000)                                                \
  XX(cuModuleLoadData, 2000)                                              \
  XX(cuModuleGetFunction, 2000)                                           \
  XX(cuModuleUnload, 2000)

typedef struct ag_real {
#define AG_REAL_FIELD_(name, ver) PFN_##name##_v##ver name;
  AG_REAL_DRV_MAP(AG_REAL_FIELD_)
#undef AG_REAL_FIELD_
  /* Runtime: host stub → CUfunction (cudaFunction_t is a CUfunction). */
  int (*cudaGetFuncBySymbol)(void **func, const void *symbol);
  /* Runtime: its version, for the dump only (may be NULL). */
  int (*cudaRuntimeGetVersion)(int *version);
  int driver_version;
} ag_real_t;

extern ag_real_t ag__real;

/* Fills `r`; returns 0 once the driver could be reached, else -AG_ENOENT (retried later). */
typedef int (*ag_real_resolver_t)(ag_real_t *r);
void ag__real_set_resolver(ag_real_resolver_t fn);

/* Nonzero when the table is filled (resolving it on first call). Cheap after that. */
int ag__real_ready(void);

/* Marks the table filled without a resolver (unit tests that filled ag__real themselves). */
void ag__real_mark_ready(void);

#endif
