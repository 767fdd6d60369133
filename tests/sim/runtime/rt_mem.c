/* rt_mem.c — allocation, copies and memsets of the simulated runtime.
 *
 * Every operation is one driver call: the typed copies (cuMemcpyHtoD, DtoH, DtoD) for an
 * explicit cudaMemcpyKind, the unified-address cuMemcpy for cudaMemcpyDefault and host-to-host,
 * cuMemcpy2DUnaligned/3D for pitched copies, cuMemsetD8/D2D8 for memsets. The synchronous forms
 * call the driver's synchronous functions, which carry CUDA's documented synchronisation; the
 * _ptds/_ptsz entry points call the driver's per-thread flavours. Arrays are not simulated.
 */
#include "rt.h"

#include <stdint.h>
#include <string.h>

cudaError_t rt_symbol(const void *symbol, size_t offset, size_t count, char **out, size_t *size);

#define DP(p) ((CUdeviceptr)(uintptr_t)(p))

/* ---- allocation ---- */

cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size) {
  RT_BEGIN("cudaMalloc", cudaErrorMemoryAllocation);
  if (!devPtr) return rt_ret(cudaErrorInvalidValue);
  if (size == 0) {
    *devPtr = NULL;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  cudaError_t e = RT_CU(0, cuMemAlloc, &p, size);
  *devPtr = e == cudaSuccess ? (void *)(uintptr_t)p : NULL;
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaFree(void *devPtr) {
  RT_BEGIN("cudaFree", cudaErrorInvalidValue);
  if (!devPtr) return cudaSuccess;
  return rt_ret(RT_CU(0, cuMemFree, DP(devPtr)));
}

cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
  RT_BEGIN("cudaHostAlloc", cudaErrorMemoryAllocation);
  if (!pHost) return rt_ret(cudaErrorInvalidValue);
  /* cudaHostAlloc* flags have the CU_MEMHOSTALLOC_* values. */
  return rt_ret(RT_CU(0, cuMemHostAlloc, pHost, size, flags));
}

cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size) {
  RT_BEGIN("cudaMallocHost", cudaErrorMemoryAllocation);
  if (!ptr) return rt_ret(cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuMemHostAlloc, ptr, size, 0));
}

cudaError_t CUDARTAPI cudaFreeHost(void *ptr) {
  RT_BEGIN("cudaFreeHost", cudaErrorInvalidValue);
  if (!ptr) return cudaSuccess;
  return rt_ret(RT_CU(0, cuMemFreeHost, ptr));
}

cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
  RT_BEGIN("cudaHostRegister", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuMemHostRegister, ptr, size, flags));
}

cudaError_t CUDARTAPI cudaHostUnregister(void *ptr) {
  RT_BEGIN("cudaHostUnregister", cudaErrorHostMemoryNotRegistered);
  return rt_ret(RT_CU(0, cuMemHostUnregister, ptr));
}

cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
  RT_BEGIN("cudaMallocManaged", cudaErrorMemoryAllocation);
  if (!devPtr) return rt_ret(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  cudaError_t e = RT_CU(0, cuMemAllocManaged, &p, size, flags);
  if (e == cudaSuccess) *devPtr = (void *)(uintptr_t)p;
  return rt_ret(e);
}

static cudaError_t rt_cudaMallocAsync(int pt, void **devPtr, size_t size, cudaStream_t s) {
  RT_BEGIN("cudaMallocAsync", cudaErrorMemoryAllocation);
  if (!devPtr) return rt_ret(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  cudaError_t e = RT_CU(pt, cuMemAllocAsync, &p, size, s);
  if (e == cudaSuccess) *devPtr = (void *)(uintptr_t)p;
  return rt_ret(e);
}
RT_DUAL(cudaMallocAsync, _ptsz, (void **devPtr, size_t size, cudaStream_t hStream),
        (devPtr, size, hStream))

static cudaError_t rt_cudaFreeAsync(int pt, void *devPtr, cudaStream_t s) {
  RT_BEGIN("cudaFreeAsync", cudaErrorInvalidValue);
  return rt_ret(RT_CU(pt, cuMemFreeAsync, DP(devPtr), s));
}
RT_DUAL(cudaFreeAsync, _ptsz, (void *devPtr, cudaStream_t hStream), (devPtr, hStream))

cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free, size_t *total) {
  RT_BEGIN("cudaMemGetInfo", cudaErrorInvalidValue);
  return rt_ret(RT_CU(0, cuMemGetInfo, free, total));
}

cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes *attr,
                                               const void *ptr) {
  RT_BEGIN("cudaPointerGetAttributes", cudaErrorInvalidValue);
  if (!attr) return rt_ret(cudaErrorInvalidValue);
  memset(attr, 0, sizeof *attr);
  unsigned type = 0;
  CUresult r = rt_drv[0].cuPointerGetAttribute
                   ? rt_drv[0].cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DP(ptr))
                   : CUDA_ERROR_NOT_SUPPORTED;
  if (r == CUDA_ERROR_INVALID_VALUE) {
    /* Memory CUDA does not know: documented as unregistered, not as an error. */
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = -2;
    attr->hostPointer = (void *)ptr;
    return cudaSuccess;
  }
  if (r != CUDA_SUCCESS) return rt_ret(rt_map(r));
  int managed = 0, ordinal = 0;
  void *dp = NULL, *hp = NULL;
  rt_drv[0].cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, DP(ptr));
  rt_drv[0].cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, DP(ptr));
  if (rt_drv[0].cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, DP(ptr)) != CUDA_SUCCESS)
    dp = NULL;
  if (rt_drv[0].cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, DP(ptr)) != CUDA_SUCCESS)
    hp = NULL;
  attr->type = managed ? cudaMemoryTypeManaged
               : type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost
                                            : cudaMemoryTypeDevice;
  attr->device = ordinal;
  attr->devicePointer = dp;
  attr->hostPointer = hp;
  return cudaSuccess;
}

/* ---- linear copies ---- */

static cudaError_t copy(int pt, void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                        cudaStream_t s, int async) {
  if (n == 0) return cudaSuccess;
  switch (kind) {
  case cudaMemcpyHostToDevice:
    return async ? RT_CU(pt, cuMemcpyHtoDAsync, DP(dst), src, n, s)
                 : RT_CU(pt, cuMemcpyHtoD, DP(dst), src, n);
  case cudaMemcpyDeviceToHost:
    return async ? RT_CU(pt, cuMemcpyDtoHAsync, dst, DP(src), n, s)
                 : RT_CU(pt, cuMemcpyDtoH, dst, DP(src), n);
  case cudaMemcpyDeviceToDevice:
    return async ? RT_CU(pt, cuMemcpyDtoDAsync, DP(dst), DP(src), n, s)
                 : RT_CU(pt, cuMemcpyDtoD, DP(dst), DP(src), n);
  case cudaMemcpyHostToHost:
  case cudaMemcpyDefault:
    return async ? RT_CU(pt, cuMemcpyAsync, DP(dst), DP(src), n, s)
                 : RT_CU(pt, cuMemcpy, DP(dst), DP(src), n);
  default:
    return cudaErrorInvalidMemcpyDirection;
  }
}

static cudaError_t rt_cudaMemcpy(int pt, void *dst, const void *src, size_t n,
                                 enum cudaMemcpyKind kind) {
  RT_BEGIN("cudaMemcpy", cudaErrorInvalidValue);
  return rt_ret(copy(pt, dst, src, n, kind, NULL, 0));
}
RT_DUAL(cudaMemcpy, _ptds, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
        (dst, src, count, kind))

static cudaError_t rt_cudaMemcpyAsync(int pt, void *dst, const void *src, size_t n,
                                      enum cudaMemcpyKind kind, cudaStream_t s) {
  RT_BEGIN("cudaMemcpyAsync", cudaErrorInvalidValue);
  return rt_ret(copy(pt, dst, src, n, kind, s, 1));
}
RT_DUAL(cudaMemcpyAsync, _ptsz,
        (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),
        (dst, src, count, kind, stream))

cudaError_t CUDARTAPI cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                     size_t count) {
  RT_BEGIN("cudaMemcpyPeer", cudaErrorInvalidValue);
  CUcontext dc, sc;
  cudaError_t e = rt_primary_ctx(dstDevice, &dc);
  if (e == cudaSuccess) e = rt_primary_ctx(srcDevice, &sc);
  if (e == cudaSuccess && count) e = RT_CU(0, cuMemcpyPeer, DP(dst), dc, DP(src), sc, count);
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src,
                                          int srcDevice, size_t count, cudaStream_t stream) {
  RT_BEGIN("cudaMemcpyPeerAsync", cudaErrorInvalidValue);
  CUcontext dc, sc;
  cudaError_t e = rt_primary_ctx(dstDevice, &dc);
  if (e == cudaSuccess) e = rt_primary_ctx(srcDevice, &sc);
  if (e == cudaSuccess && count)
    e = RT_CU(0, cuMemcpyPeerAsync, DP(dst), dc, DP(src), sc, count, stream);
  return rt_ret(e);
}

