/* nvrtc-run.cu — kernels generated at run time: CUDA C written by the program, compiled with
 * NVRTC for the device's architecture, loaded with cuModuleLoadData and launched with
 * cuLaunchKernel, as a fusing library does.
 *
 * Usage: nvrtc-run            the kernels and the failing compilation below
 *        nvrtc-run --barrier  compiles a kernel that uses __syncthreads and __shared__ and
 *                             prints the result and whether the log names them (a GPU compiles
 *                             it; the simulator refuses it, tests/sim/README.md "NVRTC")
 *        nvrtc-run --same-name  compiles two different programs whose kernels have one name,
 *                             and runs the first; prints both results (a GPU compiles both; the
 *                             simulator, which finds twins by name, refuses the second)
 *
 * The source is made here with the constants of this run baked in: an elementwise kernel with
 * C linkage (a few float operations each rounded once, and a half-precision addition) and a
 * template kernel with C++ linkage, reached through nvrtcAddNameExpression and
 * nvrtcGetLoweredName. It is compiled with --fmad=false, so that no product and sum are fused
 * unless the source says fmaf, and checked bit for bit against the same arithmetic on the host
 * (built with -ffp-contract=off). A source with a syntax error must fail with
 * NVRTC_ERROR_COMPILATION and a log. Output: the results' hashes, the mismatches, the launch
 * counts (prog.h).
 *
 * cuda_fp16.h is not built into NVRTC: the toolkit's include folder (NVRTC_RUN_CUDA_INCLUDE,
 * fixed at build time) is passed with -I.
 */
#include <cuda.h>
#include <cuda_fp16.h>
#include <nvrtc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prog.h"

#ifndef NVRTC_RUN_CUDA_INCLUDE
#define NVRTC_RUN_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

