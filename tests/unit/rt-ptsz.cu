/* rt-ptsz — a program built with --default-stream per-thread (see tests/build.mk).
 *
 * Its <<<>>> launches call __cudaLaunchKernel_ptsz and its stream functions the _ptsz/_ptds
 * entry points, which use the driver's per-thread flavours: stream 0 is the calling thread's
 * own default stream (so it can be captured, unlike the legacy stream), each thread has its own,
 * and cudaStreamLegacy still names the legacy stream.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "sim_kernel.h"

#ifndef __CUDART_API_PER_THREAD_DEFAULT_STREAM
#error "build with --default-stream per-thread"
#endif

extern "C" __global__ void rt_pt_add(int *x, int v) { *x += v; }
SIM_KERNEL(rt_pt_add) { *SIM_ARG(0, int *) += SIM_ARG(1, int); }

extern "C" __global__ void rt_pt_slow(int *x, int v) { *x = v; }
SIM_KERNEL(rt_pt_slow) {
  usleep(200 * 1000);
  *SIM_ARG(0, int *) = SIM_ARG(1, int);
}

static int *slot;

static void *worker(void *) {
  /* Another thread's default stream: its work runs while the main thread's is still busy. */
  rt_pt_add<<<1, 1>>>(slot + 1, 1);
  CHECK_CUDA(cudaStreamSynchronize(0));
  CHECK_INT(cudaStreamQuery(cudaStreamPerThread), ==, cudaSuccess);
  return NULL;
}

int main() {
  CHECK_CUDA(cudaMalloc((void **)&slot, 2 * sizeof(int)));
  CHECK_CUDA(cudaMemset(slot, 0, 2 * sizeof(int)));
  /* A memset of device memory may return before it is done, and the other thread's stream does
   * not wait for this one's work: the zeros must land before its launch. */
  CHECK_CUDA(cudaStreamSynchronize(0));
  rt_pt_slow<<<1, 1>>>(slot, 9);
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);
  int h[2];
  CHECK_CUDA(cudaMemcpyAsync(h, slot, sizeof h, cudaMemcpyDeviceToHost, 0));
  CHECK_CUDA(cudaStreamSynchronize(0));
  CHECK_INT(h[0], ==, 9);
  CHECK_INT(h[1], ==, 1);

  /* Explicit per-thread launches and the legacy stream by name. */
  int v = 5;
  void *args[] = {&slot, &v};
  CHECK_CUDA(cudaLaunchKernel((const void *)rt_pt_add, dim3(1), dim3(1), args, 0, 0));
  CHECK_CUDA(cudaLaunchKernel((const void *)rt_pt_add, dim3(1), dim3(1), args, 0, cudaStreamLegacy));
  CHECK_CUDA(cudaMemcpy(h, slot, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_INT(h[0], ==, 19);

  /* Stream 0 is a real stream here: it can be captured, which the legacy stream cannot. */
  cudaGraph_t g;
  CHECK_CUDA(cudaStreamBeginCapture(0, cudaStreamCaptureModeThreadLocal));
  rt_pt_add<<<1, 1>>>(slot, 1);
  CHECK_CUDA(cudaStreamEndCapture(0, &g));
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(g, NULL, &count));
  CHECK_INT(count, ==, 1);
  CHECK_CUDA(cudaGraphDestroy(g));
  CHECK(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeThreadLocal) != cudaSuccess);
  (void)cudaGetLastError();
  CHECK_CUDA(cudaFree(slot));
  printf("ok\n");
  return 0;
}