/* ---- symbols ---- */

static cudaError_t rt_cudaMemcpyToSymbol(int pt, const void *symbol, const void *src, size_t n,
                                         size_t offset, enum cudaMemcpyKind kind) {
  RT_BEGIN("cudaMemcpyToSymbol", cudaErrorInvalidValue);
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return rt_ret(cudaErrorInvalidMemcpyDirection);
  char *d;
  cudaError_t e = rt_symbol(symbol, offset, n, &d, NULL);
  if (e == cudaSuccess) e = copy(pt, d, src, n, cudaMemcpyDefault, NULL, 0);
  return rt_ret(e);
}
RT_DUAL(cudaMemcpyToSymbol, _ptds,
        (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind),
        (symbol, src, count, offset, kind))

static cudaError_t rt_cudaMemcpyFromSymbol(int pt, void *dst, const void *symbol, size_t n,
                                           size_t offset, enum cudaMemcpyKind kind) {
  RT_BEGIN("cudaMemcpyFromSymbol", cudaErrorInvalidValue);
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return rt_ret(cudaErrorInvalidMemcpyDirection);
  char *s;
  cudaError_t e = rt_symbol(symbol, offset, n, &s, NULL);
  if (e == cudaSuccess) e = copy(pt, dst, s, n, cudaMemcpyDefault, NULL, 0);
  return rt_ret(e);
}
RT_DUAL(cudaMemcpyFromSymbol, _ptds,
        (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind),
        (dst, symbol, count, offset, kind))

static cudaError_t rt_cudaMemcpyToSymbolAsync(int pt, const void *symbol, const void *src,
                                              size_t n, size_t offset, enum cudaMemcpyKind kind,
                                              cudaStream_t st) {
  RT_BEGIN("cudaMemcpyToSymbolAsync", cudaErrorInvalidValue);
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return rt_ret(cudaErrorInvalidMemcpyDirection);
  char *d;
  cudaError_t e = rt_symbol(symbol, offset, n, &d, NULL);
  if (e == cudaSuccess) e = copy(pt, d, src, n, cudaMemcpyDefault, st, 1);
  return rt_ret(e);
}
RT_DUAL(cudaMemcpyToSymbolAsync, _ptsz,
        (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind,
         cudaStream_t stream),
        (symbol, src, count, offset, kind, stream))

static cudaError_t rt_cudaMemcpyFromSymbolAsync(int pt, void *dst, const void *symbol, size_t n,
                                                size_t offset, enum cudaMemcpyKind kind,
                                                cudaStream_t st) {
  RT_BEGIN("cudaMemcpyFromSymbolAsync", cudaErrorInvalidValue);
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
    return rt_ret(cudaErrorInvalidMemcpyDirection);
  char *s;
  cudaError_t e = rt_symbol(symbol, offset, n, &s, NULL);
  if (e == cudaSuccess) e = copy(pt, dst, s, n, cudaMemcpyDefault, st, 1);
  return rt_ret(e);
}
RT_DUAL(cudaMemcpyFromSymbolAsync, _ptsz,
        (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind,
         cudaStream_t stream),
        (dst, symbol, count, offset, kind, stream))

cudaError_t CUDARTAPI cudaGetSymbolAddress(void **devPtr, const void *symbol) {
  RT_BEGIN("cudaGetSymbolAddress", cudaErrorInvalidSymbol);
  if (!devPtr) return rt_ret(cudaErrorInvalidValue);
  char *p;
  cudaError_t e = rt_symbol(symbol, 0, 0, &p, NULL);
  if (e == cudaSuccess) *devPtr = p;
  return rt_ret(e);
}

cudaError_t CUDARTAPI cudaGetSymbolSize(size_t *size, const void *symbol) {
  RT_BEGIN("cudaGetSymbolSize", cudaErrorInvalidSymbol);
  if (!size) return rt_ret(cudaErrorInvalidValue);
  char *p;
  return rt_ret(rt_symbol(symbol, 0, 0, &p, size));
}

