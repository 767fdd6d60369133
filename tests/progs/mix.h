/* mix.h — two integer kernels that fold values into a buffer, for the ordering test programs
 * (e-flush.cu, e-observe.cu): mx_mad (x = x * m + c) and mx_acc (d = (d ^ s) * K + 1), each
 * over the first n elements, with their CPU twins for the simulator. Exact on any device. */
#ifndef AG_TESTS_PROGS_MIX_H
#define AG_TESTS_PROGS_MIX_H

#include "prog.h"
#include "sim_kernel.h"

__host__ __device__ static inline void mx_mad_body(unsigned long i, unsigned *x, unsigned m,
                                                   unsigned c, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * m + c;
}
__host__ __device__ static inline void mx_acc_body(unsigned long i, unsigned *d,
                                                   const unsigned *s, int n) {
  if (i < (unsigned long)n) d[i] = (d[i] ^ s[i]) * 0x2545f491u + 1u;
}

extern "C" __global__ void mx_mad(unsigned *x, unsigned m, unsigned c, int n) {
  mx_mad_body(PROG_TID(), x, m, c, n);
}
extern "C" __global__ void mx_acc(unsigned *d, const unsigned *s, int n) {
  mx_acc_body(PROG_TID(), d, s, n);
}

SIM_KERNEL(mx_mad) {
  SIM_FOR_EACH_THREAD(i)
  mx_mad_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned),
              SIM_ARG(3, int));
}
SIM_KERNEL(mx_acc) {
  SIM_FOR_EACH_THREAD(i)
  mx_acc_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, const unsigned *), SIM_ARG(2, int));
}

#endif
