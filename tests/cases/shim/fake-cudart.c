/* fake-cudart.c — a minimal stand-in for libcudart.so.13 used by shim-fake-driver.sh.
 *
 * Reaches the driver as the real runtime does: dlopen("libcuda.so.1"), dlsym the getter, ask
 * it for the getter itself (12000) and then for each entry point. Its launch goes through the
 * driver's cuLaunchKernel, so under the preload one runtime launch arrives twice.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*getter_t)(const char *, void **, int, uint64_t, int *);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);
typedef int (*htod_t)(uintptr_t, const void *, size_t);
typedef struct { unsigned x, y, z; } dim3;

static launch_t drv_launch, drv_launch_ptsz;
static htod_t drv_htod;

static int init(void) {
  static int done;
  getter_t g, g2;
  if (done) return 0;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h || !(g = (getter_t)dlsym(h, "cuGetProcAddress_v2"))) return 35;
  if (g("cuGetProcAddress", (void **)&g2, 12000, 0, NULL)) return 35;
  if (g2("cuLaunchKernel", (void **)&drv_launch, 4000, 0, NULL)) return 35;
  if (g2("cuLaunchKernel", (void **)&drv_launch_ptsz, 7000, 2, NULL)) return 35;
  if (g2("cuMemcpyHtoD", (void **)&drv_htod, 3020, 0, NULL)) return 35;
  done = 1;
  return 0;
}

__attribute__((visibility("default"))) int cudaLaunchKernel(const void *f, dim3 g, dim3 b,
                                                            void **args, size_t sh, void *s) {
  int r = init();
  return r ? r : drv_launch((void *)f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)sh, s, args, NULL);
}

__attribute__((visibility("default"))) int cudaLaunchKernel_ptsz(const void *f, dim3 g, dim3 b,
                                                                 void **args, size_t sh, void *s) {
  int r = init();
  return r ? r
           : drv_launch_ptsz((void *)f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)sh, s, args, NULL);
}

__attribute__((visibility("default"))) int cudaMemcpy(void *dst, const void *src, size_t n,
                                                      int kind) {
  int r = init();
  (void)kind;
  return r ? r : drv_htod((uintptr_t)dst, src, n);
}
