/* prelude.h — what the simulated NVRTC puts before a program's source when it compiles it for
 * the host (tests/sim/nvrtc/nvrtc.c, tests/sim/README.md "NVRTC"). It is embedded in the
 * library, after tests/sim/common/halfconv.h, and the generated kernels' wrappers follow the
 * program's source.
 *
 * CUDA's qualifiers vanish; threadIdx, blockIdx, blockDim and gridDim are thread-local, set by
 * the wrapper for each thread it runs. Math comes from the host's libm: the correctly rounded
 * operations (+ - * /, sqrtf, fmaf, conversions) give a GPU's bits, the transcendental functions
 * do not (CUDA's are within a few ulps of the exact value, as glibc's are, but not the same
 * bits), and the fast intrinsics (__expf, __fdividef, rsqrtf, …) are computed as their accurate
 * forms (glibc's expf, a division, 1 / sqrtf).
 * Device printf and assert are the host's: printf writes at once, from the device thread. */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
/* What a generated source asks of a compiler that builds it for a host (src/fusegen.c): device
 * instructions in inline PTX are replaced by cuda_fp16.h's and cuda_bf16.h's functions. */
#define AG_HOST_BUILD 1
#define __NVCC_DIAG_PRAGMA_SUPPORT__ 0

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
/* The indices of the thread being run live in libnvrtc.so.13 (one static TLS block, which the
 * host builds link against), not in each host build: a dlopened library's own thread-local
 * variables are dynamic TLS, which LeakSanitizer's walk of the threads mistook for garbage. */
struct sim_nvrtc_index_t { uint3 thread, block, bdim, gdim; };
extern "C" __attribute__((tls_model("initial-exec"))) __thread sim_nvrtc_index_t simnvrtc_index;
#define threadIdx (simnvrtc_index.thread)
#define blockIdx (simnvrtc_index.block)
#define blockDim (simnvrtc_index.bdim)
#define gridDim (simnvrtc_index.gdim)
static const int warpSize = 32;

/* ---- math: __expf, __logf, __sinf, __cosf, __tanf, __powf, __exp10f, __log2f, __log10f and
 * __sincosf are glibc's own names of expf and the others, which math.h declares. ---- */
/* The float intrinsics and the math functions a generated kernel calls (src/fusegen.c) return
 * the canonical NaN for a NaN result, as a GPU's arithmetic does (simh_nan_result, as the torch
 * twins do); the host's would pass on an operand's sign and payload. */
