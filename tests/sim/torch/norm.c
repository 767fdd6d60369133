/* norm.c — CPU twins of PyTorch's batch norm kernels (Normalization.cuh): for inputs PyTorch views
 * as (batch, plane, feature) the statistics, the normalisation, the fused backward and the split
 * one (reduce, then elementwise); for channels-last inputs (2-d ones among them) the statistics,
 * the normalisation and the split backward. In float, c10::Half and c10::BFloat16 (the
 * statistics float, the weight and bias the input's type or float). And group norm's own
 * kernels (group_norm_kernel.cu): the statistics (contiguous and channels-last), the fused
 * forward parameters, and the backward's sums, fused parameters, channels-last input gradient and
 * weight and bias gradients; its elementwise lambdas (the forward's normalisation, the contiguous
 * backward's input gradient) belong to the elementwise frameworks.
 *
 * The kernels take GenericPackedTensorAccessor parameters ({T *data; index_t sizes[N];
 * index_t strides[N];}, index_t int or int64, strides in elements), read here through their
 * strides. Each twin computes in float (stat_accscalar_t) and rounds at the store, the means and
 * variances in double and rounded once: results equal the GPU's (Welford updates and block
 * reductions) within float rounding.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "twins.h"

#define ARG(type, i) (*(type *)args[i])

static float ldf(int dt, const void *base, int64_t i) {
  return (float)simtw_load((simtw_dt_t)dt, (const char *)base + (size_t)i * simtw_dt_size((simtw_dt_t)dt)).f;
}

static void stf(int dt, void *base, int64_t i, float v) {
  simtw_store((simtw_dt_t)dt, (char *)base + (size_t)i * simtw_dt_size((simtw_dt_t)dt), simtw_fval(v));
}

/* A packed accessor of n dimensions whose index type has `is` bytes. */
typedef struct {
  char *data;
  int64_t sizes[3], strides[3];
} pta_t;

static pta_t pta_read(const void *arg, int n, int is) {
  pta_t a;
  const char *p = arg;
  memset(&a, 0, sizeof a);
  memcpy(&a.data, p, 8);
  for (int d = 0; d < n; d++) {
    if (is == 8) {
      memcpy(&a.sizes[d], p + 8 + 8 * d, 8);
      memcpy(&a.strides[d], p + 8 + 8 * n + 8 * d, 8);
    } else {
      int32_t s, t;
      memcpy(&s, p + 8 + 4 * d, 4);
      memcpy(&t, p + 8 + 4 * n + 4 * d, 4);
      a.sizes[d] = s, a.strides[d] = t;
    }
  }
  return a;
}

static int64_t at3(const pta_t *a, int64_t b, int64_t p, int64_t x) {
  return b * a->strides[0] + p * a->strides[1] + x * a->strides[2];
}

/* ---- batch norm, (batch, plane, feature) layout ---- */

/* batch_norm_collect_statistics_kernel<VarTransform, T, T, float, index_t>(input (3-d), float
 * epsilon, float momentum, save_mean (1-d), save_transformed_var (1-d)): one plane per blockIdx.x;
 * the mean of the plane's batch * feature values and their biased variance, transformed: InvStd
 * gives 1 / sqrt(var + epsilon) computed in double (epsilon is a double there), 0 when both are
 * 0; Var the variance. Either output NULL is skipped. */
static void run_bn_collect(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5], is = k->p[1], invstd = k->p[0];
  pta_t in = pta_read(args[0], 3, is);
  float eps = ARG(float, 1);
  pta_t mean = pta_read(args[3], 1, is), tvar = pta_read(args[4], 1, is);
  int64_t n = in.sizes[0] * in.sizes[2];
  for (int64_t p = 0; p < (int64_t)grid.x && p < in.sizes[1]; p++) {
    double s = 0.0, s2 = 0.0;
    for (int64_t b = 0; b < in.sizes[0]; b++)
      for (int64_t x = 0; x < in.sizes[2]; x++) s += ldf(dt, in.data, at3(&in, b, p, x));
    float m = (float)(s / (double)n);
    for (int64_t b = 0; b < in.sizes[0]; b++)
      for (int64_t x = 0; x < in.sizes[2]; x++) {
        double d = (double)ldf(dt, in.data, at3(&in, b, p, x)) - m;
        s2 += d * d;
      }
    float var = (float)(s2 / (double)n), out = var;
    if (invstd) out = (var != 0.0f || eps != 0.0f) ? (float)(1.0 / sqrt((double)var + (double)eps)) : 0.0f;
    if (mean.data) stf(DT_F32, mean.data, p * mean.strides[0], m);
    if (tvar.data) stf(DT_F32, tvar.data, p * tvar.strides[0], out);
  }
}

/* batch_norm_transform_input_kernel<T, W, float, train = true, int>(input, output (3-d), mean,
 * invstd (1-d float), weight, bias (1-d of W, size 0 when absent), float epsilon): output =
 * T(gamma * (x - mean) * invstd + beta), gamma 1 and beta 0 without weight or bias. */
static void run_bn_transform(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], wdt = k->p[2];
  pta_t in = pta_read(args[0], 3, 4), out = pta_read(args[1], 3, 4);
  pta_t mean = pta_read(args[2], 1, 4), inv = pta_read(args[3], 1, 4);
  pta_t w = pta_read(args[4], 1, 4), bias = pta_read(args[5], 1, 4);
  for (int64_t p = 0; p < in.sizes[1]; p++) {
    float g = w.sizes[0] > 0 ? ldf(wdt, w.data, p * w.strides[0]) : 1.0f;
    float be = bias.sizes[0] > 0 ? ldf(wdt, bias.data, p * bias.strides[0]) : 0.0f;
    float m = ldf(DT_F32, mean.data, p * mean.strides[0]), is = ldf(DT_F32, inv.data, p * inv.strides[0]);
    for (int64_t b = 0; b < in.sizes[0]; b++)
      for (int64_t x = 0; x < in.sizes[2]; x++)
        stf(dt, out.data, at3(&out, b, p, x), g * (ldf(dt, in.data, at3(&in, b, p, x)) - m) * is + be);
  }
}

