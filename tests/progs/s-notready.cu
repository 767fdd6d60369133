/* s-notready.cu — what cudaGetLastError / cudaPeekAtLastError say after a query answered
 * cudaErrorNotReady.
 *
 * A host function that waits for a flag (set by this thread later) keeps stream s busy, so
 * cudaStreamQuery(s), cudaEventQuery and cudaEventElapsedTime on an event recorded after it
 * answer cudaErrorNotReady whatever the scheduling. The program prints each answer and the last
 * error after it, first with no earlier error, then after an earlier real error
 * (cudaErrorInvalidMemcpyDirection from a copy of an unknown kind), so that the line shows
 * whether a NotReady replaces, keeps or clears what was recorded before.
 *
 * The CUDA documentation calls cudaErrorNotReady "not actually an error" and does not say
 * whether it becomes the last error; the simulator does not record it. On a GPU the output
 * shows what the real runtime does (tools/gpu-check prints these lines).
 */
#include <cuda_runtime.h>

#include "prog.h"

static int gate_open;

static void CUDART_CB gate(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE)) {
  }
}

static const char *nm(cudaError_t e) { return cudaGetErrorName(e); }

int main(void) {
  cudaStream_t s;
  cudaEvent_t start, end;
  float ms;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&end));
  for (int round = 0; round < 2; round++) {
    __atomic_store_n(&gate_open, 0, __ATOMIC_RELEASE);
    CHECK_CUDA(cudaEventRecord(start, s));
    CHECK_CUDA(cudaLaunchHostFunc(s, gate, NULL));
    CHECK_CUDA(cudaEventRecord(end, s));
    CHECK_CUDA(cudaGetLastError());
    const char *before = "none";
    if (round == 1) {
      /* A real error first: an invalid copy direction. */
      char c = 0;
      cudaError_t e = cudaMemcpy(&c, &c, 1, (cudaMemcpyKind)12345);
      before = nm(e);
    }
    cudaError_t q1 = cudaStreamQuery(s);
    cudaError_t peek1 = cudaPeekAtLastError();
    cudaError_t q2 = cudaEventQuery(end);
    cudaError_t q3 = cudaEventElapsedTime(&ms, start, end);
    cudaError_t get = cudaGetLastError();
    cudaError_t again = cudaGetLastError();
    printf("notready-last-error: earlier=%s stream-query=%s peek=%s event-query=%s "
           "elapsed=%s get=%s get-again=%s\n",
           before, nm(q1), nm(peek1), nm(q2), nm(q3), nm(get), nm(again));
    __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaStreamQuery(s));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(end));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
