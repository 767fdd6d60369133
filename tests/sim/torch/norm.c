/* norm.c — CPU twins of PyTorch's batch norm kernels (Normalization.cuh) for inputs PyTorch views
 * as (batch, plane, feature): the statistics of training mode, the normalisation and the fused
 * backward, in float, c10::Half and c10::BFloat16 (the statistics float, the weight and bias the
 * input's type or float).
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
  }
  return k->run != NULL;
}
