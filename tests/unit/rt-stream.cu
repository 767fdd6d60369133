/* rt-stream — memory, symbols, streams, events and callbacks through the simulated runtime.
 *
 * Covers device-symbol copies (__device__, __constant__, __managed__), async copies and kernels
 * ordered on one stream, the legacy default stream's implicit synchronisation with blocking
 * streams, events (record, wait, query, elapsed time), host callbacks, memsets and 2-D copies,
 * pointer attributes, and device queries.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sim_kernel.h"

__device__ int gsym[4];
__constant__ float csym[2];
__managed__ int msym;

extern "C" __global__ void rt_inc(int *x, int n) {
  int i = threadIdx.x;
  if (i < n) x[i] += 1;
}
SIM_KERNEL(rt_inc) {
  int *x = SIM_ARG(0, int *);
  int n = SIM_ARG(1, int);
  for (int i = 0; i < n; i++) x[i] += 1;
}

/* Writes v into *x after a delay, so that a missing dependency shows as a wrong value. */
extern "C" __global__ void rt_slow_set(int *x, int v) { *x = v; }
SIM_KERNEL(rt_slow_set) {
  usleep(50 * 1000);
  *SIM_ARG(0, int *) = SIM_ARG(1, int);
}

extern "C" __global__ void rt_copy1(int *dst, const int *src) { *dst = *src; }
SIM_KERNEL(rt_copy1) { *SIM_ARG(0, int *) = *SIM_ARG(1, const int *); }

static int callbacks;
static void CUDART_CB on_stream(cudaStream_t, cudaError_t status, void *arg) {
  if (status == cudaSuccess) *(int *)arg += 1;
}
static void CUDART_CB on_host(void *arg) { *(int *)arg += 10; }

