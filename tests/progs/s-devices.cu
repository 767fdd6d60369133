/* s-devices.cu — two devices in one process, each with its own context, memory and streams.
 *
 * Needs two devices (on the simulator SIM_DEVICES=2). In order:
 *   1. the device count, cudaSetDevice/cudaGetDevice, and properties per device (the PCI bus ids
 *      of the two devices differ);
 *   2. on each device a buffer, a stream and an event; pointer attributes name the device the
 *      memory was allocated on, also when asked from the other device, and the driver's context
 *      of each device is the primary context of that device; memory allocated on device 1 leaves
 *      device 0's free memory as it was;
 *   3. a loop that alternates the devices, each running the same short sequence of kernels on its
 *      own stream and recording its event (the library sees two contexts with one repeating
 *      sequence each, and replays both);
 *   4. copies across devices: cudaMemcpyPeer, cudaMemcpy with cudaMemcpyDefault, cuMemcpyPeer;
 *   5. what CUDA refuses: a launch on a stream of the other device, an event recorded on a stream
 *      of another device, elapsed time between events of two devices, device ordinal 2, peer
 *      access to the device itself, enabling peer access twice and disabling it when not enabled;
 *      each printed by its error name.
 * Output: the checksums of each device's buffer and of the copies, the error names, then the
 * launch counts (see prog.h).
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 1024, BLOCK = 128, GRID = N / BLOCK, STEPS = 24 };

__host__ __device__ static inline void axpb_body(unsigned long i, unsigned *a, unsigned m,
                                                 unsigned b, int n) {
  if (i < (unsigned long)n) a[i] = a[i] * m + b + (unsigned)i;
}
__host__ __device__ static inline void xor_body(unsigned long i, unsigned *a, unsigned k, int n) {
  if (i < (unsigned long)n) a[i] ^= k + (unsigned)(i >> 3);
}

extern "C" __global__ void dv_axpb(unsigned *a, unsigned m, unsigned b, int n) {
  axpb_body(PROG_TID(), a, m, b, n);
}
extern "C" __global__ void dv_xor(unsigned *a, unsigned k, int n) { xor_body(PROG_TID(), a, k, n); }

SIM_KERNEL(dv_axpb) {
  SIM_FOR_EACH_THREAD(i)
  axpb_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}
SIM_KERNEL(dv_xor) {
  SIM_FOR_EACH_THREAD(i) xor_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, int));
}

static void print_buf(const char *label, const unsigned *d) {
  unsigned h[N];
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  printf("%s: %016llx first=%08x last=%08x\n", label, (unsigned long long)prog_hash(h, sizeof h),
         h[0], h[N - 1]);
}

/* The name of a runtime call's error, the thread's last error cleared. */
static const char *err_name(cudaError_t e) {
  (void)cudaGetLastError();
  return cudaGetErrorName(e);
}

