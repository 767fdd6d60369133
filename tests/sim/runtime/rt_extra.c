/* rt_extra.c — runtime functions outside the simulated subsystems that programs built against the
 * real libcudart.so.13 still call. Every other function the real runtime exports and the
 * simulator does not simulate is a generated stub in unsupported.c (from unsupported.list).
 */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>

/* A pure constructor of a descriptor: it touches no device, so it is answered as the real one is
 * (it returns a struct in memory, which a generated stub cannot). */
struct cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(int x, int y, int z, int w,
                                                             enum cudaChannelFormatKind f) {
  struct cudaChannelFormatDesc d = {x, y, z, w, f};
  return d;
}

/* The answer of every generated stub (unsupported.c): cudaErrorNotSupported, recorded as the
 * thread's last error as any failing call is; with SIM_LOG_UNSUPPORTED set, the function's name on
 * stderr, to find what a program needs. */
int rt_unsupported(int err, const char *name);
int rt_unsupported(int err, const char *name) {
  if (getenv("SIM_LOG_UNSUPPORTED")) fprintf(stderr, "sim: %s is not simulated\n", name);
  return (int)rt_ret((cudaError_t)err);
}

/* ---- device queries PyTorch makes at start-up, answered by the driver ---- */

/* The driver function `name` at ABI version ver (legacy stream flavour), or NULL. */
static void *drv_fn(const char *name, int ver) {
  void *p = NULL;
  CUdriverProcAddressQueryResult st;
  if (!rt_drv[0].getproc || rt_drv[0].getproc(name, &p, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st))
    return NULL;
  return p;
}

cudaError_t CUDARTAPI cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
  RT_BEGIN("cudaDeviceGetStreamPriorityRange", cudaErrorInvalidValue);
  CUresult (*fn)(int *, int *);
  *(void **)&fn = drv_fn("cuCtxGetStreamPriorityRange", 5050);
  return rt_ret(fn ? rt_map(fn(leastPriority, greatestPriority)) : cudaErrorNotSupported);
}

cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice) {
  RT_BEGIN_NOCTX("cudaDeviceCanAccessPeer", cudaErrorInvalidDevice);
  CUresult (*fn)(int *, CUdevice, CUdevice);
  *(void **)&fn = drv_fn("cuDeviceCanAccessPeer", 4000);
  return rt_ret(fn ? rt_map(fn(canAccessPeer, device, peerDevice)) : cudaErrorNotSupported);
}

/* Peer access from the current device to peerDevice's memory, through the driver's contexts:
 * refused as cudaErrorInvalidDevice where cudaDeviceCanAccessPeer says no (the device itself, a
 * device that does not exist). */
static cudaError_t peer_ctx(int peerDevice, CUcontext *peer) {
  int n = 0, can = 0, cur = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess) e = cudaGetDevice(&cur);
  if (e != cudaSuccess) return e;
  if (peerDevice < 0 || peerDevice >= n) return cudaErrorInvalidDevice;
  if (cudaDeviceCanAccessPeer(&can, cur, peerDevice) != cudaSuccess || !can)
    return cudaErrorInvalidDevice;
  return rt_primary_ctx(peerDevice, peer);
}

cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  RT_BEGIN("cudaDeviceEnablePeerAccess", cudaErrorInvalidDevice);
  CUcontext peer;
  cudaError_t e = peer_ctx(peerDevice, &peer);
  if (e != cudaSuccess) return rt_ret(e);
  if (flags != 0) return rt_ret(cudaErrorInvalidValue);
  CUresult (*fn)(CUcontext, unsigned);
  *(void **)&fn = drv_fn("cuCtxEnablePeerAccess", 4000);
  return rt_ret(fn ? rt_map(fn(peer, flags)) : cudaErrorNotSupported);
}

cudaError_t CUDARTAPI cudaDeviceDisablePeerAccess(int peerDevice) {
  RT_BEGIN("cudaDeviceDisablePeerAccess", cudaErrorInvalidDevice);
  CUcontext peer;
  cudaError_t e = peer_ctx(peerDevice, &peer);
  if (e != cudaSuccess) return rt_ret(e);
  CUresult (*fn)(CUcontext);
  *(void **)&fn = drv_fn("cuCtxDisablePeerAccess", 4000);
  return rt_ret(fn ? rt_map(fn(peer)) : cudaErrorNotSupported);
}

cudaError_t CUDARTAPI cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
  RT_BEGIN_NOCTX("cudaDeviceGetPCIBusId", cudaErrorInvalidDevice);
  CUresult (*fn)(char *, int, CUdevice);
  *(void **)&fn = drv_fn("cuDeviceGetPCIBusId", 4010);
  return rt_ret(fn ? rt_map(fn(pciBusId, len, device)) : cudaErrorNotSupported);
}
