/* s-occupancy.cu — occupancy answers and the largest cooperative launch.
 *
 * A cooperative grid must be co-resident: CUDA refuses one with more blocks than
 * cuOccupancyMaxActiveBlocksPerMultiprocessor times the number of SMs
 * (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE). For three shapes (128 threads; 400 threads, not a
 * multiple of the warp; 128 threads with 40 KiB of dynamic shared memory) the program asks the
 * runtime and the driver for the blocks per SM, then launches a cooperative grid of exactly
 * blocks per SM × SMs blocks (it must run: its values are checked) and one of a block more (it
 * must fail with cudaErrorCooperativeLaunchTooLarge), through cudaLaunchCooperativeKernel and
 * through cudaLaunchKernelExC with the cooperative attribute. A kernel node with the cooperative
 * attribute takes the largest grid and refuses a block more. Bad input: a NULL result pointer,
 * a block size of 0 and unknown flags are cudaErrorInvalidValue (CUDA_ERROR_INVALID_VALUE).
 *
 * On the simulator (an H100-class device: compute capability 9.0, 132 SMs) the answers are 16,
 * 4 and 5 (tests/sim/README.md has the model). Other GPUs give other numbers, but the
 * relation between the answer and the launches holds on any device that supports cooperative
 * launches. Output: one line per shape, the error lines, then the launch counts (see prog.h).
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

__host__ __device__ static inline void fill_body(unsigned long i, unsigned *x, unsigned salt,
                                                 unsigned long n) {
  if (i < n) x[i] = (unsigned)i * 2654435761u + salt;
}

extern "C" __global__ void oc_fill(unsigned *x, unsigned salt, unsigned long n) {
  extern __shared__ unsigned oc_shared[];
  unsigned long i = PROG_TID();
  /* The dynamic shared memory is used where the launch gives some: a write past the end of
   * what it gives (none, for the shapes without) faults on a GPU (cudaErrorIllegalAddress, as
   * seen on an H200), which the CPU twin cannot see. */
  unsigned dyn;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  if (dyn >= sizeof(unsigned) && threadIdx.x == 0) oc_shared[0] = salt;
  fill_body(i, x, salt, n);
}

SIM_KERNEL(oc_fill) {
  SIM_FOR_EACH_THREAD(i)
  fill_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned long));
}

static const char *nm(cudaError_t e) { return cudaGetErrorName(e); }
static const char *cu_nm(CUresult r) {
  const char *s = NULL;
  return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "?";
}

/* Whether the last `threads` values of x hold what oc_fill wrote with `salt`. */
static int filled(const unsigned *dx, unsigned long threads, unsigned salt) {
  static unsigned h[1u << 20];
  CHECK_INT(threads, <=, sizeof h / sizeof h[0]);
  CHECK_CUDA(cudaMemcpy(h, dx, threads * sizeof *h, cudaMemcpyDeviceToHost));
  for (unsigned long i = 0; i < threads; i++)
    if (h[i] != (unsigned)i * 2654435761u + salt) return 0;
  return 1;
}

/* A cooperative launch of `blocks` blocks through cudaLaunchCooperativeKernel (ex = 0) or
 * cudaLaunchKernelExC with the cooperative attribute (ex = 1). */
static cudaError_t coop_launch(int ex, unsigned *x, unsigned salt, unsigned blocks,
                               unsigned threads, size_t shmem, cudaStream_t s) {
  unsigned long n = (unsigned long)blocks * threads;
  void *args[] = {&x, &salt, &n};
  cudaError_t e;
  if (!ex) {
    e = cudaLaunchCooperativeKernel((const void *)oc_fill, dim3(blocks), dim3(threads), args,
                                    shmem, s);
  } else {
    cudaLaunchAttribute at;
    memset(&at, 0, sizeof at);
    at.id = cudaLaunchAttributeCooperative;
    at.val.cooperative = 1;
    cudaLaunchConfig_t c;
    memset(&c, 0, sizeof c);
    c.gridDim = dim3(blocks);
    c.blockDim = dim3(threads);
    c.dynamicSmemBytes = shmem;
    c.stream = s;
    c.attrs = &at;
    c.numAttrs = 1;
    e = cudaLaunchKernelExC(&c, (const void *)oc_fill, args);
  }
  PROG_RT(); /* a launch the program made, whether or not the device took it */
  (void)cudaGetLastError(); /* the refused launch's error is reported here, not later */
  return e;
}

/* Kernel nodes with the cooperative attribute: the largest grid is taken, a block more is
 * refused (when the attribute is set on a node with that grid, and when new parameters with
 * that grid are set on a node that has the attribute). The graph then runs. */