int main(void) {
  int n = 0;
  CHECK_CUDA(cudaGetDeviceCount(&n));
  printf("devices: %d\n", n);
  CHECK_INT(n, >=, 2);

  unsigned *a[2];
  cudaStream_t s[2];
  cudaEvent_t e[2];
  char bus[2][32];
  for (int d = 0; d < 2; d++) {
    CHECK_CUDA(cudaSetDevice(d));
    int cur = -1;
    CHECK_CUDA(cudaGetDevice(&cur));
    CHECK_INT(cur, ==, d);
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, d));
    CHECK_CUDA(cudaDeviceGetPCIBusId(bus[d], (int)sizeof bus[d], d));
    printf("device %d: sm_%d%d bus=%s\n", d, p.major, p.minor, bus[d]);
    CHECK_CUDA(cudaMalloc(&a[d], N * sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(a[d], d + 1, N * sizeof(unsigned)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&e[d]));
  }
  CHECK(strcmp(bus[0], bus[1]) != 0);

  /* Pointer attributes name the device of the allocation, asked from either device. */
  for (int d = 0; d < 2; d++) {
    CHECK_CUDA(cudaSetDevice(1 - d));
    cudaPointerAttributes pa;
    CHECK_CUDA(cudaPointerGetAttributes(&pa, a[d]));
    printf("buffer %d: type=%d device=%d\n", d, (int)pa.type, pa.device);
    CHECK_INT(pa.device, ==, d);
    CUcontext pc = NULL, primary = NULL;
    CUdevice dev;
    CHECK_CU(cuPointerGetAttribute(&pc, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)a[d]));
    CHECK_CU(cuDeviceGet(&dev, d));
    CHECK_CU(cuDevicePrimaryCtxRetain(&primary, dev));
    CHECK_PTR(pc, ==, primary);
    CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  }

  /* Each device has its own memory: an allocation on device 1 leaves device 0's free memory. */
  size_t free0, free0b, free1, free1b, total;
  void *big;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMemGetInfo(&free0, &total));
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaMemGetInfo(&free1, &total));
  CHECK_CUDA(cudaMalloc(&big, 64 << 20));
  CHECK_CUDA(cudaMemGetInfo(&free1b, &total));
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMemGetInfo(&free0b, &total));
  printf("memory: device 1 lost %zu MiB, device 0 lost %zu MiB\n", (free1 - free1b) >> 20,
         (free0 - free0b) >> 20);
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaFree(big));

  /* The same sequence on both devices, alternating. */
  for (int it = 0; it < STEPS; it++) {
    for (int d = 0; d < 2; d++) {
      CHECK_CUDA(cudaSetDevice(d));
      PROG_LAUNCH(dv_axpb, GRID, BLOCK, 0, s[d], a[d], 3u + (unsigned)d, (unsigned)it, N);
      PROG_LAUNCH(dv_xor, GRID, BLOCK, 0, s[d], a[d], 0x9e37u * (unsigned)(it + 1), N);
      PROG_LAUNCH(dv_axpb, GRID, BLOCK, 0, s[d], a[d], 5u, 7u, N);
      CHECK_CUDA(cudaEventRecord(e[d], s[d])); /* a step ends: the library cuts the stream */
    }
  }
  for (int d = 0; d < 2; d++) {
    CHECK_CUDA(cudaSetDevice(d));
    CHECK_CUDA(cudaStreamSynchronize(s[d]));
    char label[32];
    snprintf(label, sizeof label, "device %d buffer", d);
    print_buf(label, a[d]);
  }

  /* Copies across devices. */
  unsigned *b1, *c0;
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaMalloc(&b1, N * sizeof(unsigned)));
  CHECK_CUDA(cudaMemcpyPeer(b1, 1, a[0], 0, N * sizeof(unsigned)));
  CHECK_CUDA(cudaDeviceSynchronize()); /* s[1] does not wait for the legacy stream */
  PROG_LAUNCH(dv_xor, GRID, BLOCK, 0, s[1], b1, 77u, N);
  CHECK_CUDA(cudaStreamSynchronize(s[1]));
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMalloc(&c0, N * sizeof(unsigned)));
  CHECK_CUDA(cudaMemcpy(c0, b1, N * sizeof(unsigned), cudaMemcpyDefault));
  print_buf("peer copy 0->1, xor, copy 1->0", c0);
  CUcontext ctx0, ctx1;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx0, 0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx1, 1));
  CHECK_CU(cuMemcpyPeer((CUdeviceptr)c0, ctx0, (CUdeviceptr)a[1], ctx1, N * sizeof(unsigned)));
  print_buf("driver peer copy 1->0", c0);
  CHECK_CU(cuDevicePrimaryCtxRelease(0));
  CHECK_CU(cuDevicePrimaryCtxRelease(1));

  /* What CUDA refuses. Device 0 is current. */
  dv_xor<<<GRID, BLOCK, 0, s[1]>>>(a[1], 1u, N);
  PROG_RT(); /* made, and refused */
  printf("launch on device 1's stream from device 0: %s\n", err_name(cudaGetLastError()));
  printf("record device 0's event on device 1's stream: %s\n",
         err_name(cudaEventRecord(e[0], s[1])));
  CHECK_CUDA(cudaEventRecord(e[0], s[0]));
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaEventRecord(e[1], s[1]));
  CHECK_CUDA(cudaEventSynchronize(e[0]));
  CHECK_CUDA(cudaEventSynchronize(e[1]));
  float ms;
  printf("elapsed time between the devices' events: %s\n",
         err_name(cudaEventElapsedTime(&ms, e[0], e[1])));
  printf("set device 2: %s\n", err_name(cudaSetDevice(2)));
  int can01 = -1, can00 = -1;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&can01, 0, 1));
  CHECK_CUDA(cudaDeviceCanAccessPeer(&can00, 0, 0));
  printf("can access peer: 0->1 %d, 0->0 %d\n", can01, can00);
  CHECK_CUDA(cudaSetDevice(0));
  printf("peer access to itself: %s\n", err_name(cudaDeviceEnablePeerAccess(0, 0)));
  printf("disable peer access not enabled: %s\n", err_name(cudaDeviceDisablePeerAccess(1)));
  printf("enable peer access 0->1: %s\n", err_name(cudaDeviceEnablePeerAccess(1, 0)));
  printf("enable it again: %s\n", err_name(cudaDeviceEnablePeerAccess(1, 0)));
  printf("disable it: %s\n", err_name(cudaDeviceDisablePeerAccess(1)));

  /* The refused calls left both devices working. */
  for (int d = 0; d < 2; d++) {
    CHECK_CUDA(cudaSetDevice(d));
    PROG_LAUNCH(dv_xor, GRID, BLOCK, 0, s[d], a[d], 5u, N);
    CHECK_CUDA(cudaDeviceSynchronize());
    char label[32];
    snprintf(label, sizeof label, "device %d final", d);
    print_buf(label, a[d]);
  }
  for (int d = 0; d < 2; d++) {
    CHECK_CUDA(cudaSetDevice(d));
    CHECK_CUDA(cudaFree(a[d]));
    CHECK_CUDA(cudaStreamDestroy(s[d]));
    CHECK_CUDA(cudaEventDestroy(e[d]));
  }
  CHECK_CUDA(cudaFree(c0));
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaFree(b1));
  prog_print_launches();
  return 0;
}
