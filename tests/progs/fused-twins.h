/* fused-twins.h — CPU twins of the library's fused kernels (shims/fused/elementwise.cu), for
 * test programs that run on the simulator with AUTOGRAPH_FUSE=exact.
 *
 * The simulated driver runs a kernel N loaded from the library's embedded module as the host
 * function sim_N, which must be exported by the process: libautograph.so contains no simulator
 * code, so every program that may see a substitution includes this header. The twins are
 * written from the fused kernels' contract (the same per-element float operations as the
 * originals, every intermediate written), not from their CUDA source, so that a wrong fused
 * kernel or a wrong twin shows as a difference from the unfused run. On a GPU they are unused.
 */
#ifndef AG_TESTS_FUSED_TWINS_H
#define AG_TESTS_FUSED_TWINS_H

#include <math.h>

#include "sim_kernel.h"

/* ag_fused_add_relu(long long n, const float *a, const float *b, float *t, float *out):
 * t = a + b; out = relu(t), where relu keeps NaN and maps -0.0 and negatives to +0.0. */
SIM_KERNEL(ag_fused_add_relu) {
  long long n = SIM_ARG(0, long long);
  const float *a = SIM_ARG(1, const float *), *b = SIM_ARG(2, const float *);
  float *t = SIM_ARG(3, float *), *out = SIM_ARG(4, float *);
  (void)sim_grid, (void)sim_block;
  for (long long i = 0; i < n; i++) {
    volatile float s = a[i] + b[i]; /* one rounding, stored as the intermediate */
    t[i] = s;
    float r = s;
    if (!(r != r) && !(r > 0.0f)) r = 0.0f;
    out[i] = r;
  }
}

/* ag_fused_mul_add(long long n, const float *x, const float *y, float *t, const float *c,
 *                  float *out, long long t_first): t = x * y; out = t + c, or c + t. The other
 * operand is read after t is written (it may be t itself). */
SIM_KERNEL(ag_fused_mul_add) {
  long long n = SIM_ARG(0, long long), t_first = SIM_ARG(6, long long);
  const float *x = SIM_ARG(1, const float *), *y = SIM_ARG(2, const float *);
  float *t = SIM_ARG(3, float *), *out = SIM_ARG(5, float *);
  const float *c = SIM_ARG(4, const float *);
  (void)sim_grid, (void)sim_block;
  for (long long i = 0; i < n; i++) {
    volatile float p = x[i] * y[i]; /* rounded before the add, as two kernels round */
    t[i] = p;
    float q = c[i];
    out[i] = t_first ? p + q : q + p;
  }
}

#endif