int main() {
  int n = 0;
  CHECK_CUDA(cudaGetDeviceCount(&n));
  CHECK_INT(n, >=, 1);
  int dev = -1;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_INT(dev, ==, 0);
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_STATUS_EQ(cudaErrorInvalidDevice, cudaSetDevice(n));
  (void)cudaGetLastError();
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  CHECK(prop.name[0] != '\0');
  CHECK_INT(prop.warpSize, ==, 32);
  CHECK_INT(prop.totalGlobalMem, >, 0);
  int v = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerBlock, 0));
  CHECK_INT(v, ==, prop.maxThreadsPerBlock);
  int rv = 0, dv = 0;
  CHECK_CUDA(cudaRuntimeGetVersion(&rv));
  CHECK_INT(rv, ==, 13000);
  CHECK_CUDA(cudaDriverGetVersion(&dv));
  CHECK_INT(dv, >=, 13000);
  void *entry = NULL;
  cudaDriverEntryPointQueryResult qr;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &qr));
  CHECK(entry != NULL);
  CHECK_INT(qr, ==, cudaDriverEntryPointSuccess);

  /* Symbols. */
  int hs[4] = {1, 2, 3, 4}, out[4] = {0};
  CHECK_CUDA(cudaMemcpyToSymbol(gsym, hs, sizeof hs));
  int *gp = NULL;
  CHECK_CUDA(cudaGetSymbolAddress((void **)&gp, gsym));
  size_t gsize = 0;
  CHECK_CUDA(cudaGetSymbolSize(&gsize, gsym));
  CHECK_INT(gsize, ==, sizeof hs);
  rt_inc<<<1, 4>>>(gp, 4);
  CHECK_CUDA(cudaMemcpyFromSymbol(out, gsym, sizeof out));
  for (int i = 0; i < 4; i++) CHECK_INT(out[i], ==, i + 2);
  CHECK_CUDA(cudaMemcpyFromSymbol(out, gsym, sizeof(int), 3 * sizeof(int)));
  CHECK_INT(out[0], ==, 5);
  CHECK_STATUS_EQ(cudaErrorInvalidValue, cudaMemcpyToSymbol(gsym, hs, sizeof hs, sizeof(int)));
  CHECK_STATUS_EQ(cudaErrorInvalidSymbol, cudaMemcpyToSymbol(hs, hs, sizeof hs));
  (void)cudaGetLastError();
  float hc[2] = {1.5f, 2.5f}, oc[2] = {0, 0};
  CHECK_CUDA(cudaMemcpyToSymbolAsync(csym, hc, sizeof hc, 0, cudaMemcpyHostToDevice, 0));
  CHECK_CUDA(cudaMemcpyFromSymbolAsync(oc, csym, sizeof oc, 0, cudaMemcpyDeviceToHost, 0));
  CHECK_CUDA(cudaStreamSynchronize(0));
  CHECK(oc[0] == 1.5f && oc[1] == 2.5f);
  msym = 41;
  int *mp = NULL;
  CHECK_CUDA(cudaGetSymbolAddress((void **)&mp, msym));
  rt_inc<<<1, 1>>>(mp, 1);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_INT(msym, ==, 42);

  /* Async copies and kernels ordered on one stream, from pinned memory. */
  cudaStream_t s, s2, nb;
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaStreamCreateWithPriority(&s2, cudaStreamDefault, 0));
  CHECK_CUDA(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  unsigned fl = 7;
  CHECK_CUDA(cudaStreamGetFlags(nb, &fl));
  CHECK_INT(fl, ==, cudaStreamNonBlocking);
  int prio = 7;
  CHECK_CUDA(cudaStreamGetPriority(s2, &prio));
  CHECK_INT(prio, ==, 0);
  int *pin, *d;
  CHECK_CUDA(cudaMallocHost((void **)&pin, 256 * sizeof(int)));
  CHECK_CUDA(cudaMalloc((void **)&d, 256 * sizeof(int)));
  for (int i = 0; i < 256; i++) pin[i] = i;
  CHECK_CUDA(cudaMemcpyAsync(d, pin, 256 * sizeof(int), cudaMemcpyHostToDevice, s));
  rt_inc<<<1, 256, 0, s>>>(d, 256);
  CHECK_CUDA(cudaMemcpyAsync(pin, d, 256 * sizeof(int), cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < 256; i++) CHECK_INT(pin[i], ==, i + 1);
  CHECK_CUDA(cudaStreamQuery(s));

  /* Legacy default stream: work on a blocking stream waits for earlier legacy work. */
  int *flag;
  CHECK_CUDA(cudaMalloc((void **)&flag, 2 * sizeof(int)));
  CHECK_CUDA(cudaMemset(flag, 0, 2 * sizeof(int)));
  rt_slow_set<<<1, 1>>>(flag, 5);
  rt_copy1<<<1, 1, 0, s>>>(flag + 1, flag);
  int hf[2];
  CHECK_CUDA(cudaMemcpy(hf, flag, sizeof hf, cudaMemcpyDeviceToHost));
  CHECK_INT(hf[1], ==, 5);
  /* …and legacy work waits for earlier work on blocking streams. */
  rt_slow_set<<<1, 1, 0, s>>>(flag, 6);
  rt_copy1<<<1, 1>>>(flag + 1, flag);
  CHECK_CUDA(cudaMemcpy(hf, flag, sizeof hf, cudaMemcpyDeviceToHost));
  CHECK_INT(hf[1], ==, 6);

  /* Events order a non-blocking stream after another. */
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreateWithFlags(&e1, cudaEventDefault));
  CHECK_CUDA(cudaEventRecord(e0, s2));
  rt_slow_set<<<1, 1, 0, s2>>>(flag, 7);
  CHECK_CUDA(cudaEventRecordWithFlags(e1, s2, 0));
  CHECK_CUDA(cudaStreamWaitEvent(nb, e1, 0));
  rt_copy1<<<1, 1, 0, nb>>>(flag + 1, flag);
  CHECK_CUDA(cudaStreamSynchronize(nb));
  CHECK_CUDA(cudaMemcpy(hf, flag, sizeof hf, cudaMemcpyDeviceToHost));
  CHECK_INT(hf[1], ==, 7);
  CHECK_CUDA(cudaEventSynchronize(e1));
  CHECK_CUDA(cudaEventQuery(e1));
  float ms = -1;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  CHECK(ms >= 40.f);

  /* Host callbacks run in stream order. */
  callbacks = 0;
  CHECK_CUDA(cudaStreamAddCallback(s, on_stream, &callbacks, 0));
  CHECK_CUDA(cudaLaunchHostFunc(s, on_host, &callbacks));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_INT(callbacks, ==, 11);

  /* Memsets and 2-D copies. */
  CHECK_CUDA(cudaMemset(d, 0xff, 16));
  CHECK_CUDA(cudaMemsetAsync(d, 0x01, 4, s));
  CHECK_CUDA(cudaMemcpy(hf, d, 2 * sizeof(int), cudaMemcpyDefault));
  CHECK_INT(hf[0], ==, 0x01010101);
  CHECK_INT(hf[1], ==, -1);
  char *p2;
  size_t pitch = 64;
  CHECK_CUDA(cudaMalloc((void **)&p2, pitch * 4));
  CHECK_CUDA(cudaMemset2D(p2, pitch, 3, 16, 4));
  char h2[4][16];
  CHECK_CUDA(cudaMemcpy2D(h2, 16, p2, pitch, 16, 4, cudaMemcpyDeviceToHost));
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 16; c++) CHECK_INT(h2[r][c], ==, 3);
  memset(h2, 9, sizeof h2);
  CHECK_CUDA(cudaMemcpy2DAsync(p2, pitch, h2, 16, 16, 4, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMemset2DAsync(p2, pitch, 1, 8, 4, s));
  cudaMemcpy3DParms p3 = {};
  p3.srcPtr = make_cudaPitchedPtr(p2, pitch, 16, 4);
  p3.dstPtr = make_cudaPitchedPtr(h2, 16, 16, 4);
  p3.extent = make_cudaExtent(16, 4, 1);
  p3.kind = cudaMemcpyDeviceToHost;
  CHECK_CUDA(cudaMemcpy3DAsync(&p3, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_INT(h2[3][7], ==, 1);
  CHECK_INT(h2[3][8], ==, 9);
  CHECK_STATUS_EQ(cudaErrorInvalidPitchValue, cudaMemcpy2D(h2, 8, p2, pitch, 16, 4, cudaMemcpyDeviceToHost));
  (void)cudaGetLastError();

  /* Pointer attributes. */
  cudaPointerAttributes pa;
  CHECK_CUDA(cudaPointerGetAttributes(&pa, d));
  CHECK_INT(pa.type, ==, cudaMemoryTypeDevice);
  CHECK_CUDA(cudaPointerGetAttributes(&pa, pin));
  CHECK_INT(pa.type, ==, cudaMemoryTypeHost);
  int local;
  CHECK_CUDA(cudaPointerGetAttributes(&pa, &local));
  CHECK_INT(pa.type, ==, cudaMemoryTypeUnregistered);

  size_t fr = 0, tot = 0;
  CHECK_CUDA(cudaMemGetInfo(&fr, &tot));
  CHECK_INT(tot, >, 0);
  void *am;
  CHECK_CUDA(cudaMallocAsync(&am, 64, s));
  CHECK_CUDA(cudaFreeAsync(am, s));
  CHECK_CUDA(cudaStreamSynchronize(s));

  CHECK_CUDA(cudaEventDestroy(e0));
  CHECK_CUDA(cudaEventDestroy(e1));
  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaStreamDestroy(s2));
  CHECK_CUDA(cudaStreamDestroy(nb));
  CHECK_CUDA(cudaFreeHost(pin));
  CHECK_CUDA(cudaFree(d));
  CHECK_CUDA(cudaFree(p2));
  CHECK_CUDA(cudaFree(flag));
  printf("ok\n");
  return 0;
}
