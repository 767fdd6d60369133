/* rt12.c — what only the simulated CUDA 12 runtime (libcudart.so.12) has.
 *
 * libcudart.so.12 is the runtime's sources (tests/sim/runtime) compiled against the CUDA 12.9
 * headers, plus this file: the structures and prototypes come from those headers, so a field or
 * a parameter that differs from CUDA 13 differs here too. What 12 has and 13 dropped:
 *   - cudaDeviceProp's clockRate, memoryClockRate, computeMode, deviceOverlap,
 *     kernelExecTimeoutEnabled, maxTexture1DLinear, singleToDoublePrecisionPerfRatio and
 *     cooperativeMultiDeviceLaunch (cudaGetDeviceProperties is cudaGetDeviceProperties_v2 in the
 *     12 headers, and rt_core.c's definition takes that name);
 *   - cudaStreamGetCaptureInfo_v2 (no edge data) and _v3 (with it), where CUDA 13 has one
 *     cudaStreamGetCaptureInfo with edge data. The pre-12 cudaStreamGetCaptureInfo and
 *     cudaGetDeviceProperties (CUDA 11 ABIs, which the 12 headers never call) are not provided.
 * __cudaRegisterTexture and __cudaRegisterSurface, which the 12 runtime does not export, are kept
 * local by tests/sim/runtime12/libcudart.map.
 */
#include "runtime/rt.h"

/* Built against the CUDA 12 headers only; against 13's (the static analysers read every file
 * with them) there is nothing here. */
#if CUDART_VERSION < 13000

void rt12_props(struct cudaDeviceProp *prop, CUdevice d) {
  int v;
  /* Attributes the driver does not know are left 0, as in rt_core.c. */
#define RT12_PROP(field, attr)                                                              \
  if (RT_CU(0, cuDeviceGetAttribute, &v, attr, d) == cudaSuccess) prop->field = v;
  RT12_PROP(clockRate, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
  RT12_PROP(memoryClockRate, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
  RT12_PROP(computeMode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)
  RT12_PROP(deviceOverlap, CU_DEVICE_ATTRIBUTE_GPU_OVERLAP)
  RT12_PROP(kernelExecTimeoutEnabled, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)
  RT12_PROP(maxTexture1DLinear, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH)
  RT12_PROP(singleToDoublePrecisionPerfRatio, CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO)
  RT12_PROP(cooperativeMultiDeviceLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH)
#undef RT12_PROP
}

_Static_assert(sizeof(cudaGraphEdgeData) == sizeof(CUgraphEdgeData),
               "runtime and driver edge data share their layout");

/* Both ask the driver's 12.3 getter (the version the real 12 runtime requests); _v2 passes no
 * edge-data array, which the driver accepts. */
static cudaError_t rt_cudaStreamGetCaptureInfo_v3(int pt, cudaStream_t s,
                                                  enum cudaStreamCaptureStatus *status,
                                                  unsigned long long *id, cudaGraph_t *graph,
                                                  const cudaGraphNode_t **deps,
                                                  const cudaGraphEdgeData **edges, size_t *ndeps) {
  RT_BEGIN("cudaStreamGetCaptureInfo", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuStreamGetCaptureInfo, s, (CUstreamCaptureStatus *)status,
                      (cuuint64_t *)id, graph, deps, (const CUgraphEdgeData **)edges, ndeps));
}
RT_DUAL(cudaStreamGetCaptureInfo_v3, _ptsz,
        (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
         unsigned long long *id_out, cudaGraph_t *graph_out,
         const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
         size_t *numDependencies_out),
        (stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
         numDependencies_out))

static cudaError_t rt_cudaStreamGetCaptureInfo_v2(int pt, cudaStream_t s,
                                                  enum cudaStreamCaptureStatus *status,
                                                  unsigned long long *id, cudaGraph_t *graph,
                                                  const cudaGraphNode_t **deps, size_t *ndeps) {
  return rt_cudaStreamGetCaptureInfo_v3(pt, s, status, id, graph, deps, NULL, ndeps);
}
RT_DUAL(cudaStreamGetCaptureInfo_v2, _ptsz,
        (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
         unsigned long long *id_out, cudaGraph_t *graph_out,
         const cudaGraphNode_t **dependencies_out, size_t *numDependencies_out),
        (stream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))

#endif
