/* conv.c — CPU twins of PyTorch's own depthwise convolution kernels (DepthwiseConv2d.cu: the
 * forward, the input gradient and the weight gradient), which PyTorch runs instead of cuDNN for
 * depthwise convolutions it does not hand to cuDNN; in float, c10::Half and c10::BFloat16.
 *
 * The tensors are contiguous NCHW (the kernels require it) and reached through
 * PackedTensorAccessor32 parameters ({T *data; int32 sizes[N]; int32 strides[N];}), of which the
 * kernels use only the data pointer. Each twin sums in the kernel's order, in float (acc_t), and
 * rounds once at the store; the weight gradient, a block reduction on the GPU, is summed here in
 * (batch, position) order: results equal the GPU's within float rounding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

#define ARG(type, i) (*(type *)args[i])

static float ldf(int dt, const void *base, int64_t i) {
  return (float)simtw_load((simtw_dt_t)dt, (const char *)base + (size_t)i * simtw_dt_size((simtw_dt_t)dt)).f;
}

static void stf(int dt, void *base, int64_t i, float v) {
  simtw_store((simtw_dt_t)dt, (char *)base + (size_t)i * simtw_dt_size((simtw_dt_t)dt), simtw_fval(v));
}

/* The data pointer of a PackedTensorAccessor32 parameter. */
static void *pta_data(void *arg) {
  void *p;
  memcpy(&p, arg, sizeof p);
  return p;
}

/* The geometry parameters the three kernels share, in their order: input width, height, output
 * width, height, kernel width, height, stride, padding and dilation (width, then height). */
typedef struct {
  int iw, ih, ow, oh, kw, kh, sw, sh, pw, ph, dw, dh;
} geom_t;

static geom_t geom_read(void **args, int first) {
  geom_t g;
  g.iw = ARG(int, first), g.ih = ARG(int, first + 1), g.ow = ARG(int, first + 2), g.oh = ARG(int, first + 3);
  g.kw = ARG(int, first + 4), g.kh = ARG(int, first + 5), g.sw = ARG(int, first + 6), g.sh = ARG(int, first + 7);
  g.pw = ARG(int, first + 8), g.ph = ARG(int, first + 9), g.dw = ARG(int, first + 10), g.dh = ARG(int, first + 11);
  return g;
}

/* conv_depthwise2d_forward_kernel<kSize, T, int>(input, output, weight, bias (1-d accessor),
 * bool biasEnabled, int totalElements, int outputChannels, int depthwiseMultiplier, geometry):
 * output (n, c, h, w) = bias[c] + sum over the kernel window (rows, then columns, kSize x kSize
 * when kSize is not 0) of weight[c] * input[n][c / multiplier] at
 * (h * stride - pad + kh * dilation, likewise w), positions outside the input skipped. */
static void run_dw_forward(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], ksize = k->p[0];
  const void *in = pta_data(args[0]), *w = pta_data(args[2]), *bias = pta_data(args[3]);
  void *out = pta_data(args[1]);
  int has_bias = ARG(unsigned char, 4) != 0;
  int total = ARG(int, 5), oc = ARG(int, 6), mult = ARG(int, 7);
  geom_t g = geom_read(args, 8);
  int kwl = ksize ? ksize : g.kw, khl = ksize ? ksize : g.kh;
  int ic = mult != 1 ? oc / mult : oc;
  for (int64_t li = 0; li < total; li++) {
    int64_t x = li % g.ow, y = li / g.ow % g.oh, c = li / g.ow / g.oh % oc, n = li / g.ow / g.oh / oc;
    int64_t ich = mult != 1 ? c / mult : c;
    int64_t woff = c * g.kh * g.kw;
    float v = has_bias ? ldf(dt, bias, c) : 0.0f;
    int64_t off0 = (n * ic + ich) * g.ih * g.iw;
    for (int a = 0; a < khl; a++)
      for (int b = 0; b < kwl; b++) {
        int64_t hi = -g.ph + y * g.sh + a * g.dh, wi = -g.pw + x * g.sw + b * g.dw;
        if (hi >= 0 && hi < g.ih && wi >= 0 && wi < g.iw) v += ldf(dt, w, woff) * ldf(dt, in, off0 + hi * g.iw + wi);
        woff++;
      }
    stf(dt, out, li, v);
  }
}

/* conv_depthwise2d_backward_kernel<kSize, stride, T, int>(grad_output, grad_input, weight,
 * int totalElements, int inputChannels, int depthwiseMultiplier, int outputChannels, geometry):
 * grad_input (n, c, h, w) = sum over the multiplier's output channels och = c * multiplier + m
 * and the kernel window of weight[och] * grad_output at ((h + pad - kh * dilation) / stride,
 * likewise w) where that divides exactly and lies inside the output; stride from the template
 * when not 0. */
