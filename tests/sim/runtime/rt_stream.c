/* rt_stream.c — streams, events and host callbacks of the simulated runtime.
 *
 * Each function is one call of the matching driver function (per-thread flavour for the _ptsz
 * entry points); stream and event handles are the driver's, and cudaStreamLegacy /
 * cudaStreamPerThread are the driver's CU_STREAM_LEGACY / CU_STREAM_PER_THREAD. Flag values are
 * shared by both APIs. Stream callbacks are wrapped so that they receive a runtime error code.
 *
 * cudaErrorNotReady from a query (cudaStreamQuery, cudaEventQuery, cudaEventElapsedTime) is not
 * recorded as the thread's last error: the runtime API documents it as "not actually an error,
 * but must be indicated differently than cudaSuccess". Whether the real runtime records it is
 * not documented either way (tests/sim/README.md; the GPU check prints what it does), so a
 * program must not rely on either; the other errors of these calls are recorded as usual.
 */
#include "rt.h"

#include <stdlib.h>

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *pStream) {
  RT_BEGIN("cudaStreamCreate", cudaErrorInvalidValue);
  if (!pStream) return rt_ret(cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuStreamCreate, pStream, CU_STREAM_DEFAULT));
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
  RT_BEGIN("cudaStreamCreateWithFlags", cudaErrorInvalidValue);
  if (!pStream) return rt_ret(cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuStreamCreate, pStream, flags));
}

cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                   int priority) {
  RT_BEGIN("cudaStreamCreateWithPriority", cudaErrorInvalidValue);
  if (!pStream) return rt_ret(cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuStreamCreateWithPriority, pStream, flags, priority));
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  RT_BEGIN("cudaStreamDestroy", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(0, cuStreamDestroy, stream));
}

/* A query's result: cudaErrorNotReady is returned without becoming the last error. */
static cudaError_t query_ret(cudaError_t e) { return e == cudaErrorNotReady ? e : rt_ret(e); }

static cudaError_t rt_cudaStreamQuery(int pt, cudaStream_t s) {
  RT_BEGIN("cudaStreamQuery", cudaErrorInvalidResourceHandle);
  return query_ret(RT_CU(pt, cuStreamQuery, s));
}
RT_DUAL(cudaStreamQuery, _ptsz, (cudaStream_t stream), (stream))

static cudaError_t rt_cudaStreamSynchronize(int pt, cudaStream_t s) {
  RT_BEGIN("cudaStreamSynchronize", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(pt, cuStreamSynchronize, s));
}
RT_DUAL(cudaStreamSynchronize, _ptsz, (cudaStream_t stream), (stream))

static cudaError_t rt_cudaStreamWaitEvent(int pt, cudaStream_t s, cudaEvent_t ev, unsigned flags) {
  RT_BEGIN("cudaStreamWaitEvent", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(pt, cuStreamWaitEvent, s, ev, flags));
}
RT_DUAL(cudaStreamWaitEvent, _ptsz, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),
        (stream, event, flags))

static cudaError_t rt_cudaStreamGetFlags(int pt, cudaStream_t s, unsigned *flags) {
  RT_BEGIN("cudaStreamGetFlags", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(pt, cuStreamGetFlags, s, flags));
}
RT_DUAL(cudaStreamGetFlags, _ptsz, (cudaStream_t hStream, unsigned int *flags), (hStream, flags))

static cudaError_t rt_cudaStreamGetPriority(int pt, cudaStream_t s, int *priority) {
  RT_BEGIN("cudaStreamGetPriority", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(pt, cuStreamGetPriority, s, priority));
}
RT_DUAL(cudaStreamGetPriority, _ptsz, (cudaStream_t hStream, int *priority), (hStream, priority))

typedef struct rt_callback {
  cudaStreamCallback_t fn;
  void *user;
} rt_callback_t;

static void CUDA_CB run_callback(CUstream s, CUresult status, void *arg) {
  rt_callback_t cb = *(rt_callback_t *)arg;
  free(arg);
  cb.fn(s, rt_map(status), cb.user);
}

static cudaError_t rt_cudaStreamAddCallback(int pt, cudaStream_t s, cudaStreamCallback_t fn,
                                            void *user, unsigned flags) {
  RT_BEGIN("cudaStreamAddCallback", cudaErrorInvalidResourceHandle);
  if (!fn || flags != 0) return rt_ret(cudaErrorInvalidValue);
  rt_callback_t *cb = malloc(sizeof *cb);
  if (!cb) return rt_ret(cudaErrorMemoryAllocation);
  *cb = (rt_callback_t){fn, user};
  cudaError_t e = RT_CU(pt, cuStreamAddCallback, s, run_callback, cb, 0);
  if (e != cudaSuccess) free(cb);
  return rt_ret(e);
}
RT_DUAL(cudaStreamAddCallback, _ptsz,
        (cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags),
        (stream, callback, userData, flags))

static cudaError_t rt_cudaLaunchHostFunc(int pt, cudaStream_t s, cudaHostFn_t fn, void *user) {
  RT_BEGIN("cudaLaunchHostFunc", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(pt, cuLaunchHostFunc, s, fn, user));
}
RT_DUAL(cudaLaunchHostFunc, _ptsz, (cudaStream_t stream, cudaHostFn_t fn, void *userData),
        (stream, fn, userData))

/* ---- events ---- */

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *event) {
  RT_BEGIN("cudaEventCreate", cudaErrorInvalidValue);
  if (!event) return rt_ret(cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuEventCreate, event, CU_EVENT_DEFAULT));
}

cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  RT_BEGIN("cudaEventCreateWithFlags", cudaErrorInvalidValue);
  if (!event) return rt_ret(cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuEventCreate, event, flags));
}

static cudaError_t rt_cudaEventRecord(int pt, cudaEvent_t ev, cudaStream_t s) {
  RT_BEGIN("cudaEventRecord", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(pt, cuEventRecord, ev, s));
}
RT_DUAL(cudaEventRecord, _ptsz, (cudaEvent_t event, cudaStream_t stream), (event, stream))

static cudaError_t rt_cudaEventRecordWithFlags(int pt, cudaEvent_t ev, cudaStream_t s,
                                               unsigned flags) {
  RT_BEGIN("cudaEventRecordWithFlags", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(pt, cuEventRecordWithFlags, ev, s, flags));
}
RT_DUAL(cudaEventRecordWithFlags, _ptsz, (cudaEvent_t event, cudaStream_t stream, unsigned int flags),
        (event, stream, flags))

cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event) {
  RT_BEGIN("cudaEventQuery", cudaErrorInvalidResourceHandle);
  return query_ret(RT_CU(0, cuEventQuery, event));
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event) {
  RT_BEGIN("cudaEventSynchronize", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(0, cuEventSynchronize, event));
}

cudaError_t CUDARTAPI cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  RT_BEGIN("cudaEventElapsedTime", cudaErrorInvalidResourceHandle);
  return query_ret(RT_CU(0, cuEventElapsedTime, ms, start, end));
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event) {
  RT_BEGIN("cudaEventDestroy", cudaErrorInvalidResourceHandle);
  return rt_ret(RT_CU(0, cuEventDestroy, event));
}