/* batch_norm_backward_kernel<T, W, float, int>(input, grad_output, grad_input (3-d), grad_weight,
 * grad_bias (1-d W), weight, running_mean, running_var (1-d W), save_mean, save_invstd (1-d
 * float), bool train, float epsilon): per plane, with g the output gradient and the sums (in
 * float) sum(g) and dot = sum((x - mean) g), grad_input = (g - (x - mean) dot / N invstd^2 -
 * sum(g) / N) * invstd * weight in training, g * invstd * weight in evaluation (mean and invstd
 * from the running statistics); grad_weight dot * invstd and grad_bias sum(g) where wanted
 * (size > 0), grad_input where its data is not NULL. */
static void run_bn_backward(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], wdt = k->p[2];
  pta_t in = pta_read(args[0], 3, 4), go = pta_read(args[1], 3, 4), gi = pta_read(args[2], 3, 4);
  pta_t gw = pta_read(args[3], 1, 4), gb = pta_read(args[4], 1, 4), w = pta_read(args[5], 1, 4);
  pta_t rm = pta_read(args[6], 1, 4), rv = pta_read(args[7], 1, 4);
  pta_t sm = pta_read(args[8], 1, 4), si = pta_read(args[9], 1, 4);
  int train = ARG(unsigned char, 10) != 0;
  float eps = ARG(float, 11);
  int64_t n = go.sizes[0] * go.sizes[2];
  for (int64_t p = 0; p < go.sizes[1]; p++) {
    float mean, invstd;
    if (train) {
      mean = ldf(DT_F32, sm.data, p * sm.strides[0]);
      invstd = ldf(DT_F32, si.data, p * si.strides[0]);
    } else {
      mean = ldf(wdt, rm.data, p * rm.strides[0]);
      invstd = 1.0f / sqrtf(ldf(wdt, rv.data, p * rv.strides[0]) + eps);
    }
    float wv = w.sizes[0] > 0 ? ldf(wdt, w.data, p * w.strides[0]) : 1.0f;
    float norm = 1.0f / (float)n, gsum = 0.0f, dot = 0.0f;
    for (int64_t b = 0; b < go.sizes[0]; b++)
      for (int64_t x = 0; x < go.sizes[2]; x++) {
        float g = ldf(dt, go.data, at3(&go, b, p, x));
        gsum += g;
        dot += g * (ldf(dt, in.data, at3(&in, b, p, x)) - mean);
      }
    float grad_mean = gsum * norm, proj_scale = dot * norm * invstd * invstd, grad_scale = invstd * wv;
    if (gi.data)
      for (int64_t b = 0; b < go.sizes[0]; b++)
        for (int64_t x = 0; x < go.sizes[2]; x++) {
          float g = ldf(dt, go.data, at3(&go, b, p, x)), v;
          if (train) {
            float proj = (ldf(dt, in.data, at3(&in, b, p, x)) - mean) * proj_scale;
            v = (g - proj - grad_mean) * grad_scale;
          } else {
            v = g * grad_scale;
          }
          stf(dt, gi.data, at3(&gi, b, p, x), v);
        }
    if (gw.sizes[0] > 0) stf(wdt, gw.data, p * gw.strides[0], dot * invstd);
    if (gb.sizes[0] > 0) stf(wdt, gb.data, p * gb.strides[0], gsum);
  }
}

/* The batch sums of the backward for one plane: sum(g) and sum(g (x - mean)), in float. */
static void bn_grad_sums(int dt, const pta_t *in, const pta_t *go, int64_t p, float mean, float *gsum, float *dot) {
  float a = 0.0f, b = 0.0f;
  for (int64_t n = 0; n < go->sizes[0]; n++)
    for (int64_t x = 0; x < go->sizes[2]; x++) {
      float g = ldf(dt, go->data, at3(go, n, p, x));
      a += g;
      b += g * (ldf(dt, in->data, at3(in, n, p, x)) - mean);
    }
  *gsum = a, *dot = b;
}

/* batch_norm_backward_reduce_kernel<T, W, float, index_t>(input, grad_output (3-d), mean, invstd,
 * sum_dy, sum_dy_xmu (1-d float), grad_weight, grad_bias (1-d W)): per plane sum_dy = sum(g),
 * sum_dy_xmu = sum(g (x - mean)), grad_weight = sum_dy_xmu * invstd, grad_bias = sum_dy, each
 * output written where its size is not 0. */
