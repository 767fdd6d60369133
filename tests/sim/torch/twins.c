/* twins.c — CPU twins of PyTorch's own CUDA kernels, for real PyTorch on the simulator.
 *
 * PyTorch's kernels are template instantiations: a handful of kernel templates (the launch
 * "frameworks" of ATen's Loops.cuh/CUDALoops.cuh and Reduce.cuh), each instantiated with the
 * functor of one operation. A twin is therefore two parts, chosen from the kernel's demangled
 * name: the framework, which knows the parameter structure the kernel receives and walks the
 * elements, and the operation, which knows the functor's captured values and computes one
 * element. The simulated driver calls simtw_twin() for every kernel without a sim_<name> twin;
 * a kernel whose framework or operation is not known here has no twin, and the driver refuses to
 * launch it and prints its name.
 *
 * Parameter structures, as PyTorch defines them (facts of its sources, checked against the
 * parameter layouts of the wheel's cubins):
 *   vectorized_elementwise_kernel<vec, F, std::array<char*, n>>(int N, F f, array data):
 *     data[0] is the output, data[1..n-1] the inputs, all contiguous; element i of each.
 *   unrolled_elementwise_kernel<F, array, …, TrivialOffsetCalculator…, LoadWithoutCast,
 *     StoreWithoutCast>(int N, F f, array data, …): the same walk.
 *   unrolled_elementwise_kernel<F, array, …, LoadWithCast<n-1>, StoreWithCast<1>>(int N, F f,
 *     array data, ic, oc, LoadWithCast l, StoreWithCast s): the same walk, where l is
 *     {ScalarType dtypes[n-1]; u32 element_sizes[n-1]} and s {ScalarType dtype; u32 size}: each
 *     input is read as its dtype and cast to the functor's argument type, the result cast to s's.
 *   elementwise_kernel<nt, vt, gpu_kernel_impl_nocast<F>::lambda>(int N, lambda): the lambda
 *     captures, from its first byte, an OffsetCalculator<n> (int dims; IntDivider<u32> sizes_[25] of {divisor, m1,
 *     shift}; u32 strides_[25][n] in bytes), then the data array, then f.
 *   reduce_kernel<nt, out_vec, ReduceOp<scalar, ops, u32, out, vt0, in_vec>>(ReduceOp r):
 *     {ops; arg_t ident; ReduceConfig config (64 bytes: element_size_bytes, num_inputs,
 *     num_outputs, …); OffsetCalculator<1> input_calc; OffsetCalculator<2> output_calc;
 *     const void *src; char *dst[2]; void *acc_buf, *cta_buf; int *semaphores; int64 base_idx;
 *     bool accumulate, final_output; int noutputs}.
 * A lambda PyTorch marks GPU_LAMBDA (__host__ __device__) is passed as nvcc's wrapper: the
 * captured values first, in the order the lambda's body names them, then a pointer (8 bytes); a
 * lambda that captures nothing is one empty byte.
 *
 * The twin runs the whole grid in one call, element by element in index order. Element values
 * use the documented arithmetic of each operation in float (fmaf where nvcc contracts a*b+c);
 * reductions add in index order, which differs from a GPU's tree order by float rounding only.
 * Arithmetic has twins for float32, and for float16 and bfloat16 where PyTorch computes in its
 * opmath type float (the same operations, with the captures decoded per element type: half_caps)
 * or where an entry spells the element type's roundings out; copies, casts, fills, comparisons,
 * where and masked_fill for every element type of dtype.c; bitwise operations, integer division
 * and remainder for the integer types. Also here: gpu_kernel_impl's strided path with dynamic
 * casts (its lambda holds the tensors' dtypes after the functor), flip, and _assert_async. The
 * kernels outside these frameworks are in nn.c, pool.c, scatter.c, scan.c (cumsum, cumprod) and
 * multiout.c (batch norm's update of its running statistics), and the fused optimizers'
 * multi-tensor kernels in fusedopt.c.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/halfconv.h"
#include "twins.h"

/* The C++ runtime's demangler (libstdc++, present in every process that runs PyTorch). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

int simtw_twin(const char *name, dim3 grid, dim3 block, void **args);

/* ---- operations: one element from the functor's bytes and the inputs ---- */

typedef float (*op_fn)(const char *f, const float *in);

static float rd(const char *f, size_t off) {
  float v;
  memcpy(&v, f + off, sizeof v);
  return v;
}
static int rdi(const char *f, size_t off) {
  int v;
  memcpy(&v, f + off, sizeof v);
  return v;
}

static float op_fill(const char *f, const float *in) { (void)in; return rd(f, 0); }
/* CUDAFunctor_add {alpha}: a + alpha * b */
static float op_add(const char *f, const float *in) { return fmaf(rd(f, 0), in[1], in[0]); }
/* CUDAFunctorOnSelf_add {other, alpha}: self + alpha * other */
static float op_add_self(const char *f, const float *in) {
  return fmaf(rd(f, 4), rd(f, 0), in[0]);
}
/* CUDAFunctorOnOther_add {self, alpha}: self + alpha * other (rsub and sub with a scalar first) */
static float op_add_other(const char *f, const float *in) {
  return fmaf(rd(f, 4), in[0], rd(f, 0));
}
/* addcmul_cuda_kernel's lambda {alpha}(a, b, c): a + alpha * (b * c), the product with alpha
 * contracted into the sum */
/* With alpha 1 the kernel takes a branch of its own, a + b * c in one FMA (the wheel's SASS:
 * FSETP.NEU alpha, 1, then FFMA b, c, a), else fmaf(alpha, b * c, a). */
static float op_addcmul(const char *f, const float *in) {
  float alpha = rd(f, 0);
  return alpha == 1.0f ? fmaf(in[1], in[2], in[0]) : fmaf(alpha, in[1] * in[2], in[0]);
}
/* addcmul_cuda_scalar_tensor2_kernel's lambda {alpha; c}(a, b): a + alpha * (b * c) */
static float op_addcmul_s(const char *f, const float *in) {
  float alpha = rd(f, 0), c = rd(f, 4);
  return alpha == 1.0f ? fmaf(in[1], c, in[0]) : fmaf(alpha, in[1] * c, in[0]);
}
static float op_mul(const char *f, const float *in) { (void)f; return in[0] * in[1]; }
static float op_div(const char *f, const float *in) { (void)f; return in[0] / in[1]; }
/* AUnaryFunctor<…, Op> {Op (empty); a}: Op(a, x); BUnaryFunctor {Op; b}: Op(x, b). */
static float op_mul_a(const char *f, const float *in) { return rd(f, 4) * in[0]; }
static float op_mul_b(const char *f, const float *in) { return in[0] * rd(f, 4); }
static float op_div_a(const char *f, const float *in) { return rd(f, 4) / in[0]; }
static float op_div_b(const char *f, const float *in) { return in[0] / rd(f, 4); }
static float op_neg(const char *f, const float *in) { (void)f; return -in[0]; }
static float op_exp(const char *f, const float *in) { (void)f; return expf(in[0]); }
static float op_sqrt(const char *f, const float *in) { (void)f; return sqrtf(in[0]); }
static float op_rsqrt(const char *f, const float *in) { (void)f; return 1.0f / sqrtf(in[0]); }
static float op_tanh(const char *f, const float *in) { (void)f; return tanhf(in[0]); }
static float op_sigmoid(const char *f, const float *in) {
  (void)f;
  return 1.0f / (1.0f + expf(-in[0]));
}
static float op_gelu_erf(const char *f, const float *in) {
  (void)f;
  float x = in[0];
  return x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
}
/* GeluCUDAKernelImpl's tanh lambda: x_cube = x * x * x, inner = kBeta * (x + kKappa * x_cube),
 * 0.5 * x * (1 + tanh(inner)), in opmath float, with nvcc's contraction of x + kKappa * x_cube
 * (the wheel's sm_90 SASS: FMUL, FMUL, FFMA x_cube, kKappa, x, then FMUL by kBeta). */
