/* ptsz.cu — the per-thread default stream entry points (built with
 * nvcc --default-stream per-thread, so the runtime calls become their _ptsz/_ptds variants).
 *
 * Two threads each run the same chain on their own per-thread default stream (stream 0 and
 * the explicit cudaStreamPerThread handle): an async memset and copy, <<<>>>, cudaLaunchKernel,
 * cudaLaunchKernelExC and cudaLaunchCooperativeKernel launches, an event record and wait, a
 * host function, cudaStreamSynchronize and a synchronous cudaMemcpy. The threads run at the
 * same time but share nothing except the device, so the output is deterministic: each thread's
 * checksum and the value its host function observed, then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>
#include <pthread.h>

#include "prog.h"
#include "sim_kernel.h"

#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "ptsz.cu must be built with nvcc --default-stream per-thread"
#endif

enum { N = 384, BLOCK = 128, GRID = N / BLOCK, CHAIN = 4 };

__host__ __device__ static inline void mad_body(unsigned long i, float *x, float m, float c,
                                                int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c + (float)(i & 7);
}

extern "C" __global__ void pt_mad(float *x, float m, float c, int n) {
  mad_body(PROG_TID(), x, m, c, n);
}

SIM_KERNEL(pt_mad) {
  SIM_FOR_EACH_THREAD(i)
  mad_body(i, SIM_ARG(0, float *), SIM_ARG(1, float), SIM_ARG(2, float), SIM_ARG(3, int));
}

struct job {
  int id;
  float seen; /* x[1] as read by the host function, after the copy that precedes it */
  float *pinned;
  uint64_t hash;
};

static void CUDART_CB observe(void *arg) {
  struct job *j = (struct job *)arg;
  j->seen = j->pinned[1];
}

static void *run(void *arg) {
  struct job *j = (struct job *)arg;
  float *x, *host_in;
  static const size_t bytes = N * sizeof(float);
  CHECK_CUDA(cudaMalloc((void **)&x, bytes));
  CHECK_CUDA(cudaMallocHost((void **)&host_in, bytes));
  CHECK_CUDA(cudaMallocHost((void **)&j->pinned, bytes));
  for (int i = 0; i < N; i++) host_in[i] = (float)(i % 11 + j->id);
  int n = N;

  CHECK_CUDA(cudaMemsetAsync(x, 0, bytes, 0));
  CHECK_CUDA(cudaMemcpyAsync(x, host_in, bytes, cudaMemcpyHostToDevice, cudaStreamPerThread));
  for (int k = 0; k < CHAIN; k++)
    PROG_LAUNCH(pt_mad, GRID, BLOCK, 0, 0, x, 0.5f + (float)k, (float)j->id, n);

  float m = -1.5f, c = 2.0f;
  void *args[] = {&x, &m, &c, &n};
  CHECK_CUDA(cudaLaunchKernel((const void *)pt_mad, dim3(GRID), dim3(BLOCK), args, 0, 0));
  PROG_RT();

  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = dim3(GRID);
  cfg.blockDim = dim3(BLOCK);
  cfg.stream = cudaStreamPerThread;
  m = 0.25f;
  CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)pt_mad, args));
  PROG_RT();

  m = 3.0f;
  CHECK_CUDA(
      cudaLaunchCooperativeKernel((const void *)pt_mad, dim3(GRID), dim3(BLOCK), args, 0, 0));
  PROG_RT();

  cudaEvent_t ev;
  CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventRecord(ev, 0));
  CHECK_CUDA(cudaStreamWaitEvent(cudaStreamPerThread, ev, 0));
  CHECK_CUDA(cudaMemcpyAsync(j->pinned, x, bytes, cudaMemcpyDeviceToHost, 0));
  CHECK_CUDA(cudaLaunchHostFunc(0, observe, j));
  PROG_LAUNCH(pt_mad, GRID, BLOCK, 0, cudaStreamPerThread, x, 1.0f, -1.0f, n);
  CHECK_CUDA(cudaStreamSynchronize(0));
  CHECK_CUDA(cudaStreamQuery(0));
  CHECK_CUDA(cudaMemcpy(host_in, x, bytes, cudaMemcpyDeviceToHost));
  j->hash = prog_hash(host_in, bytes);

  CHECK_CUDA(cudaEventDestroy(ev));
  CHECK_CUDA(cudaFreeHost(j->pinned));
  CHECK_CUDA(cudaFreeHost(host_in));
  CHECK_CUDA(cudaFree(x));
  return NULL;
}

int main(void) {
  struct job jobs[2] = {{1, 0.0f, NULL, 0}, {2, 0.0f, NULL, 0}};
  pthread_t th[2];
  for (int t = 0; t < 2; t++) CHECK_INT(pthread_create(&th[t], NULL, run, &jobs[t]), ==, 0);
  for (int t = 0; t < 2; t++) CHECK_INT(pthread_join(th[t], NULL), ==, 0);
  for (int t = 0; t < 2; t++)
    printf("thread %d: %016llx seen=%08x\n", jobs[t].id, (unsigned long long)jobs[t].hash,
           prog_fbits(jobs[t].seen));
  CHECK_CUDA(cudaDeviceSynchronize());
  prog_print_launches();
  return 0;
}