static void run_bn_backward_reduce(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], wdt = k->p[2], is = k->p[1];
  pta_t in = pta_read(args[0], 3, is), go = pta_read(args[1], 3, is);
  pta_t mean = pta_read(args[2], 1, is), inv = pta_read(args[3], 1, is);
  pta_t sdy = pta_read(args[4], 1, is), sdx = pta_read(args[5], 1, is);
  pta_t gw = pta_read(args[6], 1, is), gb = pta_read(args[7], 1, is);
  for (int64_t p = 0; p < go.sizes[1]; p++) {
    float gsum, dot, m = ldf(DT_F32, mean.data, p * mean.strides[0]);
    bn_grad_sums(dt, &in, &go, p, m, &gsum, &dot);
    if (gw.sizes[0] > 0) stf(wdt, gw.data, p * gw.strides[0], dot * ldf(DT_F32, inv.data, p * inv.strides[0]));
    if (gb.sizes[0] > 0) stf(wdt, gb.data, p * gb.strides[0], gsum);
    if (sdy.sizes[0] > 0) stf(DT_F32, sdy.data, p * sdy.strides[0], gsum);
    if (sdx.sizes[0] > 0) stf(DT_F32, sdx.data, p * sdx.strides[0], dot);
  }
}

/* The input gradient of the split backward (the _impl both elemt kernels share):
 * (g - sum_dy * norm - (x - mean) * invstd^2 * sum_dy_xmu * norm) * weight * invstd. */
static float bn_elemt(float g, float x, float m, float inv, float w, float sdy, float sdx, float norm) {
  float m_dy = sdy * norm, f2 = w * inv, f1 = inv * inv * sdx * norm;
  return (g - m_dy - (x - m) * f1) * f2;
}

/* batch_norm_backward_elemt_kernel<T, W, float, index_t>(input, grad_output (3-d), mean, invstd
 * (1-d float), weight (1-d W, size 0 when absent), sum_dy, sum_dy_xmu (1-d float), grad_input
 * (3-d), then either float norm_fct or (const int *numel, int world_size), norm_fct then being
 * 1 / the sum of the counts). */
static void run_bn_backward_elemt(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], wdt = k->p[2], is = k->p[1];
  pta_t in = pta_read(args[0], 3, is), go = pta_read(args[1], 3, is);
  pta_t mean = pta_read(args[2], 1, is), inv = pta_read(args[3], 1, is), w = pta_read(args[4], 1, is);
  pta_t sdy = pta_read(args[5], 1, is), sdx = pta_read(args[6], 1, is), gi = pta_read(args[7], 3, is);
  float norm;
  if (k->p[3]) {
    const int *numel = ARG(const int *, 8);
    int64_t total = 0;
    for (int i = 0; i < ARG(int, 9); i++) total += numel[i];
    norm = 1.0f / (float)total;
  } else {
    norm = ARG(float, 8);
  }
  for (int64_t p = 0; p < in.sizes[1]; p++) {
    float m = ldf(DT_F32, mean.data, p * mean.strides[0]), iv = ldf(DT_F32, inv.data, p * inv.strides[0]);
    float wv = w.sizes[0] > 0 ? ldf(wdt, w.data, p * w.strides[0]) : 1.0f;
    float a = ldf(DT_F32, sdy.data, p * sdy.strides[0]), b = ldf(DT_F32, sdx.data, p * sdx.strides[0]);
    for (int64_t n = 0; n < in.sizes[0]; n++)
      for (int64_t x = 0; x < in.sizes[2]; x++)
        stf(dt, gi.data, at3(&gi, n, p, x),
            bn_elemt(ldf(dt, go.data, at3(&go, n, p, x)), ldf(dt, in.data, at3(&in, n, p, x)), m, iv, wv, a, b, norm));
  }
}

/* ---- batch norm, channels-last: (reduction_size, stride) contiguous, channel innermost ---- */

/* batch_norm_collect_statistics_channels_last_kernel<VarTransform, T, float, 4>(const T *input,
 * float *out_mean, float *out_invstd, float *staging_data, int *semaphores, int reduction_size,
 * int stride, float epsilon): per channel c the mean and the transformed biased variance of the
 * reduction_size values at m * stride + c (the staging buffers only carry partial sums between
 * the blocks of a column). */
static void run_bn_collect_cl(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], invstd = k->p[0];
  const void *in = ARG(const void *, 0);
  float *mean = ARG(float *, 1), *out = ARG(float *, 2);
  int rs = ARG(int, 5), stride = ARG(int, 6);
  float eps = ARG(float, 7);
  for (int64_t c = 0; c < stride; c++) {
    double s = 0.0, s2 = 0.0;
    for (int64_t m = 0; m < rs; m++) s += ldf(dt, in, m * stride + c);
    float mu = (float)(s / (double)rs);
    for (int64_t m = 0; m < rs; m++) {
      double d = (double)ldf(dt, in, m * stride + c) - mu;
      s2 += d * d;
    }
    float var = (float)(s2 / (double)rs), v = var;
    if (invstd) v = (var != 0.0f || eps != 0.0f) ? (float)(1.0 / sqrt((double)var + (double)eps)) : 0.0f;
    mean[c] = mu;
    out[c] = v;
  }
}

/* batch_norm_transform_input_channels_last_kernel<T, float, W, 4>(const T *input, const T *z,
 * const float *mean, *inv_std, const W *weight, *shift, T *out, int reduction_size, int stride,
 * bool fuse_relu): out = w * (x - mean) * inv_std + shift (+ z), 0 where fuse_relu and the value
 * is <= 0; weight, shift and z optional (NULL). */
static void run_bn_transform_cl(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], wdt = k->p[2];
  const void *in = ARG(const void *, 0), *z = ARG(const void *, 1), *w = ARG(const void *, 4), *sh = ARG(const void *, 5);
  const float *mean = ARG(const float *, 2), *inv = ARG(const float *, 3);
  void *out = ARG(void *, 6);
  int rs = ARG(int, 7), stride = ARG(int, 8), relu = ARG(unsigned char, 9) != 0;
  for (int64_t c = 0; c < stride; c++) {
    float wc = w ? ldf(wdt, w, c) : 1.0f, sc = sh ? ldf(wdt, sh, c) : 0.0f;
    for (int64_t m = 0; m < rs; m++) {
      int64_t a = m * stride + c;
      float t = wc * (ldf(dt, in, a) - mean[c]) * inv[c] + sc;
      if (z) t += ldf(dt, z, a);
      stf(dt, out, a, relu && t <= 0.0f ? 0.0f : t);
    }
  }
}