static void coop_node(unsigned *x, unsigned per_sm, int sms, unsigned threads, size_t shmem,
                      cudaStream_t s) {
  unsigned salt = 77, most = per_sm * (unsigned)sms;
  unsigned long n = (unsigned long)most * threads;
  void *args[] = {&x, &salt, &n};
  cudaKernelNodeParams p;
  memset(&p, 0, sizeof p);
  p.func = (void *)oc_fill;
  p.gridDim = dim3(most);
  p.blockDim = dim3(threads);
  p.sharedMemBytes = (unsigned)shmem;
  p.kernelParams = args;
  cudaGraph_t g;
  cudaGraphNode_t ok_node, big_node;
  CHECK_CUDA(cudaGraphCreate(&g, 0));
  CHECK_CUDA(cudaGraphAddKernelNode(&ok_node, g, NULL, 0, &p));
  CUlaunchAttributeValue v;
  memset(&v, 0, sizeof v);
  v.cooperative = 1;
  CUresult set_ok = cuGraphKernelNodeSetAttribute((CUgraphNode)ok_node,
                                                  CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v);
  cudaKernelNodeParams q = p;
  q.gridDim = dim3(most + 1);
  cudaError_t params_big = cudaGraphKernelNodeSetParams(ok_node, &q);
  (void)cudaGetLastError();
  CHECK_CUDA(cudaGraphAddKernelNode(&big_node, g, &ok_node, 1, &q));
  CUresult set_big = cuGraphKernelNodeSetAttribute((CUgraphNode)big_node,
                                                   CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v);
  CHECK_CUDA(cudaGraphDestroy(g));
  /* The graph of the accepted node alone runs. */
  CHECK_CUDA(cudaGraphCreate(&g, 0));
  CHECK_CUDA(cudaGraphAddKernelNode(&ok_node, g, NULL, 0, &p));
  CHECK_CU(cuGraphKernelNodeSetAttribute((CUgraphNode)ok_node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                                         &v));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  printf("  node threads=%u shmem=%zu: grid %u attribute=%s, params grid %u=%s, attribute on "
         "grid %u=%s, ran=%s\n",
         threads, shmem, most, cu_nm(set_ok), most + 1, nm(params_big), most + 1, cu_nm(set_big),
         filled(x, n, salt) ? "ok" : "WRONG");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(g));
}

int main(void) {
  int sms = 0, coop = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
  CHECK(coop);
  cudaFunction_t fn;
  CHECK_CUDA(cudaGetFuncBySymbol(&fn, (const void *)oc_fill));
  unsigned *x;
  CHECK_CUDA(cudaMalloc((void **)&x, (1u << 20) * sizeof *x));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  printf("sms=%d\n", sms);

  const struct {
    unsigned threads;
    size_t shmem;
  } shapes[] = {{128, 0}, {400, 0}, {128, 40 * 1024}};
  unsigned salt = 1;
  for (unsigned k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    unsigned threads = shapes[k].threads;
    size_t shmem = shapes[k].shmem;
    int rt = -1, rt_flags = -1, drv = -1, drv_flags = -1;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&rt, oc_fill, (int)threads, shmem));
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        &rt_flags, oc_fill, (int)threads, shmem, cudaOccupancyDisableCachingOverride));
    CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&drv, (CUfunction)fn, (int)threads,
                                                          shmem));
    CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        &drv_flags, (CUfunction)fn, (int)threads, shmem, CU_OCCUPANCY_DEFAULT));
    CHECK_INT(rt, ==, drv);
    CHECK_INT(rt_flags, ==, drv);
    CHECK_INT(drv_flags, ==, drv);
    CHECK_INT(rt, >, 0);
    unsigned most = (unsigned)rt * (unsigned)sms;
    printf("threads=%u shmem=%zu: blocks/SM=%d cooperative grid at most %u\n", threads, shmem, rt,
           most);
    for (int ex = 0; ex < 2; ex++) {
      const char *how = ex ? "cudaLaunchKernelExC" : "cudaLaunchCooperativeKernel";
      salt++;
      cudaError_t at_most = coop_launch(ex, x, salt, most, threads, shmem, s);
      CHECK_CUDA(cudaStreamSynchronize(s));
      int ok = at_most == cudaSuccess && filled(x, (unsigned long)most * threads, salt);
      cudaError_t beyond = coop_launch(ex, x, salt + 1000, most + 1, threads, shmem, s);
      CHECK_CUDA(cudaStreamSynchronize(s));
      printf("  %s: grid %u=%s ran=%s, grid %u=%s\n", how, most, nm(at_most), ok ? "ok" : "WRONG",
             most + 1, nm(beyond));
    }
    coop_node(x, (unsigned)rt, sms, threads, shmem, s);
  }

  int v = 0;
  printf("null result: runtime=%s driver=%s\n",
         nm(cudaOccupancyMaxActiveBlocksPerMultiprocessor(NULL, oc_fill, 128, 0)),
         cu_nm(cuOccupancyMaxActiveBlocksPerMultiprocessor(NULL, (CUfunction)fn, 128, 0)));
  printf("block size 0: runtime=%s driver=%s\n",
         nm(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, oc_fill, 0, 0)),
         cu_nm(cuOccupancyMaxActiveBlocksPerMultiprocessor(&v, (CUfunction)fn, 0, 0)));
  printf("unknown flags: runtime=%s driver=%s\n",
         nm(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&v, oc_fill, 128, 0, 0x100)),
         cu_nm(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&v, (CUfunction)fn, 128, 0,
                                                                    0x100)));
  (void)cudaGetLastError();

  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
