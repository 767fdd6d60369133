/* prog-driver-twins.h — the CPU twins of the kernels in tests/kernels/prog-driver.cu, shared
 * by the driver-API test programs that load that image (driver-api, e-modules, e-nolayout).
 * The simulated driver finds a twin by name, so a program defines the twins of every kernel
 * it may launch; unused ones are harmless. */
#ifndef AG_PROG_DRIVER_TWINS_H
#define AG_PROG_DRIVER_TWINS_H

#include "sim_kernel.h"

struct pd_pair {
  float a;
  double b;
};

SIM_KERNEL(pd_axpy) {
  float a = SIM_ARG(0, float);
  const float *x = SIM_ARG(1, const float *);
  float *y = SIM_ARG(2, float *);
  int n = SIM_ARG(3, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = a * x[i] + y[i];
}
SIM_KERNEL(pd_mixed) {
  char c = SIM_ARG(0, char);
  double d = SIM_ARG(1, double);
  short s = SIM_ARG(2, short);
  float4 v = SIM_ARG(3, float4);
  int *out = SIM_ARG(4, int *);
  int n = SIM_ARG(5, int);
  SIM_FOR_EACH_THREAD(i)
  /* Unsigned: the value wraps over the iterations, which signed int may not. */
  if (i < (unsigned long)n)
    out[i] = (int)(3u * (unsigned)out[i] + (unsigned)(c + (int)d + s + (int)(v.x + v.y + v.z + v.w) + (int)i));
}
SIM_KERNEL(pd_pair) {
  struct pd_pair p = SIM_ARG(0, struct pd_pair);
  unsigned long long k = SIM_ARG(1, unsigned long long);
  float *y = SIM_ARG(2, float *);
  int n = SIM_ARG(3, int);
  SIM_FOR_EACH_THREAD(i)
  if (i < (unsigned long)n) y[i] = y[i] * p.a + (float)p.b + (float)((k + i) % 5);
}

#endif
