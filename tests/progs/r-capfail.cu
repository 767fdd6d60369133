/* r-capfail.cu — a stream capture that fails to end still ends.
 *
 * The program begins a global-mode capture on a stream, launches into it, makes an unsafe call
 * (cudaMalloc) that invalidates the capture, and ends it: cudaStreamEndCapture returns
 * cudaErrorStreamCaptureInvalidated and no graph, and the stream no longer captures. Then it
 * runs an ordinary launch loop. A library that counts captures in progress and forgets to count
 * this one as ended would never hold (nor replay) anything again; the case checks replays.
 * Output: the statuses of the capture calls, a checksum per iteration, the launch counts.
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 128, ITERS = 12 };

__host__ __device__ static inline void mad_body(unsigned long i, unsigned *x, unsigned m,
                                                unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c;
}
extern "C" __global__ void cf_mad(unsigned *x, unsigned m, unsigned c, int n) {
  mad_body(PROG_TID(), x, m, c, n);
}
SIM_KERNEL(cf_mad) {
  SIM_FOR_EACH_THREAD(i)
  mad_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}

int main(void) {
  unsigned *x, *extra = NULL;
  cudaStream_t s;
  cudaGraph_t g = NULL;
  static unsigned h[N];
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemset(x, 0, N * sizeof *x));
  CHECK_CUDA(cudaDeviceSynchronize());

  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cf_mad<<<N / BLOCK, BLOCK, 0, s>>>(x, 3u, 1u, N);
  CHECK_CUDA(cudaGetLastError());
  PROG_RT();
  cudaError_t e = cudaMalloc((void **)&extra, 64); /* unsafe while a global capture runs */
  printf("malloc during capture: %s\n", cudaGetErrorName(e));
  (void)cudaGetLastError();
  e = cudaStreamEndCapture(s, &g);
  printf("end capture: %s, graph %s\n", cudaGetErrorName(e), g ? "returned" : "none");
  (void)cudaGetLastError();
  if (extra) CHECK_CUDA(cudaFree(extra));
  cudaStreamCaptureStatus st;
  CHECK_CUDA(cudaStreamIsCapturing(s, &st));
  printf("capturing after the end: %d\n", (int)st);

  for (int it = 0; it < ITERS; it++) {
    PROG_LAUNCH(cf_mad, N / BLOCK, BLOCK, 0, s, x, 69069u, (unsigned)it, N);
    PROG_LAUNCH(cf_mad, N / BLOCK, BLOCK, 0, s, x, 40503u, 7u, N);
    PROG_LAUNCH(cf_mad, N / BLOCK, BLOCK, 0, s, x, 1103515245u, 12345u, N);
    CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
    printf("iter %d: %016llx\n", it, (unsigned long long)prog_hash(h, sizeof h));
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