static void run_dw_backward(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], ksize = k->p[0], tstride = k->p[1];
  const void *go = pta_data(args[0]), *w = pta_data(args[2]);
  void *gi = pta_data(args[1]);
  int total = ARG(int, 3), ic = ARG(int, 4), mult = ARG(int, 5), oc = ARG(int, 6);
  geom_t g = geom_read(args, 7);
  int kwl = ksize ? ksize : g.kw, khl = ksize ? ksize : g.kh;
  int sw = tstride ? tstride : g.sw, sh = tstride ? tstride : g.sh;
  if (sw < 1 || sh < 1) return; /* PyTorch rejects such strides before it launches */
  for (int64_t li = 0; li < total; li++) {
    int64_t x = li % g.iw, y = li / g.iw % g.ih, c = li / g.iw / g.ih % ic, n = li / g.iw / g.ih / ic;
    float v = 0.0f;
    for (int m = 0; m < mult; m++) {
      int64_t och = c * mult + m, woff = och * g.kh * g.kw;
      for (int a = 0; a < khl; a++)
        for (int b = 0; b < kwl; b++) {
          /* C's % and / truncate toward zero, as CUDA's int operators do */
          int ho = (int)y + g.ph - a * g.dh, wo = (int)x + g.pw - b * g.dw;
          if (ho % sh == 0 && wo % sw == 0) {
            ho /= sh;
            wo /= sw;
            if (ho >= 0 && ho < g.oh && wo >= 0 && wo < g.ow)
              v += ldf(dt, w, woff) * ldf(dt, go, ((n * oc + och) * g.oh + ho) * g.ow + wo);
          }
          woff++;
        }
    }
    stf(dt, gi, li, v);
  }
}

/* conv_depthwise2d_grad_weight_kernel<T, unsigned int>(grad_output, input, grad_weight,
 * int batchSize, int inputChannels, int kernelChannels, int depthwiseMultiplier, geometry): one
 * block per weight element (ch, kh, kw) (grid.x of them): the sum over batches and output
 * positions of input[b][ch / multiplier] at (oh * stride + kh * dilation - pad, likewise w),
 * inside the input, times grad_output[b][ch] at (oh, ow). */
static void run_dw_grad_weight(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5];
  const void *go = pta_data(args[0]), *in = pta_data(args[1]);
  void *gw = pta_data(args[2]);
  int nb = ARG(int, 3), ic = ARG(int, 4), kc = ARG(int, 5), mult = ARG(int, 6);
  geom_t g = geom_read(args, 7);
  for (int64_t bidx = 0; bidx < (int64_t)grid.x; bidx++) {
    int b_kw = (int)(bidx % g.kw), b_kh = (int)(bidx / g.kw % g.kh), ch = (int)(bidx / (g.kw * g.kh));
    int ich = ch / mult;
    float s = 0.0f;
    for (int b = 0; b < nb; b++)
      for (int64_t idx = 0; idx < (int64_t)g.ow * g.oh; idx++) {
        int ow = (int)(idx % g.ow), oh = (int)(idx / g.ow);
        int wi = ow * g.sw + b_kw * g.dw - g.pw, hi = oh * g.sh + b_kh * g.dh - g.ph;
        if (wi >= 0 && hi >= 0 && wi < g.iw && hi < g.ih)
          s += ldf(dt, in, (((int64_t)b * ic + ich) * g.ih + hi) * g.iw + wi) *
               ldf(dt, go, (((int64_t)b * kc + ch) * g.oh) * g.ow + idx);
      }
    stf(dt, gw, b_kw + (int64_t)g.kw * b_kh + (int64_t)g.kw * g.kh * ch, s);
  }
}

/* The element type at s (float, c10::Half, c10::BFloat16) into p[5], then `rest`. */
static int dw_type(const char *s, const char *rest, simtw_nn_t *k) {
  const char *e;
  simtw_dt_t dt = simtw_dt_parse(s, &e);
  if (dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) return 0;
  k->p[5] = dt;
  return strncmp(e, rest, strlen(rest)) == 0;
}

int simtw_conv_resolve(const char *dm, simtw_nn_t *k) {
  const char *p;
  memset(k, 0, sizeof *k);
  if (strncmp(dm, "void at::native::", 17) != 0) return 0;
  if ((p = strstr(dm, "::conv_depthwise2d_forward_kernel<"))) {
    /* <kSize, T, int> */
    p += strlen("::conv_depthwise2d_forward_kernel<");
    const char *c = strchr(p, ',');
    k->p[0] = atoi(p);
    if (c && (k->p[0] == 0 || k->p[0] == 1 || k->p[0] == 3 || k->p[0] == 5) && dw_type(c + 2, ", int>(", k)) k->run = run_dw_forward;
  } else if ((p = strstr(dm, "::conv_depthwise2d_backward_kernel<"))) {
    /* <kSize, stride, T, int> */
    p += strlen("::conv_depthwise2d_backward_kernel<");
    const char *c1 = strchr(p, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (c2) {
      k->p[0] = atoi(p);
      k->p[1] = atoi(c1 + 1);
      if (k->p[0] >= 0 && k->p[1] >= 0 && dw_type(c2 + 2, ", int>(", k)) k->run = run_dw_backward;
    }
  } else if ((p = strstr(dm, "::conv_depthwise2d_grad_weight_kernel<"))) {
    if (dw_type(p + strlen("::conv_depthwise2d_grad_weight_kernel<"), ", unsigned int>(", k)) k->run = run_dw_grad_weight;
  }
  return k->run != NULL;
}