/* ---- pitched copies ---- */

/* Memory types of the two sides of a copy of this kind. */
static cudaError_t kind_types(enum cudaMemcpyKind kind, CUmemorytype *src, CUmemorytype *dst) {
  switch (kind) {
  case cudaMemcpyHostToHost: *src = *dst = CU_MEMORYTYPE_HOST; return cudaSuccess;
  case cudaMemcpyHostToDevice: *src = CU_MEMORYTYPE_HOST, *dst = CU_MEMORYTYPE_DEVICE; return cudaSuccess;
  case cudaMemcpyDeviceToHost: *src = CU_MEMORYTYPE_DEVICE, *dst = CU_MEMORYTYPE_HOST; return cudaSuccess;
  case cudaMemcpyDeviceToDevice: *src = *dst = CU_MEMORYTYPE_DEVICE; return cudaSuccess;
  case cudaMemcpyDefault: *src = *dst = CU_MEMORYTYPE_UNIFIED; return cudaSuccess;
  default: return cudaErrorInvalidMemcpyDirection;
  }
}

static void set_side(CUmemorytype t, const void *p, CUmemorytype *type, const void **host,
                     CUdeviceptr *dev) {
  *type = t;
  if (t == CU_MEMORYTYPE_HOST) *host = p;
  else *dev = DP(p);
}

static cudaError_t rt_memcpy2d(int pt, void *dst, size_t dpitch, const void *src, size_t spitch,
                               size_t width, size_t height, enum cudaMemcpyKind kind,
                               cudaStream_t s, int async) {
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
  if (width == 0 || height == 0) return cudaSuccess;
  CUDA_MEMCPY2D p;
  memset(&p, 0, sizeof p);
  CUmemorytype st, dt;
  cudaError_t e = kind_types(kind, &st, &dt);
  if (e != cudaSuccess) return e;
  set_side(st, src, &p.srcMemoryType, &p.srcHost, &p.srcDevice);
  set_side(dt, dst, &p.dstMemoryType, (const void **)&p.dstHost, &p.dstDevice);
  p.srcPitch = spitch;
  p.dstPitch = dpitch;
  p.WidthInBytes = width;
  p.Height = height;
  return async ? RT_CU(pt, cuMemcpy2DAsync, &p, s) : RT_CU(pt, cuMemcpy2DUnaligned, &p);
}

static cudaError_t rt_cudaMemcpy2D(int pt, void *dst, size_t dpitch, const void *src,
                                   size_t spitch, size_t width, size_t height,
                                   enum cudaMemcpyKind kind) {
  RT_BEGIN("cudaMemcpy2D", cudaErrorInvalidValue);
  return rt_ret(rt_memcpy2d(pt, dst, dpitch, src, spitch, width, height, kind, NULL, 0));
}
RT_DUAL(cudaMemcpy2D, _ptds,
        (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
         enum cudaMemcpyKind kind),
        (dst, dpitch, src, spitch, width, height, kind))

static cudaError_t rt_cudaMemcpy2DAsync(int pt, void *dst, size_t dpitch, const void *src,
                                        size_t spitch, size_t width, size_t height,
                                        enum cudaMemcpyKind kind, cudaStream_t s) {
  RT_BEGIN("cudaMemcpy2DAsync", cudaErrorInvalidValue);
  return rt_ret(rt_memcpy2d(pt, dst, dpitch, src, spitch, width, height, kind, s, 1));
}
RT_DUAL(cudaMemcpy2DAsync, _ptsz,
        (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
         enum cudaMemcpyKind kind, cudaStream_t stream),
        (dst, dpitch, src, spitch, width, height, kind, stream))

