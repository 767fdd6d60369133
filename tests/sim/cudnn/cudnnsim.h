/* cudnnsim.h — the simulated cuDNN's kernels: launch arguments and the arithmetic they share.
 *
 * Included by the device code (kernels.cu, compiled by nvcc into the fatbin embedded in
 * libcudnn.so.9) and by the CPU twins (twins.c, plain C run by the simulated driver), so both
 * compute every element with the same functions below. Everything a kernel needs travels in its
 * launch arguments: a few structs of dimensions and strides passed by value, float scaling
 * factors, and device pointers. A launch is therefore self-contained and can be recorded,
 * replayed or put in a graph like any other.
 *
 * Every kernel is 1-D: one thread per output element, in NCHW order of the output's dimensions
 * (element i = ((n * C + c) * H + h) * W + w); memory is addressed through the strides.
 *
 * Exact arithmetic (the bit-exactness contract, see tests/sim/README.md "cuDNN"):
 *   conv  acc = 0.0f; for c, r, s in that order, skipping taps in the padding:
 *             acc = acc + x[n,c,ih,iw] * w[k,c,r',s']   (a product then a sum, never fused)
 *   blend(a, alpha, c, beta) = (alpha == 1 ? a : alpha * a) + (beta == 1 ? c : beta * c),
 *         and just the first term when beta == 0 (c is then not read)
 *   ConvolutionForward        y = blend(acc, alpha, y, beta)
 *   AddTensor                 C = blend(A, alpha, C, beta)
 *   ActivationForward         y = blend(act(x), alpha, y, beta)
 *   ConvolutionBiasActivation v = (alpha1 == 1 ? acc : alpha1 * acc);
 *                             if alpha2 != 0: v = blend(z, alpha2, v, 1);
 *                             v = blend(bias, 1, v, 1); y = act(v)
 * so the fused call gives the same bits as conv(alpha1, 0) → AddTensor(alpha2, z, 1) →
 * AddTensor(1, bias, 1) → ActivationForward(1, 0). The backward convolutions and batch
 * normalization fix their orders of summation in the comments of their functions below; the
 * training forward and the backward of batch norm run one thread per channel, which sums its
 * elements alone, so no result depends on how threads are scheduled.
 */
#ifndef CUDNNSIM_H
#define CUDNNSIM_H

#ifdef __CUDACC__
#define CUDNNSIM_FN static __host__ __device__ __forceinline__
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
#define CUDNNSIM_FN static inline
#endif

#include "../common/halfconv.h"

/* Element types of the backend API's convolutions (the legacy API's are float). */
enum { CUDNNSIM_F32 = 0, CUDNNSIM_F16 = 1, CUDNNSIM_BF16 = 2 };

/* Stores one output element. On the CPU, as a relaxed atomic 32-bit store: a device's store to
 * mapped host memory is one untorn 32-bit write a host may watch while the kernel runs (a host
 * polling the output with atomic loads, as a program waiting on mapped memory does), and a plain
 * C store racing with those loads would be undefined (ThreadSanitizer reports it). A relaxed
 * store compiles to the same instruction as a plain one. */
CUDNNSIM_FN void cudnnsim_store(float *p, float v) {
#if defined(__CUDACC__)
  *p = v;
#else
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  __atomic_store_n((uint32_t *)(void *)p, bits, __ATOMIC_RELAXED);
#endif
}