/* batch_norm_backward_reduce_channels_last_kernel<4, T, float, W>(const T *input, *grad_output,
 * const float *mean, *inv_std, float *sum_dy_o, *sum_dy_xmu_o, W *grad_weight, *grad_bias,
 * staging, semaphores, int reduction_size, int stride): per channel sum(g) and sum(g (x - mean));
 * grad_bias and grad_weight (times inv_std) where not NULL. */
static void run_bn_backward_reduce_cl(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], wdt = k->p[2];
  const void *in = ARG(const void *, 0), *go = ARG(const void *, 1);
  const float *mean = ARG(const float *, 2), *inv = ARG(const float *, 3);
  float *sdy = ARG(float *, 4), *sdx = ARG(float *, 5);
  void *gw = ARG(void *, 6), *gb = ARG(void *, 7);
  int rs = ARG(int, 10), stride = ARG(int, 11);
  for (int64_t c = 0; c < stride; c++) {
    float a = 0.0f, b = 0.0f;
    for (int64_t m = 0; m < rs; m++) {
      float g = ldf(dt, go, m * stride + c);
      a += g;
      b += g * (ldf(dt, in, m * stride + c) - mean[c]);
    }
    if (gb) stf(wdt, gb, c, a);
    if (gw) stf(wdt, gw, c, b * inv[c]);
    sdy[c] = a;
    sdx[c] = b;
  }
}

/* batch_norm_backward_elemt_channels_last_kernel<4, T, float, W>(const T *grad_output, *input,
 * const float *mean, *inv_std, const W *weight, const float *sum_dy, *sum_dy_xmu, then either
 * (T *grad_input, float norm_fct, int reduction_size, int stride) or (const int *numel,
 * T *grad_input, int64 world_size, int reduction_size, int stride)): as the 3-d kernel. */
static void run_bn_backward_elemt_cl(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], wdt = k->p[2];
  const void *go = ARG(const void *, 0), *in = ARG(const void *, 1), *w = ARG(const void *, 4);
  const float *mean = ARG(const float *, 2), *inv = ARG(const float *, 3);
  const float *sdy = ARG(const float *, 5), *sdx = ARG(const float *, 6);
  void *gi;
  float norm;
  int rs, stride;
  if (k->p[3]) {
    const int *numel = ARG(const int *, 7);
    int64_t total = 0, ws = ARG(int64_t, 9);
    for (int64_t i = 0; i < ws; i++) total += numel[i];
    gi = ARG(void *, 8);
    norm = 1.0f / (float)total;
    rs = ARG(int, 10), stride = ARG(int, 11);
  } else {
    gi = ARG(void *, 7);
    norm = ARG(float, 8);
    rs = ARG(int, 9), stride = ARG(int, 10);
  }
  for (int64_t c = 0; c < stride; c++) {
    float wc = w ? ldf(wdt, w, c) : 1.0f;
    for (int64_t m = 0; m < rs; m++) {
      int64_t a = m * stride + c;
      stf(dt, gi, a, bn_elemt(ldf(dt, go, a), ldf(dt, in, a), mean[c], inv[c], wc, sdy[c], sdx[c], norm));
    }
  }
}

/* ---- group norm (group_norm_kernel.cu) ---- */

/* The group norm kernels are templated on T (float, c10::Half, c10::BFloat16; p[5]) with the
 * accumulate type float: mean and rstd are stored both as T and, for the half types, as float
 * (mean_acc, rstd_acc); the backward reads the T ones. */

/* The mean and 1 / sqrt(biased variance + eps) of n values of type dt at x + i * step(i), the
 * i-th value's element index given by idx. Sums in double, rounded once. */
typedef int64_t (*gn_index_fn)(int64_t i, const int64_t *q);

static void gn_moments(int dt, const void *x, int64_t n, gn_index_fn idx, const int64_t *q, float eps, float *mean,
                       float *rstd) {
  double s = 0.0, s2 = 0.0;
  for (int64_t i = 0; i < n; i++) s += ldf(dt, x, idx(i, q));
  float m = (float)(s / (double)n);
  for (int64_t i = 0; i < n; i++) {
    double d = (double)ldf(dt, x, idx(i, q)) - m;
    s2 += d * d;
  }
  float var = (float)(s2 / (double)n);
  *mean = m;
  *rstd = 1.0f / sqrtf(var + eps);
}

/* Stores a group's statistics: T mean and rstd, and the float copies for the half types. */
static void gn_store(int dt, void *mean, void *rstd, float *mean_acc, float *rstd_acc, int64_t i, float m, float r) {
  stf(dt, mean, i, m);
  stf(dt, rstd, i, r);
  if (dt != DT_F32) {
    mean_acc[i] = m;
    rstd_acc[i] = r;
  }
}

/* Element index of the i-th value of a contiguous row starting at q[0]. */
static int64_t gn_row(int64_t i, const int64_t *q) { return q[0] + i; }

/* Element index of the i-th value (d fastest, then hw) of group g of batch n, channels-last:
 * q = {n, g, C, HxW, D}. */
static int64_t gn_cl(int64_t i, const int64_t *q) {
  int64_t d = i % q[4], hw = i / q[4];
  return (q[0] * q[3] + hw) * q[2] + q[1] * q[4] + d;
}

