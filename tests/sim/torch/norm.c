/* norm.c — CPU twins of PyTorch's batch norm kernels (Normalization.cuh): for inputs PyTorch views
 * as (batch, plane, feature) the statistics, the normalisation, the fused backward and the split
 * one (reduce, then elementwise); for channels-last inputs (2-d ones among them) the statistics,
 * the normalisation and the split backward. In float, c10::Half and c10::BFloat16 (the
 * statistics float, the weight and bias the input's type or float).
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

/* ---- resolution ---- */

/* A floating type (float, c10::Half, c10::BFloat16) at s into *dt, followed by `rest`; the
 * position after them or NULL. */
static const char *ftype(const char *s, const char *rest, int *dt) {
  const char *e;
  if (!s) return NULL;
  simtw_dt_t t = simtw_dt_parse(s, &e);
  if (t != DT_F32 && t != DT_F16 && t != DT_BF16) return NULL;
  *dt = t;
  return strncmp(e, rest, strlen(rest)) == 0 ? e + strlen(rest) : NULL;
}

/* Whether s ends with suffix. */
static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *after(const char *dm, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(dm, prefix, n) == 0 ? dm + n : NULL;
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
    if ((e = ftype(p, ", ", &k->p[5])) && (e = ftype(e, ", float, ", &w)) && w == k->p[5]) {
      k->p[1] = strncmp(e, "int>(", 5) == 0 ? 4 : strncmp(e, "long>(", 6) == 0 ? 8 : 0;
      if (k->p[1]) k->run = run_bn_collect;
    }
  } else if ((p = after(dm, "void at::native::batch_norm_transform_input_kernel<"))) {
    if ((e = ftype(p, ", ", &k->p[5])) && (e = ftype(e, ", float, true, int>(", &k->p[2])) &&
        (k->p[2] == DT_F32 || k->p[2] == k->p[5]))
      k->run = run_bn_transform;
  } else if ((p = after(dm, "void at::native::batch_norm_backward_kernel<"))) {
    if ((e = ftype(p, ", ", &k->p[5])) && (e = ftype(e, ", float, int>(", &k->p[2])) &&
        (k->p[2] == DT_F32 || k->p[2] == k->p[5]))
      k->run = run_bn_backward;
  } else if ((p = after(dm, "void at::native::batch_norm_backward_reduce_kernel<")) ||
             (p = after(dm, "void at::native::batch_norm_backward_elemt_kernel<"))) {
    /* <T, W, float, int|long> */
    int elemt = strstr(dm, "::batch_norm_backward_elemt_kernel<") != NULL;
    if ((e = ftype(p, ", ", &k->p[5])) && (e = ftype(e, ", float, ", &k->p[2])) && (k->p[2] == DT_F32 || k->p[2] == k->p[5])) {
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
    if (ftype(p, ", float, 4>(", &k->p[5])) k->run = run_bn_collect_cl;
  } else if ((p = after(dm, "void at::native::batch_norm_transform_input_channels_last_kernel<"))) {
    /* <T, float, W, 4> */
    if ((e = ftype(p, ", float, ", &k->p[5])) && ftype(e, ", 4>(", &k->p[2]) && (k->p[2] == DT_F32 || k->p[2] == k->p[5]))
      k->run = run_bn_transform_cl;
  } else if ((p = after(dm, "void at::native::batch_norm_backward_reduce_channels_last_kernel<4, ")) ||
             (p = after(dm, "void at::native::batch_norm_backward_elemt_channels_last_kernel<4, "))) {
    /* <4, T, float, W> */
    int elemt = strstr(dm, "::batch_norm_backward_elemt_channels_last_kernel<") != NULL;
    if ((e = ftype(p, ", float, ", &k->p[5])) && ftype(e, ">(", &k->p[2]) && (k->p[2] == DT_F32 || k->p[2] == k->p[5])) {
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
  return k->run != NULL;
}
