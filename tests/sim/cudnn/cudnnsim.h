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
 * AddTensor(1, bias, 1) → ActivationForward(1, 0).
 */
#ifndef CUDNNSIM_H
#define CUDNNSIM_H

#ifdef __CUDACC__
#define CUDNNSIM_FN static __host__ __device__ __forceinline__
#else
#include <math.h>
#define CUDNNSIM_FN static inline
#endif

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

/* The convolution sum for output (n, k, p, q): the one accumulation both conv kernels use. */
CUDNNSIM_FN float cudnnsim_conv_acc(const cudnnsim_conv_t *p, const float *x, const float *f,
                                    int n, int k, int oh, int ow) {
  float acc = 0.0f;
  for (int c = 0; c < p->x.c; c++) {
    for (int r = 0; r < p->f.h; r++) {
      int ih = oh * p->stride_h - p->pad_h + r * p->dil_h;
      if (ih < 0 || ih >= p->x.h) continue;
      int fr = p->flip ? p->f.h - 1 - r : r;
      for (int s = 0; s < p->f.w; s++) {
        int iw = ow * p->stride_w - p->pad_w + s * p->dil_w;
        if (iw < 0 || iw >= p->x.w) continue;
        int fs = p->flip ? p->f.w - 1 - s : s;
        float prod = x[cudnnsim_off(&p->x, n, c, ih, iw)] * f[cudnnsim_off(&p->f, k, c, fr, fs)];
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

CUDNNSIM_FN void cudnnsim_conv_elem(const cudnnsim_conv_t *p, float alpha, float beta,
                                    const float *x, const float *f, float *y, long long i) {
  int n, k, oh, ow;
  cudnnsim_coords(&p->y, i, &n, &k, &oh, &ow);
  float *yp = y + cudnnsim_off(&p->y, n, k, oh, ow);
  *yp = cudnnsim_blend(cudnnsim_conv_acc(p, x, f, n, k, oh, ow), alpha, yp, beta);
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

#endif
