/* fake-cuda.c — a minimal stand-in for libcuda.so.1 used by shim-fake-driver.sh.
 *
 * Its getter serves a handful of entries by (name, version, flags); each function records in
 * `fake_calls` which ABI ran, so the test program can tell that the preload forwarded every
 * call to the pointer of the same entry. Status values are distinctive (not 0) where it helps
 * to see that results pass through unchanged.
 */
#include <stdint.h>
#include <string.h>

typedef int CUresult;
#define EXPORT __attribute__((visibility("default")))

EXPORT int fake_calls[16];
enum { F_LAUNCH, F_LAUNCH_PTSZ, F_HTOD, F_SYNC, F_SYNC13, F_CAPINFO10, F_CAPINFO12 };

static CUresult launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned sh, void *s, void **p, void **e) {
  (void)f, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)s, (void)e;
  fake_calls[F_LAUNCH]++;
  if (p && p[0]) *(int *)p[0] += (int)gx; /* the "kernel": adds gridDim.x to its argument */
  return 0;
}
static CUresult launch_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned sh, void *s, void **p, void **e) {
  fake_calls[F_LAUNCH_PTSZ]++;
  return launch(f, gx, gy, gz, bx, by, bz, sh, s, p, e) + 0;
}
static CUresult htod(uintptr_t dst, const void *src, size_t n) {
  fake_calls[F_HTOD]++;
  memcpy((void *)dst, src, n);
  return 0;
}
static CUresult sync_v2000(void) { return fake_calls[F_SYNC]++, 0; }
static CUresult sync_v13000(void *ctx) { return (void)ctx, fake_calls[F_SYNC13]++, 0; }
static CUresult capinfo_v10010(void *s, int *st, uint64_t *id) {
  (void)s, (void)id;
  *st = 0;
  return fake_calls[F_CAPINFO10]++, 0;
}
static CUresult capinfo_v12030(void *s, int *st, uint64_t *id, void *g, void *d, void *e,
                               size_t *n) {
  (void)s, (void)id, (void)g, (void)d, (void)e, (void)n;
  *st = 0;
  return fake_calls[F_CAPINFO12]++, 0;
}

/* Functions no prototype in cudaTypedefs.h describes: GL interop, an old ABI, and a made-up one
 * with arguments in every kind of register and on the stack. Each checks what it received. */
static CUresult gl_register_buffer(void **res, unsigned buffer, unsigned flags) {
  *res = (void *)(uintptr_t)(buffer * 10u + flags);
  return 0;
}
static CUresult reset_v7000(int dev) { return dev == 3 ? 0 : 1; }
static CUresult wide(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, double d1,
                     double d2, double d3, double d4, double d5, double d6, double d7, double d8,
                     double d9, long *out) {
  *out = a1 + 2L * a2 + 3L * a3 + 4L * a4 + 5L * a5 + 6L * a6 + 7L * a7 + 8L * a8;
  return (CUresult)(d1 + 2 * d2 + 3 * d3 + 4 * d4 + 5 * d5 + 6 * d6 + 7 * d7 + 8 * d8 + 9 * d9);
}

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags,
                                    int *status);
EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags) {
  return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}
EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned sh, void *s, void **p,
                               void **e) {
  return launch(f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}
EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags,
                                    int *status) {
  void *p = NULL;
  int pt = (flags & 2) != 0;
  if (!strcmp(sym, "cuGetProcAddress")) p = ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
  else if (!strcmp(sym, "cuLaunchKernel")) p = pt ? (void *)launch_ptsz : (void *)launch;
  else if (!strcmp(sym, "cuMemcpyHtoD") && ver >= 3020) p = (void *)htod;
  else if (!strcmp(sym, "cuCtxSynchronize")) p = ver >= 13000 ? (void *)sync_v13000 : (void *)sync_v2000;
  else if (!strcmp(sym, "cuStreamGetCaptureInfo"))
    p = ver >= 12030 ? (void *)capinfo_v12030 : (void *)capinfo_v10010;
  else if (!strcmp(sym, "cuGraphicsGLRegisterBuffer")) p = (void *)gl_register_buffer;
  else if (!strcmp(sym, "cuDevicePrimaryCtxReset") && ver < 11000) p = (void *)reset_v7000;
  else if (!strcmp(sym, "cuFakeWide")) p = (void *)wide;
  if (status) *status = p ? 0 : 1;
  *pfn = p;
  return p ? 0 : 500; /* CUDA_ERROR_NOT_FOUND */
}