#define CU(call)                                                                        \
  do {                                                                                  \
    CUresult r_ = (call);                                                               \
    if (r_ != CUDA_SUCCESS) {                                                           \
      const char *s_ = NULL;                                                            \
      cuGetErrorName(r_, &s_);                                                          \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?");     \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

#define NV(call)                                                                        \
  do {                                                                                  \
    nvrtcResult r_ = (call);                                                            \
    if (r_ != NVRTC_SUCCESS) {                                                          \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, nvrtcGetErrorString(r_)); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

enum { N = 1000, BLOCK = 128 };

static char *program_log(nvrtcProgram p) {
  size_t n = 0;
  NV(nvrtcGetProgramLogSize(p, &n));
  char *log = (char *)malloc(n + 1);
  NV(nvrtcGetProgramLog(p, log));
  log[n] = 0;
  return log;
}

/* Compiles src for the device's architecture; returns the result, and the CUBIN in *cubin on
 * success. name_expr, when given, is added before and its lowered name returned in *lowered. */
static nvrtcResult compile(const char *src, int cc, char **cubin, char **log, const char *name_expr,
                           char **lowered) {
  nvrtcProgram p;
  NV(nvrtcCreateProgram(&p, src, "generated.cu", 0, NULL, NULL));
  if (name_expr) NV(nvrtcAddNameExpression(p, name_expr));
  char arch[32];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", cc);
  const char *opts[] = {arch, "--fmad=false", "-I" NVRTC_RUN_CUDA_INCLUDE, "-DGEN_BLOCK=128"};
  nvrtcResult r = nvrtcCompileProgram(p, 4, opts);
  *log = program_log(p);
  if (r == NVRTC_SUCCESS) {
    size_t n = 0;
    NV(nvrtcGetCUBINSize(p, &n));
    *cubin = (char *)malloc(n);
    NV(nvrtcGetCUBIN(p, *cubin));
    if (name_expr) {
      const char *l = NULL;
      NV(nvrtcGetLoweredName(p, name_expr, &l));
      *lowered = strdup(l);
    }
  }
  NV(nvrtcDestroyProgram(&p));
  return r;
}

/* The host's version of the generated kernel's arithmetic, with the same constants. */
static float ref_float(float a, float b, float alpha, float beta) {
  float t = fmaf(a, alpha, b);
  float d = 1.0f + b * b;
  float u = sqrtf(fabsf(t)) / d;
  float v = fmaxf(u, a - b);
  return v * beta - fminf(a, 0.25f);
}

static uint16_t ref_half(float a, float b) {
  __half h = __float2half(__half2float(__float2half(a)) + __half2float(__float2half(b)));
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

static int barrier_mode(int cc) {
  const char *src =
      "extern \"C\" __global__ void gen_reverse(float *x) {\n"
      "  __shared__ float tile[GEN_BLOCK];\n"
      "  tile[threadIdx.x] = x[threadIdx.x];\n"
      "  __syncthreads();\n"
      "  x[threadIdx.x] = tile[GEN_BLOCK - 1 - threadIdx.x];\n"
      "}\n";
  char *cubin = NULL, *log = NULL;
  nvrtcResult r = compile(src, cc, &cubin, &log, NULL, NULL);
  printf("barrier kernel: %s, log names __syncthreads or __shared__: %s\n", nvrtcGetErrorString(r),
         strstr(log, "__syncthreads") || strstr(log, "__shared__") ? "yes" : "no");
  free(cubin);
  free(log);
  return 0;
}

static int same_name_mode(int cc) {
  const char *a = "extern \"C\" __global__ void gen_scale(float *x) { x[threadIdx.x] *= 2.0f; }\n";
  const char *b = "extern \"C\" __global__ void gen_scale(float *x) { x[threadIdx.x] *= 3.0f; }\n";
  char *cubin = NULL, *log = NULL;
  nvrtcResult r = compile(a, cc, &cubin, &log, NULL, NULL);
  printf("first gen_scale: %s\n", nvrtcGetErrorString(r));
  if (r != NVRTC_SUCCESS) return 1;
  CUmodule mod;
  CUfunction f;
  CU(cuModuleLoadData(&mod, cubin));
  CU(cuModuleGetFunction(&f, mod, "gen_scale"));
  float h[4] = {1, 2, 3, 4};
  CUdeviceptr d;
  CU(cuMemAlloc(&d, sizeof h));
  CU(cuMemcpyHtoD(d, h, sizeof h));
  void *args[] = {&d};
  CU(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL));
  PROG_DRV();
  CU(cuMemcpyDtoH(h, d, sizeof h));
  printf("first gen_scale ran: %g %g %g %g\n", h[0], h[1], h[2], h[3]);
  free(cubin), free(log);
  cubin = log = NULL;
  r = compile(b, cc, &cubin, &log, NULL, NULL);
  printf("second gen_scale: %s, log names the kernel: %s\n", nvrtcGetErrorString(r),
         strstr(log, "gen_scale") ? "yes" : "no");
  free(cubin), free(log);
  CU(cuMemFree(d));
  CU(cuModuleUnload(mod));
  return 0;
}

int main(int argc, char **argv) {
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  int major = 0, minor = 0;
  CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  int cc = major * 10 + minor;
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  int vmaj = 0, vmin = 0;
  NV(nvrtcVersion(&vmaj, &vmin));
  printf("nvrtc %d.%d, compiling for sm_%d\n", vmaj, vmin, cc);

  if (argc > 1 && (!strcmp(argv[1], "--barrier") || !strcmp(argv[1], "--same-name"))) {
    int rc = !strcmp(argv[1], "--barrier") ? barrier_mode(cc) : same_name_mode(cc);
    prog_print_launches();
    return rc;
  }

  /* The run's constants, as a code generator would bake them in. */
  const float alpha = 1.5f, beta = -0.75f;
  char src[4096];
  snprintf(src, sizeof src,
           "#include <cuda_fp16.h>\n"
           "// elementwise kernel generated by nvrtc-run\n"
           "extern \"C\" __global__ void __launch_bounds__(GEN_BLOCK)\n"
           "gen_fused(const float *__restrict__ x, const float *__restrict__ y, float *out,\n"
           "          __half *hout, int n) {\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  if (i >= n) return;\n"
           "  float a = x[i], b = y[i];\n"
           "  float t = fmaf(a, %af, b);\n"
           "  float d = 1.0f + b * b;\n"
           "  float u = sqrtf(fabsf(t)) / d;\n"
           "  float v = fmaxf(u, a - b);\n"
           "  out[i] = v * %af - fminf(a, 0.25f);\n"
           "  hout[i] = __hadd(__float2half(a), __float2half(b));\n"
           "}\n"
           "template <typename T> __global__ void gen_axpy(T *y, const T *x, T s, int n) {\n"
           "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
           "    y[i] = s * x[i] + y[i];\n"
           "}\n",
           (double)alpha, (double)beta);

  char *cubin = NULL, *log = NULL, *lowered = NULL;
  nvrtcResult r = compile(src, cc, &cubin, &log, "gen_axpy<float>", &lowered);
  if (r != NVRTC_SUCCESS) {
    fprintf(stderr, "compilation failed: %s\n%s\n", nvrtcGetErrorString(r), log);
    return 1;
  }
  printf("compiled: %s, lowered name of gen_axpy<float>: %s\n", nvrtcGetErrorString(r), lowered);
  free(log);

  CUmodule mod;
  CU(cuModuleLoadData(&mod, cubin));
  CUfunction fused, axpy;
  CU(cuModuleGetFunction(&fused, mod, "gen_fused"));
  CU(cuModuleGetFunction(&axpy, mod, lowered));

  float *hx = (float *)malloc(N * sizeof(float)), *hy = (float *)malloc(N * sizeof(float));
  uint32_t seed = 12345;
  for (int i = 0; i < N; i++) {
    seed = seed * 1664525u + 1013904223u;
    hx[i] = (float)((int)(seed >> 8) - (1 << 23)) / (float)(1 << 21);
    seed = seed * 1664525u + 1013904223u;
    hy[i] = (float)((int)(seed >> 8) - (1 << 23)) / (float)(1 << 22);
  }
  CUdeviceptr dx, dy, dout, dh;
  CU(cuMemAlloc(&dx, N * sizeof(float)));
  CU(cuMemAlloc(&dy, N * sizeof(float)));
  CU(cuMemAlloc(&dout, N * sizeof(float)));
  CU(cuMemAlloc(&dh, N * sizeof(uint16_t)));
  CU(cuMemcpyHtoD(dx, hx, N * sizeof(float)));
  CU(cuMemcpyHtoD(dy, hy, N * sizeof(float)));

  int n = N;
  void *fargs[] = {&dx, &dy, &dout, &dh, &n};
  CU(cuLaunchKernel(fused, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, fargs, NULL));
  PROG_DRV();
  /* y += 0.5 x twice, with a grid smaller than the data (the kernel strides). */
  float s = 0.5f;
  void *aargs[] = {&dy, &dx, &s, &n};
  for (int k = 0; k < 2; k++) {
    CU(cuLaunchKernel(axpy, 3, 1, 1, 64, 1, 1, 0, NULL, aargs, NULL));
    PROG_DRV();
  }
  float *out = (float *)malloc(N * sizeof(float)), *yout = (float *)malloc(N * sizeof(float));
  uint16_t *hout = (uint16_t *)malloc(N * sizeof(uint16_t));
  CU(cuMemcpyDtoH(out, dout, N * sizeof(float)));
  CU(cuMemcpyDtoH(hout, dh, N * sizeof(uint16_t)));
  CU(cuMemcpyDtoH(yout, dy, N * sizeof(float)));

  int bad_f = 0, bad_h = 0, bad_a = 0;
  for (int i = 0; i < N; i++) {
    float want = ref_float(hx[i], hy[i], alpha, beta);
    if (prog_fbits(want) != prog_fbits(out[i])) {
      if (bad_f++ < 3) printf("  float [%d]: %a, host %a\n", i, (double)out[i], (double)want);
    }
    uint16_t wh = ref_half(hx[i], hy[i]);
    if (wh != hout[i] && bad_h++ < 3) printf("  half [%d]: 0x%04x, host 0x%04x\n", i, hout[i], wh);
    float y = hy[i];
    for (int k = 0; k < 2; k++) {
      float p = s * hx[i];
      y = p + y;
    }
    if (prog_fbits(y) != prog_fbits(yout[i]) && bad_a++ < 3)
      printf("  axpy [%d]: %a, host %a\n", i, (double)yout[i], (double)y);
  }
  printf("gen_fused: float hash %016llx, half hash %016llx\n",
         (unsigned long long)prog_hash(out, N * sizeof(float)),
         (unsigned long long)prog_hash(hout, N * sizeof(uint16_t)));
  printf("gen_axpy<float>: hash %016llx\n", (unsigned long long)prog_hash(yout, N * sizeof(float)));
  printf("mismatches against the host: float=%d half=%d axpy=%d\n", bad_f, bad_h, bad_a);

  /* A syntax error: the compilation fails and says why. */
  const char *broken = "extern \"C\" __global__ void gen_broken(float *x) { x[0] = 1.0f +; }\n";
  char *bcubin = NULL, *blog = NULL;
  r = compile(broken, cc, &bcubin, &blog, NULL, NULL);
  printf("syntax error: %s, log %s\n", nvrtcGetErrorString(r),
         strlen(blog) && strstr(blog, "error") ? "names the error" : "empty or without an error");

  CU(cuModuleUnload(mod));
  CU(cuMemFree(dx));
  CU(cuMemFree(dy));
  CU(cuMemFree(dout));
  CU(cuMemFree(dh));
  CU(cuDevicePrimaryCtxRelease(dev));
  free(cubin), free(lowered), free(blog), free(bcubin);
  free(hx), free(hy), free(out), free(yout), free(hout);
  prog_print_launches();
  return bad_f || bad_h || bad_a || r != NVRTC_ERROR_COMPILATION;
}