static inline float __fdividef(float a, float b) { return simh_nan_result(a / b); }
static inline float __fadd_rn(float a, float b) { return simh_nan_result(a + b); }
static inline float __fsub_rn(float a, float b) { return simh_nan_result(a - b); }
static inline float __fmul_rn(float a, float b) { return simh_nan_result(a * b); }
static inline float __fdiv_rn(float a, float b) { return simh_nan_result(a / b); }
static inline float __fmaf_rn(float a, float b, float c) { return simh_nan_result(fmaf(a, b, c)); }
static inline float __frcp_rn(float a) { return simh_nan_result(1.0f / a); }
static inline float __fsqrt_rn(float a) { return simh_nan_result(sqrtf(a)); }
static inline float sim_expf(float x) { return simh_nan_result(expf(x)); }
static inline float sim_logf(float x) { return simh_nan_result(logf(x)); }
static inline float sim_tanhf(float x) { return simh_nan_result(tanhf(x)); }
static inline float sim_erff(float x) { return simh_nan_result(erff(x)); }
static inline float sim_powf(float x, float y) { return simh_nan_result(powf(x, y)); }
#define expf sim_expf
#define logf sim_logf
#define tanhf sim_tanhf
#define erff sim_erff
#define powf sim_powf
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float rsqrtf(float x) { return simh_nan_result(1.0f / sqrtf(x)); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline float __int2float_rn(int x) { return (float)x; }

/* fmaxf and fminf called with their operands in the order written. The host compiler treats
 * them as commutative and may swap the operands, and glibc's return the second operand when
 * both are zeros: swapped, fmaxf(-0.0f, 0.0f) would give -0 here where the twins of PyTorch's
 * kernels, which call them in order, give +0. The call through a volatile pointer keeps the
 * order. */
static inline float sim_nvrtc_fmaxf(float a, float b) {
  float (*volatile f)(float, float) = fmaxf;
  return f(a, b);
}
static inline float sim_nvrtc_fminf(float a, float b) {
  float (*volatile f)(float, float) = fminf;
  return f(a, b);
}
#define fmaxf sim_nvrtc_fmaxf
#define fminf sim_nvrtc_fminf

#define SIM_NVRTC_MINMAX(T)                                \
  static inline T min(T a, T b) { return a < b ? a : b; } \
  static inline T max(T a, T b) { return a > b ? a : b; }
SIM_NVRTC_MINMAX(int)
SIM_NVRTC_MINMAX(unsigned)
SIM_NVRTC_MINMAX(long)
SIM_NVRTC_MINMAX(unsigned long)
SIM_NVRTC_MINMAX(long long)
SIM_NVRTC_MINMAX(unsigned long long)
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

template <typename T> static inline T __ldg(const T *p) { return *p; }

/* Atomics: kernels of other streams may run at the same time on other device threads. */
template <typename T> static inline T atomicAdd(T *p, T v) {
  if constexpr (std::is_integral<T>::value) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  } else {
    T old, want;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    do want = old + v;
    while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
  }
}
template <typename T> static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicExch(T *p, T v) {
  T old;
  __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
  return old;
}
template <typename T> static inline T atomicCAS(T *p, T cmp, T v) {
  __atomic_compare_exchange(p, &cmp, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
template <typename T> static inline T atomicMax(T *p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
template <typename T> static inline T atomicMin(T *p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* ---- half and bfloat16 (cuda_fp16.h, cuda_bf16.h): storage, conversions rounding to nearest
 * even, and arithmetic computed in float and rounded once, which for + - * / of two halves or
 * two bfloat16 values is the correctly rounded result a GPU gives (float has more than twice
 * their precision plus two bits). ---- */
struct __half_raw { unsigned short x; };
struct __half {
  unsigned short __x;
  __half() = default;
  __half(__half_raw r) : __x(r.x) {}
  __half(float f) : __x(simh_float_to_half(f)) {}
  __half(double f) : __x(simh_float_to_half((float)f)) {}
  __half(int i) : __x(simh_float_to_half((float)i)) {}
  operator float() const { return simh_half_to_float(__x); }
  operator __half_raw() const { return __half_raw{__x}; }
};
typedef __half half;
struct __half2 { __half x, y; };
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline float __half2float(__half h) { return simh_half_to_float(h.__x); }
static inline __half __hadd(__half a, __half b) { return __half(__half2float(a) + __half2float(b)); }
static inline __half __hsub(__half a, __half b) { return __half(__half2float(a) - __half2float(b)); }
static inline __half __hmul(__half a, __half b) { return __half(__half2float(a) * __half2float(b)); }
static inline __half __hdiv(__half a, __half b) { return __half(__half2float(a) / __half2float(b)); }
static inline __half __hneg(__half a) { __half r; r.__x = (unsigned short)(a.__x ^ 0x8000u); return r; }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short u) { __half r; r.__x = u; return r; }
static inline __half operator+(__half a, __half b) { return __hadd(a, b); }
static inline __half operator-(__half a, __half b) { return __hsub(a, b); }
static inline __half operator*(__half a, __half b) { return __hmul(a, b); }
static inline __half operator/(__half a, __half b) { return __hdiv(a, b); }
static inline __half operator-(__half a) { return __hneg(a); }

struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(simh_float_to_bf16(f)) {}
  __nv_bfloat16(double f) : __x(simh_float_to_bf16((float)f)) {}
  __nv_bfloat16(int i) : __x(simh_float_to_bf16((float)i)) {}
  operator float() const { return simh_bf16_to_float(__x); }
};
typedef __nv_bfloat16 nv_bfloat16;
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline float __bfloat162float(__nv_bfloat16 h) { return simh_bf16_to_float(h.__x); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 r; r.__x = u; return r; }
static inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a + (float)b); }
static inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a - (float)b); }
static inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a * (float)b); }
static inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a / (float)b); }
static inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
static inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return __hsub(a, b); }
static inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return __hmul(a, b); }
static inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) { return __hdiv(a, b); }

/* ---- running a kernel: every block, and in it every thread, one after another ---- */
template <typename... A, size_t... I>
static inline void sim_nvrtc_call(void (*k)(A...), void **args, std::index_sequence<I...>) {
  k(*static_cast<typename std::remove_cv<typename std::remove_reference<A>::type>::type *>(args[I])...);
}
template <typename... A>
static void sim_nvrtc_run(void (*k)(A...), uint3 grid, uint3 block, void **args) {
  gridDim = grid;
  blockDim = block;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        blockIdx = uint3{bx, by, bz};
        for (unsigned tz = 0; tz < block.z; tz++)
          for (unsigned ty = 0; ty < block.y; ty++)
            for (unsigned tx = 0; tx < block.x; tx++) {
              threadIdx = uint3{tx, ty, tz};
              sim_nvrtc_call(k, args, std::index_sequence_for<A...>{});
            }
      }
}
#define SIM_NVRTC_TWIN(name, kernel)                                                        \
  extern "C" __attribute__((visibility("default"))) void sim_##name(uint3 g, uint3 b, void **a) { \
    sim_nvrtc_run(kernel, g, b, a);                                                         \
  }