/* RowwiseMomentsContiguousCUDAKernel<VecSize, T, float>(int64 N, T eps, const T *X, T *mean,
 * T *rstd, float *mean_acc, float *rstd_acc): one row of N values per blockIdx.x (grid.x rows,
 * N * G of them), rstd = rsqrt(var + float(eps)). */
static void run_gn_moments(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5];
  int64_t n = ARG(int64_t, 0);
  float eps = ldf(dt, args[1], 0);
  const void *x = ARG(const void *, 2);
  void *mean = ARG(void *, 3), *rstd = ARG(void *, 4);
  float *ma = ARG(float *, 5), *ra = ARG(float *, 6);
  for (int64_t r = 0; r < (int64_t)grid.x; r++) {
    int64_t q[1] = {r * n};
    float m, rs;
    gn_moments(dt, x, n, gn_row, q, eps, &m, &rs);
    gn_store(dt, mean, rstd, ma, ra, r, m, rs);
  }
}

/* RowwiseMomentsChannelsLastCUDAKernel<T, float>(int64 N, C, HxW, D, T eps, X, mean, rstd,
 * mean_acc, rstd_acc): one group ng = n * (C / D) + g per blockIdx.x, its D * HxW values at
 * (n * HxW + hw) * C + g * D + d. RowwiseMomentsChannelsLastSmallDCUDAKernel<4, T, float>(int64
 * C, HxW, D, G, T eps, X, mean, rstd, mean_acc, rstd_acc) computes the same statistics, four
 * groups per block (grid.x = N * ceil(G / 4)). */
static void run_gn_moments_cl(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5], small = k->p[0];
  int64_t c, hw, d, groups, nb;
  if (small) {
    c = ARG(int64_t, 0), hw = ARG(int64_t, 1), d = ARG(int64_t, 2), groups = ARG(int64_t, 3);
    nb = (int64_t)grid.x / ((groups + 3) / 4);
  } else {
    nb = ARG(int64_t, 0), c = ARG(int64_t, 1), hw = ARG(int64_t, 2), d = ARG(int64_t, 3);
    groups = c / d;
  }
  float eps = ldf(dt, args[4], 0);
  const void *x = ARG(const void *, 5);
  void *mean = ARG(void *, 6), *rstd = ARG(void *, 7);
  float *ma = ARG(float *, 8), *ra = ARG(float *, 9);
  for (int64_t n = 0; n < nb; n++)
    for (int64_t g = 0; g < groups; g++) {
      int64_t q[5] = {n, g, c, hw, d};
      float m, rs;
      gn_moments(dt, x, d * hw, gn_cl, q, eps, &m, &rs);
      gn_store(dt, mean, rstd, ma, ra, n * groups + g, m, rs);
    }
}

/* ComputeFusedParamsCUDAKernel<T, float>(int64 N, C, group, const float *mean, *rstd, const T
 * *gamma, *beta, float *a, *b): for every (n, c), ng = (n * C + c) / (C / group): a = rstd[ng]
 * * gamma[c] (rstd without gamma), b = -a * mean[ng] + beta[c] (0 without beta). */
static void run_gn_fused_params(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5];
  int64_t n = ARG(int64_t, 0), c = ARG(int64_t, 1), g = ARG(int64_t, 2);
  const float *mean = ARG(const float *, 3), *rstd = ARG(const float *, 4);
  const void *gamma = ARG(const void *, 5), *beta = ARG(const void *, 6);
  float *a = ARG(float *, 7), *b = ARG(float *, 8);
  for (int64_t i = 0; i < n * c; i++) {
    int64_t ng = i / (c / g), ch = i % c;
    float sc = gamma ? rstd[ng] * ldf(dt, gamma, ch) : rstd[ng];
    a[i] = sc;
    b[i] = -sc * mean[ng] + (beta ? ldf(dt, beta, ch) : 0.0f);
  }
}

/* c2 and c3 of a group from its sums: with s = 1 / count, x = (sum2 * mean - sum1) * rstd^3 * s,
 * c2 = x and c3 = -x * mean - sum2 * rstd * s. */
static void gn_c23(float sum1, float sum2, float mean, float rstd, float s, float *c2, float *c3) {
  float x = (sum2 * mean - sum1) * rstd * rstd * rstd * s;
  *c2 = x;
  *c3 = -x * mean - sum2 * rstd * s;
}

/* ComputeInternalGradientsContiguousCUDAKernel<VecSize, T>(int64 HxW, const T *dY, *X, float
 * *ds, *db): per (n, c) row (grid.x rows) ds = sum(dY * X), db = sum(dY). The channels-last
 * kernels ComputeInternalGradientsChannelsLastCUDAKernel<16, T> and
 * ComputeInternalGradientsChannelsLastFallbackCUDAKernel<T>(int64 C, HxW, dY, X, ds, db) compute
 * the same sums over the values at (n * HxW + hw) * C + c. */
static void run_gn_internal_grads(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5], cl = k->p[0];
  int64_t c = cl ? ARG(int64_t, 0) : 0, hw = ARG(int64_t, cl ? 1 : 0);
  int f = cl ? 2 : 1;
  const void *dy = ARG(const void *, f), *x = ARG(const void *, f + 1);
  float *ds = ARG(float *, f + 2), *db = ARG(float *, f + 3);
  int64_t rows = grid.x;
  if (cl == 2) rows = (int64_t)grid.x / ((c + 15) / 16) * c; /* ChannelsPerBlock 16 */
  for (int64_t nc = 0; nc < rows; nc++) {
    float s1 = 0.0f, s2 = 0.0f;
    for (int64_t i = 0; i < hw; i++) {
      int64_t at = cl ? (nc / c * hw + i) * c + nc % c : nc * hw + i;
      float d = ldf(dt, dy, at);
      s1 += d * ldf(dt, x, at);
      s2 += d;
    }
    ds[nc] = s1;
    db[nc] = s2;
  }
}

