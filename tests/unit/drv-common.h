/* drv-common.h — helpers shared by the simulated driver's unit tests (tests/unit/drv-*.c). */
#ifndef DRV_TEST_COMMON_H
#define DRV_TEST_COMMON_H

#include <cuda.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "sim_kernel.h"

static inline CUcontext drv_test_init(void) {
  CUcontext ctx;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK_CU(cuCtxSetCurrent(ctx));
  return ctx;
}

/* Reads a whole file ($BUILD/tests/kernels/NAME) into memory. */
static inline void *drv_test_read_kernel(const char *name) {
  const char *build = getenv("BUILD");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/kernels/%s", build ? build : "build", name);
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc((size_t)n);
  CHECK(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  return buf;
}

static inline double drv_test_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline void drv_test_sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

#endif