/* The driver form of a runtime 3-D copy (also used by graph memcpy nodes). */
cudaError_t rt_memcpy3d_params(const struct cudaMemcpy3DParms *p, CUDA_MEMCPY3D *out);
cudaError_t rt_memcpy3d_params(const struct cudaMemcpy3DParms *p, CUDA_MEMCPY3D *out) {
  if (!p) return cudaErrorInvalidValue;
  /* Arrays are not simulated. */
  if (p->srcArray || p->dstArray) return cudaErrorInvalidValue;
  memset(out, 0, sizeof *out);
  CUmemorytype st, dt;
  cudaError_t e = kind_types(p->kind, &st, &dt);
  if (e != cudaSuccess) return e;
  set_side(st, p->srcPtr.ptr, &out->srcMemoryType, &out->srcHost, &out->srcDevice);
  set_side(dt, p->dstPtr.ptr, &out->dstMemoryType, (const void **)&out->dstHost, &out->dstDevice);
  out->srcXInBytes = p->srcPos.x;
  out->srcY = p->srcPos.y;
  out->srcZ = p->srcPos.z;
  out->srcPitch = p->srcPtr.pitch;
  out->srcHeight = p->srcPtr.ysize;
  out->dstXInBytes = p->dstPos.x;
  out->dstY = p->dstPos.y;
  out->dstZ = p->dstPos.z;
  out->dstPitch = p->dstPtr.pitch;
  out->dstHeight = p->dstPtr.ysize;
  out->WidthInBytes = p->extent.width;
  out->Height = p->extent.height;
  out->Depth = p->extent.depth;
  return cudaSuccess;
}

static cudaError_t rt_cudaMemcpy3D(int pt, const struct cudaMemcpy3DParms *p) {
  RT_BEGIN("cudaMemcpy3D", cudaErrorInvalidValue);
  CUDA_MEMCPY3D c;
  cudaError_t e = rt_memcpy3d_params(p, &c);
  if (e == cudaSuccess) e = RT_CU(pt, cuMemcpy3D, &c);
  return rt_ret(e);
}
RT_DUAL(cudaMemcpy3D, _ptds, (const struct cudaMemcpy3DParms *p), (p))

static cudaError_t rt_cudaMemcpy3DAsync(int pt, const struct cudaMemcpy3DParms *p,
                                        cudaStream_t s) {
  RT_BEGIN("cudaMemcpy3DAsync", cudaErrorInvalidValue);
  CUDA_MEMCPY3D c;
  cudaError_t e = rt_memcpy3d_params(p, &c);
  if (e == cudaSuccess) e = RT_CU(pt, cuMemcpy3DAsync, &c, s);
  return rt_ret(e);
}
RT_DUAL(cudaMemcpy3DAsync, _ptsz, (const struct cudaMemcpy3DParms *p, cudaStream_t stream),
        (p, stream))

/* ---- memsets ---- */

static cudaError_t rt_cudaMemset(int pt, void *p, int value, size_t n) {
  RT_BEGIN("cudaMemset", cudaErrorInvalidValue);
  if (n == 0) return cudaSuccess;
  return rt_ret(RT_CU(pt, cuMemsetD8, DP(p), (unsigned char)value, n));
}
RT_DUAL(cudaMemset, _ptds, (void *devPtr, int value, size_t count), (devPtr, value, count))

static cudaError_t rt_cudaMemsetAsync(int pt, void *p, int value, size_t n, cudaStream_t s) {
  RT_BEGIN("cudaMemsetAsync", cudaErrorInvalidValue);
  if (n == 0) return cudaSuccess;
  return rt_ret(RT_CU(pt, cuMemsetD8Async, DP(p), (unsigned char)value, n, s));
}
RT_DUAL(cudaMemsetAsync, _ptsz, (void *devPtr, int value, size_t count, cudaStream_t stream),
        (devPtr, value, count, stream))

static cudaError_t rt_cudaMemset2D(int pt, void *p, size_t pitch, int value, size_t width,
                                   size_t height) {
  RT_BEGIN("cudaMemset2D", cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  return rt_ret(RT_CU(pt, cuMemsetD2D8, DP(p), pitch, (unsigned char)value, width, height));
}
RT_DUAL(cudaMemset2D, _ptds, (void *devPtr, size_t pitch, int value, size_t width, size_t height),
        (devPtr, pitch, value, width, height))

static cudaError_t rt_cudaMemset2DAsync(int pt, void *p, size_t pitch, int value, size_t width,
                                        size_t height, cudaStream_t s) {
  RT_BEGIN("cudaMemset2DAsync", cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  return rt_ret(RT_CU(pt, cuMemsetD2D8Async, DP(p), pitch, (unsigned char)value, width, height, s));
}
RT_DUAL(cudaMemset2DAsync, _ptsz,
        (void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream),
        (devPtr, pitch, value, width, height, stream))