/* ComputeBackwardFusedParamsCUDAKernel<T>(int64 C, HxW, group, const T *mean, *rstd, *gamma,
 * const float *ds, *db, float *c2, *c3): per (n, g) of grid (N, G), sum1 = sum over the group's
 * channels of ds * gamma, sum2 of db * gamma (gamma 1 when NULL), then c2, c3 with
 * s = 1 / (D * HxW). */
static void run_gn_bw_fused(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5];
  int64_t c = ARG(int64_t, 0), hw = ARG(int64_t, 1), g = ARG(int64_t, 2), d = c / g;
  const void *mean = ARG(const void *, 3), *rstd = ARG(const void *, 4), *gamma = ARG(const void *, 5);
  const float *ds = ARG(const float *, 6), *db = ARG(const float *, 7);
  float *c2 = ARG(float *, 8), *c3 = ARG(float *, 9);
  for (int64_t n = 0; n < (int64_t)grid.x; n++)
    for (int64_t gi = 0; gi < (int64_t)grid.y && gi < g; gi++) {
      int64_t ng = n * g + gi;
      float s1 = 0.0f, s2 = 0.0f;
      for (int64_t i = 0; i < d; i++) {
        float gv = gamma ? ldf(dt, gamma, gi * d + i) : 1.0f;
        s1 += ds[ng * d + i] * gv;
        s2 += db[ng * d + i] * gv;
      }
      gn_c23(s1, s2, ldf(dt, mean, ng), ldf(dt, rstd, ng), 1.0f / (float)(d * hw), &c2[ng], &c3[ng]);
    }
}

/* Compute1dBackwardFusedParamsCUDAKernel<T>(int64 C, group, const T *dY, *X, *mean, *rstd,
 * *gamma, float *c2, *c3): HxW 1; per (n, g), sum1 = sum(dY * X * gamma), sum2 = sum(dY * gamma)
 * over the group's D channels, s = 1 / D. */
static void run_gn_bw_fused_1d(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5];
  int64_t c = ARG(int64_t, 0), g = ARG(int64_t, 1), d = c / g;
  const void *dy = ARG(const void *, 2), *x = ARG(const void *, 3), *mean = ARG(const void *, 4);
  const void *rstd = ARG(const void *, 5), *gamma = ARG(const void *, 6);
  float *c2 = ARG(float *, 7), *c3 = ARG(float *, 8);
  for (int64_t n = 0; n < (int64_t)grid.x; n++)
    for (int64_t gi = 0; gi < (int64_t)grid.y && gi < g; gi++) {
      int64_t ng = n * g + gi;
      float s1 = 0.0f, s2 = 0.0f;
      for (int64_t i = 0; i < d; i++) {
        float gv = gamma ? ldf(dt, gamma, gi * d + i) : 1.0f, dyv = ldf(dt, dy, ng * d + i);
        s1 += dyv * ldf(dt, x, ng * d + i) * gv;
        s2 += dyv * gv;
      }
      gn_c23(s1, s2, ldf(dt, mean, ng), ldf(dt, rstd, ng), 1.0f / (float)d, &c2[ng], &c3[ng]);
    }
}

/* GammaBetaBackwardCUDAKernel1<T> and GammaBetaBackwardCUDAKernel2<T>(int64 N, C, group, const T
 * *mean, *rstd, const float *ds, *db, T *dgamma, *dbeta): per channel c, over the batch,
 * dgamma = sum((ds - db * mean) * rstd), dbeta = sum(db) (mean and rstd of the channel's group),
 * each where not NULL. */
static void run_gn_gamma_beta(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5];
  int64_t n = ARG(int64_t, 0), c = ARG(int64_t, 1), g = ARG(int64_t, 2), d = c / g;
  const void *mean = ARG(const void *, 3), *rstd = ARG(const void *, 4);
  const float *ds = ARG(const float *, 5), *db = ARG(const float *, 6);
  void *dg = ARG(void *, 7), *dbeta = ARG(void *, 8);
  for (int64_t ch = 0; ch < c; ch++) {
    float s1 = 0.0f, s2 = 0.0f;
    for (int64_t b = 0; b < n; b++) {
      int64_t nc = b * c + ch, ng = b * g + ch / d;
      s1 += (ds[nc] - db[nc] * ldf(dt, mean, ng)) * ldf(dt, rstd, ng);
      s2 += db[nc];
    }
    if (dg) stf(dt, dg, ch, s1);
    if (dbeta) stf(dt, dbeta, ch, s2);
  }
}

/* GammaBeta1dBackwardCUDAKernel1<T> and GammaBeta1dBackwardCUDAKernel2<T>(int64 N, C, group,
 * const T *dY, *X, *mean, *rstd, T *dgamma, *dbeta): HxW 1; per channel dgamma =
 * sum((dY * X - dY * mean) * rstd), dbeta = sum(dY). */
