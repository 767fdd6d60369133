/* rt_graph.c — graphs and stream capture in runtime form.
 *
 * Graph, node and executable handles are the driver's. The runtime's part is translating
 * parameters: a kernel node's func is a host stub (or a cudaKernel_t), turned into the CUkernel
 * handed to the driver cast to CUfunction, and turned back into the stub by
 * cudaGraphKernelNodeGetParams; memcpy and memset nodes carry the current context, as the driver
 * forms require. Capture is entirely the driver's (per-thread flavour for _ptsz).
 */
#include "rt.h"

#include <string.h>

cudaError_t rt_memcpy3d_params(const struct cudaMemcpy3DParms *p, CUDA_MEMCPY3D *out);

static cudaError_t kernel_params(const struct cudaKernelNodeParams *p, CUDA_KERNEL_NODE_PARAMS *out) {
  if (!p) return cudaErrorInvalidValue;
  CUkernel k;
  cudaError_t e = rt_kernel_of(p->func, &k);
  if (e != cudaSuccess) return e;
  memset(out, 0, sizeof *out);
  out->func = (CUfunction)k;
  out->gridDimX = p->gridDim.x;
  out->gridDimY = p->gridDim.y;
  out->gridDimZ = p->gridDim.z;
  out->blockDimX = p->blockDim.x;
  out->blockDimY = p->blockDim.y;
  out->blockDimZ = p->blockDim.z;
  out->sharedMemBytes = p->sharedMemBytes;
  out->kernelParams = p->kernelParams;
  out->extra = p->extra;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags) {
  RT_BEGIN("cudaGraphCreate", cudaErrorMemoryAllocation);
  return rt_ret(RT_CU(0, cuGraphCreate, pGraph, flags));
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  RT_BEGIN("cudaGraphDestroy", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphDestroy, graph));
}

cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes,
                                        size_t *numNodes) {
  RT_BEGIN("cudaGraphGetNodes", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphGetNodes, graph, nodes, numNodes));
}

