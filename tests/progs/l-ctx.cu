/* l-ctx.cu — destroying a context through the driver API ends its modules, functions and
 * graphs.
 *
 * Usage: l-ctx [KERNEL_DIR]   (default: ../kernels next to this program)
 *
 * Three rounds, driver API only (linked against libcuda). Each retains the device's primary
 * context and makes it current, loads prog-driver.cubin with cuModuleLoadData from a heap buffer
 * it then frees, allocates, and runs ITERS steps on a stream (pd_axpy, pd_mixed, pd_axpy, then a
 * synchronous copy back: long enough to be learnt and replayed as a graph). It then launches the
 * first two kernels of a step once more, which a library may be holding, and ends the context
 * at once: round 0 by releasing its last reference (cuDevicePrimaryCtxRelease), round 1 by
 * cuDevicePrimaryCtxReset, round 2 by releasing it again. The next round loads the same image
 * into the new context; a driver may hand out the very same module and function handles (the
 * simulator does), so a library must have forgotten everything of the old context rather than
 * replay its graph. Output: a checksum per step, then the launch counts.
 */
#include <cuda.h>
#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 256, BLOCK = 64, GRID = N / BLOCK, ITERS = 6, ROUNDS = 3 };

#include "prog-driver-twins.h"

static void *read_file(const char *dir, const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "l-ctx: cannot open %s\n", path);
    exit(1);
  }
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  CHECK(n > 0);
  rewind(f);
  void *buf = aligned_alloc(8, ((size_t)n + 7) & ~(size_t)7);
  CHECK(buf != NULL);
  CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  char dir[4096];
  if (argc > 1) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
  } else {
    snprintf(dir, sizeof dir, "%s", argv[0]);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    strncat(dir, "/../kernels", sizeof dir - strlen(dir) - 1);
  }
  CUdevice dev;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&dev, 0));
  float hy[N];
  int hout[N];
  for (int round = 0; round < ROUNDS; round++) {
    CUcontext ctx;
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    void *cubin = read_file(dir, "prog-driver.cubin");
    CUmodule mod;
    CUfunction f_axpy, f_mixed;
    CHECK_CU(cuModuleLoadData(&mod, cubin));
    free(cubin);
    CHECK_CU(cuModuleGetFunction(&f_axpy, mod, "pd_axpy"));
    CHECK_CU(cuModuleGetFunction(&f_mixed, mod, "pd_mixed"));
    CUdeviceptr x, y, out;
    CUstream s;
    CHECK_CU(cuMemAlloc(&x, sizeof hy));
    CHECK_CU(cuMemAlloc(&y, sizeof hy));
    CHECK_CU(cuMemAlloc(&out, sizeof hout));
    for (int i = 0; i < N; i++) hy[i] = 0.5f * (float)i, hout[i] = i;
    CHECK_CU(cuMemcpyHtoD(x, hy, sizeof hy));
    CHECK_CU(cuMemcpyHtoD(y, hy, sizeof hy));
    CHECK_CU(cuMemcpyHtoD(out, hout, sizeof hout));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT)); /* orders after the copies above */
    int n = N;
    char c = 1;
    double d = 2.0;
    short sh = 3;
    float4 v = {0.25f, 0.5f, 1.0f, 2.0f};
    for (int it = 0; it <= ITERS; it++) {
      float a = 0.5f + 0.125f * (float)((round + it) % 4), b = -0.25f;
      void *p_axpy[] = {&a, &x, &y, &n};
      void *p_mixed[] = {&c, &d, &sh, &v, &out, &n};
      void *p_axpy2[] = {&b, &x, &y, &n};
      CHECK_CU(cuLaunchKernel(f_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, p_axpy, NULL));
      CHECK_CU(cuLaunchKernel(f_mixed, GRID, 1, 1, BLOCK, 1, 1, 0, s, p_mixed, NULL));
      PROG_DRV();
      PROG_DRV();
      if (it == ITERS) break; /* the context ends with these two launches in flight */
      CHECK_CU(cuLaunchKernel(f_axpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, p_axpy2, NULL));
      PROG_DRV();
      CHECK_CU(cuStreamSynchronize(s));
      CHECK_CU(cuMemcpyDtoH(hy, y, sizeof hy));
      CHECK_CU(cuMemcpyDtoH(hout, out, sizeof hout));
      printf("round %d step %d: %016llx %016llx\n", round, it,
             (unsigned long long)prog_hash(hy, sizeof hy),
             (unsigned long long)prog_hash(hout, sizeof hout));
    }
    /* The context's memory, stream and module go with it. */
    if (round == 1)
      CHECK_CU(cuDevicePrimaryCtxReset(dev));
    else
      CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  }
  prog_print_floats("y", hy, N);
  prog_print_launches();
  return 0;
}
