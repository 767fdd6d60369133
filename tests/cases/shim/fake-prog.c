/* fake-prog.c — the program of shim-fake-driver.sh: runtime launches and copies through the
 * fake runtime, driver calls through the getter and through dlsym, each result checked. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned x, y, z; } dim3;
int cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t sh, void *s);
int cudaLaunchKernel_ptsz(const void *f, dim3 g, dim3 b, void **args, size_t sh, void *s);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);

typedef int (*getter_t)(const char *, void **, int, uint64_t, int *);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "check failed: %s\n", #x); exit(1); } } while (0)

int main(void) {
  int acc = 0, r;
  void *args[] = {&acc};
  dim3 g = {2, 1, 1}, b = {1, 1, 1};
  for (int i = 0; i < 5; i++) CHECK(cudaLaunchKernel((void *)main, g, b, args, 0, NULL) == 0);
  for (int i = 0; i < 4; i++) CHECK(cudaLaunchKernel_ptsz((void *)main, g, b, args, 0, NULL) == 0);
  CHECK(acc == 18);
  char src[8] = "abcdefg", dst[8] = {0};
  CHECK(cudaMemcpy(dst, src, 8, 1) == 0 && !strcmp(dst, "abcdefg"));
  CHECK(cudaMemcpy(dst, "1234567", 8, 1) == 0 && !strcmp(dst, "1234567"));

  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  CHECK(h);
  int *calls = (int *)dlsym(h, "fake_calls");
  getter_t get = (getter_t)dlsym(h, "cuGetProcAddress_v2");
  CHECK(calls && get);
  launch_t l1, l2;
  CHECK(get("cuLaunchKernel", (void **)&l1, 12000, 0, NULL) == 0);
  for (int i = 0; i < 3; i++) CHECK(l1(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) == 0);
  l2 = (launch_t)dlsym(h, "cuLaunchKernel");
  CHECK(l2);
  for (int i = 0; i < 2; i++) CHECK(l2(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) == 0);
  CHECK(acc == 23);
  /* The same name at two ABIs must reach the function of the same ABI. */
  int (*s0)(void), (*s13)(void *);
  CHECK(get("cuCtxSynchronize", (void **)&s0, 12000, 0, NULL) == 0);
  CHECK(get("cuCtxSynchronize", (void **)&s13, 13000, 0, NULL) == 0);
  CHECK(s0() == 0 && calls[3] == 1 && calls[4] == 0);
  int st = 7;
  uint64_t id;
  int (*ci10)(void *, int *, uint64_t *);
  int (*ci12)(void *, int *, uint64_t *, void *, void *, void *, size_t *);
  CHECK(get("cuStreamGetCaptureInfo", (void **)&ci10, 11000, 0, NULL) == 0);
  CHECK(get("cuStreamGetCaptureInfo", (void **)&ci12, 12030, 0, NULL) == 0);
  CHECK(ci10(NULL, &st, &id) == 0 && st == 0 && calls[5] == 1);
  CHECK(ci12(NULL, &st, &id, NULL, NULL, NULL, NULL) == 0 && calls[6] == 1);
  /* Functions the library's table does not describe reach the driver with every argument. */
  int (*gl)(void **, unsigned, unsigned);
  int (*reset)(int);
  int (*wide)(int, int, int, int, int, int, int, int, double, double, double, double, double,
              double, double, double, double, long *);
  CHECK(get("cuGraphicsGLRegisterBuffer", (void **)&gl, 3000, 0, NULL) == 0);
  CHECK(get("cuDevicePrimaryCtxReset", (void **)&reset, 7000, 0, NULL) == 0);
  CHECK(get("cuFakeWide", (void **)&wide, 13000, 0, NULL) == 0);
  void *res = NULL;
  CHECK(gl(&res, 7, 2) == 0 && res == (void *)72);
  CHECK(reset(3) == 0 && reset(4) == 1);
  long out = 0;
  for (int i = 0; i < 2; i++) {
    out = 0;
    CHECK(wide(1, 2, 3, 4, 5, 6, 7, 8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0, &out) ==
          36 + 90);
    CHECK(out == 1 + 4 + 9 + 16 + 25 + 36 + 49 + 64);
  }
  /* A missing entry keeps the driver's status. */
  void *p = (void *)1;
  CHECK(get("cuNoSuchFunction", &p, 12000, 0, NULL) == 500 && p == NULL);
  printf("launch abi %d ptsz %d htod %d\n", calls[0], calls[1], calls[2]);
  return 0;
}
