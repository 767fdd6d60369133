/* launch-variants.cu — every way the runtime API launches a kernel, in one ordered chain.
 *
 * Launch forms: <<<>>> (nvcc 13 emits __cudaLaunchKernel), cudaLaunchKernel (also on the legacy
 * default stream), cudaLaunchKernelExC without and with launch attributes, the C++
 * cudaLaunchKernelEx template, cudaLaunchCooperativeKernel, a kernel with a C++ (mangled) name,
 * a kernel taking a struct by value, and a kernel obtained with cudaGetFuncBySymbol launched
 * through the driver's cuLaunchKernel obtained with cudaGetDriverEntryPoint and
 * cudaGetDriverEntryPointByVersion (the two driver launches are counted as driver launches).
 * Every launch updates one buffer with a non-commutative map, so the checksum printed after
 * each form shows that each launch ran exactly once, in order, with its own arguments.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

/* cudaGetDriverEntryPoint is deprecated, but programs still call it, so it is tested. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

enum { N = 256, BLOCK = 64, GRID = N / BLOCK };

struct lv_params {
  float a;
  double b;
  int c;
  char d;
};

__host__ __device__ static inline void axpb_body(unsigned long i, float *x, float a, float b,
                                                 int n) {
  if (i < (unsigned long)n) x[i] = x[i] * a + b + (float)(i % 3);
}
__host__ __device__ static inline void struct_body(unsigned long i, struct lv_params p, float *x,
                                                   int n) {
  if (i < (unsigned long)n) x[i] = x[i] * p.a + (float)p.b - (float)p.c + (float)p.d * 0.5f;
}

extern "C" __global__ void lv_axpb(float *x, float a, float b, int n) {
  axpb_body(PROG_TID(), x, a, b, n);
}
/* C++ linkage on purpose: its device name is the mangled one, _Z8lv_twicePfi. */
__global__ void lv_twice(float *x, int n) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)n) x[i] = 2.0f * x[i] - 1.0f;
}
extern "C" __global__ void lv_coop(float *x, int n) { axpb_body(PROG_TID(), x, -1.0f, 3.0f, n); }
extern "C" __global__ void lv_struct(struct lv_params p, float *x, int n) {
  struct_body(PROG_TID(), p, x, n);
}

SIM_KERNEL(lv_axpb) {
  SIM_FOR_EACH_THREAD(i)
  axpb_body(i, SIM_ARG(0, float *), SIM_ARG(1, float), SIM_ARG(2, float), SIM_ARG(3, int));
}
SIM_KERNEL(_Z8lv_twicePfi) {
  float *x = SIM_ARG(0, float *);
  int n = SIM_ARG(1, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) x[i] = 2.0f * x[i] - 1.0f;
}
SIM_KERNEL(lv_coop) {
  SIM_FOR_EACH_THREAD(i) axpb_body(i, SIM_ARG(0, float *), -1.0f, 3.0f, SIM_ARG(1, int));
}
SIM_KERNEL(lv_struct) {
  SIM_FOR_EACH_THREAD(i)
  struct_body(i, SIM_ARG(0, struct lv_params), SIM_ARG(1, float *), SIM_ARG(2, int));
}

static float *x;
static cudaStream_t s;

static void report(const char *form) {
  static float host[N];
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(host, x, sizeof host, cudaMemcpyDeviceToHost));
  prog_print_floats(form, host, N);
}

int main(void) {
  /* Blocking, so the legacy-default-stream launch below is ordered with it. */
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, N * sizeof(float)));
  int n = N;

  PROG_LAUNCH(lv_axpb, GRID, BLOCK, 0, s, x, 0.5f, 1.0f, n);
  report("triple-chevron");

  {
    float a = 1.5f, b = -2.0f;
    void *args[] = {&x, &a, &b, &n};
    CHECK_CUDA(cudaLaunchKernel((const void *)lv_axpb, dim3(GRID), dim3(BLOCK), args, 0, s));
    PROG_RT();
    a = -0.25f;
    CHECK_CUDA(cudaLaunchKernel((const void *)lv_axpb, dim3(GRID), dim3(BLOCK), args, 0, 0));
    PROG_RT();
  }
  report("cudaLaunchKernel");

  {
    void *args[] = {&x, &n};
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = dim3(GRID);
    cfg.blockDim = dim3(BLOCK);
    cfg.stream = s;
    CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)lv_twice, args));
    PROG_RT();
    report("cudaLaunchKernelExC");

    cudaLaunchAttribute attr[1];
    memset(attr, 0, sizeof attr);
    attr[0].id = cudaLaunchAttributePriority;
    attr[0].val.priority = 0;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)lv_twice, args));
    PROG_RT();
    report("cudaLaunchKernelExC+attrs");

    CHECK_CUDA(cudaLaunchKernelEx(&cfg, lv_axpb, x, 0.75f, 0.5f, n));
    PROG_RT();
    report("cudaLaunchKernelEx");
  }

  {
    int coop = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    CHECK(coop == 1);
    void *args[] = {&x, &n};
    CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)lv_coop, dim3(GRID), dim3(BLOCK), args,
                                           0, s));
    PROG_RT();
  }
  report("cudaLaunchCooperativeKernel");

  {
    struct lv_params p = {0.5f, 4.0, 3, 7};
    void *args[] = {&p, &x, &n};
    CHECK_CUDA(cudaLaunchKernel((const void *)lv_struct, dim3(GRID), dim3(BLOCK), args, 0, s));
    PROG_RT();
  }
  report("struct-by-value");

  {
    cudaFunction_t f;
    CHECK_CUDA(cudaGetFuncBySymbol(&f, (const void *)lv_axpb));
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    CHECK_CUDA(cudaGetDriverEntryPoint("cuLaunchKernel", &fn, cudaEnableDefault, &q));
    CHECK_INT(q, ==, cudaDriverEntryPointSuccess);
    CHECK(fn != NULL);
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)fn;
    float a = 1.25f, b = 0.125f;
    void *args[] = {&x, &a, &b, &n};
    CHECK_CU(launch((CUfunction)f, GRID, 1, 1, BLOCK, 1, 1, 0, (CUstream)s, args, NULL));
    PROG_DRV();

    fn = NULL;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn, 12000, cudaEnableDefault,
                                                &q));
    CHECK_INT(q, ==, cudaDriverEntryPointSuccess);
    CHECK(fn != NULL);
    launch = (PFN_cuLaunchKernel_v4000)fn;
    a = -0.5f;
    CHECK_CU(launch((CUfunction)f, GRID, 1, 1, BLOCK, 1, 1, 0, (CUstream)s, args, NULL));
    PROG_DRV();
  }
  report("driver-entry-point");

  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