cudaError_t CUDARTAPI cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t *pDependencies,
                                             size_t numDependencies,
                                             const struct cudaKernelNodeParams *pNodeParams) {
  RT_BEGIN("cudaGraphAddKernelNode", cudaErrorInvalidValue);
  CUDA_KERNEL_NODE_PARAMS p;
  cudaError_t e = kernel_params(pNodeParams, &p);
  if (e == cudaSuccess)
    e = RT_CU(0, cuGraphAddKernelNode, pGraphNode, graph, pDependencies, numDependencies, &p);
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGraphKernelNodeGetParams(cudaGraphNode_t node,
                                                   struct cudaKernelNodeParams *pNodeParams) {
  RT_BEGIN("cudaGraphKernelNodeGetParams", cudaErrorInvalidValue);
  if (!pNodeParams) return rt_ret(cudaErrorInvalidValue);
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  cudaError_t e = RT_CU(0, cuGraphKernelNodeGetParams, node, &p);
  if (e != cudaSuccess) return rt_ret(e);
  CUkernel k = p.kern ? p.kern : (CUkernel)p.func;
  const void *stub = rt_stub_of(k);
  /* A node made through the driver API from a kernel the runtime never registered keeps the
   * driver's handle. */
  pNodeParams->func = stub ? (void *)stub : (void *)k;
  pNodeParams->gridDim = (dim3){p.gridDimX, p.gridDimY, p.gridDimZ};
  pNodeParams->blockDim = (dim3){p.blockDimX, p.blockDimY, p.blockDimZ};
  pNodeParams->sharedMemBytes = p.sharedMemBytes;
  pNodeParams->kernelParams = p.kernelParams;
  pNodeParams->extra = p.extra;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                                   const struct cudaKernelNodeParams *pNodeParams) {
  RT_BEGIN("cudaGraphKernelNodeSetParams", cudaErrorInvalidValue);
  CUDA_KERNEL_NODE_PARAMS p;
  cudaError_t e = kernel_params(pNodeParams, &p);
  if (e == cudaSuccess) e = RT_CU(0, cuGraphKernelNodeSetParams, node, &p);
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec,
                                                       cudaGraphNode_t node,
                                                       const struct cudaKernelNodeParams *pNodeParams) {
  RT_BEGIN("cudaGraphExecKernelNodeSetParams", cudaErrorInvalidValue);
  CUDA_KERNEL_NODE_PARAMS p;
  cudaError_t e = kernel_params(pNodeParams, &p);
  if (e == cudaSuccess) e = RT_CU(0, cuGraphExecKernelNodeSetParams, hGraphExec, node, &p);
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t *pDependencies,
                                             size_t numDependencies,
                                             const struct cudaMemcpy3DParms *pCopyParams) {
  RT_BEGIN("cudaGraphAddMemcpyNode", cudaErrorInvalidValue);
  CUDA_MEMCPY3D c;
  cudaError_t e = rt_memcpy3d_params(pCopyParams, &c);
  if (e == cudaSuccess)
    e = RT_CU(0, cuGraphAddMemcpyNode, pGraphNode, graph, pDependencies, numDependencies, &c,
              rt_current_ctx());
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                               const cudaGraphNode_t *pDependencies,
                                               size_t numDependencies, void *dst,
                                               const void *src, size_t count,
                                               enum cudaMemcpyKind kind) {
  RT_BEGIN("cudaGraphAddMemcpyNode1D", cudaErrorInvalidValue);
  struct cudaMemcpy3DParms p;
  memset(&p, 0, sizeof p);
  p.srcPtr = (struct cudaPitchedPtr){(void *)src, count, count, 1};
  p.dstPtr = (struct cudaPitchedPtr){dst, count, count, 1};
  p.extent = (struct cudaExtent){count, 1, 1};
  p.kind = kind;
  CUDA_MEMCPY3D c;
  cudaError_t e = rt_memcpy3d_params(&p, &c);
  if (e == cudaSuccess)
    e = RT_CU(0, cuGraphAddMemcpyNode, pGraphNode, graph, pDependencies, numDependencies, &c,
              rt_current_ctx());
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t *pDependencies,
                                             size_t numDependencies,
                                             const struct cudaMemsetParams *pMemsetParams) {
  RT_BEGIN("cudaGraphAddMemsetNode", cudaErrorInvalidValue);
  if (!pMemsetParams) return rt_ret(cudaErrorInvalidValue);
  CUDA_MEMSET_NODE_PARAMS m = {
      .dst = (CUdeviceptr)pMemsetParams->dst, .pitch = pMemsetParams->pitch,
      .value = pMemsetParams->value, .elementSize = pMemsetParams->elementSize,
      .width = pMemsetParams->width, .height = pMemsetParams->height,
  };
  return rt_ret(RT_CU(0, cuGraphAddMemsetNode, pGraphNode, graph, pDependencies, numDependencies,
                      &m, rt_current_ctx()));
}

cudaError_t CUDARTAPI cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t *pDependencies,
                                           size_t numDependencies,
                                           const struct cudaHostNodeParams *pNodeParams) {
  RT_BEGIN("cudaGraphAddHostNode", cudaErrorInvalidValue);
  if (!pNodeParams) return rt_ret(cudaErrorInvalidValue);
  CUDA_HOST_NODE_PARAMS h = {.fn = pNodeParams->fn, .userData = pNodeParams->userData};
  return rt_ret(RT_CU(0, cuGraphAddHostNode, pGraphNode, graph, pDependencies, numDependencies, &h));
}

cudaError_t CUDARTAPI cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                            const cudaGraphNode_t *pDependencies,
                                            size_t numDependencies) {
  RT_BEGIN("cudaGraphAddEmptyNode", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphAddEmptyNode, pGraphNode, graph, pDependencies, numDependencies));
}

cudaError_t CUDARTAPI cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                                  const cudaGraphNode_t *pDependencies,
                                                  size_t numDependencies, cudaEvent_t event) {
  RT_BEGIN("cudaGraphAddEventRecordNode", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphAddEventRecordNode, pGraphNode, graph, pDependencies,
                      numDependencies, event));
}

cudaError_t CUDARTAPI cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                                const cudaGraphNode_t *pDependencies,
                                                size_t numDependencies, cudaEvent_t event) {
  RT_BEGIN("cudaGraphAddEventWaitNode", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphAddEventWaitNode, pGraphNode, graph, pDependencies,
                      numDependencies, event));
}

cudaError_t CUDARTAPI cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec,
                                                           cudaGraphNode_t hNode,
                                                           cudaEvent_t event) {
  RT_BEGIN("cudaGraphExecEventRecordNodeSetEvent", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphExecEventRecordNodeSetEvent, hGraphExec, hNode, event));
}

cudaError_t CUDARTAPI cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec,
                                                         cudaGraphNode_t hNode,
                                                         cudaEvent_t event) {
  RT_BEGIN("cudaGraphExecEventWaitNodeSetEvent", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphExecEventWaitNodeSetEvent, hGraphExec, hNode, event));
}

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags) {
  RT_BEGIN("cudaGraphInstantiate", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphInstantiateWithFlags, pGraphExec, graph, flags));
}

cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec,
                                                    cudaGraph_t graph, unsigned long long flags) {
  RT_BEGIN("cudaGraphInstantiateWithFlags", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphInstantiateWithFlags, pGraphExec, graph, flags));
}

cudaError_t CUDARTAPI cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                              unsigned int isEnabled) {
  RT_BEGIN("cudaGraphNodeSetEnabled", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphNodeSetEnabled, hGraphExec, hNode, isEnabled));
}

cudaError_t CUDARTAPI cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode,
                                              unsigned int *isEnabled) {
  RT_BEGIN("cudaGraphNodeGetEnabled", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphNodeGetEnabled, hGraphExec, hNode, isEnabled));
}

static cudaError_t rt_cudaGraphUpload(int pt, cudaGraphExec_t exec, cudaStream_t s) {
  RT_BEGIN("cudaGraphUpload", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuGraphUpload, exec, s));
}
RT_DUAL(cudaGraphUpload, _ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream), (graphExec, stream))

static cudaError_t rt_cudaGraphLaunch(int pt, cudaGraphExec_t exec, cudaStream_t s) {
  RT_BEGIN("cudaGraphLaunch", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuGraphLaunch, exec, s));
}
RT_DUAL(cudaGraphLaunch, _ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream), (graphExec, stream))

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  RT_BEGIN("cudaGraphExecDestroy", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuGraphExecDestroy, graphExec));
}

cudaError_t CUDARTAPI cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                          cudaGraphExecUpdateResultInfo *resultInfo) {
  RT_BEGIN("cudaGraphExecUpdate", cudaErrorGraphExecUpdateFailure);
  CUgraphExecUpdateResultInfo info;
  memset(&info, 0, sizeof info);
  cudaError_t e = RT_CU(0, cuGraphExecUpdate, hGraphExec, hGraph, &info);
  if (resultInfo) {
    /* cudaGraphExecUpdateResult and CUgraphExecUpdateResult share their values. */
    resultInfo->result = (enum cudaGraphExecUpdateResult)info.result;
    resultInfo->errorNode = info.errorNode;
    resultInfo->errorFromNode = info.errorFromNode;
  }
  return rt_ret(e);
}

/* ---- capture ---- */

static cudaError_t rt_cudaStreamBeginCapture(int pt, cudaStream_t s, enum cudaStreamCaptureMode mode) {
  RT_BEGIN("cudaStreamBeginCapture", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuStreamBeginCapture, s, (CUstreamCaptureMode)mode));
}
RT_DUAL(cudaStreamBeginCapture, _ptsz, (cudaStream_t stream, enum cudaStreamCaptureMode mode),
        (stream, mode))

static cudaError_t rt_cudaStreamEndCapture(int pt, cudaStream_t s, cudaGraph_t *graph) {
  RT_BEGIN("cudaStreamEndCapture", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuStreamEndCapture, s, graph));
}
RT_DUAL(cudaStreamEndCapture, _ptsz, (cudaStream_t stream, cudaGraph_t *pGraph), (stream, pGraph))

static cudaError_t rt_cudaStreamIsCapturing(int pt, cudaStream_t s,
                                            enum cudaStreamCaptureStatus *status) {
  RT_BEGIN("cudaStreamIsCapturing", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuStreamIsCapturing, s, (CUstreamCaptureStatus *)status));
}
RT_DUAL(cudaStreamIsCapturing, _ptsz, (cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus),
        (stream, pCaptureStatus))

/* CUDA 12's capture-info calls have other prototypes: runtime12/rt12.c. */
#if CUDART_VERSION >= 13000
_Static_assert(sizeof(cudaGraphEdgeData) == sizeof(CUgraphEdgeData),
               "runtime and driver edge data share their layout");

static cudaError_t rt_cudaStreamGetCaptureInfo(int pt, cudaStream_t s,
                                               enum cudaStreamCaptureStatus *status,
                                               unsigned long long *id, cudaGraph_t *graph,
                                               const cudaGraphNode_t **deps,
                                               const cudaGraphEdgeData **edges, size_t *ndeps) {
  RT_BEGIN("cudaStreamGetCaptureInfo", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuStreamGetCaptureInfo, s, (CUstreamCaptureStatus *)status,
                      (cuuint64_t *)id, graph, deps, (const CUgraphEdgeData **)edges, ndeps));
}
RT_DUAL(cudaStreamGetCaptureInfo, _ptsz,
        (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
         unsigned long long *id_out, cudaGraph_t *graph_out,
         const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
         size_t *numDependencies_out),
        (stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
         numDependencies_out))
#endif

cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
  RT_BEGIN_NOCTX("cudaThreadExchangeStreamCaptureMode", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *)mode));
}
