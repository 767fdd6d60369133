/* halfconv.h — float16 and bfloat16 to and from float, for the simulator's twins and device code.
 *
 * Widening is exact. Narrowing rounds to nearest even, as c10::Half and c10::BFloat16 do from
 * float and as CUDA's __float2half_rn and __float2bfloat16_rn do; float16 overflows to infinity
 * and keeps a NaN's sign (quiet NaN 0x7e00), bfloat16 turns every NaN into PyTorch's 0x7fc0.
 * Header-only: each simulated library, and under nvcc its device code, uses its own copy.
 */
#ifndef SIM_HALFCONV_H
#define SIM_HALFCONV_H

#ifdef __CUDACC__
#define SIMH_FN __host__ __device__ static inline
#else
#include <math.h>
#include <string.h>
#define SIMH_FN static inline
#endif

SIMH_FN unsigned simh_f2u(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}

SIMH_FN float simh_u2f(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* r, or the canonical NaN 0x7fffffff when r is a NaN: what a GPU's float arithmetic returns for
 * a NaN result, whatever NaNs went in (the host's instructions pass on an operand's sign and
 * payload instead). For the results of arithmetic only: a NaN moved, selected, negated or made
 * absolute keeps its bits. */
SIMH_FN float simh_nan_result(float r) { return r != r ? simh_u2f(0x7fffffffu) : r; }

SIMH_FN float simh_half_to_float(unsigned short h) {
  unsigned sign = (unsigned)(h >> 15) << 31, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return simh_u2f(sign | 0x7f800000u | (man << 13));
  if (exp) return simh_u2f(sign | ((exp + 112) << 23) | (man << 13));
  float v = ldexpf((float)man, -24); /* subnormal or zero: man * 2^-24 */
  return sign ? -v : v;
}

SIMH_FN unsigned short simh_float_to_half(float f) {
  unsigned short sign = (unsigned short)((simh_f2u(f) >> 16) & 0x8000);
  float a = fabsf(f);
  if (a != a) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00; /* rounds to infinity */
  if (a < 0x1p-14f) /* subnormal or zero: multiples of 2^-24, rounded to nearest even */
    return sign | (unsigned short)rintf(a * 0x1p24f);
  unsigned ax = simh_f2u(a), exp = (ax >> 23) - 112, man = ax & 0x7fffff;
  unsigned h = (exp << 10) | (man >> 13), rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return sign | (unsigned short)h;
}

SIMH_FN float simh_bf16_to_float(unsigned short b) { return simh_u2f((unsigned)b << 16); }

SIMH_FN unsigned short simh_float_to_bf16(float f) {
  if (f != f) return 0x7fc0;
  unsigned x = simh_f2u(f);
  return (unsigned short)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

#endif