static float op_gelu_tanh(const char *f, const float *in) {
  (void)f;
  const float beta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
  float x = in[0], x_cube = x * x * x, inner = beta * fmaf(kappa, x_cube, x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
/* launch_clamp_scalar's lambda {minmax (Min, Max, MinMax); lim0; lim1}; NaN passes through. */
static float op_clamp(const char *f, const float *in) {
  float v = in[0], lo = rd(f, 4), hi = rd(f, 8);
  if (isnan(v)) return v;
  switch (rdi(f, 0)) {
    case 0: return fmaxf(v, lo);
    case 1: return fminf(v, lo);
    default: return fminf(fmaxf(v, lo), hi);
  }
}
/* compare_scalar_kernel's lambda {CompareFunctor{OpType GE, GT, LE, LT}; rhs}: a bool. */
static float op_cmp_scalar(const char *f, const float *in) {
  float a = in[0], b = rd(f, 4);
  switch (rdi(f, 0)) {
    case 0: return a >= b;
    case 1: return a > b;
    case 2: return a <= b;
    default: return a < b;
  }
}
/* threshold_kernel_impl's lambda {threshold; value}(x, other): x <= threshold ? value : other. */
static float op_threshold(const char *f, const float *in) {
  return in[0] <= rd(f, 0) ? rd(f, 4) : in[1];
}
/* sigmoid_backward_kernel_cuda's and tanh_backward_kernel_cuda's lambdas (a the gradient, b the
 * output): a * (1 - b) * b and a * (1 - b * b), in float32 with 1 - b * b contracted into one
 * FMA, as the wheel's SASS shows (FFMA r, -b, b, 1, then FMUL); their float16 and bfloat16
 * instantiations round each step (op_sigmoid_bw_h and the like, below). */
static float op_sigmoid_bw(const char *f, const float *in) {
  (void)f;
  return in[0] * (1.0f - in[1]) * in[1];
}
static float op_tanh_bw(const char *f, const float *in) {
  (void)f;
  return in[0] * fmaf(-in[1], in[1], 1.0f);
}
static float op_gelu_erf_bw(const char *f, const float *in) {
  (void)f;
  const float alpha = (float)(M_2_SQRTPI * M_SQRT1_2 * 0.5);
  float dy = in[0], x = in[1];
  float cdf = 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
  float pdf = expf(-0.5f * x * x) * alpha;
  return dy * (cdf + x * pdf);
}
/* GeluBackwardCUDAKernelImpl's tanh lambda(dy, x), in opmath float throughout (the wheel's SASS
 * has no double operation: FFMA right, 0.5, right_derivative, then FMUL by dy). */
static float op_gelu_tanh_bw(const char *f, const float *in) {
  (void)f;
  const float beta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
  float dy = in[0], x = in[1];
  float x_sq = x * x, x_cube = x_sq * x;
  float inner = beta * fmaf(kappa, x_cube, x);
  float t = tanhf(inner);
  float left = 0.5f * x, right = 1.0f + t;
  float tanh_derivative = fmaf(-t, t, 1.0f);
  float inner_derivative = beta * fmaf(3.0f * kappa, x_sq, 1.0f);
  float right_derivative = left * tanh_derivative * inner_derivative;
  return dy * fmaf(right, 0.5f, right_derivative);
}
/* The activations' lambdas (opmath float; the constants they capture are 0, 1/6, 3, 6 and 0, 3,
 * -3, 0.5 in hardswish's, used here as such), with nvcc's contractions. */
static float op_silu(const char *f, const float *in) { (void)f; return in[0] / (1.0f + expf(-in[0])); }
static float op_silu_bw(const char *f, const float *in) {
  (void)f;
  float dy = in[0], x = in[1], sg = 1.0f / (1.0f + expf(-x));
  return dy * sg * fmaf(x, 1.0f - sg, 1.0f);
}
static float op_mish(const char *f, const float *in) { (void)f; return in[0] * tanhf(log1pf(expf(in[0]))); }
static float op_mish_bw(const char *f, const float *in) {
  (void)f;
  float dy = in[0], x = in[1], sg = 1.0f / (1.0f + expf(-x)), t = tanhf(log1pf(expf(x)));
  return dy * fmaf(x * sg, fmaf(-t, t, 1.0f), t);
}
static float std_min(float a, float b);
static float std_max(float a, float b);
/* hardswish_kernel's lambda {zero, one_sixth, three, six}: x * min(max(x + three, zero), six) *
 * one_sixth, with std::min and std::max (below) */
static float op_hardswish(const char *f, const float *in) {
  (void)f;
  float x = in[0];
  return x * std_min(std_max(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
}
/* hardswish_backward_kernel's lambda (dy, x): 0 for x <= -3, dy * (x / 3 + 0.5) for x < 3, else dy
 * as it is (a NaN with its bits: keeps_nan; a NaN x too); the bounds belong to the outer pieces,
 * as the wheel's SASS compares (FSETP.GTU x, -3; FSETP.GEU x, 3). */
static float op_hardswish_bw(const char *f, const float *in) {
  (void)f;
  float dy = in[0], x = in[1];
  if (x <= -3.0f) return 0.0f;
  return x < 3.0f ? simh_nan_result(dy * (x / 3.0f + 0.5f)) : dy;
}
static float op_mse(const char *f, const float *in) {
  (void)f;
  float d = in[0] - in[1];
  return d * d;
}
/* mse_backward_cuda_kernel's lambda {alpha}(a, b, c): alpha * (a - b) * c. */
static float op_mse_bw(const char *f, const float *in) { return rd(f, 0) * (in[0] - in[1]) * in[2]; }
/* AbsFunctor: |x|. */
static float op_abs(const char *f, const float *in) { (void)f; return fabsf(in[0]); }
/* logical_and/or/xor_kernel_cuda's lambda(bool, bool) (in a BinaryFunctor): a bool. */
static float op_and(const char *f, const float *in) { (void)f; return in[0] != 0.0f && in[1] != 0.0f; }
static float op_or(const char *f, const float *in) { (void)f; return in[0] != 0.0f || in[1] != 0.0f; }
static float op_xor(const char *f, const float *in) { (void)f; return (in[0] != 0.0f) != (in[1] != 0.0f); }
/* sign_kernel_cuda's lambda: (0 < x) - (x < 0). */
static float op_sign(const char *f, const float *in) {
  (void)f;
  return (float)((0.0f < in[0]) - (in[0] < 0.0f)); /* 0 for a NaN: two false comparisons */
}
/* pow_tensor_scalar_kernel_impl's lambdas: #1 x*x, #2 x*x*x, #3 1.0/(x*x) in double, #4 pow(x, exp)
 * capturing exp; exponents 0.5, -0.5 and -1 go to the sqrt, rsqrt and reciprocal kernels. */
static float op_pow2(const char *f, const float *in) { (void)f; return in[0] * in[0]; }
static float op_pow3(const char *f, const float *in) { (void)f; return in[0] * in[0] * in[0]; }
static float op_powm2(const char *f, const float *in) { (void)f; return (float)(1.0 / (double)(in[0] * in[0])); }
static float op_pow(const char *f, const float *in) { return powf(in[0], rd(f, 0)); }
/* reciprocal_kernel_cuda's lambda: 1 / x (in float: opmath of float is float). */
static float op_reciprocal(const char *f, const float *in) { (void)f; return 1.0f / in[0]; }
static float op_pow_tt(const char *f, const float *in) { (void)f; return powf(in[0], in[1]); }
static float op_log(const char *f, const float *in) { (void)f; return logf(in[0]); }
/* masked_scale_kernel's lambda {scale}(x, mask): mask * x * scale (dropout's backward). */
static float op_masked_scale(const char *f, const float *in) { return in[1] * in[0] * rd(f, 0); }

/* Lambdas whose arithmetic is in c10::Half or c10::BFloat16 (each operation rounds to the type,
 * as c10's operators do), where the float32 twins compute in float: the result's last rounding
 * is the store's. */
static float rh(float x) { return (float)simtw_cast(simtw_fval(x), DT_F16).f; }
static float rb(float x) { return (float)simtw_cast(simtw_fval(x), DT_BF16).f; }
/* mse_kernel_cuda: diff = a - b; diff * diff */
static float op_mse_h(const char *f, const float *in) { (void)f; float d = rh(in[0] - in[1]); return d * d; }
static float op_mse_b(const char *f, const float *in) { (void)f; float d = rb(in[0] - in[1]); return d * d; }
/* mse_backward_cuda_kernel {T alpha}: alpha * (a - b) * c */
static float op_mse_bw_h(const char *f, const float *in) {
  uint16_t a;
  memcpy(&a, f, 2);
  return rh((float)simtw_load(DT_F16, &a).f * rh(in[0] - in[1])) * in[2];
}
static float op_mse_bw_b(const char *f, const float *in) {
  uint16_t a;
  memcpy(&a, f, 2);
  return rb((float)simtw_load(DT_BF16, &a).f * rb(in[0] - in[1])) * in[2];
}
/* sigmoid_backward and tanh_backward in c10::Half and c10::BFloat16 (their SASS rounds 1 - b,
 * then a * (1 - b), to the type; and b * b, then 1 - b * b) */
static float op_sigmoid_bw_h(const char *f, const float *in) { (void)f; return rh(in[0] * rh(1.0f - in[1])) * in[1]; }
static float op_sigmoid_bw_b(const char *f, const float *in) { (void)f; return rb(in[0] * rb(1.0f - in[1])) * in[1]; }
static float op_tanh_bw_h(const char *f, const float *in) { (void)f; return in[0] * rh(1.0f - rh(in[1] * in[1])); }
static float op_tanh_bw_b(const char *f, const float *in) { (void)f; return in[0] * rb(1.0f - rb(in[1] * in[1])); }
/* pow_tensor_scalar_kernel_impl's lambda #2: base * base * base */
static float op_pow3_h(const char *f, const float *in) { (void)f; return rh(in[0] * in[0]) * in[0]; }
static float op_pow3_b(const char *f, const float *in) { (void)f; return rb(in[0] * in[0]) * in[0]; }

/* The activations and losses of Activation*Kernel.cu, Lerp.cu and BinaryMiscOpsKernels.cu. Their
 * lambdas compute in opmath float (the float16 and bfloat16 instantiations convert the inputs and
 * round once at the store) unless an entry says otherwise; the captures are the opmath values in
 * the order the lambda lists them. std::min and std::max are the C++ templates (a NaN first
 * argument wins, a NaN second one loses), not fminf/fmaxf. */
static float std_min(float a, float b) { return b < a ? b : a; }
static float std_max(float a, float b) { return a < b ? b : a; }
static float lerpf(float self, float end, float w);
/* lerp_scalar_kernel's lambda {weight}(self, end); lerp_tensor_kernel's (self, end, weight) */
static float op_lerp_scalar(const char *f, const float *in) { return lerpf(in[0], in[1], rd(f, 0)); }
static float op_lerp_tensor(const char *f, const float *in) { (void)f; return lerpf(in[0], in[1], in[2]); }
/* hardsigmoid_kernel's lambda {zero, one_sixth, three, six}: min(max(x + three, zero), six) * one_sixth */
static float op_hardsigmoid(const char *f, const float *in) {
  return std_min(std_max(in[0] + rd(f, 8), rd(f, 0)), rd(f, 12)) * rd(f, 4);
}
/* hardsigmoid_backward_kernel's lambda {zero, three, neg_three, one_sixth}(grad, self) */
static float op_hardsigmoid_bw(const char *f, const float *in) {
  float x = in[1];
  return x > rd(f, 8) && x < rd(f, 4) ? in[0] * rd(f, 12) : rd(f, 0);
}
/* hardtanh_backward_kernel's lambda {min_val, max_val}(grad, self) */
static float op_hardtanh_bw(const char *f, const float *in) {
  return in[1] <= rd(f, 0) || in[1] >= rd(f, 4) ? 0.0f : in[0];
}
/* leaky_relu_kernel's lambda {negval}(x); leaky_relu_backward_kernel's {negval}(self, grad) */
static float op_leaky_relu(const char *f, const float *in) { return in[0] > 0.0f ? in[0] : in[0] * rd(f, 0); }
/* The gradient passed on as it is for a positive input (a NaN with its bits: keeps_nan), else
 * scaled (a computed NaN). */
static float op_leaky_relu_bw(const char *f, const float *in) {
  return in[0] > 0.0f ? in[1] : simh_nan_result(in[1] * rd(f, 0));
}
/* elu_kernel's lambda {negcoef, poscoef, negiptcoef}(x) (selu and celu are elu with other
 * coefficients) */
static float op_elu(const char *f, const float *in) {
  float x = in[0];
  return x > 0.0f ? x * rd(f, 4) : expm1f(x * rd(f, 8)) * rd(f, 0);
}
/* elu_backward_kernel's lambda {negcoef, poscoef, negiptcoef, bool is_result}(grad, b): b is the
 * forward's result when is_result, else its input. */
static float op_elu_bw(const char *f, const float *in) {
  float a = in[0], b = in[1], neg = rd(f, 0), pos = rd(f, 4), negipt = rd(f, 8);
  if (f[12]) return b <= 0.0f ? a * negipt * (b + neg) : a * pos;
  return b <= 0.0f ? a * negipt * neg * expf(b * negipt) : a * pos;
}
/* softplus_kernel's lambda {beta, threshold}(x); softplus_backward_kernel's (grad, self) */
static float op_softplus(const char *f, const float *in) {
  float x = in[0], beta = rd(f, 0);
  return x * beta > rd(f, 4) ? x : log1pf(expf(x * beta)) / beta;
}
static float op_softplus_bw(const char *f, const float *in) {
  float a = in[0], b = in[1], beta = rd(f, 0), z = expf(b * beta);
  return b * beta > rd(f, 4) ? a : a * z / (z + 1.0f);
}
/* launch_log_sigmoid_forward_kernel's lambda(x): min(0, x) - log1p(exp(-|x|)) */
static float op_log_sigmoid(const char *f, const float *in) {
  (void)f;
  return std_min(0.0f, in[0]) - log1pf(expf(-fabsf(in[0])));
}
/* log_sigmoid_backward_kernel's lambda(self, grad): grad * (max_deriv - sign * z / (1 + z)) */
static float op_log_sigmoid_bw(const char *f, const float *in) {
  (void)f;
  float x = in[0], g = in[1];
  int negative = x < 0.0f;
  float max_deriv = negative ? 1.0f : 0.0f, sign = negative ? 1.0f : -1.0f, z = expf(-fabsf(x));
  return g * fmaf(-sign, z / (1.0f + z), max_deriv);
}
/* isneginf_kernel_impl's and isposinf_kernel_impl's lambdas: a bool */
static float op_isneginf(const char *f, const float *in) { (void)f; return in[0] == -INFINITY; }
static float op_isposinf(const char *f, const float *in) { (void)f; return in[0] == INFINITY; }
/* xlogy_kernel_cuda's lambda(x, y) in a BinaryFunctor: NaN for a NaN y, 0 for x == 0, else
 * x * log(y). Its float16 and bfloat16 instantiations are taken to compute the product in float
 * and round once at the store: c10's std::log of those types is host code, so on the device
 * log(y) is the float overload's (a float), and the element type times a float is a float. */
static float op_xlogy(const char *f, const float *in) {
  (void)f;
  if (isnan(in[1])) return NAN;
  return in[0] == 0.0f ? 0.0f : in[0] * logf(in[1]);
}

/* UnaryFractionKernels.cu's floor, ceil, trunc, round (nearbyint: halves to even) and frac
 * (x - trunc(x)): exact in every element type, so their float twins serve float16 and bfloat16. */
static float op_floor(const char *f, const float *in) { (void)f; return floorf(in[0]); }
static float op_ceil(const char *f, const float *in) { (void)f; return ceilf(in[0]); }
static float op_trunc(const char *f, const float *in) { (void)f; return truncf(in[0]); }
static float op_round(const char *f, const float *in) { (void)f; return nearbyintf(in[0]); }
static float op_frac(const char *f, const float *in) { (void)f; return in[0] - truncf(in[0]); }
/* maximum_kernel_cuda's and minimum_kernel_cuda's floating lambda(a, b): a NaN a, else a NaN b,
 * else ::max / ::min; in a BinaryFunctor, or an A/BUnaryFunctor {lambda (empty); T scalar} (the
 * operation is symmetric, so one twin serves both). */
static float fmax_nan(float a, float b) { return isnan(a) ? a : isnan(b) ? b : fmaxf(a, b); }
static float fmin_nan(float a, float b) { return isnan(a) ? a : isnan(b) ? b : fminf(a, b); }
static float op_maximum(const char *f, const float *in) { (void)f; return fmax_nan(in[0], in[1]); }
static float op_minimum(const char *f, const float *in) { (void)f; return fmin_nan(in[0], in[1]); }
static float op_maximum_s(const char *f, const float *in) { return fmax_nan(in[0], rd(f, 4)); }
static float op_minimum_s(const char *f, const float *in) { return fmin_nan(in[0], rd(f, 4)); }

/* softshrink_kernel's, hardshrink_kernel's and shrink_backward_kernel's (grad, self) lambdas
 * {T lambd}: one operation at most, so computing in float and rounding at the store is the
 * element type's arithmetic. */
static float op_softshrink(const char *f, const float *in) {
  float a = in[0], l = rd(f, 0);
  return isnan(a) ? a : a > l ? a - l : a < -l ? a + l : 0.0f;
}
static float op_hardshrink(const char *f, const float *in) {
  float a = in[0], l = rd(f, 0);
  return a >= -l && a <= l ? 0.0f : a;
}
static float op_shrink_bw(const char *f, const float *in) {
  float x = in[1], l = rd(f, 0);
  return x >= -l && x <= l ? 0.0f : in[0];
}

/* Unary functions whose lambdas call the math library's function of their argument (::sin(a) and
 * the like): for float16 and bfloat16 the float overload, one rounding at the store. */
static float op_sin(const char *f, const float *in) { (void)f; return sinf(in[0]); }
static float op_cos(const char *f, const float *in) { (void)f; return cosf(in[0]); }
static float op_log1p(const char *f, const float *in) { (void)f; return log1pf(in[0]); }
static float op_expm1(const char *f, const float *in) { (void)f; return expm1f(in[0]); }
static float op_log2(const char *f, const float *in) { (void)f; return log2f(in[0]); }
static float op_log10(const char *f, const float *in) { (void)f; return log10f(in[0]); }
static float op_erf(const char *f, const float *in) { (void)f; return erff(in[0]); }
static float op_atanh(const char *f, const float *in) { (void)f; return atanhf(in[0]); }
/* nan_to_num_kernel_cuda's lambda {T nan_replacement, pos_inf_replacement, neg_inf_replacement} */
static float op_nan_to_num(const char *f, const float *in) {
  float a = in[0];
  return isnan(a) ? rd(f, 0) : a == INFINITY ? rd(f, 4) : a == -INFINITY ? rd(f, 8) : a;
}

/* clamp_kernel_impl's lambda(v, lower, upper) (clamp with tensor bounds): a NaN v, else a NaN
 * lower, else a NaN upper; otherwise v raised to lower, then lowered to upper. */
static float op_clamp_t(const char *f, const float *in) {
  (void)f;
  float v = in[0], lo = in[1], hi = in[2];
  if (isnan(v)) return v;
  if (isnan(lo)) return lo;
  if (isnan(hi)) return hi;
  float r = v < lo ? lo : v;
  return hi < r ? hi : r;
}

/* smooth_l1_kernel_cuda's lambda {T beta}(a, b) and smooth_l1_backward_cuda_kernel's {T norm;
 * T beta}(input, target, grad) compute in the element type T: for c10::Half and c10::BFloat16
 * each operator between two T values rounds to T (r), an operator with a float operand (abs's
 * result is a float) does not. */
typedef float (*round_fn)(float);
static float r_id(float x) { return x; }
static float cap_t(const char *f, size_t off, simtw_dt_t dt) { return (float)simtw_load(dt, f + off).f; }
static float smooth_l1(float beta, float a, float b, round_fn r) {
  float z = fabsf(r(a - b));
  return z < beta ? 0.5f * z * z / beta : z - r(0.5f * beta);
}
static float smooth_l1_bw(float norm, float beta, const float *in, round_fn r) {
  float x = r(in[0] - in[1]), g = in[2];
  if (x < -beta) return r(-norm * g);
  if (x > beta) return r(norm * g);
  return r(r(r(norm * x) * g) / beta);
}
static float op_smooth_l1(const char *f, const float *in) { return smooth_l1(rd(f, 0), in[0], in[1], r_id); }
static float op_smooth_l1_h(const char *f, const float *in) { return smooth_l1(cap_t(f, 0, DT_F16), in[0], in[1], rh); }
static float op_smooth_l1_b(const char *f, const float *in) { return smooth_l1(cap_t(f, 0, DT_BF16), in[0], in[1], rb); }
static float op_smooth_l1_bw(const char *f, const float *in) { return smooth_l1_bw(rd(f, 0), rd(f, 4), in, r_id); }
static float op_smooth_l1_bw_h(const char *f, const float *in) {
  return smooth_l1_bw(cap_t(f, 0, DT_F16), cap_t(f, 2, DT_F16), in, rh);
}
static float op_smooth_l1_bw_b(const char *f, const float *in) {
  return smooth_l1_bw(cap_t(f, 0, DT_BF16), cap_t(f, 2, DT_BF16), in, rb);
}

/* Batch and group norm's elementwise lambdas (Normalization.cuh, group_norm_kernel.cu). Their
 * parameters are of the element type T or of its opmath type float (MIX_T, MIX_ACC entries);
 * they compute in float, with nvcc's contraction of a * b + c into fmaf. */
/* batch_norm_calc_invstd's lambda {eps}(T var) -> float: rsqrt(var + eps) */
static float op_bn_invstd(const char *f, const float *in) { return 1.0f / sqrtf(in[0] + rd(f, 0)); }
/* (T x, float mean, float rstd): (x - mean) * rstd */
static float op_gn_norm(const char *f, const float *in) { (void)f; return (in[0] - in[1]) * in[2]; }
/* (T x, float a, float b): a * x + b */
static float op_gn_scale(const char *f, const float *in) { (void)f; return fmaf(in[1], in[0], in[2]); }
/* GroupNorm1dForward's (T x, float mean, float rstd, T gamma): (x - mean) * rstd * gamma */
static float op_gn1d_gamma(const char *f, const float *in) { (void)f; return (in[0] - in[1]) * in[2] * in[3]; }
/* (T x, float mean, float rstd, T beta): (x - mean) * rstd + beta */
static float op_gn1d_beta(const char *f, const float *in) { (void)f; return fmaf(in[0] - in[1], in[2], in[3]); }
/* (T x, float mean, float rstd, T gamma, T beta): (x - mean) * rstd * gamma + beta */
static float op_gn1d_affine(const char *f, const float *in) {
  (void)f;
  return fmaf((in[0] - in[1]) * in[2], in[3], in[4]);
}
/* GroupNormBackwardKernelImplInternal's (T rstd, T gamma) -> float: rstd * gamma */
static float op_gn_c1(const char *f, const float *in) { (void)f; return in[0] * in[1]; }
/* c1 * dy + c2 * x + c3, the first product contracted with the sum of the second */
static float gn_dx(float c1, float dy, float c2, float x, float c3) { return fmaf(c1, dy, c2 * x) + c3; }
/* (T dy, T x, float c1, float c2, float c3); GroupNorm1dBackward's (T dy, T x, T rstd, float c2,
 * float c3) with c1 = rstd */
static float op_gn_dx(const char *f, const float *in) { (void)f; return gn_dx(in[2], in[0], in[3], in[1], in[4]); }
/* GroupNorm1dBackward's (T dy, T x, T rstd, T gamma, float c2, float c3): c1 = rstd * gamma */
static float op_gn1d_dx_gamma(const char *f, const float *in) {
  (void)f;
  return gn_dx(in[2] * in[3], in[0], in[4], in[1], in[5]);
}

/* Operations on values of any element type (kinds other than OK_FLOAT); the twin's ct is the
 * functor's own element type, parsed from its name. */
enum {
  OK_FLOAT,       /* fn over float inputs, float (or bool) result */
  OK_FILL,        /* FillFunctor<T> {T value} */
  OK_COPY,        /* direct_copy_kernel_cuda's lambda(T): identity (the casts are the framework's) */
  OK_CONVERT,     /* converting_copy_kernel_cuda<S, D>'s lambda(S): static_cast<D> */
  OK_WHERE,       /* where_kernel_impl's lambda(bool, T, T) */
  OK_MASKED_FILL, /* masked_fill_kernel's lambda(T, bool) {T value} */
  OK_CMP_EQ,      /* compare_eq_ne_kernel's BinaryFunctor<T, T, bool, CompareEqFunctor<T>> {op: EQ 0, NE 1} */
  OK_CMP_EQ_SCALAR, /* its A/BUnaryFunctor<T, T, bool, CompareEqFunctor<T>> {op; T scalar} (symmetric) */
  OK_CMP,         /* compare_kernel_impl's CompareFunctor<T> {op: GE 0, GT 1, LE 2, LT 3} */
  OK_IADD,        /* CUDAFunctor_add<T> {T alpha}: a + alpha * b, integer T */
  OK_IADD_SELF,   /* CUDAFunctorOnSelf_add<T> {T other; T alpha}: a + alpha * other */
  OK_IMUL,        /* BinaryFunctor<T, T, T, MulFunctor<T>>: a * b (bool: a && b) */
  OK_IMUL_SCALAR, /* A/BUnaryFunctor<T, T, T, MulFunctor<T>> {MulFunctor (empty); T s}: s * a */
  OK_RECIP_F64,   /* reciprocal_kernel_cuda's lambda(double): 1.0 / x in double */
  OK_BITNOT,      /* bitwise_not_kernel_cuda's lambda(T): ~x, !x for bool */
  OK_IREM,        /* remainder_kernel_cuda's lambda(T a, T b), integer T, in a Binary/A/BUnaryFunctor: a % b
                   * with the sign of b (Python's) */
  OK_IDIV_TRUNC,  /* div_trunc_kernel_cuda's lambda(T a, T b), the same functors: a / b */
  OK_IDIV_FLOOR,  /* div_floor_kernel_cuda's lambda(T a, T b): a / b rounded toward minus infinity */
  OK_CMP_SCALAR,  /* compare_scalar_kernel<T>'s lambda(T) {CompareFunctor<T>{op: GE 0, GT 1, LE 2, LT 3}; T rhs}, integer T */
  OK_BITAND,      /* BinaryFunctor<T, T, T, BitwiseAndFunctor<T>>: a & b (bool: a && b) */
  OK_BITOR,       /* BinaryFunctor<T, T, T, BitwiseOrFunctor<T>>: a | b */
  OK_BITXOR,      /* BinaryFunctor<T, T, T, BitwiseXorFunctor<T>>: a ^ b */
};

/* A functor is recognised by every one of its `all` strings occurring in the functor part of the
 * demangled name (NULL-terminated); the first match wins, so specific entries come first. For
 * typed kinds, `tprefix` is the text followed by the element type T in the name. */
typedef struct op_desc {
  const char *all[3];
  int ninputs;
  int out_bool; /* 1: the output is bool */
  op_fn fn;
  int kind;
  const char *tprefix;
  /* OK_FLOAT operations that also have float16/bfloat16 twins: the functor's captures, in order
   * ('e' an empty functor, 1 byte; 'i' an int; 'f' a float, the opmath type; 't' a value of the
   * element type: float for float32, 2 bytes for c10::Half and c10::BFloat16), "" for none.
   * NULL: float32 only (a half instantiation rounds differently, or was not checked). */
  const char *half_caps;
  /* 0: as above. MIX_T, MIX_ACC: a lambda whose parameters name both the element type T and its
   * opmath type float (T x, float mean, ...): each argument is read as the type its parameter
   * names, also in the float16 and bfloat16 instantiations, and the result is T (MIX_T) or
   * float (MIX_ACC). */
  int mixed;
} op_desc_t;

enum { MIX_T = 1, MIX_ACC = 2 };
/* The most inputs a functor takes. */
#define MAX_IN 6

static const op_desc_t OPS[] = {
    {{"FillFunctor<float>"}, 0, 0, op_fill, OK_FLOAT, NULL, NULL, 0},
    {{"FillFunctor<"}, 0, 0, NULL, OK_FILL, "FillFunctor<", NULL, 0},
    {{"CUDAFunctorOnSelf_add<float>"}, 1, 0, op_add_self, OK_FLOAT, NULL, "ff", 0},
    {{"CUDAFunctorOnOther_add<float>"}, 1, 0, op_add_other, OK_FLOAT, NULL, "ff", 0},
    {{"addcmul_cuda_kernel(", "{lambda(float, float, float)#1}"}, 3, 0, op_addcmul, OK_FLOAT, NULL, "f", 0},
    {{"addcmul_cuda_scalar_tensor2_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_addcmul_s, OK_FLOAT, NULL, "ff", 0},
    {{"CUDAFunctor_add<float>"}, 2, 0, op_add, OK_FLOAT, NULL, "f", 0},
    {{"AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >"}, 1, 0, op_mul_a, OK_FLOAT, NULL, "ef", 0},
    {{"BUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >"}, 1, 0, op_mul_b, OK_FLOAT, NULL, "ef", 0},
    {{"AUnaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >"}, 1, 0, op_div_a, OK_FLOAT, NULL, "et", 0},
    {{"BUnaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >"}, 1, 0, op_div_b, OK_FLOAT, NULL, "et", 0},
    {{"BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >"}, 2, 0, op_mul, OK_FLOAT, NULL, "", 0},
    {{"BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >"}, 2, 0, op_div, OK_FLOAT, NULL, "", 0},
    {{"BinaryFunctor<float, float, float, ", "threshold_kernel_impl<float>"}, 2, 0, op_threshold, OK_FLOAT, NULL, "tt", 0},
    {{"neg_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_neg, OK_FLOAT, NULL, "", 0},
    {{"exp_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_exp, OK_FLOAT, NULL, "", 0},
    {{"rsqrt_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_rsqrt, OK_FLOAT, NULL, "", 0},
    {{"sqrt_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_sqrt, OK_FLOAT, NULL, "", 0},
    {{"reciprocal_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_reciprocal, OK_FLOAT, NULL, "", 0},
    {{"pow_tensor_tensor_kernel", "{lambda(float, float)#1}"}, 2, 0, op_pow_tt, OK_FLOAT, NULL, NULL, 0},
    {{"log_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_log, OK_FLOAT, NULL, "", 0},
    /* float16 and bfloat16 round each step: their own twins, the float32 ones (no half_caps)
     * serving float32 only */
    {{"sigmoid_backward_kernel_cuda", "{lambda(c10::Half, c10::Half)#1}"}, 2, 0, op_sigmoid_bw_h, OK_FLOAT, NULL, NULL, 0},
    {{"sigmoid_backward_kernel_cuda", "{lambda(c10::BFloat16, c10::BFloat16)#1}"}, 2, 0, op_sigmoid_bw_b, OK_FLOAT, NULL, NULL, 0},
    {{"tanh_backward_kernel_cuda", "{lambda(c10::Half, c10::Half)#1}"}, 2, 0, op_tanh_bw_h, OK_FLOAT, NULL, NULL, 0},
    {{"tanh_backward_kernel_cuda", "{lambda(c10::BFloat16, c10::BFloat16)#1}"}, 2, 0, op_tanh_bw_b, OK_FLOAT, NULL, NULL, 0},
    {{"sigmoid_backward_kernel_cuda", "{lambda(float, float)#1}"}, 2, 0, op_sigmoid_bw, OK_FLOAT, NULL, NULL, 0},
    {{"tanh_backward_kernel_cuda", "{lambda(float, float)#1}"}, 2, 0, op_tanh_bw, OK_FLOAT, NULL, NULL, 0},
    {{"sigmoid_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_sigmoid, OK_FLOAT, NULL, "", 0},
    {{"native::tanh_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_tanh, OK_FLOAT, NULL, "", 0}, /* not atanh */
    /* GeluCUDAKernelImpl dispatches twice: first for GeluType::Tanh, then for None (erf). */
    {{"GeluBackwardCUDAKernelImpl(", "{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}"}, 2, 0, op_gelu_erf_bw, OK_FLOAT, NULL, NULL, 0},
    {{"GeluCUDAKernelImpl(", "{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}"}, 1, 0, op_gelu_erf, OK_FLOAT, NULL, NULL, 0},
    {{"GeluBackwardCUDAKernelImpl(", "{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}"}, 2, 0, op_gelu_tanh_bw, OK_FLOAT, NULL, NULL, 0},
    {{"GeluBackwardCUDAKernelImpl(", "{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float, float)#1}"}, 2, 0, op_gelu_tanh_bw, OK_FLOAT, NULL, "", 0},
    {{"GeluBackwardCUDAKernelImpl(", "{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float, float)#1}"}, 2, 0, op_gelu_tanh_bw, OK_FLOAT, NULL, "", 0},
    {{"GeluCUDAKernelImpl(", "{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}"}, 1, 0, op_gelu_tanh, OK_FLOAT, NULL, NULL, 0},
    /* the float16 (#3) and bfloat16 (#4) instantiations of the same dispatches (opmath float) */
    {{"GeluBackwardCUDAKernelImpl(", "{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(float, float)#1}"}, 2, 0, op_gelu_erf_bw, OK_FLOAT, NULL, "", 0},
    {{"GeluBackwardCUDAKernelImpl(", "{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(float, float)#1}"}, 2, 0, op_gelu_erf_bw, OK_FLOAT, NULL, "", 0},
    {{"GeluCUDAKernelImpl(", "{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}"}, 1, 0, op_gelu_erf, OK_FLOAT, NULL, "", 0},
    {{"GeluCUDAKernelImpl(", "{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}"}, 1, 0, op_gelu_erf, OK_FLOAT, NULL, "", 0},
    {{"GeluCUDAKernelImpl(", "{lambda()#1}::operator()() const::{lambda()#3}::operator()() const::{lambda(float)#1}"}, 1, 0, op_gelu_tanh, OK_FLOAT, NULL, "", 0},
    {{"GeluCUDAKernelImpl(", "{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}"}, 1, 0, op_gelu_tanh, OK_FLOAT, NULL, "", 0},
    {{"silu_kernel(", "{lambda(float)#1}"}, 1, 0, op_silu, OK_FLOAT, NULL, "", 0},
    {{"silu_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_silu_bw, OK_FLOAT, NULL, "", 0},
    {{"mish_kernel(", "{lambda(float)#1}"}, 1, 0, op_mish, OK_FLOAT, NULL, "", 0},
    {{"mish_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_mish_bw, OK_FLOAT, NULL, "", 0},
    {{"hardswish_kernel(", "{lambda(float)#1}"}, 1, 0, op_hardswish, OK_FLOAT, NULL, "", 0},
    {{"hardswish_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_hardswish_bw, OK_FLOAT, NULL, "", 0},
    {{"launch_clamp_scalar", "{lambda(float)#1}"}, 1, 0, op_clamp, OK_FLOAT, NULL, "iff", 0},
    {{"compare_scalar_kernel<float>", "{lambda(float)#1}"}, 1, 1, op_cmp_scalar, OK_FLOAT, NULL, "it", 0},
    {{"mse_kernel_cuda", "{lambda(c10::Half, c10::Half)#1}"}, 2, 0, op_mse_h, OK_FLOAT, NULL, NULL, 0},
    {{"mse_kernel_cuda", "{lambda(c10::BFloat16, c10::BFloat16)#1}"}, 2, 0, op_mse_b, OK_FLOAT, NULL, NULL, 0},
    {{"mse_backward_cuda_kernel", "{lambda(c10::Half, c10::Half, c10::Half)#1}"}, 3, 0, op_mse_bw_h, OK_FLOAT, NULL, NULL, 0},
    {{"mse_backward_cuda_kernel", "{lambda(c10::BFloat16, c10::BFloat16, c10::BFloat16)#1}"}, 3, 0, op_mse_bw_b, OK_FLOAT, NULL, NULL, 0},
    {{"pow_tensor_scalar_kernel_impl<c10::Half, c10::Half>", "{lambda(c10::Half)#2}"}, 1, 0, op_pow3_h, OK_FLOAT, NULL, NULL, 0},
    {{"pow_tensor_scalar_kernel_impl<c10::BFloat16, c10::BFloat16>", "{lambda(c10::BFloat16)#2}"}, 1, 0, op_pow3_b, OK_FLOAT, NULL, NULL, 0},
    {{"mse_kernel_cuda", "{lambda(float, float)#1}"}, 2, 0, op_mse, OK_FLOAT, NULL, NULL, 0},
    {{"mse_backward_cuda_kernel", "{lambda(float, float, float)#1}"}, 3, 0, op_mse_bw, OK_FLOAT, NULL, NULL, 0},
    {{"AbsFunctor<float>"}, 1, 0, op_abs, OK_FLOAT, NULL, "", 0},
    {{"sign_kernel_cuda", "{lambda(float)#1}"}, 1, 0, op_sign, OK_FLOAT, NULL, "", 0},
    {{"BinaryFunctor<bool, bool, bool, ", "logical_and_kernel_cuda", "{lambda(bool, bool)#1}"}, 2, 1, op_and, OK_FLOAT, NULL, NULL, 0},
    {{"BinaryFunctor<bool, bool, bool, ", "logical_or_kernel_cuda", "{lambda(bool, bool)#1}"}, 2, 1, op_or, OK_FLOAT, NULL, NULL, 0},
    {{"BinaryFunctor<bool, bool, bool, ", "logical_xor_kernel_cuda", "{lambda(bool, bool)#1}"}, 2, 1, op_xor, OK_FLOAT, NULL, NULL, 0},
    {{"pow_tensor_scalar_kernel_impl<float, float>", "{lambda(float)#1}"}, 1, 0, op_pow2, OK_FLOAT, NULL, "", 0},
    {{"pow_tensor_scalar_kernel_impl<float, float>", "{lambda(float)#2}"}, 1, 0, op_pow3, OK_FLOAT, NULL, NULL, 0},
    {{"pow_tensor_scalar_kernel_impl<float, float>", "{lambda(float)#3}"}, 1, 0, op_powm2, OK_FLOAT, NULL, NULL, 0},
    {{"pow_tensor_scalar_kernel_impl<float, float>", "{lambda(float)#4}"}, 1, 0, op_pow, OK_FLOAT, NULL, "t", 0},
    {{"masked_scale_kernel<bool, float, float>", "{lambda(float, bool)#1}"}, 2, 0, op_masked_scale, OK_FLOAT, NULL, "f", 0},
    {{"masked_scale_kernel<unsigned char, float, float>", "{lambda(float, unsigned char)#1}"}, 2, 0, op_masked_scale, OK_FLOAT, NULL, "f", 0},
    {{"lerp_scalar_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_lerp_scalar, OK_FLOAT, NULL, "f", 0},
    {{"lerp_tensor_kernel(", "{lambda(float, float, float)#1}"}, 3, 0, op_lerp_tensor, OK_FLOAT, NULL, "", 0},
    {{"::hardsigmoid_kernel(", "{lambda(float)#1}"}, 1, 0, op_hardsigmoid, OK_FLOAT, NULL, "ffff", 0},
    {{"::hardsigmoid_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_hardsigmoid_bw, OK_FLOAT, NULL, "ffff", 0},
    {{"::hardtanh_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_hardtanh_bw, OK_FLOAT, NULL, "ff", 0},
    {{"::leaky_relu_kernel(", "{lambda(float)#1}"}, 1, 0, op_leaky_relu, OK_FLOAT, NULL, "f", 0},
    {{"::leaky_relu_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_leaky_relu_bw, OK_FLOAT, NULL, "f", 0},
    {{"::elu_kernel(", "{lambda(float)#1}"}, 1, 0, op_elu, OK_FLOAT, NULL, "fff", 0},
    {{"::elu_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_elu_bw, OK_FLOAT, NULL, "fffe", 0},
    {{"::softplus_kernel(", "{lambda(float)#1}"}, 1, 0, op_softplus, OK_FLOAT, NULL, "ff", 0},
    {{"::softplus_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_softplus_bw, OK_FLOAT, NULL, "ff", 0},
    {{"launch_log_sigmoid_forward_kernel(", "{lambda(float)#1}"}, 1, 0, op_log_sigmoid, OK_FLOAT, NULL, "", 0},
    {{"::log_sigmoid_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_log_sigmoid_bw, OK_FLOAT, NULL, "", 0},
    {{"::isneginf_kernel_impl(", "{lambda(float)#1}"}, 1, 1, op_isneginf, OK_FLOAT, NULL, "", 0},
    {{"::isposinf_kernel_impl(", "{lambda(float)#1}"}, 1, 1, op_isposinf, OK_FLOAT, NULL, "", 0},
    {{"^BinaryFunctor<float, float, float, ", "xlogy_kernel_cuda(", "{lambda(float, float)#1}"}, 2, 0, op_xlogy, OK_FLOAT, NULL, "", 0},
    {{"native::floor_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_floor, OK_FLOAT, NULL, "", 0},
    {{"native::ceil_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_ceil, OK_FLOAT, NULL, "", 0},
    {{"native::trunc_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_trunc, OK_FLOAT, NULL, "", 0},
    {{"native::round_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_round, OK_FLOAT, NULL, "", 0},
    {{"native::frac_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_frac, OK_FLOAT, NULL, "", 0},
    {{"^BinaryFunctor<float, float, float, ", "maximum_kernel_cuda(", "{lambda(float, float)#1}"}, 2, 0, op_maximum, OK_FLOAT, NULL, "", 0},
    {{"^BinaryFunctor<float, float, float, ", "minimum_kernel_cuda(", "{lambda(float, float)#1}"}, 2, 0, op_minimum, OK_FLOAT, NULL, "", 0},
    {{"^AUnaryFunctor<float, float, float, ", "maximum_kernel_cuda(", "{lambda(float, float)#1}"}, 1, 0, op_maximum_s, OK_FLOAT, NULL, "et", 0},
    {{"^BUnaryFunctor<float, float, float, ", "maximum_kernel_cuda(", "{lambda(float, float)#1}"}, 1, 0, op_maximum_s, OK_FLOAT, NULL, "et", 0},
    {{"^AUnaryFunctor<float, float, float, ", "minimum_kernel_cuda(", "{lambda(float, float)#1}"}, 1, 0, op_minimum_s, OK_FLOAT, NULL, "et", 0},
    {{"^BUnaryFunctor<float, float, float, ", "minimum_kernel_cuda(", "{lambda(float, float)#1}"}, 1, 0, op_minimum_s, OK_FLOAT, NULL, "et", 0},
    {{"::softshrink_kernel(", "{lambda(float)#1}"}, 1, 0, op_softshrink, OK_FLOAT, NULL, "t", 0},
    {{"::hardshrink_kernel(", "{lambda(float)#1}"}, 1, 0, op_hardshrink, OK_FLOAT, NULL, "t", 0},
    {{"::shrink_backward_kernel(", "{lambda(float, float)#1}"}, 2, 0, op_shrink_bw, OK_FLOAT, NULL, "t", 0},
    {{"native::sin_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_sin, OK_FLOAT, NULL, "", 0},
    {{"native::atanh_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_atanh, OK_FLOAT, NULL, "", 0},
    {{"native::cos_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_cos, OK_FLOAT, NULL, "", 0},
    {{"native::log1p_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_log1p, OK_FLOAT, NULL, "", 0},
    {{"native::expm1_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_expm1, OK_FLOAT, NULL, "", 0},
    {{"native::log2_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_log2, OK_FLOAT, NULL, "", 0},
    {{"native::log10_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_log10, OK_FLOAT, NULL, "", 0},
    {{"native::erf_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_erf, OK_FLOAT, NULL, "", 0},
    {{"native::nan_to_num_kernel_cuda(", "{lambda(float)#1}"}, 1, 0, op_nan_to_num, OK_FLOAT, NULL, "ttt", 0},
    {{"::clamp_kernel_impl(", "{lambda(float, float, float)#1}"}, 3, 0, op_clamp_t, OK_FLOAT, NULL, "", 0},
    {{"smooth_l1_kernel_cuda(", "{lambda(float, float)#1}"}, 2, 0, op_smooth_l1, OK_FLOAT, NULL, NULL, 0},
    {{"smooth_l1_kernel_cuda(", "{lambda(c10::Half, c10::Half)#1}"}, 2, 0, op_smooth_l1_h, OK_FLOAT, NULL, NULL, 0},
    {{"smooth_l1_kernel_cuda(", "{lambda(c10::BFloat16, c10::BFloat16)#1}"}, 2, 0, op_smooth_l1_b, OK_FLOAT, NULL, NULL, 0},
    {{"smooth_l1_backward_cuda_kernel(", "{lambda(float, float, float)#1}"}, 3, 0, op_smooth_l1_bw, OK_FLOAT, NULL, NULL, 0},
    {{"smooth_l1_backward_cuda_kernel(", "{lambda(c10::Half, c10::Half, c10::Half)#1}"}, 3, 0, op_smooth_l1_bw_h, OK_FLOAT, NULL, NULL, 0},
    {{"smooth_l1_backward_cuda_kernel(", "{lambda(c10::BFloat16, c10::BFloat16, c10::BFloat16)#1}"}, 3, 0, op_smooth_l1_bw_b, OK_FLOAT, NULL, NULL, 0},
    {{"bitwise_not_kernel_cuda(", "{lambda("}, 1, 0, NULL, OK_BITNOT, "{lambda(", NULL, 0},
    {{"compare_scalar_kernel<", "{lambda("}, 1, 1, NULL, OK_CMP_SCALAR, "compare_scalar_kernel<", NULL, 0},
    {{"^BinaryFunctor<", "remainder_kernel_cuda(", "{lambda("}, 2, 0, NULL, OK_IREM, "{lambda(", NULL, 0},
    {{"^AUnaryFunctor<", "remainder_kernel_cuda(", "{lambda("}, 1, 0, NULL, OK_IREM, "{lambda(", NULL, 0},
    {{"^BUnaryFunctor<", "remainder_kernel_cuda(", "{lambda("}, 1, 0, NULL, OK_IREM, "{lambda(", NULL, 0},
    {{"^BinaryFunctor<", "div_trunc_kernel_cuda(", "{lambda("}, 2, 0, NULL, OK_IDIV_TRUNC, "{lambda(", NULL, 0},
    {{"^AUnaryFunctor<", "div_trunc_kernel_cuda(", "{lambda("}, 1, 0, NULL, OK_IDIV_TRUNC, "{lambda(", NULL, 0},
    {{"^BUnaryFunctor<", "div_trunc_kernel_cuda(", "{lambda("}, 1, 0, NULL, OK_IDIV_TRUNC, "{lambda(", NULL, 0},
    {{"^BinaryFunctor<", "div_floor_kernel_cuda(", "{lambda("}, 2, 0, NULL, OK_IDIV_FLOOR, "{lambda(", NULL, 0},
    {{"^AUnaryFunctor<", "div_floor_kernel_cuda(", "{lambda("}, 1, 0, NULL, OK_IDIV_FLOOR, "{lambda(", NULL, 0},
    {{"^BUnaryFunctor<", "div_floor_kernel_cuda(", "{lambda("}, 1, 0, NULL, OK_IDIV_FLOOR, "{lambda(", NULL, 0},
    {{"^BinaryFunctor<", "BitwiseAndFunctor<"}, 2, 0, NULL, OK_BITAND, "BitwiseAndFunctor<", NULL, 0},
    {{"^BinaryFunctor<", "BitwiseOrFunctor<"}, 2, 0, NULL, OK_BITOR, "BitwiseOrFunctor<", NULL, 0},
    {{"^BinaryFunctor<", "BitwiseXorFunctor<"}, 2, 0, NULL, OK_BITXOR, "BitwiseXorFunctor<", NULL, 0},
    {{"reciprocal_kernel_cuda", "{lambda(double)#1}"}, 1, 0, NULL, OK_RECIP_F64, "{lambda(", NULL, 0},
    {{"direct_copy_kernel_cuda", "{lambda("}, 1, 0, NULL, OK_COPY, "{lambda(", NULL, 0},
    {{"converting_copy_kernel_cuda<"}, 1, 0, NULL, OK_CONVERT, "converting_copy_kernel_cuda<", NULL, 0},
    {{"where_kernel_impl", "{lambda(bool, "}, 3, 0, NULL, OK_WHERE, "{lambda(bool, ", NULL, 0},
    {{"masked_fill_kernel", "{lambda("}, 2, 0, NULL, OK_MASKED_FILL, "{lambda(", NULL, 0},
    {{"^BinaryFunctor<", "CompareEqFunctor<"}, 2, 1, NULL, OK_CMP_EQ, "CompareEqFunctor<", NULL, 0},
    {{"^AUnaryFunctor<", "CompareEqFunctor<"}, 1, 1, NULL, OK_CMP_EQ_SCALAR, "CompareEqFunctor<", NULL, 0},
    {{"^BUnaryFunctor<", "CompareEqFunctor<"}, 1, 1, NULL, OK_CMP_EQ_SCALAR, "CompareEqFunctor<", NULL, 0},
    {{"^CompareFunctor<"}, 2, 1, NULL, OK_CMP, "CompareFunctor<", NULL, 0},
    {{"batch_norm_calc_invstd(", "{lambda(float)#1}"}, 1, 0, op_bn_invstd, OK_FLOAT, NULL, "f", MIX_ACC},
    /* GroupNormKernelImplInternal's lambdas: #1 the channels-last a * x + b, #2 (x - mean) * rstd
     * (no weight and no bias), #3 a * x + b */
    {{"GroupNormKernelImplInternal<float, float>(", "{lambda(float, float, float)#1}"}, 3, 0, op_gn_scale, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNormKernelImplInternal<float, float>(", "{lambda(float, float, float)#2}"}, 3, 0, op_gn_norm, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNormKernelImplInternal<float, float>(", "{lambda(float, float, float)#3}"}, 3, 0, op_gn_scale, OK_FLOAT, NULL, "", MIX_T},
    /* GroupNorm1dForward's: gamma (#1 of four parameters), beta (#2), both, neither */
    {{"GroupNorm1dForward<float, float>(", "{lambda(float, float, float)#1}"}, 3, 0, op_gn_norm, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNorm1dForward<float, float>(", "{lambda(float, float, float, float)#1}"}, 4, 0, op_gn1d_gamma, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNorm1dForward<float, float>(", "{lambda(float, float, float, float)#2}"}, 4, 0, op_gn1d_beta, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNorm1dForward<float, float>(", "{lambda(float, float, float, float, float)#1}"}, 5, 0, op_gn1d_affine, OK_FLOAT, NULL, "", MIX_T},
    /* GroupNormBackwardKernelImplInternal's: c1, then dX with (#1) and without (#2) gamma */
    {{"GroupNormBackwardKernelImplInternal<float>(", "{lambda(float, float)#1}"}, 2, 0, op_gn_c1, OK_FLOAT, NULL, "", MIX_ACC},
    {{"GroupNormBackwardKernelImplInternal<float>(", "{lambda(float, float, float, float, float)#1}"}, 5, 0, op_gn_dx, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNormBackwardKernelImplInternal<float>(", "{lambda(float, float, float, float, float)#2}"}, 5, 0, op_gn_dx, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNorm1dBackward<float>(", "{lambda(float, float, float, float, float, float)#1}"}, 6, 0, op_gn1d_dx_gamma, OK_FLOAT, NULL, "", MIX_T},
    {{"GroupNorm1dBackward<float>(", "{lambda(float, float, float, float, float)#1}"}, 5, 0, op_gn_dx, OK_FLOAT, NULL, "", MIX_T},
    {{"^CUDAFunctor_add<"}, 2, 0, NULL, OK_IADD, "CUDAFunctor_add<", NULL, 0},
    {{"^CUDAFunctorOnSelf_add<"}, 1, 0, NULL, OK_IADD_SELF, "CUDAFunctorOnSelf_add<", NULL, 0},
    {{"^BinaryFunctor<", "MulFunctor<"}, 2, 0, NULL, OK_IMUL, "MulFunctor<", NULL, 0},
    {{"^AUnaryFunctor<", "MulFunctor<"}, 1, 0, NULL, OK_IMUL_SCALAR, "MulFunctor<", NULL, 0},
    {{"^BUnaryFunctor<", "MulFunctor<"}, 1, 0, NULL, OK_IMUL_SCALAR, "MulFunctor<", NULL, 0},
};

static const char *skip_ns(const char *s) {
  for (;;) {
    if (strncmp(s, "at::native::", 12) == 0) s += 12;
    else if (strncmp(s, "(anonymous namespace)::", 23) == 0) s += 23;
    else if (strncmp(s, "binary_internal::", 17) == 0) s += 17;
    else return s;
  }
}

static int starts_with(const char *s, const char *prefix) {
  while (*prefix)
    if (*s++ != *prefix++) return 0;
  return 1;
}

/* s with every "c10::Half" and "c10::BFloat16" replaced by "float" (a new string; NULL when s
 * names neither, or names a complex type); *half the type replaced (one of the two only). */
static char *half_as_float(const char *s, simtw_dt_t *half) {
  int h = strstr(s, "c10::Half") != NULL, b = strstr(s, "c10::BFloat16") != NULL;
  if (h == b || strstr(s, "complex")) return NULL;
  const char *from = h ? "c10::Half" : "c10::BFloat16";
  *half = h ? DT_F16 : DT_BF16;
  char *out = calloc(strlen(s) + 1, 1), *o = out;
  if (!out) return NULL;
  for (const char *p = s; *p;) {
    if (strncmp(p, from, strlen(from)) == 0) {
      memcpy(o, "float", 5), o += 5, p += strlen(from);
    } else {
      *o++ = *p++;
    }
  }
  *o = 0;
  return out;
}

static const op_desc_t *match_op(const char *s, int half_only);

/* The operation of a functor's text; *half is DT_NONE, or the element type of a float16 or
 * bfloat16 instantiation of an operation whose twin computes in float (half_caps). */
static const op_desc_t *find_op(const char *functor, size_t len, simtw_dt_t *half) {
  char *s = strndup(functor, len);
  if (!s) return NULL;
  *half = DT_NONE;
  simtw_dt_t ht = DT_NONE;
  char *norm = half_as_float(s, &ht);
  const op_desc_t *hit = norm ? match_op(norm, 1) : NULL;
  free(norm);
  if (hit) *half = ht;
  else hit = match_op(s, 0);
  free(s);
  return hit;
}

static const op_desc_t *match_op(const char *s, int half_only) {
  const op_desc_t *hit = NULL;
  for (size_t i = 0; i < sizeof OPS / sizeof OPS[0] && !hit; i++) {
    if (half_only && (OPS[i].kind != OK_FLOAT || !OPS[i].half_caps)) continue;
    int ok = 1;
    for (int j = 0; j < 3 && OPS[i].all[j]; j++) {
      const char *want = OPS[i].all[j];
      if (*want == '^') { /* the functor itself, not one it wraps: at the start, after namespaces */
        const char *head = want + 1;
        ok = ok && starts_with(skip_ns(s), head);
      }
      else
        ok = ok && strstr(s, want);
    }
    if (ok) hit = &OPS[i];
  }
  return hit;
}

/* ---- OffsetCalculator<n, uint32_t> ---- */

#define OC_MAX_DIMS 25
#define OC_SIZES 4                            /* sizes_[d].divisor at 4 + 12 d */
#define OC_STRIDES (4 + 12 * OC_MAX_DIMS)     /* strides_[d][arg] at 304 + 4 (d n + arg) */

static size_t oc_size(int n) { return OC_STRIDES + 4u * OC_MAX_DIMS * (unsigned)n; }

/* The byte offset of linear element idx in tensor arg (of n) of the calculator at oc. */
static uint64_t oc_get(const char *oc, int n, int arg, uint32_t idx) {
  int dims = rdi(oc, 0);
  uint64_t off = 0;
  for (int d = 0; d < dims && d < OC_MAX_DIMS; d++) {
    uint32_t div, stride;
    memcpy(&div, oc + OC_SIZES + 12 * d, 4);
    memcpy(&stride, oc + OC_STRIDES + 4 * (d * n + arg), 4);
    if (!div) break;
    off += (uint64_t)(idx % div) * stride;
    idx /= div;
  }
  return off;
}

uint64_t simtw_oc_get(const char *oc, int n, int arg, uint32_t idx) { return oc_get(oc, n, arg, idx); }

size_t simtw_oc_size(int n) { return oc_size(n); }

/* ---- frameworks ---- */

enum { FW_CONTIG, FW_CAST, FW_LEGACY, FW_LEGACY_CAST, FW_REDUCE, FW_MTA, FW_ARANGE, FW_NN, FW_LPCLEAN, FW_FLIP, FW_ASSERT };
enum { RED_SUM, RED_MEAN, RED_NORM2, RED_MAX, RED_MIN, RED_MAXOPS, RED_MINOPS, RED_ARGMAX, RED_ARGMIN, RED_WELFORD, RED_MINMAX,
       RED_ALL, RED_ANY };

typedef struct twin {
  char *name;
  int fw;
  const op_desc_t *op;
  simtw_dt_t in_dt[MAX_IN], out_dt, ct; /* the functor's argument and result types */
  simtw_dt_t half;                  /* DT_F16 or DT_BF16: a half instantiation of an OK_FLOAT op */
  int red, red_shift;               /* the reduction; ReduceOp's bytes beyond arg_t float */
  int red_shift_ptr;                /* the same for the pointers after the calculators */
  simtw_dt_t red_dt, red_out_dt;
  int mta_depth, mta_scalar_list, mta_fn, mta_nargs, mta_op, mta_r, mta_res;
  size_t fsize;                     /* FW_LEGACY_CAST: the functor's size */
  simtw_nn_t nn;
  struct twin *next;
} twin_t;

/* One element: the functor applied to the inputs (already of in_dt), a value of out_dt. */
/* Whether the operation's NaN result is one of its inputs passed on as it is, or with only its
 * sign changed (selected by a comparison, negated, made absolute, a filled value), as the CUDA
 * code of these functors does. Every other operation computes its NaN, and the NaN a GPU's
 * arithmetic returns is the canonical one, whatever NaNs went in; the host's instructions pass
 * on an operand's sign and payload instead, and which operand by an order the compiler may swap,
 * so a NaN computed here becomes the canonical NaN (simh_nan_result), as it does in the simulated
 * NVRTC's host builds (tests/sim/nvrtc/prelude.h): a kernel generated from these operations then
 * gives the same bits. A model, to be confirmed on a GPU (tools/gpu-check compares generated
 * kernels with PyTorch's there). */
static int keeps_nan(op_fn fn) {
  return fn == op_fill || fn == op_neg || fn == op_abs || fn == op_sign || fn == op_clamp ||
         fn == op_clamp_t || fn == op_threshold || fn == op_maximum || fn == op_minimum ||
         fn == op_maximum_s || fn == op_minimum_s || fn == op_nan_to_num || fn == op_softshrink ||
         fn == op_hardshrink || fn == op_shrink_bw || fn == op_hardtanh_bw || fn == op_leaky_relu_bw ||
         fn == op_hardswish_bw;
}

/* Whether the operation's lambda returns one of its element-typed arguments itself (scalar_t
 * v, not a value computed in opmath_t): for float16 and bfloat16 a NaN it passes on is stored
 * with the bits it came with. The clamps, threshold (other, when x <= threshold fails),
 * maximum and minimum, and the shrinks; not hardtanh's, leaky_relu's or hardswish's backwards,
 * which return their opmath_t copy of the gradient, narrowed like any float. */
static int returns_input(op_fn fn) {
  return fn == op_clamp || fn == op_clamp_t || fn == op_threshold || fn == op_maximum || fn == op_minimum ||
         fn == op_maximum_s || fn == op_minimum_s || fn == op_softshrink || fn == op_hardshrink ||
         fn == op_shrink_bw;
}

/* The input whose value r is, bit for bit, as the operation received it, or NULL. */
static const simtw_val_t *passed_input(const simtw_val_t *in, const float *a, int n, float r) {
  for (int k = 0; k < n; k++)
    if (in[k].raw_dt && simh_f2u(a[k]) == simh_f2u(r)) return &in[k];
  return NULL;
}

static simtw_val_t apply(const twin_t *t, const char *f, const simtw_val_t *in) {
  const op_desc_t *op = t->op;
  switch (op->kind) {
    case OK_FILL: return simtw_load(t->ct, f);
    case OK_COPY: return in[0];
    case OK_CONVERT: return simtw_cast(in[0], t->out_dt);
    case OK_WHERE: return in[0].i ? in[1] : in[2];
    case OK_MASKED_FILL: return in[1].i ? simtw_load(t->ct, f) : in[0];
    case OK_IADD: /* integers wrap around, as the device's do */
      return simtw_ival((int64_t)((uint64_t)in[0].i + (uint64_t)simtw_load(t->ct, f).i * (uint64_t)in[1].i));
    case OK_IADD_SELF: {
      size_t n = simtw_dt_size(t->ct);
      return simtw_ival((int64_t)((uint64_t)in[0].i + (uint64_t)simtw_load(t->ct, f + n).i * (uint64_t)simtw_load(t->ct, f).i));
    }
    case OK_IMUL: return simtw_ival((int64_t)((uint64_t)in[0].i * (uint64_t)in[1].i));
    case OK_RECIP_F64: return simtw_fval(1.0 / in[0].f);
    case OK_BITNOT: return simtw_ival(t->ct == DT_BOOL ? !in[0].i : ~in[0].i);
    /* bool values are 0 or 1, so the bitwise operations are the logical ones */
    case OK_BITAND: return simtw_ival(in[0].i & in[1].i);
    case OK_BITOR: return simtw_ival(in[0].i | in[1].i);
    case OK_BITXOR: return simtw_ival(in[0].i ^ in[1].i);
    case OK_IMUL_SCALAR: /* the empty MulFunctor, then the scalar at its alignment */
      return simtw_ival((int64_t)((uint64_t)in[0].i * (uint64_t)simtw_load(t->ct, f + simtw_dt_size(t->ct)).i));
    case OK_CMP_EQ_SCALAR: { /* {int op; T scalar}: the scalar at the next multiple of its size */
      size_t n = simtw_dt_size(t->ct);
      simtw_val_t b = simtw_load(t->ct, f + (n > 4 ? n : 4));
      int eq = in[0].is_f ? in[0].f == b.f : in[0].i == b.i;
      return simtw_ival(rdi(f, 0) == 0 ? eq : !eq);
    }
    case OK_IREM: case OK_IDIV_TRUNC: case OK_IDIV_FLOOR: {
      /* BinaryFunctor {lambda (empty)}; A/BUnaryFunctor {lambda; T scalar} (at its alignment) */
      size_t n = simtw_dt_size(t->ct);
      int64_t a = in[0].i, b = 0;
      if (op->ninputs == 2) b = in[1].i;
      else if (strstr(op->all[0], "AUnary")) a = simtw_load(t->ct, f + n).i, b = in[0].i;
      else b = simtw_load(t->ct, f + n).i;
      if (b == 0) {
        fprintf(stderr, "sim: %s: an integer division by zero (undefined on the device); not run\n", t->name);
        abort();
      }
      if (op->kind == OK_IDIV_TRUNC || op->kind == OK_IDIV_FLOOR) {
        if (b == -1) return simtw_ival((int64_t)(0 - (uint64_t)a)); /* INT_MIN / -1 wraps */
        int64_t q = a / b;
        return simtw_ival(op->kind == OK_IDIV_FLOOR && (a < 0) != (b < 0) && a % b ? q - 1 : q);
      }
      int64_t r = b == -1 ? 0 : a % b;
      if (r != 0 && (r < 0) != (b < 0)) r += b;
      return simtw_ival(r);
    }
    case OK_CMP_SCALAR: { /* rhs at the next multiple of its size after the int op */
      size_t n = simtw_dt_size(t->ct);
      int64_t a = in[0].i, b = simtw_load(t->ct, f + (n > 4 ? n : 4)).i;
      int c = rdi(f, 0);
      return simtw_ival(c == 0 ? a >= b : c == 1 ? a > b : c == 2 ? a <= b : a < b);
    }
    case OK_CMP_EQ:
    case OK_CMP: {
      int c = rdi(f, 0), r;
      if (in[0].is_f) {
        double a = in[0].f, b = in[1].f;
        r = op->kind == OK_CMP_EQ ? (c == 0 ? a == b : a != b)
            : c == 0 ? a >= b : c == 1 ? a > b : c == 2 ? a <= b : a < b;
      } else {
        int64_t a = in[0].i, b = in[1].i;
        r = op->kind == OK_CMP_EQ ? (c == 0 ? a == b : a != b)
            : c == 0 ? a >= b : c == 1 ? a > b : c == 2 ? a <= b : a < b;
      }
      return simtw_ival(r);
    }
    default: {
      float a[MAX_IN] = {0};
      for (int k = 0; k < op->ninputs; k++) a[k] = in[k].is_f ? (float)in[k].f : (float)in[k].i;
      float v = op->fn(f, a);
      if (isnan(v) && returns_input(op->fn)) {
        const simtw_val_t *p = passed_input(in, a, op->ninputs < MAX_IN ? op->ninputs : MAX_IN, v);
        if (p) return *p;
      }
      if (!keeps_nan(op->fn)) v = simh_nan_result(v);
      return op->out_bool ? simtw_ival(v != 0.0f) : simtw_fval(v);
    }
  }
}

/* The functor f of a half instantiation rewritten as the float32 instantiation lays it out (the
 * operations read that layout), into buf; f itself when the layouts are the same. */
#define CAPS_MAX 64
static const char *caps_f32(const twin_t *t, const char *f, char *buf) {
  const char *c = t->op->half_caps;
  if (t->half == DT_NONE || !c || !strchr(c, 't')) return f;
  size_t h = 0, o = 0;
  memset(buf, 0, CAPS_MAX);
  for (; *c && o + 4 <= CAPS_MAX; c++) {
    size_t hs = *c == 'e' ? 1 : *c == 't' ? 2 : 4, fs = *c == 'e' ? 1 : 4;
    h = (h + hs - 1) / hs * hs, o = (o + fs - 1) / fs * fs;
    if (*c == 't') {
      float v = (float)simtw_load(t->half, f + h).f;
      memcpy(buf + o, &v, 4);
    } else {
      memcpy(buf + o, f + h, hs);
    }
    h += hs, o += fs;
  }
  return buf;
}

/* Contiguous frameworks. With casts (FW_CAST: LoadWithCast<n>, StoreWithCast<1> after the two
 * TrivialOffsetCalculators), element i of each tensor has the dtype those name, converted to and
 * from the functor's types as static_cast does. */
static void run_contig(const twin_t *t, void **args) {
  int n = *(const int *)args[0];
  char caps[CAPS_MAX];
  const char *f = caps_f32(t, args[1], caps);
  char *const *data = args[2];
  int nin = t->op->ninputs < MAX_IN ? t->op->ninputs : MAX_IN;
  simtw_dt_t mem_in[MAX_IN], mem_out = t->out_dt;
  memcpy(mem_in, t->in_dt, sizeof mem_in);
  if (t->fw == FW_CAST) {
    const char *ld = args[5], *st = args[6];
    for (int k = 0; k < nin; k++) mem_in[k] = (simtw_dt_t)(signed char)ld[k];
    mem_out = (simtw_dt_t)(signed char)st[0];
    /* The dtypes are launch arguments: one the twins do not know (complex, float8, ...) cannot be
     * refused before the launch, so the run stops here rather than compute something else. */
    for (int k = 0; k <= nin; k++) {
      simtw_dt_t dt = k < nin ? mem_in[k] : mem_out;
      if (!simtw_dt_size(dt) || dt == DT_U32 || dt == DT_U16) {
        fprintf(stderr, "sim: %s: a cast from or to ScalarType %d, which has no twin; not run\n", t->name, (int)dt);
        abort();
      }
    }
  }
  simtw_val_t in[MAX_IN] = {0};
  for (int i = 0; i < n; i++) {
    /* A value loaded in the functor's own type is not cast again: a float16 or bfloat16 NaN
     * widens with its sign and payload, as the device's conversion keeps them, where a cast
     * back to the type would make it the canonical NaN. */
    for (int k = 0; k < nin; k++) {
      in[k] = simtw_load(mem_in[k], data[1 + k] + simtw_dt_size(mem_in[k]) * (size_t)i);
      if (mem_in[k] != t->in_dt[k]) in[k] = simtw_cast(in[k], t->in_dt[k]);
    }
    simtw_val_t v = simtw_cast(apply(t, f, in), t->out_dt);
    simtw_store(mem_out, data[0] + simtw_dt_size(mem_out) * (size_t)i, v);
  }
}

/* FW_LEGACY: gpu_kernel_impl_nocast's lambda {OffsetCalculator<n>; data; f}. FW_LEGACY_CAST:
 * gpu_kernel_impl's strided lambda with dynamic casts {OffsetCalculator<n>; data; f;
 * std::array<ScalarType, n> dtypes} (the order its body names them): each input is read as its
 * dtype and cast to the functor's argument type (fetch_and_cast), the result cast to dtypes[0]
 * (cast_and_store). f's size (t->fsize) comes from its captures. */
static void run_legacy(const twin_t *t, void **args) {
  int n = *(const int *)args[0];
  int nin = t->op->ninputs < MAX_IN ? t->op->ninputs : MAX_IN;
  int nt = nin + 1;
  const char *lam = args[1];
  const char *oc = lam;
  size_t data_off = (oc_size(nt) + 7) & ~(size_t)7;
  char *data[MAX_IN + 1];
  memcpy(data, lam + data_off, 8 * (size_t)nt); /* device pointers: 8 bytes */
  char caps[CAPS_MAX];
  const char *f0 = lam + data_off + 8 * (size_t)nt;
  const char *f = caps_f32(t, f0, caps);
  simtw_dt_t mem[MAX_IN + 1] = {t->out_dt};
  for (int k = 0; k < MAX_IN; k++) mem[1 + k] = t->in_dt[k];
  if (t->fw == FW_LEGACY_CAST) {
    for (int k = 0; k < nt; k++) {
      mem[k] = (simtw_dt_t)(signed char)f0[t->fsize + (size_t)k];
      if (!simtw_dt_size(mem[k]) || mem[k] == DT_U32 || mem[k] == DT_U16) {
        fprintf(stderr, "sim: %s: a cast from or to ScalarType %d, which has no twin; not run\n", t->name, (int)mem[k]);
        abort();
      }
    }
  }
  simtw_val_t in[MAX_IN] = {0};
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < nin; k++)
      in[k] = simtw_cast(simtw_load(mem[1 + k], data[1 + k] + oc_get(oc, nt, 1 + k, (uint32_t)i)), t->in_dt[k]);
    simtw_store(mem[0], data[0] + oc_get(oc, nt, 0, (uint32_t)i), simtw_cast(apply(t, f, in), t->out_dt));
  }
}

static size_t round_up(size_t v, size_t a);

/* The size of a functor that is a struct of the captures c (half_caps' letters; 't' of element
 * type dt), as C++ lays it out: an empty one is 1 byte. */
static size_t caps_size(const char *c, simtw_dt_t dt) {
  size_t off = 0, align = 1;
  for (; *c; c++) {
    size_t sz = *c == 'e' ? 1 : *c == 't' ? simtw_dt_size(dt) : 4;
    off = round_up(off, sz) + sz;
    if (sz > align) align = sz;
  }
  return off ? round_up(off, align) : 1;
}

/* ReduceOp<scalar, ops, uint32_t, out, vt0, in_vec>: {ops; arg_t ident; ReduceConfig (64 bytes);
 * input_calc; output_calc; ...}. With arg_t float, ops and ident fill the first 8 bytes; a wider
 * arg_t (int64: ident at 8; pair<float, int64_t>: ident at 8, 16 bytes) moves everything after
 * it by red_shift bytes. */
#define RO_IDENT 4
#define RO_CONFIG 8
#define RO_IN_CALC (RO_CONFIG + 64)
#define RO_OUT_CALC (RO_IN_CALC + OC_STRIDES + 4 * OC_MAX_DIMS)
#define RO_SRC ((RO_OUT_CALC + OC_STRIDES + 8 * OC_MAX_DIMS + 7) & ~7)
#define RO_DST (RO_SRC + 8)
#define RO_ACC (RO_DST + 16)
#define RO_FLAGS (RO_ACC + 8 + 8 + 8 + 8) /* after cta_buf, semaphores, base_idx */

/* GreaterOrNan / LessOrNan of Reduce's max/min pairs: whether (a, ia) wins over (b, ib); NaN
 * wins, and among equals the lower index. */
static int pair_wins(int max, double a, int64_t ia, double b, int64_t ib) {
  if (isnan(a)) return isnan(b) ? ia < ib : 1;
  if (isnan(b)) return 0;
  if (a == b) return ia < ib;
  return max ? a > b : a < b;
}

static void run_reduce(const twin_t *t, void **args) {
  const char *r0 = args[0];
  const char *r = r0 + t->red_shift; /* r + RO_* for the config and the calculators */
  const char *rp = r0 + t->red_shift_ptr; /* rp + RO_* for the pointers and flags after them */
  int num_inputs = rdi(r, RO_CONFIG + 4), num_outputs = rdi(r, RO_CONFIG + 8);
  const char *src, *dst, *dst1, *accb; /* device pointers the kernel writes through */
  memcpy(&src, rp + RO_SRC, 8);
  memcpy(&dst, rp + RO_DST, 8);
  memcpy(&dst1, rp + RO_DST + 8, 8);
  memcpy(&accb, rp + RO_ACC, 8);
  int accumulate = (unsigned char)rp[RO_FLAGS] != 0, final_output = (unsigned char)rp[RO_FLAGS + 1] != 0;
  size_t in_size = simtw_dt_size(t->red_dt);
  for (int o = 0; o < num_outputs; o++) {
    uint64_t out_off = oc_get(r + RO_OUT_CALC, 2, 0, (uint32_t)o);
    const char *in = src + oc_get(r + RO_OUT_CALC, 2, 1, (uint32_t)o);
    (void)in_size;
    if (t->red == RED_SUM || t->red == RED_MEAN || t->red == RED_NORM2) {
      if (simtw_dt_is_float(t->red_dt)) {
        /* the accumulator (and ident, acc_buf) is float; inputs of half types widen exactly,
         * the output is rounded once to its type */
        float v = rd(r0, RO_IDENT);
        for (int i = 0; i < num_inputs; i++) {
          float x = (float)simtw_load(t->red_dt, in + oc_get(r + RO_IN_CALC, 1, 0, (uint32_t)i)).f;
          v = t->red == RED_NORM2 ? fmaf(x, x, v) : v + x;
        }
        char *out = (char *)dst + out_off;
        if (accumulate) {
          float prev = accb ? rd(accb, out_off / simtw_dt_size(t->red_out_dt) * 4)
                            : (float)simtw_load(t->red_out_dt, out).f;
          v = prev + v;
        }
        if (!final_output && accb) {
          memcpy((char *)accb + out_off / simtw_dt_size(t->red_out_dt) * 4, &v, 4);
          continue;
        }
        if (t->red == RED_MEAN) v *= rd(r0, 0);
        if (t->red == RED_NORM2) v = sqrtf(v);
        simtw_store(t->red_out_dt, out, simtw_fval(v));
      } else { /* integer sums (int64 accumulators), one pass */
        int64_t v = simtw_load(t->red_dt, r0 + 8).i;
        for (int i = 0; i < num_inputs; i++)
          v += simtw_load(t->red_dt, in + oc_get(r + RO_IN_CALC, 1, 0, (uint32_t)i)).i;
        simtw_store(t->red_out_dt, (char *)dst + out_off, simtw_ival(v));
      }
      continue;
    }
    if (t->red == RED_WELFORD) {
      /* WelfordOps::reduce element by element from ident, then project: the variance (m2
       * over nf - correction, or 0 when nf does not exceed it; its square root when take_sqrt)
       * to dst[0] and, with two outputs, the mean to dst[1]. A reduction split over several
       * launches (partials in acc_buf) has no twin. */
      if (accumulate || !final_output) {
        fprintf(stderr, "sim: %s: a Welford reduction over several launches, which has no twin; not run\n", t->name);
        abort();
      }
      float correction = rd(r0, 0), mean = rd(r0, 8), m2 = rd(r0, 12);
      int take_sqrt = r0[4] != 0, cnt = rdi(r0, 16);
      float nf = rd(r0, 20);
      for (int i = 0; i < num_inputs; i++) {
        float x = (float)simtw_load(t->red_dt, in + oc_get(r + RO_IN_CALC, 1, 0, (uint32_t)i)).f;
        cnt++;
        nf = (float)cnt;
        float delta = x - mean;
        mean = mean + delta / nf;
        m2 = fmaf(delta, x - mean, m2);
      }
      float divisor = nf > correction ? nf - correction : 0.0f, var = m2 / divisor;
      simtw_store(t->red_out_dt, (char *)dst + out_off, simtw_fval(take_sqrt ? sqrtf(var) : var));
      if (rdi(rp, RO_FLAGS + 4) >= 2)
        simtw_store(t->red_dt, (char *)dst1 + out_off, simtw_fval(mean));
      continue;
    }
    if (t->red == RED_ALL || t->red == RED_ANY) {
      /* and_kernel_cuda / or_kernel_cuda: each input converted to bool (nonzero, NaN true), folded
       * from ident; the arg_t is bool, so a reduction split over several launches would keep its
       * partials in acc_buf as bytes, which has no twin */
      if (accumulate || !final_output) {
        fprintf(stderr, "sim: %s: a boolean reduction over several launches, which has no twin; not run\n", t->name);
        abort();
      }
      int v = r0[1] != 0;
      for (int i = 0; i < num_inputs; i++) {
        int x = simtw_cast(simtw_load(t->red_dt, in + oc_get(r + RO_IN_CALC, 1, 0, (uint32_t)i)), DT_BOOL).i != 0;
        v = t->red == RED_ALL ? v && x : v || x;
      }
      simtw_store(DT_BOOL, (char *)dst + out_off, simtw_ival(v));
      continue;
    }
    if (t->red == RED_MINMAX) { /* combine's min and max from ident, in index order */
      int64_t lo = simtw_load(DT_I64, r0 + 8).i, hi = simtw_load(DT_I64, r0 + 16).i;
      for (int i = 0; i < num_inputs; i++) {
        int64_t x = simtw_load(DT_I64, in + oc_get(r + RO_IN_CALC, 1, 0, (uint32_t)i)).i;
        if (x < lo) lo = x;
        if (x > hi) hi = x;
      }
      simtw_store(DT_I64, (char *)dst + out_off, simtw_ival(lo));
      if (rdi(rp, RO_FLAGS + 4) >= 2) simtw_store(DT_I64, (char *)dst1 + out_off, simtw_ival(hi));
      continue;
    }
    if (t->red == RED_MAX || t->red == RED_MIN) { /* MaxNanFunctor / MinNanFunctor */
      double v = 0.0;
      for (int i = 0; i < num_inputs; i++) {
        double x = simtw_load(t->red_dt, in + oc_get(r + RO_IN_CALC, 1, 0, (uint32_t)i)).f;
        if (i == 0 || isnan(x) || (!isnan(v) && (t->red == RED_MAX ? x > v : x < v))) v = x;
      }
      simtw_store(t->red_out_dt, (char *)dst + out_off, simtw_fval(v));
      continue;
    }
    /* pairs: MaxOps/MinOps write (value, index) to dst[0] and dst[1] (its offset scaled from
     * sizeof(float) to sizeof(int64_t), as set_results does); ArgMaxOps/ArgMinOps project the
     * index into dst[0]. */
    int max = t->red == RED_MAXOPS || t->red == RED_ARGMAX;
    double best = 0.0;
    int64_t bi = 0;
    for (int i = 0; i < num_inputs; i++) {
      double x = simtw_load(t->red_dt, in + oc_get(r + RO_IN_CALC, 1, 0, (uint32_t)i)).f;
      if (i == 0 || pair_wins(max, x, i, best, bi)) best = x, bi = i;
    }
    if (t->red == RED_ARGMAX || t->red == RED_ARGMIN) {
      memcpy((char *)dst + out_off, &bi, 8);
    } else {
      simtw_store(t->red_dt, (char *)dst + out_off, simtw_fval(best));
      int noutputs = rdi(rp, RO_FLAGS + 4);
      if (noutputs >= 2) memcpy((char *)dst1 + out_off / simtw_dt_size(t->red_dt) * 8, &bi, 8);
    }
  }
}

/* ---- multi_tensor_apply_kernel<Metadata, Functor<T, depth, r_args, res_arg>, Op, args…> ----
 *
 * MultiTensorApply.cuh: the metadata lists, for up to max_tensors tensors of `depth` lists, each
 * list's addresses, each tensor's numel, and for each of the launch's blocks (up to max_blocks)
 * its tensor (block_to_tensor) and chunk (block_to_chunk; chunks of kChunkSize = 65536
 * elements). TensorListScalarListMetadata has a float per tensor (scalar_vals) after numel and no
 * start_tensor_this_launch. The functor reads lists 0..r_args-1 and writes list res_arg. In this
 * wheel max_blocks is 2240 with 16-bit block_to_tensor (max_tensors exceeds 255); max_tensors
 * depends on depth and is recovered from the metadata's size (the offset of the next argument),
 * and the twin refuses a launch whose block table is not well formed rather than guess. The
 * element type T is float, c10::Half or c10::BFloat16: the functors compute in its opmath type
 * float (the scalars they take are floats) and round once at the store. */
#define MTA_CHUNK 65536
#define MTA_BLOCKS 2240

enum { MF_UNARY, MF_LIST_ALPHA, MF_SCALAR, MF_SCALAR_LIST, MF_LIST, MF_SCALAR_TENSOR,
       MF_POINTWISE_SCALAR, MF_POINTWISE_SCALAR_LIST, MF_LERP_SCALAR, MF_LERP_LIST,
       MF_LERP_SCALAR_LIST, MF_LPNORM, MF_POINTWISE_0D };
enum { MO_PLUS, MO_MINUS, MO_MUL, MO_DIV, MO_NEG, MO_SQRT, MO_EXP, MO_COPY, MO_LERP, MO_UNSCALE, MO_MAXIMUM, MO_MINIMUM };

static float mta_op(int op, float a, float b) {
  switch (op) {
    case MO_PLUS: return a + b;
    case MO_MINUS: return a - b;
    case MO_MUL: return a * b;
    case MO_DIV: return a / b;
    case MO_NEG: return -a;
    case MO_SQRT: return sqrtf(a);
    case MO_EXP: return expf(a);
    /* at::native::maximum / minimum (the foreach clamps): a NaN a propagates */
    case MO_MAXIMUM: return isnan(a) || a > b ? a : b;
    case MO_MINIMUM: return isnan(a) || a < b ? a : b;
    default: return a;
  }
}

/* PointwiseOp*Functor's x0 + s * op(x1, x2): fmaf(s, op(x1, x2), x0), except a product with s 1,
 * which the kernels branch to and contract whole (the wheel's SASS: FSETP.NEU s, 1, then
 * FFMA x1, x2, x0); a quotient with s 1 is x0 + x1 / x2, which fmaf(1, q, x0) gives already. */
static float pointwise(int op, float s, float x1, float x2, float x0) {
  return op == MO_MUL && s == 1.0f ? fmaf(x1, x2, x0) : fmaf(s, mta_op(op, x1, x2), x0);
}

/* LerpFunctor: the two-sided form PyTorch uses for accuracy near both ends. */
static float lerpf(float self, float end, float w) {
  return fabsf(w) < 0.5f ? fmaf(w, end - self, self) : fmaf(-(end - self), 1.0f - w, end);
}

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* _foreach_norm's two kernels. NormType: 0 L0, 1 L1, 2 L2, 3 LInf (the twins: 1 to 3).
 * multi_tensor_apply_kernel<TensorListMetadata<1>, LpNormFunctor<T, NormType, out_t, 1, 1,
 * 0>, float *partial, const int64_t *offsets>: each block reduces its chunk (sum of squares, sum
 * of absolute values, or the largest absolute value with NaN winning) into
 * partial[offsets[start_tensor_this_launch + tensor] + chunk] (offsets: the first slot of each
 * tensor, as this wheel's launches show). */
static float lp_step(int nt, float acc, float x) {
  if (nt == 3) return isnan(acc) || isnan(x) ? NAN : fmaxf(acc, fabsf(x));
  return nt == 1 ? acc + fabsf(x) : fmaf(x, x, acc);
}

/* Element i of a list of element type dt (float, or float16 / bfloat16 widened to their opmath
 * type float), and its store (one rounding). */
static float mta_ld(simtw_dt_t dt, const char *p, int64_t i) {
  return (float)simtw_load(dt, p + simtw_dt_size(dt) * (size_t)i).f;
}
static void mta_st(simtw_dt_t dt, char *p, int64_t i, float v) { simtw_store(dt, p + simtw_dt_size(dt) * (size_t)i, simtw_fval(v)); }

static void run_lpnorm(const twin_t *t, dim3 grid, void **args, size_t T, const char *numel,
                       const char *b2t, const char *b2c) {
  const char *m = args[0];
  int start;
  memcpy(&start, b2c + 4 * MTA_BLOCKS, 4);
  float *partial;
  const int64_t *offsets;
  memcpy(&partial, args[2], 8);
  memcpy(&offsets, args[3], 8);
  (void)T;
  for (unsigned b = 0; b < grid.x; b++) {
    uint16_t ti;
    int chunk;
    int64_t n;
    const char *x;
    memcpy(&ti, b2t + 2 * b, 2);
    memcpy(&chunk, b2c + 4 * b, 4);
    memcpy(&n, numel + 8 * ti, 8);
    memcpy(&x, m + 8 * ti, 8);
    int64_t end = (int64_t)(chunk + 1) * MTA_CHUNK < n ? (int64_t)(chunk + 1) * MTA_CHUNK : n;
    float acc = 0.0f;
    for (int64_t i = (int64_t)chunk * MTA_CHUNK; i < end; i++) acc = lp_step(t->mta_op, acc, mta_ld(t->ct, x, i));
    partial[offsets[start + ti] + chunk] = acc;
  }
}

/* lpnorm_cleanup<T, NormType, out_t, apply_root, float>(const float *partial,
 * TensorListAddresses out (400 pointers), const int64_t *offsets, int first): block b combines
 * the partials of tensor first + b (sum, or the largest with NaN winning), takes the square root
 * for L2 when apply_root, and stores it at out[b] as out_t (float, float16 or bfloat16). */
static void run_lpnorm_cleanup(const twin_t *t, dim3 grid, void **args) {
  const float *partial;
  const int64_t *offsets;
  memcpy(&partial, args[0], 8);
  memcpy(&offsets, args[2], 8);
  int first = *(const int *)args[3], nt = t->mta_op;
  for (unsigned b = 0; b < grid.x && b < 400; b++) {
    char *out;
    memcpy(&out, (const char *)args[1] + 8 * b, 8);
    float acc = 0.0f;
    for (int64_t i = offsets[first + (int)b]; i < offsets[first + (int)b + 1]; i++)
      acc = nt == 3 ? lp_step(3, acc, partial[i]) : acc + partial[i];
    mta_st(t->out_dt, out, 0, nt == 2 && t->mta_r ? sqrtf(acc) : acc);
  }
}

static void run_mta(const twin_t *t, dim3 grid, void **args) {
  const char *m = args[0];
  size_t size = (size_t)((const char *)args[1] - m), d = (size_t)t->mta_depth;
  int scalar_list = t->mta_scalar_list;
  /* Find max_tensors from the metadata's size. */
  size_t per = 8 * (d + 1) + (scalar_list ? 4 : 0), tail = round_up(MTA_BLOCKS * 2, 4) + 4 * MTA_BLOCKS +
                                                             (scalar_list ? 0 : 4);
  size_t T = 0;
  for (size_t c = 1; c < 4096 && !T; c++)
    if (round_up(per * c + tail, 8) == size) T = c;
  const char *numel = m + 8 * d * T, *svals = m + 8 * (d + 1) * T;
  const char *b2t = svals + (scalar_list ? 4 * T : 0), *b2c = b2t + round_up(MTA_BLOCKS * 2, 4);
  for (unsigned b = 0; T && b < grid.x; b++) {
    uint16_t ti, prev = 0;
    int chunk;
    memcpy(&ti, b2t + 2 * b, 2);
    if (b) memcpy(&prev, b2t + 2 * (b - 1), 2);
    memcpy(&chunk, b2c + 4 * b, 4);
    if (ti >= T || (b == 0 ? ti != 0 : ti < prev || ti > prev + 1) || chunk < 0) T = 0;
  }
  if (!T) {
    fprintf(stderr, "sim: %s: multi-tensor metadata of an unknown layout; not run\n", t->name);
    abort();
  }
  if (t->mta_fn == MF_LPNORM) {
    run_lpnorm(t, grid, args, T, numel, b2t, b2c);
    return;
  }
  float s0 = 0.0f;
  const char *stensor = NULL;
  int na = t->mta_nargs;
  if (t->mta_fn == MF_SCALAR_TENSOR) {
    memcpy(&stensor, args[3], sizeof stensor);
    memcpy(&s0, args[4], 4);
  } else if (na >= 1) {
    memcpy(&s0, args[3], 4);
  }
  /* _amp_foreach_non_finite_check_and_unscale_'s lambda {float *found_inf; const float
   * *inv_scale} (then nvcc's pointer): x * inv_scale (x when inv_scale is 1), and found_inf set
   * to 1 by a value that is not finite. */
  float *found_inf = NULL;
  const float *inv_scale = NULL;
  const int unscale = t->mta_op == MO_UNSCALE; /* read once: the element loads below are calls */
  if (unscale) {
    memcpy(&found_inf, args[2], sizeof found_inf);
    memcpy(&inv_scale, (const char *)args[2] + 8, sizeof inv_scale);
  }
  for (unsigned b = 0; b < grid.x; b++) {
    uint16_t ti;
    int chunk;
    int64_t n;
    memcpy(&ti, b2t + 2 * b, 2);
    memcpy(&chunk, b2c + 4 * b, 4);
    memcpy(&n, numel + 8 * ti, 8);
    char *lists[5] = {0};
    int missing = 0;
    for (size_t k = 0; k < d && k < 5; k++) {
      memcpy(&lists[k], m + 8 * (k * T + ti), 8);
      missing |= !lists[k];
    }
    if (missing || !lists[0] || !lists[t->mta_res] || (t->mta_r > 1 && !lists[1]) ||
        (t->mta_r > 2 && !lists[2]))
      continue; /* no tensor has a NULL address; never reached for PyTorch's launches */
    float sv = 0.0f;
    if (scalar_list) memcpy(&sv, svals + 4 * ti, 4);
    int64_t end = (int64_t)(chunk + 1) * MTA_CHUNK < n ? (int64_t)(chunk + 1) * MTA_CHUNK : n;
    for (int64_t i = (int64_t)chunk * MTA_CHUNK; i < end; i++) {
      simtw_dt_t dt = t->ct;
      float x0 = mta_ld(dt, lists[0], i), x1 = t->mta_r > 1 ? mta_ld(dt, lists[1], i) : 0.0f,
            x2 = t->mta_r > 2 ? mta_ld(dt, lists[2], i) : 0.0f;
      float v;
      switch (t->mta_fn) {
        case MF_UNARY:
          if (unscale) {
            if (!isfinite(x0)) *found_inf = 1.0f;
            v = *inv_scale == 1.0f ? x0 : x0 * *inv_scale;
          } else {
            v = mta_op(t->mta_op, x0, 0.0f);
          }
          break;
        /* a + alpha * b and a - alpha * b contract into one FMA (the wheel's SASS); the other
         * operations take alpha * b rounded */
        case MF_LIST_ALPHA:
          v = t->mta_op == MO_PLUS    ? fmaf(s0, x1, x0)
              : t->mta_op == MO_MINUS ? fmaf(-s0, x1, x0)
                                      : mta_op(t->mta_op, x0, s0 * x1);
          break;
        case MF_SCALAR: v = mta_op(t->mta_op, x0, s0); break;
        case MF_SCALAR_LIST: v = mta_op(t->mta_op, x0, sv); break;
        case MF_LIST: v = mta_op(t->mta_op, x0, x1); break;
        case MF_SCALAR_TENSOR: {
          float st = mta_ld(dt, stensor, 0);
          v = t->mta_op == MO_PLUS ? fmaf(s0, st, x0) : mta_op(t->mta_op, x0, s0 * st);
          break;
        }
        /* addcmul's and addcdiv's: a product with the scalar 1 is one FMA (a branch of its own) */
        case MF_POINTWISE_SCALAR: v = pointwise(t->mta_op, s0, x1, x2, x0); break;
        case MF_POINTWISE_SCALAR_LIST: v = pointwise(t->mta_op, sv, x1, x2, x0); break;
        /* list 1 holds 0-d tensors: its one element stands for every element of the others */
        case MF_POINTWISE_0D: v = pointwise(t->mta_op, s0, mta_ld(dt, lists[1], 0), mta_ld(dt, lists[2], i), x0); break;
        case MF_LERP_SCALAR: v = lerpf(x0, x1, s0); break;
        case MF_LERP_LIST: v = lerpf(x0, x1, x2); break;
        default: v = lerpf(x0, x1, sv); break;
      }
      mta_st(t->ct, lists[t->mta_res], i, v);
    }
  }
}

static const struct {
  const char *name;
  int fn, nargs;
} MTA_FUNCTORS[] = {
    {"UnaryOpFunctor<", MF_UNARY, 0},
    {"BinaryOpListAlphaFunctor<", MF_LIST_ALPHA, 1},
    {"BinaryOpScalarListFunctor<", MF_SCALAR_LIST, 0},
    {"BinaryOpScalarTensorFunctor<", MF_SCALAR_TENSOR, 2},
    {"BinaryOpScalarFunctor<", MF_SCALAR, 1},
    {"BinaryOpListFunctor<", MF_LIST, 0},
    {"PointwiseOpScalarListFunctor<", MF_POINTWISE_SCALAR_LIST, 0},
    {"PointwiseOpScalarFunctor<", MF_POINTWISE_SCALAR, 1},
    {"PointwiseOpScalar0dTensorFunctor<", MF_POINTWISE_0D, 1},
    {"TernaryOpScalarListFunctor<", MF_LERP_SCALAR_LIST, 0},
    {"TernaryOpScalarFunctor<", MF_LERP_SCALAR, 1},
    {"TernaryOpListFunctor<", MF_LERP_LIST, 0},
};
static const struct {
  const char *name;
  int op;
} MTA_OPS[] = {
    {"std::plus<float>", MO_PLUS}, {"std::minus<float>", MO_MINUS},
    {"std::multiplies<float>", MO_MUL}, {"std::divides<float>", MO_DIV},
    {"std::negate<float>", MO_NEG}, {"at::native::Sqrt<float>", MO_SQRT},
    {"at::native::Exp<float>", MO_EXP}, {"at::native::Copy<float, float>", MO_COPY},
    {"at::native::LerpFunctor<float>", MO_LERP},
    {"at::native::maximum<float>", MO_MAXIMUM}, {"at::native::minimum<float>", MO_MINIMUM},
};

static int mta_elem(simtw_dt_t dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

/* Fills t from a demangled multi_tensor_apply_kernel name; 0 when it has no twin. */
static int resolve_mta(const char *dm, twin_t *t) {
  const char *p = strstr(dm, "multi_tensor_apply_kernel<");
  if (!p) return 0;
  p += strlen("multi_tensor_apply_kernel<");
  const char *ns = "at::native::(anonymous namespace)::";
  if (strncmp(p, ns, strlen(ns)) != 0) return 0;
  p += strlen(ns);
  if (strncmp(p, "TensorListMetadata<", 19) == 0) {
    t->mta_depth = atoi(p + 19);
  } else if (strncmp(p, "TensorListScalarListMetadata<float, ", 36) == 0) {
    t->mta_depth = atoi(p + 36);
    t->mta_scalar_list = 1;
  } else {
    return 0;
  }
  int lpn, lpo = 0;
  const char *lp = "TensorListMetadata<1>, at::native::LpNormFunctor<", *e;
  if (t->mta_depth == 1 && !t->mta_scalar_list && strncmp(p, lp, strlen(lp)) == 0 &&
      mta_elem(t->ct = simtw_dt_parse(p + strlen(lp), &e)) &&
      sscanf(e, ", (at::native::NormType)%d, %n", &lpn, &lpo) == 1 && lpo &&
      mta_elem(simtw_dt_parse(e + lpo, &e)) && /* out_t: the partials are its opmath type float */
      lpn >= 1 && lpn <= 3 && strncmp(e, ", 1, 1, 0>, float*, long const*>(", 33) == 0) {
    t->fw = FW_MTA;
    t->mta_fn = MF_LPNORM;
    t->mta_op = lpn;
    t->op = &OPS[0];
    return 1;
  }
  if (!(p = strstr(p, ">, ")) || strncmp(p + 3, ns, strlen(ns)) != 0) return 0;
  p += 3 + strlen(ns);
  int fi = -1;
  for (size_t i = 0; i < sizeof MTA_FUNCTORS / sizeof MTA_FUNCTORS[0] && fi < 0; i++)
    if (strncmp(p, MTA_FUNCTORS[i].name, strlen(MTA_FUNCTORS[i].name)) == 0) fi = (int)i;
  if (fi < 0) return 0;
  p += strlen(MTA_FUNCTORS[fi].name);
  /* the element type; the operations compute in its opmath type float */
  if (!mta_elem(t->ct = simtw_dt_parse(p, &p)) || strncmp(p, ", ", 2) != 0) return 0;
  p += 2;
  int depth, r, res;
  if (sscanf(p, "%d, %d, %d>, ", &depth, &r, &res) != 3 || depth != t->mta_depth || r < 1 ||
      r > 3 || res < 0 || res >= depth || depth > 5)
    return 0;
  if (MTA_FUNCTORS[fi].fn == MF_POINTWISE_0D && (depth < 3 || r != 2)) return 0;
  if (!(p = strstr(p, ">, "))) return 0;
  p += 3;
  int op = -1;
  size_t oplen = 0;
  const char *unscale = "at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(";
  if (MTA_FUNCTORS[fi].fn == MF_UNARY && t->ct == DT_F32 && strncmp(p, unscale, strlen(unscale)) == 0 &&
      strstr(p, "::{lambda()#2}::operator()() const::{lambda(float)#1}>(")) {
    t->fw = FW_MTA; /* the float instantiation (#2 of the dispatch), the lambda its third argument */
    t->mta_fn = MF_UNARY;
    t->mta_op = MO_UNSCALE;
    t->mta_r = r;
    t->mta_res = res;
    t->op = &OPS[0];
    return 1;
  }
  for (size_t i = 0; i < sizeof MTA_OPS / sizeof MTA_OPS[0] && op < 0; i++)
    if (strncmp(p, MTA_OPS[i].name, (oplen = strlen(MTA_OPS[i].name))) == 0) op = MTA_OPS[i].op;
  if (op < 0) return 0;
  int lerp = MTA_FUNCTORS[fi].fn >= MF_LERP_SCALAR && MTA_FUNCTORS[fi].fn <= MF_LERP_SCALAR_LIST;
  if (lerp != (op == MO_LERP)) return 0;
  /* The trailing arguments must be exactly those the functor takes. */
  const char *after = p + oplen;
  if (*after == ' ') after++; /* "Sqrt<float> >(" */
  /* BinaryOpScalarTensorFunctor's scalar tensor is of the element type */
  const char *want = MTA_FUNCTORS[fi].nargs == 0 ? ">(" : MTA_FUNCTORS[fi].nargs == 1 ? ", float>(" :
                     t->ct == DT_F16 ? ", c10::Half*, float>(" : t->ct == DT_BF16 ? ", c10::BFloat16*, float>(" : ", float*, float>(";
  if (strncmp(after, want, strlen(want)) != 0) return 0;
  t->fw = FW_MTA;
  t->mta_fn = MTA_FUNCTORS[fi].fn;
  t->mta_nargs = MTA_FUNCTORS[fi].nargs;
  t->mta_op = op;
  t->mta_r = r;
  t->mta_res = res;
  t->op = &OPS[0]; /* marks "known" */
  return 1;
}

/* elementwise_kernel_with_index<int, arange_cuda_out's lambda(long)>(int N, F f, T *out): the
 * lambda captures {xstart, xstep} in the accumulate type (float for float, int64 for int64);
 * out[i] = xstart + i * xstep. */
static void run_arange(const twin_t *t, void **args) {
  int n = *(const int *)args[0];
  const char *f = args[1];
  char *out = *(char **)args[2];
  if (t->out_dt == DT_I64) {
    int64_t start, step;
    memcpy(&start, f, 8);
    memcpy(&step, f + 8, 8);
    for (int64_t i = 0; i < n; i++) {
      int64_t v = start + i * step;
      memcpy(out + 8 * i, &v, 8);
    }
    return;
  }
  float start = rd(f, 0), step = rd(f, 4);
  for (int i = 0; i < n; i++) {
    float v = fmaf((float)i, step, start);
    memcpy(out + 4 * (size_t)i, &v, 4);
  }
}

/* index_elementwise_kernel<128, 4, flip_kernel_impl<OpaqueType<n>>::lambda(int)>(int64 N, lambda):
 * the lambda captures {OffsetCalculator<2, u32, signed_strides> offset_calc; char *out_ptr;
 * const char *in_ptr} (the order its body names them); element i copies n bytes from in_ptr +
 * offsets[1] to out_ptr + offsets[0], where the input's strides may be negative (the flipped
 * dimensions). */
#define FLIP_PREFIX "void at::native::index_elementwise_kernel<128, 4, at::native::flip_kernel_impl<at::native::OpaqueType<"
static void run_flip(const twin_t *t, void **args) {
  int64_t n;
  memcpy(&n, args[0], 8);
  const char *oc = args[1];
  char *out;
  const char *in;
  memcpy(&out, oc + oc_size(2), 8);
  memcpy(&in, oc + oc_size(2) + 8, 8);
  int dims = rdi(oc, 0);
  for (int64_t i = 0; i < n; i++) {
    int64_t off[2] = {0, 0};
    uint32_t idx = (uint32_t)i;
    for (int d = 0; d < dims && d < OC_MAX_DIMS; d++) {
      uint32_t div;
      memcpy(&div, oc + OC_SIZES + 12 * d, 4);
      if (!div) break;
      for (int a = 0; a < 2; a++) {
        int32_t stride;
        memcpy(&stride, oc + OC_STRIDES + 4 * (d * 2 + a), 4);
        off[a] += (int64_t)(idx % div) * stride;
      }
      idx /= div;
    }
    memcpy(out + off[0], in + off[1], t->fsize);
  }
}

/* _assert_async_cuda_kernel<T>(const T *input, Msg msg {char msg[256]}): the device asserts
 * input[0] != 0 (torch._assert_async, index_put_'s bounds checks). On a GPU a failed assertion
 * ends the context; the twin prints the message and aborts. */
static void run_assert(const twin_t *t, void **args) {
  const char *in = *(const char **)args[0];
  simtw_val_t v = simtw_load(t->out_dt, in);
  if (v.is_f ? v.f != 0.0 : v.i != 0) return;
  char msg[257];
  memcpy(msg, args[1], 256);
  msg[256] = 0;
  fprintf(stderr, "sim: %s: device-side assertion failed: %s\n", t->name, msg);
  abort();
}

/* ---- resolution ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static twin_t *twins[1024];

static size_t hash(const char *s) {
  size_t h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h % 1024;
}

/* The functor part of a framework instantiation: from after `prefix` to the `, std::array<char*`
 * that follows it. */
static int functor_span(const char *dm, const char *prefix, const char **f, size_t *len) {
  const char *p = strstr(dm, prefix);
  if (!p) return 0;
  p += strlen(prefix);
  const char *e = strstr(p, ", std::array<char*, ");
  if (!e) return 0;
  *f = p;
  *len = (size_t)(e - p);
  return 1;
}

/* Sets t's element types from the functor's text [f, f + len): the arguments of its innermost
 * lambda where it is one, the type after the op's tprefix for typed kinds. 0 when a type is not
 * one of ours. */
static int set_types(twin_t *t, const char *f, size_t len) {
  const op_desc_t *op = t->op;
  char *s = strndup(f, len);
  if (!s) return 0;
  int ok = 1;
  const char *e;
  for (int k = 0; k < MAX_IN; k++) t->in_dt[k] = DT_F32;
  t->ct = DT_F32;
  const char *lam = NULL, *p = s;
  while ((p = strstr(p, "{lambda("))) lam = p++;
  if (lam && lam[8] != ')') {
    const char *q = lam + 8;
    for (int k = 0; k < op->ninputs && ok; k++) {
      t->in_dt[k] = simtw_dt_parse(q, &e);
      ok = t->in_dt[k] != DT_NONE;
      if (ok) q = e + (*e == ',' ? 2 : 0);
    }
  }
  if (ok && op->kind != OK_FLOAT) {
    /* "{lambda(": the innermost lambda's first argument */
    const char *tp = strcmp(op->tprefix, "{lambda(") == 0 ? lam : strstr(s, op->tprefix);
    t->ct = tp ? simtw_dt_parse(tp + strlen(op->tprefix), &e) : DT_NONE;
    ok = t->ct != DT_NONE;
    if (ok && op->kind == OK_CONVERT) {
      t->in_dt[0] = t->ct;
      t->out_dt = simtw_dt_parse(e + 2, NULL);
      ok = *e == ',' && t->out_dt != DT_NONE;
    }
  }
  switch (op->kind) {
    case OK_FLOAT: /* a lambda returns its argument type (float, or the half type of the entries
                    * written for it) */
      t->out_dt = op->out_bool ? DT_BOOL : t->in_dt[0] == DT_F16 || t->in_dt[0] == DT_BF16 ? t->in_dt[0] : DT_F32;
      break;
    case OK_FILL: case OK_COPY: t->out_dt = t->in_dt[0] = t->ct; break;
    case OK_RECIP_F64: ok = ok && t->ct == DT_F64; t->out_dt = t->in_dt[0] = t->ct; break;
    case OK_IREM: case OK_IDIV_TRUNC: case OK_IDIV_FLOOR: /* integers (the floating instantiations differ) */
      ok = ok && !simtw_dt_is_float(t->ct) && t->ct != DT_BOOL && t->ct != DT_U32 && t->ct != DT_U16;
      t->out_dt = t->in_dt[0] = t->in_dt[1] = t->ct;
      break;
    case OK_CMP_SCALAR: /* the floating instantiations compare in float: the OK_FLOAT entry */
      ok = ok && !simtw_dt_is_float(t->ct) && t->ct != DT_BOOL && t->ct != DT_U32 && t->ct != DT_U16;
      t->in_dt[0] = t->ct;
      t->out_dt = DT_BOOL;
      break;
    case OK_BITNOT: case OK_BITAND: case OK_BITOR: case OK_BITXOR: /* bool and the integer types */
      ok = ok && !simtw_dt_is_float(t->ct) && t->ct != DT_U32 && t->ct != DT_U16;
      t->out_dt = t->in_dt[0] = t->in_dt[1] = t->ct;
      break;
    case OK_CONVERT: break;
    case OK_WHERE: t->out_dt = t->ct = t->in_dt[1]; break;
    case OK_MASKED_FILL: t->out_dt = t->ct; ok = ok && t->in_dt[0] == t->ct && t->in_dt[1] == DT_BOOL; break;
    case OK_IADD: case OK_IADD_SELF: case OK_IMUL: case OK_IMUL_SCALAR:
      /* integer arithmetic only: the floating instantiations compute in their opmath type */
      ok = ok && !simtw_dt_is_float(t->ct) && t->ct != DT_U32 && t->ct != DT_U16 &&
           /* MulFunctor<bool> is a && b: the product of values 0 and 1 */
           (t->ct != DT_BOOL || op->kind == OK_IMUL || op->kind == OK_IMUL_SCALAR);
      t->out_dt = t->in_dt[0] = t->in_dt[1] = t->ct;
      break;
    default: t->out_dt = DT_BOOL; t->in_dt[0] = t->in_dt[1] = t->ct; break; /* comparisons */
  }
  if (op->kind == OK_FLOAT && op->mixed) {
    /* the parameters' own types; the lambda's name must list exactly ninputs of them */
    int nparams = 0;
    if (lam && lam[8] != ')')
      for (const char *q = lam + 8; *q && *q != ')'; q++) nparams += *q == ',' || q == lam + 8;
    ok = ok && nparams == op->ninputs;
    t->out_dt = op->mixed == MIX_ACC ? DT_F32 : t->in_dt[0];
  } else if (t->half != DT_NONE) { /* the float arguments and result are of the half type */
    for (int k = 0; k < 3; k++)
      if (t->in_dt[k] == DT_F32) t->in_dt[k] = t->half;
    if (!op->out_bool) t->out_dt = t->half;
  }
  free(s);
  return ok;
}

static const struct {
  const char *prefix;
  int red;
  simtw_dt_t in, out;
} REDUCTIONS[] = {
    {"func_wrapper_t<float, at::native::sum_functor<float, float, float>", RED_SUM, DT_F32, DT_F32},
    {"func_wrapper_t<long, at::native::sum_functor<long, long, long>", RED_SUM, DT_I64, DT_I64},
    {"func_wrapper_t<c10::Half, at::native::sum_functor<c10::Half, float, c10::Half>", RED_SUM, DT_F16, DT_F16},
    {"func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>", RED_SUM, DT_BF16, DT_BF16},
    {"MeanOps<c10::Half, float, float, c10::Half>", RED_MEAN, DT_F16, DT_F16},
    {"MeanOps<c10::BFloat16, float, float, c10::BFloat16>", RED_MEAN, DT_BF16, DT_BF16},
    /* NormTwoOps<scalar, acc, out, complex?>: sqrt of the sum of squares (fused multiply-adds) */
    {"NormTwoOps<float, float, float, false>", RED_NORM2, DT_F32, DT_F32},
    {"NormTwoOps<float, float, float, true>", RED_NORM2, DT_F32, DT_F32},
    {"NormTwoOps<c10::Half, float, c10::Half, false>", RED_NORM2, DT_F16, DT_F16},
    {"NormTwoOps<c10::BFloat16, float, c10::BFloat16, false>", RED_NORM2, DT_BF16, DT_BF16},
    {"NormTwoOps<c10::Half, float, c10::Half, true>", RED_NORM2, DT_F16, DT_F16},
    {"NormTwoOps<c10::BFloat16, float, c10::BFloat16, true>", RED_NORM2, DT_BF16, DT_BF16},
    {"MeanOps<float, float, float, float>", RED_MEAN, DT_F32, DT_F32},
    {"func_wrapper_t<float, at::native::MaxNanFunctor<float>", RED_MAX, DT_F32, DT_F32},
    {"func_wrapper_t<float, at::native::MinNanFunctor<float>", RED_MIN, DT_F32, DT_F32},
    {"MaxOps<float>", RED_MAXOPS, DT_F32, DT_F32},
    {"MinOps<float>", RED_MINOPS, DT_F32, DT_F32},
    {"ArgMaxOps<float>", RED_ARGMAX, DT_F32, DT_I64},
    {"ArgMinOps<float>", RED_ARGMIN, DT_F32, DT_I64},
    /* float16 and bfloat16: the pair reductions keep their float (ArgMax) or element-type (Max)
     * values in a 16-byte arg_t as for float; MaxNanFunctor<T> reduces in T (2 bytes) */
    {"ArgMaxOps<float>", RED_ARGMAX, DT_F16, DT_I64},
    {"ArgMaxOps<float>", RED_ARGMAX, DT_BF16, DT_I64},
    {"ArgMinOps<float>", RED_ARGMIN, DT_F16, DT_I64},
    {"ArgMinOps<float>", RED_ARGMIN, DT_BF16, DT_I64},
    {"MaxOps<c10::Half>", RED_MAXOPS, DT_F16, DT_F16},
    {"MaxOps<c10::BFloat16>", RED_MAXOPS, DT_BF16, DT_BF16},
    {"MinOps<c10::Half>", RED_MINOPS, DT_F16, DT_F16},
    {"MinOps<c10::BFloat16>", RED_MINOPS, DT_BF16, DT_BF16},
    {"func_wrapper_t<c10::Half, at::native::MaxNanFunctor<c10::Half>", RED_MAX, DT_F16, DT_F16},
    {"func_wrapper_t<c10::BFloat16, at::native::MaxNanFunctor<c10::BFloat16>", RED_MAX, DT_BF16, DT_BF16},
    {"func_wrapper_t<c10::Half, at::native::MinNanFunctor<c10::Half>", RED_MIN, DT_F16, DT_F16},
    {"func_wrapper_t<c10::BFloat16, at::native::MinNanFunctor<c10::BFloat16>", RED_MIN, DT_BF16, DT_BF16},
    /* torch.all / torch.any of any element type (DT_NONE: every type dtype.c reads) into bool:
     * ops an empty lambda and arg_t bool, ident at 1 and the config at 4 */
    {"func_wrapper_t<bool, at::native::and_kernel_cuda(", RED_ALL, DT_NONE, DT_BOOL},
    {"func_wrapper_t<bool, at::native::or_kernel_cuda(", RED_ANY, DT_NONE, DT_BOOL},
};

/* reduce_kernel<…, ReduceOp<T, WelfordOps<T, float, int, pair<T, T>>, unsigned int, T, …>> (var,
 * std, var_mean, std_mean) for T float, c10::Half, c10::BFloat16: ops {float correction; bool
 * take_sqrt} (8 bytes), arg_t WelfordData<float, int> {mean, m2, int n, nf} (16 bytes, ident at
 * 8): the config and everything after it move by 16 bytes. */
static int resolve_welford(const char *e, twin_t *t) {
  const char *p;
  if (!simtw_dt_is_float(t->red_dt) || t->red_dt == DT_F64 || strncmp(e, "WelfordOps<", 11) != 0 ||
      simtw_dt_parse(e + 11, &p) != t->red_dt || strncmp(p, ", float, int, ", 14) != 0 ||
      !(p = strstr(p, ", unsigned int, ")))
    return 0;
  t->red_out_dt = simtw_dt_parse(p + 16, &p);
  if (t->red_out_dt != t->red_dt || *p != ',') return 0;
  t->red = RED_WELFORD;
  t->red_shift = t->red_shift_ptr = 16;
  t->fw = FW_REDUCE;
  t->op = &OPS[0];
  return 1;
}

/* reduce_kernel<…, ReduceOp<scalar, ops, unsigned int, out, …>>: the twins of float sums, means,
 * max and min (with and without indices) and int64 sums. */
static int resolve_reduce(const char *dm, twin_t *t) {
  const char *p = strstr(dm, "at::native::ReduceOp<"), *e;
  if (!p) return 0;
  p += strlen("at::native::ReduceOp<");
  t->red_dt = simtw_dt_parse(p, &e);
  if (t->red_dt == DT_NONE || strncmp(e, ", at::native::", 14) != 0) return 0;
  e += 14;
  if (strncmp(e, "WelfordOps<", 11) == 0) return resolve_welford(e, t);
  /* MinMaxOps<long, long, int> (aminmax of int64, as index_put_ with accumulate checks its
   * indices): ops empty, arg_t pair<long, long> (ident at 8, 16 bytes), outputs min and max. */
  if (t->red_dt == DT_I64 && strncmp(e, "MinMaxOps<long, long, int>, unsigned int, long, ", 48) == 0) {
    t->red = RED_MINMAX;
    t->red_out_dt = DT_I64;
    t->red_shift = t->red_shift_ptr = 16;
    t->fw = FW_REDUCE;
    t->op = &OPS[0];
    return 1;
  }
  int hit = -1;
  for (size_t i = 0; i < sizeof REDUCTIONS / sizeof REDUCTIONS[0] && hit < 0; i++)
    if (strncmp(e, REDUCTIONS[i].prefix, strlen(REDUCTIONS[i].prefix)) == 0 &&
        (REDUCTIONS[i].in == t->red_dt || (REDUCTIONS[i].in == DT_NONE && simtw_dt_size(t->red_dt))))
      hit = (int)i;
  if (hit < 0 || !(p = strstr(e, ", unsigned int, "))) return 0;
  t->red_out_dt = simtw_dt_parse(p + 16, &e);
  if (t->red_out_dt != REDUCTIONS[hit].out || strncmp(e, ", 4", 3) != 0) return 0;
  t->red = REDUCTIONS[hit].red;
  t->red_shift = t->red >= RED_MAXOPS ? 16 : t->red_dt == DT_I64 ? 8 : 0;
  if ((t->red == RED_MAX || t->red == RED_MIN) && simtw_dt_size(t->red_dt) == 2)
    t->red_shift = -4; /* a 2-byte arg_t: ident at 2, the config at 4 */
  if (t->red == RED_ALL || t->red == RED_ANY) t->red_shift = -4; /* arg_t bool: likewise */
  /* the pointers after the calculators are 8-aligned: with the config at 4 they move by 8 */
  t->red_shift_ptr = t->red_shift < 0 ? -8 : t->red_shift;
  t->fw = FW_REDUCE;
  t->op = &OPS[0]; /* marks "known"; the reduction is t->red */
  return 1;
}

/* The end of the functor F in `gpu_kernel_impl…<F>(at::TensorIteratorBase&, F const&)` whose text
 * begins at p, or NULL. The first `>(at::TensorIteratorBase&` is not always it: a lambda defined
 * in a function that takes an iterator (pow_tensor_scalar_kernel_impl's) has one in its name. */
static const char *impl_functor_end(const char *p) {
  static const char sep[] = ">(at::TensorIteratorBase&, ";
  for (const char *e = strstr(p, sep); e; e = strstr(e + 1, sep)) {
    size_t n = (size_t)(e - p);
    const char *q = e + sizeof sep - 1;
    while (n && p[n - 1] == ' ') n--; /* `Functor<float> >`: the demangler's space before `>` */
    if (!strncmp(q, p, n) && !strncmp(q + n, " const&)", 8)) return e;
  }
  return NULL;
}

static twin_t *resolve(const char *name) {
  int st = 0;
  char *dm = __cxa_demangle(name, NULL, NULL, &st);
  if (!dm || st) {
    free(dm);
    return NULL;
  }
  twin_t t = {0};
  t.half = DT_NONE;
  const char *f = NULL;
  size_t len = 0;
  const char *p;
  if (strncmp(dm, "void at::native::vectorized_elementwise_kernel<", 47) == 0 &&
      (p = strchr(dm + 47, ',')) && functor_span(p, ", ", &f, &len)) {
    t.fw = FW_CONTIG;
    t.op = find_op(f, len, &t.half);
  } else if (strncmp(dm, "void at::native::unrolled_elementwise_kernel<", 45) == 0 &&
             strstr(dm, "TrivialOffsetCalculator") && strstr(dm, "LoadWithoutCast") &&
             strstr(dm, "StoreWithoutCast") && functor_span(dm, "unrolled_elementwise_kernel<", &f, &len)) {
    t.fw = FW_CONTIG;
    t.op = find_op(f, len, &t.half);
  } else if (strncmp(dm, "void at::native::unrolled_elementwise_kernel<", 45) == 0 &&
             strstr(dm, "TrivialOffsetCalculator") && strstr(dm, "LoadWithCast<") &&
             strstr(dm, "StoreWithCast<1>") && functor_span(dm, "unrolled_elementwise_kernel<", &f, &len)) {
    t.fw = FW_CAST;
    t.op = find_op(f, len, &t.half);
  } else if (strncmp(dm, "void at::native::elementwise_kernel<", 36) == 0 &&
             (p = strstr(dm, "gpu_kernel_impl_nocast<"))) {
    p += strlen("gpu_kernel_impl_nocast<");
    const char *e = impl_functor_end(p);
    t.fw = FW_LEGACY;
    if (e) t.op = find_op(f = p, len = (size_t)(e - p), &t.half);
  } else if (strncmp(dm, "void at::native::elementwise_kernel<", 36) == 0 &&
             (p = strstr(dm, "gpu_kernel_impl<"))) {
    /* With dynamic casts: only functors that are structs of known captures (a lambda's size
     * would include nvcc's wrapper), so that the dtypes after them are found; or lambdas that
     * capture nothing (one empty byte) of the entries whose parameters name their types. */
    p += strlen("gpu_kernel_impl<");
    const char *e = impl_functor_end(p);
    t.fw = FW_LEGACY_CAST;
    const char *lam = strstr(p, "{lambda(");
    if (e) t.op = find_op(f = p, len = (size_t)(e - p), &t.half);
    if (t.op && lam && lam < e && !(t.op->mixed && t.op->half_caps && !*t.op->half_caps)) t.op = NULL;
    if (t.op && (t.op->kind != OK_FLOAT || !t.op->half_caps)) t.op = NULL;
    if (t.op) t.fsize = caps_size(t.op->half_caps, t.half != DT_NONE ? t.half : DT_F32);
  } else if (strncmp(dm, "void at::native::reduce_kernel<", 31) == 0) {
    resolve_reduce(dm, &t);
  } else if (strncmp(dm, "void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(", 91) == 0 &&
             strstr(dm, "::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(long)#1}>(int, ")) {
    t.fw = FW_ARANGE;
    t.out_dt = DT_F32;
    t.op = &OPS[0];
  } else if (strncmp(dm, "void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(", 91) == 0 &&
             strstr(dm, "::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}>(int, ")) {
    t.fw = FW_ARANGE; /* the int64 instantiation (the fourth type of the dispatch) */
    t.out_dt = DT_I64;
    t.op = &OPS[0];
  } else if (strncmp(dm, "void at::native::_assert_async_cuda_kernel<", 43) == 0) {
    const char *e;
    simtw_dt_t dt = simtw_dt_parse(dm + 43, &e);
    if (dt != DT_NONE && dt != DT_U32 && dt != DT_U16 && strncmp(e, ">(", 2) == 0 &&
        strstr(e, " const*, at::native::Msg)")) {
      t.fw = FW_ASSERT;
      t.out_dt = dt;
      t.op = &OPS[0];
    }
  } else if (strncmp(dm, FLIP_PREFIX, strlen(FLIP_PREFIX)) == 0) {
    char tail[64] = "";
    int n = 0;
    if (sscanf(dm + strlen(FLIP_PREFIX), "%d%63[^(]", &n, tail) == 2 && (n == 1 || n == 2 || n == 4 || n == 8 || n == 16) &&
        strcmp(tail, "> >") == 0 && strstr(dm, " >(at::TensorIterator&)::{lambda(int)#1}>(long, ")) {
      t.fw = FW_FLIP;
      t.fsize = (size_t)n;
      t.op = &OPS[0];
    }
  } else if (simtw_nn_resolve(dm, &t.nn) || simtw_pool_resolve(dm, &t.nn) || simtw_scatter_resolve(dm, &t.nn) ||
             simtw_scan_resolve(dm, &t.nn) || simtw_multiout_resolve(dm, &t.nn) ||
             simtw_fusedopt_resolve(dm, &t.nn) || simtw_flash_resolve(dm, &t.nn)) {
    t.fw = FW_NN;
    t.op = &OPS[0];
  } else if (strncmp(dm, "void at::native::lpnorm_cleanup<", 32) == 0) {
    /* the input's element type (float, float16, bfloat16: float partials), the output's */
    char root[8] = "";
    const char *e, *q = NULL;
    int nc = 0;
    if (mta_elem(simtw_dt_parse(dm + 32, &e)) && sscanf(e, ", (at::native::NormType)%d, %n", &t.mta_op, &nc) == 1 && nc)
      q = e + nc;
    if (q && mta_elem(t.out_dt = simtw_dt_parse(q, &e)) && sscanf(e, ", %5[a-z], float>(", root) == 1 &&
        t.mta_op >= 1 && t.mta_op <= 3 && (!strcmp(root, "true") || !strcmp(root, "false")) &&
        strstr(dm, ">(float const*, at::native::TensorListAddresses, long const*, int)")) {
      t.fw = FW_LPCLEAN;
      t.mta_r = strcmp(root, "true") == 0; /* apply_root */
      t.op = &OPS[0];
    }
  } else {
    resolve_mta(dm, &t);
  }
  if (t.op && f && !set_types(&t, f, len)) t.op = NULL;
  /* The data array of the contiguous frameworks names the arity: a functor matched by a string
   * it only contains (one wrapping it, say) must not read arrays the launch does not have. */
  if (t.op && (t.fw == FW_CONTIG || t.fw == FW_CAST) &&
      (!(p = strstr(dm, "std::array<char*, ")) || atoi(p + 18) != t.op->ninputs + 1))
    t.op = NULL;
  free(dm);
  if (!t.op) return NULL;
  twin_t *n = malloc(sizeof *n);
  if (!n || !(t.name = strdup(name))) {
    free(n);
    return NULL;
  }
  *n = t;
  n->nn.name = n->name;
  return n;
}

/* Answers (args NULL) whether kernel `name` has a twin, else runs it over the whole grid.
 * Returns 1 when it has (ran), 0 when not. */
int simtw_twin(const char *name, dim3 grid, dim3 block, void **args) {
  (void)block;
  size_t b = hash(name);
  pthread_mutex_lock(&lock);
  twin_t *t = twins[b];
  while (t && strcmp(t->name, name) != 0) t = t->next;
  if (!t && (t = resolve(name))) {
    t->next = twins[b];
    twins[b] = t;
  }
  pthread_mutex_unlock(&lock);
  if (!t) return 0;
  if (!args) return 1;
  switch (t->fw) {
    case FW_CONTIG: case FW_CAST: run_contig(t, args); break;
    case FW_LEGACY: case FW_LEGACY_CAST: run_legacy(t, args); break;
    case FW_REDUCE: run_reduce(t, args); break;
    case FW_MTA: run_mta(t, grid, args); break;
    case FW_ARANGE: run_arange(t, args); break;
    case FW_NN: t->nn.run(&t->nn, grid, block, args); break;
    case FW_LPCLEAN: run_lpnorm_cleanup(t, grid, args); break;
    case FW_FLIP: run_flip(t, args); break;
    case FW_ASSERT: run_assert(t, args); break;
  }
  return 1;
}