/* The 16-bit store of a half-precision output element, as cudnnsim_store's 32-bit one. */
CUDNNSIM_FN void cudnnsim_store16(unsigned short *p, unsigned short v) {
#if defined(__CUDACC__)
  *p = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/* Stores v as element off of p, of type dt, rounded to nearest even for the half types. */
CUDNNSIM_FN void cudnnsim_st(void *p, int dt, long long off, float v) {
  if (dt == CUDNNSIM_F16) cudnnsim_store16((unsigned short *)p + off, simh_float_to_half(v));
  else if (dt == CUDNNSIM_BF16) cudnnsim_store16((unsigned short *)p + off, simh_float_to_bf16(v));
  else cudnnsim_store((float *)p + off, v);
}

/* Element off of p, of type dt (CUDNNSIM_F32, _F16 or _BF16), widened to float (exactly). */
CUDNNSIM_FN float cudnnsim_ld(const void *p, int dt, long long off) {
  if (dt == CUDNNSIM_F16) return simh_half_to_float(((const unsigned short *)p)[off]);
  if (dt == CUDNNSIM_BF16) return simh_bf16_to_float(((const unsigned short *)p)[off]);
  return ((const float *)p)[off];
}

/* A 4-d tensor: dimensions and element strides. A stride of 0 broadcasts that dimension. */
typedef struct cudnnsim_t4 {
  int n, c, h, w;
  long long sn, sc, sh, sw;
} cudnnsim_t4_t;

/* A 2-d convolution: input x (N,C,H,W), filter f (K,C,R,S), output y (N,K,P,Q). */
typedef struct cudnnsim_conv {
  cudnnsim_t4_t x, f, y;
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  int flip; /* CUDNN_CONVOLUTION (true convolution) flips the filter; cross-correlation does not */
  int groups; /* C = groups * f.c input channels, K = groups * (K / groups) filters; 1 legacy */
  int dtype;  /* CUDNNSIM_F32 (the legacy API's only type), CUDNNSIM_F16 or CUDNNSIM_BF16: the
               * element type of x, f and y, which compute in float all the same */
} cudnnsim_conv_t;


/* An activation: mode is a cudnnActivationMode_t, coef the clipping ceiling or ELU's alpha. */
typedef struct cudnnsim_act {
  int mode;
  int propagate_nan;
  float coef;
} cudnnsim_act_t;

/* cudnnActivationMode_t values, repeated so that the device code needs no cuDNN header. */
enum {
  CUDNNSIM_SIGMOID = 0,
  CUDNNSIM_RELU = 1,
  CUDNNSIM_TANH = 2,
  CUDNNSIM_CLIPPED_RELU = 3,
  CUDNNSIM_ELU = 4,
  CUDNNSIM_IDENTITY = 5,
};

/* Kernel names (device names; the CPU twins are sim_<name>). */
#define CUDNNSIM_K_CONV "cudnnsim_conv2d_fwd"
#define CUDNNSIM_K_ADD "cudnnsim_add_tensor"
#define CUDNNSIM_K_ACT "cudnnsim_act_fwd"
#define CUDNNSIM_K_CBA "cudnnsim_conv_bias_act_fwd"
#define CUDNNSIM_K_CONV_BWD_DATA "cudnnsim_conv2d_bwd_data"
#define CUDNNSIM_K_CONV_BWD_FILTER "cudnnsim_conv2d_bwd_filter"
#define CUDNNSIM_K_BN_TRAIN "cudnnsim_bn_fwd_train"
#define CUDNNSIM_K_BN_INFER "cudnnsim_bn_fwd_infer"
#define CUDNNSIM_K_BN_BWD "cudnnsim_bn_bwd"

/* Threads per block of every launch. */
#define CUDNNSIM_BLOCK 256

CUDNNSIM_FN long long cudnnsim_count(const cudnnsim_t4_t *t) {
  return (long long)t->n * t->c * t->h * t->w;
}

/* Splits element index i of t (NCHW order) into its coordinates. */
CUDNNSIM_FN void cudnnsim_coords(const cudnnsim_t4_t *t, long long i, int *n, int *c, int *h,
                                 int *w) {
  *w = (int)(i % t->w);
  i /= t->w;
  *h = (int)(i % t->h);
  i /= t->h;
  *c = (int)(i % t->c);
  *n = (int)(i / t->c);
}

CUDNNSIM_FN long long cudnnsim_off(const cudnnsim_t4_t *t, int n, int c, int h, int w) {
  return n * t->sn + c * t->sc + h * t->sh + w * t->sw;
}

/* The convolution sum for output (n, k, p, q): the one accumulation both conv kernels use. Filter
 * k of group g = k / (K / groups) sees input channels g * f.c ... g * f.c + f.c - 1. */
CUDNNSIM_FN float cudnnsim_conv_acc(const cudnnsim_conv_t *p, const void *x, const void *f,
                                    int n, int k, int oh, int ow) {
  float acc = 0.0f;
  int cbase = (k / (p->f.n / p->groups)) * p->f.c;
  for (int c = 0; c < p->f.c; c++) {
    for (int r = 0; r < p->f.h; r++) {
      int ih = oh * p->stride_h - p->pad_h + r * p->dil_h;
      if (ih < 0 || ih >= p->x.h) continue;
      int fr = p->flip ? p->f.h - 1 - r : r;
      for (int s = 0; s < p->f.w; s++) {
        int iw = ow * p->stride_w - p->pad_w + s * p->dil_w;
        if (iw < 0 || iw >= p->x.w) continue;
        int fs = p->flip ? p->f.w - 1 - s : s;
        float prod = cudnnsim_ld(x, p->dtype, cudnnsim_off(&p->x, n, cbase + c, ih, iw)) *
                     cudnnsim_ld(f, p->dtype, cudnnsim_off(&p->f, k, c, fr, fs));
        acc = acc + prod;
      }
    }
  }
  return acc;
}

/* alpha * a + beta * *c as cuDNN blends results: multiplications by 1 are skipped (so default
 * factors add no operation, which keeps infinities and NaNs as they are), and *c is not read
 * when beta is 0, as cuDNN documents. */
CUDNNSIM_FN float cudnnsim_blend(float a, float alpha, const float *c, float beta) {
  if (alpha != 1.0f) a = alpha * a;
  if (beta == 0.0f) return a;
  float o = *c;
  if (beta != 1.0f) o = beta * o;
  return a + o;
}

CUDNNSIM_FN float cudnnsim_act_apply(const cudnnsim_act_t *a, float v) {
  switch (a->mode) {
  case CUDNNSIM_SIGMOID:
    return 1.0f / (1.0f + expf(-v));
  case CUDNNSIM_RELU:
    if (v != v) return a->propagate_nan ? v : 0.0f;
    return v > 0.0f ? v : 0.0f;
  case CUDNNSIM_TANH:
    return tanhf(v);
  case CUDNNSIM_CLIPPED_RELU:
    if (v != v) return a->propagate_nan ? v : 0.0f;
    return v > 0.0f ? (v < a->coef ? v : a->coef) : 0.0f;
  case CUDNNSIM_ELU:
    return v > 0.0f ? v : a->coef * (expf(v) - 1.0f);
  default: /* CUDNNSIM_IDENTITY; the host rejects every other mode before launching */
    return v;
  }
}

/* ---- One output element of each kernel; thread i of the launch computes element i. ---- */

/* The previous value of output element off (of p's type), read only when beta is not 0. */
CUDNNSIM_FN float cudnnsim_old(const cudnnsim_conv_t *p, const void *y, long long off, float beta) {
  return beta == 0.0f ? 0.0f : cudnnsim_ld(y, p->dtype, off);
}

CUDNNSIM_FN void cudnnsim_conv_elem(const cudnnsim_conv_t *p, float alpha, float beta,
                                    const void *x, const void *f, void *y, long long i) {
  int n, k, oh, ow;
  cudnnsim_coords(&p->y, i, &n, &k, &oh, &ow);
  long long yo = cudnnsim_off(&p->y, n, k, oh, ow);
  float old = cudnnsim_old(p, y, yo, beta);
  cudnnsim_st(y, p->dtype, yo, cudnnsim_blend(cudnnsim_conv_acc(p, x, f, n, k, oh, ow), alpha, &old, beta));
}

CUDNNSIM_FN void cudnnsim_add_elem(const cudnnsim_t4_t *a, const cudnnsim_t4_t *c, float alpha,
                                   float beta, const float *A, float *C, long long i) {
  int n, ch, h, w;
  cudnnsim_coords(c, i, &n, &ch, &h, &w);
  float *cp = C + cudnnsim_off(c, n, ch, h, w);
  *cp = cudnnsim_blend(A[cudnnsim_off(a, n, ch, h, w)], alpha, cp, beta);
}

CUDNNSIM_FN void cudnnsim_act_elem(const cudnnsim_t4_t *xd, const cudnnsim_t4_t *yd,
                                   const cudnnsim_act_t *act, float alpha, float beta,
                                   const float *x, float *y, long long i) {
  int n, c, h, w;
  cudnnsim_coords(yd, i, &n, &c, &h, &w);
  float *yp = y + cudnnsim_off(yd, n, c, h, w);
  float v = cudnnsim_act_apply(act, x[cudnnsim_off(xd, n, c, h, w)]);
  *yp = cudnnsim_blend(v, alpha, yp, beta);
}

CUDNNSIM_FN void cudnnsim_cba_elem(const cudnnsim_conv_t *p, const cudnnsim_t4_t *zd,
                                   const cudnnsim_t4_t *bd, const cudnnsim_act_t *act,
                                   float alpha1, float alpha2, const float *x, const float *f,
                                   const float *z, const float *bias, float *y, long long i) {
  int n, k, oh, ow;
  cudnnsim_coords(&p->y, i, &n, &k, &oh, &ow);
  float v = cudnnsim_conv_acc(p, x, f, n, k, oh, ow);
  if (alpha1 != 1.0f) v = alpha1 * v;
  if (alpha2 != 0.0f) v = cudnnsim_blend(z[cudnnsim_off(zd, n, k, oh, ow)], alpha2, &v, 1.0f);
  v = cudnnsim_blend(bias[cudnnsim_off(bd, n, k, oh, ow)], 1.0f, &v, 1.0f);
  y[cudnnsim_off(&p->y, n, k, oh, ow)] = cudnnsim_act_apply(act, v);
}

/* ---- Convolution backward (the backend API's BACKWARD_DATA and BACKWARD_FILTER operations) ---- */

/* Element i (NCHW order of x) of the data gradient: the taps (k, r, s) of the forward sum that
 * read x[n,c,h,w], k of c's group then r then s ascending, each dy[n,k,oh,ow] * w[k,c',r',s']
 * added in turn (oh, ow the output whose window puts tap r, s on h, w; taps with no such output
 * are skipped); dx = blend(acc, alpha, dx, beta). */
CUDNNSIM_FN void cudnnsim_conv_bwd_data_elem(const cudnnsim_conv_t *p, float alpha, float beta,
                                             const void *dy, const void *f, void *dx,
                                             long long i) {
  int n, c, h, w;
  cudnnsim_coords(&p->x, i, &n, &c, &h, &w);
  int kpg = p->f.n / p->groups, g = c / p->f.c, cf = c - g * p->f.c;
  float acc = 0.0f;
  for (int k = g * kpg; k < (g + 1) * kpg; k++) {
    for (int r = 0; r < p->f.h; r++) {
      int th = h + p->pad_h - r * p->dil_h;
      if (th < 0 || th % p->stride_h != 0) continue;
      int oh = th / p->stride_h;
      if (oh >= p->y.h) continue;
      int fr = p->flip ? p->f.h - 1 - r : r;
      for (int s = 0; s < p->f.w; s++) {
        int tw = w + p->pad_w - s * p->dil_w;
        if (tw < 0 || tw % p->stride_w != 0) continue;
        int ow = tw / p->stride_w;
        if (ow >= p->y.w) continue;
        int fs = p->flip ? p->f.w - 1 - s : s;
        float prod = cudnnsim_ld(dy, p->dtype, cudnnsim_off(&p->y, n, k, oh, ow)) *
                     cudnnsim_ld(f, p->dtype, cudnnsim_off(&p->f, k, cf, fr, fs));
        acc = acc + prod;
      }
    }
  }
  long long xo = cudnnsim_off(&p->x, n, c, h, w);
  float old = cudnnsim_old(p, dx, xo, beta);
  cudnnsim_st(dx, p->dtype, xo, cudnnsim_blend(acc, alpha, &old, beta));
}

/* Element i (KCRS order of the filter) of the filter gradient: over n, then oh, then ow
 * ascending, the outputs whose window puts tap (r, s) inside the image, each
 * dy[n,k,oh,ow] * x[n,c,ih,iw] added in turn; dw = blend(acc, alpha, dw, beta). With
 * CUDNN_CONVOLUTION the element is the flipped tap's. */
CUDNNSIM_FN void cudnnsim_conv_bwd_filter_elem(const cudnnsim_conv_t *p, float alpha, float beta,
                                               const void *x, const void *dy, void *dw,
                                               long long i) {
  int k, c, fr, fs;
  cudnnsim_coords(&p->f, i, &k, &c, &fr, &fs);
  int r = p->flip ? p->f.h - 1 - fr : fr, s = p->flip ? p->f.w - 1 - fs : fs;
  int cx = (k / (p->f.n / p->groups)) * p->f.c + c;
  float acc = 0.0f;
  for (int n = 0; n < p->x.n; n++) {
    for (int oh = 0; oh < p->y.h; oh++) {
      int ih = oh * p->stride_h - p->pad_h + r * p->dil_h;
      if (ih < 0 || ih >= p->x.h) continue;
      for (int ow = 0; ow < p->y.w; ow++) {
        int iw = ow * p->stride_w - p->pad_w + s * p->dil_w;
        if (iw < 0 || iw >= p->x.w) continue;
        float prod = cudnnsim_ld(dy, p->dtype, cudnnsim_off(&p->y, n, k, oh, ow)) *
                     cudnnsim_ld(x, p->dtype, cudnnsim_off(&p->x, n, cx, ih, iw));
        acc = acc + prod;
      }
    }
  }
  long long fo = cudnnsim_off(&p->f, k, c, fr, fs);
  float old = cudnnsim_old(p, dw, fo, beta);
  cudnnsim_st(dw, p->dtype, fo, cudnnsim_blend(acc, alpha, &old, beta));
}

/* ---- Batch normalization ---- */

/* A batch normalization: x and y (N,C,H,W), the parameter tensor (1,C,1,1 in SPATIAL modes,
 * 1,C,H,W per activation). Statistics group j (thread j) is channel j in the spatial modes (its
 * elements n, h, w in that order) and element (c, h, w) = j of one image per activation (its
 * elements n). */
typedef struct cudnnsim_bn {
  cudnnsim_t4_t x, y, d2; /* d2: dy (backward) */
  cudnnsim_t4_t prm;      /* scale, bias, means and variances: one element per group */
  int per_act;
  float eps;
} cudnnsim_bn_t;

CUDNNSIM_FN long long cudnnsim_bn_groups(const cudnnsim_bn_t *b) {
  return b->per_act ? (long long)b->x.c * b->x.h * b->x.w : b->x.c;
}

CUDNNSIM_FN long long cudnnsim_bn_count(const cudnnsim_bn_t *b) {
  return b->per_act ? b->x.n : (long long)b->x.n * b->x.h * b->x.w;
}

/* Element e of group j: its coordinates in x's dimensions. */
CUDNNSIM_FN void cudnnsim_bn_at(const cudnnsim_bn_t *b, long long j, long long e, int *n, int *c,
                                int *h, int *w) {
  if (b->per_act) {
    *n = (int)e;
    *w = (int)(j % b->x.w);
    j /= b->x.w;
    *h = (int)(j % b->x.h);
    *c = (int)(j / b->x.h);
  } else {
    *c = (int)j;
    *w = (int)(e % b->x.w);
    e /= b->x.w;
    *h = (int)(e % b->x.h);
    *n = (int)(e / b->x.h);
  }
}

/* The parameter offset of group j. */
CUDNNSIM_FN long long cudnnsim_bn_poff(const cudnnsim_bn_t *b, long long j) {
  int n, c, h, w;
  cudnnsim_bn_at(b, j, 0, &n, &c, &h, &w);
  return b->per_act ? cudnnsim_off(&b->prm, 0, c, h, w) : cudnnsim_off(&b->prm, 0, c, 0, 0);
}

/* y = ((x - mean) * invstd) * scale + bias, blended into y. */
CUDNNSIM_FN float cudnnsim_bn_norm(float x, float mean, float invstd, float scale, float bias) {
  float v = (x - mean) * invstd;
  v = v * scale;
  return v + bias;
}

/* Training forward of group j: sum of x in element order, mean = sum / M; sum of (x - mean)^2
 * in element order, var = sum / M (biased); invstd = 1 / sqrtf(var + eps); y as
 * cudnnsim_bn_norm, blended; running mean and variance (when given) become
 * (1 - f) * old + f * new, the variance's new value unbiased (sum / (M - 1)); saved mean and
 * invstd (when given) stored. */
CUDNNSIM_FN void cudnnsim_bn_fwd_train_group(const cudnnsim_bn_t *b, float alpha, float beta,
                                             const float *x, float *y, const float *scale,
                                             const float *bias, float factor, float *rmean,
                                             float *rvar, float *smean, float *sinv, long long j) {
  long long m = cudnnsim_bn_count(b), po = cudnnsim_bn_poff(b, j);
  int n, c, h, w;
  float sum = 0.0f;
  for (long long e = 0; e < m; e++) {
    cudnnsim_bn_at(b, j, e, &n, &c, &h, &w);
    sum = sum + x[cudnnsim_off(&b->x, n, c, h, w)];
  }
  float mean = sum / (float)m, sq = 0.0f;
  for (long long e = 0; e < m; e++) {
    cudnnsim_bn_at(b, j, e, &n, &c, &h, &w);
    float d = x[cudnnsim_off(&b->x, n, c, h, w)] - mean;
    float d2 = d * d;
    sq = sq + d2;
  }
  float var = sq / (float)m, invstd = 1.0f / sqrtf(var + b->eps);
  float sc = scale[po], bi = bias[po];
  for (long long e = 0; e < m; e++) {
    cudnnsim_bn_at(b, j, e, &n, &c, &h, &w);
    float *yp = y + cudnnsim_off(&b->y, n, c, h, w);
    float v = cudnnsim_bn_norm(x[cudnnsim_off(&b->x, n, c, h, w)], mean, invstd, sc, bi);
    *yp = cudnnsim_blend(v, alpha, yp, beta);
  }
  if (rmean) {
    float keep = 1.0f - factor, a = keep * rmean[po], bn = factor * mean;
    rmean[po] = a + bn;
  }
  if (rvar) {
    float unbiased = sq / (float)(m - 1);
    float keep = 1.0f - factor, a = keep * rvar[po], bn = factor * unbiased;
    rvar[po] = a + bn;
  }
  if (smean) smean[po] = mean;
  if (sinv) sinv[po] = invstd;
}

/* Inference forward of element i (NCHW order of y): invstd = 1 / sqrtf(var + eps), y as
 * cudnnsim_bn_norm with the estimated mean, blended. */
CUDNNSIM_FN void cudnnsim_bn_fwd_infer_elem(const cudnnsim_bn_t *b, float alpha, float beta,
                                            const float *x, float *y, const float *scale,
                                            const float *bias, const float *emean,
                                            const float *evar, long long i) {
  int n, c, h, w;
  cudnnsim_coords(&b->y, i, &n, &c, &h, &w);
  long long po = b->per_act ? cudnnsim_off(&b->prm, 0, c, h, w) : cudnnsim_off(&b->prm, 0, c, 0, 0);
  float invstd = 1.0f / sqrtf(evar[po] + b->eps);
  float *yp = y + cudnnsim_off(&b->y, n, c, h, w);
  float v = cudnnsim_bn_norm(x[cudnnsim_off(&b->x, n, c, h, w)], emean[po], invstd, scale[po], bias[po]);
  *yp = cudnnsim_blend(v, alpha, yp, beta);
}

/* Backward of group j, from the saved mean and invstd (recomputed as the forward does when
 * either is NULL): xhat = (x - mean) * invstd; dbias = sum dy, dscale = sum dy * xhat (element
 * order); dx = (scale * invstd) * ((dy - dbias / M) - xhat * (dscale / M)), blended with the data
 * factors; dscale and dbias blended with the parameter factors. */
CUDNNSIM_FN void cudnnsim_bn_bwd_group(const cudnnsim_bn_t *b, float alpha_d, float beta_d,
                                       float alpha_p, float beta_p, const float *x,
                                       const float *dy, float *dx, const float *scale,
                                       float *dscale, float *dbias, const float *smean,
                                       const float *sinv, long long j) {
  long long m = cudnnsim_bn_count(b), po = cudnnsim_bn_poff(b, j);
  int n, c, h, w;
  float mean, invstd;
  if (smean && sinv) {
    mean = smean[po];
    invstd = sinv[po];
  } else {
    float sum = 0.0f, sq = 0.0f;
    for (long long e = 0; e < m; e++) {
      cudnnsim_bn_at(b, j, e, &n, &c, &h, &w);
      sum = sum + x[cudnnsim_off(&b->x, n, c, h, w)];
    }
    mean = sum / (float)m;
    for (long long e = 0; e < m; e++) {
      cudnnsim_bn_at(b, j, e, &n, &c, &h, &w);
      float d = x[cudnnsim_off(&b->x, n, c, h, w)] - mean;
      float d2 = d * d;
      sq = sq + d2;
    }
    invstd = 1.0f / sqrtf(sq / (float)m + b->eps);
  }
  float sdy = 0.0f, sdyx = 0.0f;
  for (long long e = 0; e < m; e++) {
    cudnnsim_bn_at(b, j, e, &n, &c, &h, &w);
    float g = dy[cudnnsim_off(&b->d2, n, c, h, w)];
    float xh = (x[cudnnsim_off(&b->x, n, c, h, w)] - mean) * invstd;
    float gx = g * xh;
    sdy = sdy + g;
    sdyx = sdyx + gx;
  }
  float k = scale[po] * invstd, mdy = sdy / (float)m, mdyx = sdyx / (float)m;
  for (long long e = 0; e < m; e++) {
    cudnnsim_bn_at(b, j, e, &n, &c, &h, &w);
    float xh = (x[cudnnsim_off(&b->x, n, c, h, w)] - mean) * invstd;
    float t = dy[cudnnsim_off(&b->d2, n, c, h, w)] - mdy, u = xh * mdyx;
    float v = k * (t - u);
    float *dp = dx + cudnnsim_off(&b->y, n, c, h, w);
    *dp = cudnnsim_blend(v, alpha_d, dp, beta_d);
  }
  dscale[po] = cudnnsim_blend(sdyx, alpha_p, &dscale[po], beta_p);
  dbias[po] = cudnnsim_blend(sdy, alpha_p, &dbias[po], beta_p);
}

#endif