static void run_gn_gamma_beta_1d(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5];
  int64_t n = ARG(int64_t, 0), c = ARG(int64_t, 1), g = ARG(int64_t, 2), d = c / g;
  const void *dy = ARG(const void *, 3), *x = ARG(const void *, 4), *mean = ARG(const void *, 5);
  const void *rstd = ARG(const void *, 6);
  void *dg = ARG(void *, 7), *dbeta = ARG(void *, 8);
  for (int64_t ch = 0; ch < c; ch++) {
    float s1 = 0.0f, s2 = 0.0f;
    for (int64_t b = 0; b < n; b++) {
      int64_t nc = b * c + ch, ng = b * g + ch / d;
      float dyv = ldf(dt, dy, nc), xv = ldf(dt, x, nc);
      s1 += (dyv * xv - dyv * ldf(dt, mean, ng)) * ldf(dt, rstd, ng);
      s2 += dyv;
    }
    if (dg) stf(dt, dg, ch, s1);
    if (dbeta) stf(dt, dbeta, ch, s2);
  }
}

/* GroupNormBackwardChannelsLastCUDAKernel<index_t, T, float>(index_t numel, G, IntDivider<index_t>
 * C, HxW, D, const T *dY, *X, *rstd, *gamma, const float *c2, *c3, T *dX): element index (channels
 * innermost) c = index % C, n = index / C / HxW, ng = n * G + c / D; dX = rstd[ng] * gamma[c]
 * (gamma 1 when NULL) * dY + c2[ng] * X + c3[ng]. IntDivider's divisor is its first member
 * (unsigned int: {divisor, m1, shift}; int64: the divisor alone). */
static void run_gn_bw_cl(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], is = k->p[1];
  int64_t numel, groups, c, hw, d;
  if (is == 8) {
    numel = ARG(int64_t, 0), groups = ARG(int64_t, 1), c = ARG(int64_t, 2), hw = ARG(int64_t, 3), d = ARG(int64_t, 4);
  } else {
    numel = ARG(uint32_t, 0), groups = ARG(uint32_t, 1), c = ARG(uint32_t, 2), hw = ARG(uint32_t, 3), d = ARG(uint32_t, 4);
  }
  const void *dy = ARG(const void *, 5), *x = ARG(const void *, 6), *rstd = ARG(const void *, 7), *gamma = ARG(const void *, 8);
  const float *c2 = ARG(const float *, 9), *c3 = ARG(const float *, 10);
  void *dx = ARG(void *, 11);
  for (int64_t i = 0; i < numel; i++) {
    int64_t ch = i % c, n = i / c / hw, ng = n * groups + ch / d;
    float scale = ldf(dt, rstd, ng) * (gamma ? ldf(dt, gamma, ch) : 1.0f);
    stf(dt, dx, i, scale * ldf(dt, dy, i) + c2[ng] * ldf(dt, x, i) + c3[ng]);
  }
}

/* ---- resolution ---- */

/* Whether s ends with suffix. */
static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *after(const char *dm, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(dm, prefix, n) == 0 ? dm + n : NULL;
}

/* The group norm kernels (in at::native's anonymous namespace). */
static int gn_resolve(const char *dm, simtw_nn_t *k) {
  const char *ns = "void at::native::(anonymous namespace)::", *p, *e;
  int v;
  memset(k, 0, sizeof *k);
  if (strncmp(dm, ns, strlen(ns)) != 0) return 0;
  p = dm + strlen(ns);
  if ((e = after(p, "RowwiseMomentsContiguousCUDAKernel<"))) {
    /* <VecSize, T, float> */
    const char *c = strchr(e, ',');
    if (c && simtw_dt_float_then(c + 2, ", float>(", &k->p[5])) k->run = run_gn_moments;
  } else if ((e = after(p, "RowwiseMomentsChannelsLastCUDAKernel<"))) {
    if (simtw_dt_float_then(e, ", float>(", &k->p[5])) k->run = run_gn_moments_cl;
  } else if ((e = after(p, "RowwiseMomentsChannelsLastSmallDCUDAKernel<4, "))) {
    k->p[0] = 1;
    if (simtw_dt_float_then(e, ", float>(", &k->p[5])) k->run = run_gn_moments_cl;
  } else if ((e = after(p, "ComputeFusedParamsCUDAKernel<"))) {
    if (simtw_dt_float_then(e, ", float>(", &k->p[5])) k->run = run_gn_fused_params;
  } else if ((e = after(p, "ComputeInternalGradientsContiguousCUDAKernel<"))) {
    const char *c = strchr(e, ',');
    if (c && simtw_dt_float_then(c + 2, ">(", &k->p[5])) k->run = run_gn_internal_grads;
  } else if ((e = after(p, "ComputeInternalGradientsChannelsLastCUDAKernel<16, "))) {
    k->p[0] = 2;
    if (simtw_dt_float_then(e, ">(", &k->p[5])) k->run = run_gn_internal_grads;
  } else if ((e = after(p, "ComputeInternalGradientsChannelsLastFallbackCUDAKernel<"))) {
    k->p[0] = 1;
    if (simtw_dt_float_then(e, ">(", &k->p[5])) k->run = run_gn_internal_grads;
  } else if ((e = after(p, "ComputeBackwardFusedParamsCUDAKernel<"))) {
    if (simtw_dt_float_then(e, ">(", &k->p[5])) k->run = run_gn_bw_fused;
  } else if ((e = after(p, "Compute1dBackwardFusedParamsCUDAKernel<"))) {
    if (simtw_dt_float_then(e, ">(", &k->p[5])) k->run = run_gn_bw_fused_1d;
  } else if ((e = after(p, "GammaBetaBackwardCUDAKernel1<")) || (e = after(p, "GammaBetaBackwardCUDAKernel2<"))) {
    if (simtw_dt_float_then(e, ">(", &k->p[5])) k->run = run_gn_gamma_beta;
  } else if ((e = after(p, "GammaBeta1dBackwardCUDAKernel1<")) || (e = after(p, "GammaBeta1dBackwardCUDAKernel2<"))) {
    if (simtw_dt_float_then(e, ">(", &k->p[5])) k->run = run_gn_gamma_beta_1d;
  } else if ((e = after(p, "GroupNormBackwardChannelsLastCUDAKernel<"))) {
    /* <unsigned int|long, T, float> */
    v = strncmp(e, "unsigned int, ", 14) == 0 ? 4 : strncmp(e, "long, ", 6) == 0 ? 8 : 0;
    k->p[1] = v;
    if (v && simtw_dt_float_then(e + (v == 4 ? 14 : 6), ", float>(", &k->p[5])) k->run = run_gn_bw_cl;
  }
  return k->run != NULL;
}

int simtw_norm_resolve(const char *dm, simtw_nn_t *k) {
  const char *p, *e;
  memset(k, 0, sizeof *k);
  if ((p = after(dm, "void at::native::batch_norm_collect_statistics_kernel<at::native::"))) {
    /* <InvStd|Var, T, T, float, int|long> */
    int w = -1;
    if (strncmp(p, "InvStd, ", 8) == 0) k->p[0] = 1, p += 8;
    else if (strncmp(p, "Var, ", 5) == 0) p += 5;
    else return 0;
    if ((e = simtw_dt_float_then(p, ", ", &k->p[5])) && (e = simtw_dt_float_then(e, ", float, ", &w)) && w == k->p[5]) {
      k->p[1] = strncmp(e, "int>(", 5) == 0 ? 4 : strncmp(e, "long>(", 6) == 0 ? 8 : 0;
      if (k->p[1]) k->run = run_bn_collect;
    }
  } else if ((p = after(dm, "void at::native::batch_norm_transform_input_kernel<"))) {
    if ((e = simtw_dt_float_then(p, ", ", &k->p[5])) && simtw_dt_float_then(e, ", float, true, int>(", &k->p[2]) &&
        (k->p[2] == DT_F32 || k->p[2] == k->p[5]))
      k->run = run_bn_transform;
  } else if ((p = after(dm, "void at::native::batch_norm_backward_kernel<"))) {
    if ((e = simtw_dt_float_then(p, ", ", &k->p[5])) && simtw_dt_float_then(e, ", float, int>(", &k->p[2]) &&
        (k->p[2] == DT_F32 || k->p[2] == k->p[5]))
      k->run = run_bn_backward;
  } else if ((p = after(dm, "void at::native::batch_norm_backward_reduce_kernel<")) ||
             (p = after(dm, "void at::native::batch_norm_backward_elemt_kernel<"))) {
    /* <T, W, float, int|long> */
    int elemt = strstr(dm, "::batch_norm_backward_elemt_kernel<") != NULL;
    if ((e = simtw_dt_float_then(p, ", ", &k->p[5])) && (e = simtw_dt_float_then(e, ", float, ", &k->p[2])) && (k->p[2] == DT_F32 || k->p[2] == k->p[5])) {
      k->p[1] = strncmp(e, "int>(", 5) == 0 ? 4 : strncmp(e, "long>(", 6) == 0 ? 8 : 0;
      if (!elemt) {
        if (k->p[1]) k->run = run_bn_backward_reduce;
      } else if (k->p[1] && ends_with(dm, ", int const*, int)")) {
        k->p[3] = 1;
        k->run = run_bn_backward_elemt;
      } else if (k->p[1] == 4 && ends_with(dm, ", float)")) {
        k->run = run_bn_backward_elemt;
      }
    }
  } else if ((p = after(dm, "void at::native::batch_norm_collect_statistics_channels_last_kernel<at::native::"))) {
    /* <InvStd|Var, T, float, 4> */
    if (strncmp(p, "InvStd, ", 8) == 0) k->p[0] = 1, p += 8;
    else if (strncmp(p, "Var, ", 5) == 0) p += 5;
    else return 0;
    if (simtw_dt_float_then(p, ", float, 4>(", &k->p[5])) k->run = run_bn_collect_cl;
  } else if ((p = after(dm, "void at::native::batch_norm_transform_input_channels_last_kernel<"))) {
    /* <T, float, W, 4> */
    if ((e = simtw_dt_float_then(p, ", float, ", &k->p[5])) && simtw_dt_float_then(e, ", 4>(", &k->p[2]) && (k->p[2] == DT_F32 || k->p[2] == k->p[5]))
      k->run = run_bn_transform_cl;
  } else if ((p = after(dm, "void at::native::batch_norm_backward_reduce_channels_last_kernel<4, ")) ||
             (p = after(dm, "void at::native::batch_norm_backward_elemt_channels_last_kernel<4, "))) {
    /* <4, T, float, W> */
    int elemt = strstr(dm, "::batch_norm_backward_elemt_channels_last_kernel<") != NULL;
    if ((e = simtw_dt_float_then(p, ", float, ", &k->p[5])) && simtw_dt_float_then(e, ">(", &k->p[2]) && (k->p[2] == DT_F32 || k->p[2] == k->p[5])) {
      if (!elemt) {
        k->run = run_bn_backward_reduce_cl;
      } else if (ends_with(dm, ", long, int, int)")) {
        k->p[3] = 1;
        k->run = run_bn_backward_elemt_cl;
      } else if (ends_with(dm, ", float, int, int)")) {
        k->run = run_bn_backward_elemt_cl;
      }
    }
  }
  if (k->run) return 1;
  return gn_resolve(dm, k);
}
