/* pool.c — CPU twins of PyTorch's 2-D pooling kernels: max pooling with indices
 * (DilatedMaxPool2d.cu: forward and backward, NCHW and channels-last) and average pooling
 * (AveragePool2d.cu: forward and backward, NCHW and channels-last) and adaptive average pooling
 * (AdaptiveAveragePooling.cu: forward and backward, NCHW), in float, c10::Half and c10::BFloat16 (the element type in p[5]; the accumulate type float: windows are compared and
 * summed in float, results rounded to the element type at the store).
 *
 * Each twin computes its kernel's contract from the kernel's own parameters (their order and
 * types as the wheel's demangled names declare them, their meaning as PyTorch's sources give
 * it), over the whole grid in one call, windows scanned and sums taken in the kernel's order: a
 * maximum and its index equal the GPU's exactly, sums within float rounding.
 *
 * Geometry shared by all: an output position (oh, ow) covers the input rows
 * oh * stride_h - pad_h + i * dilation_h, i < kernel_h, clipped to the input (and the columns
 * likewise). The index a max pooling records is h * width + w within its (n, c) plane; the
 * backward adds an output's gradient to the input position whose index it recorded.
 *
 * The kernels of resample.c (padding, upsampling, softmax over a non-last dimension) are resolved
 * through simtw_pool_resolve.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "twins.h"

#define ARG(type, i) (*(type *)args[i])

/* A parameter declared index_t (int or int64_t as the instantiation says: size 4 or 8). */
static int64_t arg_idx(void **args, int i, int size) {
  if (size == 8) return ARG(int64_t, i);
  return ARG(int32_t, i);
}

static int imin(int a, int b) { return a <= b ? a : b; }

/* Element i of an array of element type dt, as float, and a float stored there. */
static float ldf(int dt, const void *base, int64_t i) {
  return (float)simtw_load((simtw_dt_t)dt, (const char *)base + (size_t)i * simtw_dt_size((simtw_dt_t)dt)).f;
}

static void stf(int dt, void *base, int64_t i, float v) {
  simtw_store((simtw_dt_t)dt, (char *)base + (size_t)i * simtw_dt_size((simtw_dt_t)dt), simtw_fval(v));
}

/* Element i of a (batch, channels, height, width) tensor laid out NCHW or, when `nhwc`,
 * channels-last: its four coordinates. */
static void split4(int64_t i, int nhwc, int64_t channels, int64_t height, int64_t width,
                   int64_t *b, int64_t *c, int64_t *h, int64_t *w) {
  if (nhwc) {
    *c = i % channels, *w = i / channels % width, *h = i / channels / width % height;
    *b = i / channels / width / height;
  } else {
    *w = i % width, *h = i / width % height, *c = i / width / height % channels;
    *b = i / width / height / channels;
  }
}
static int imax(int a, int b) { return a >= b ? a : b; }

/* The window geometry of one pooling launch. */
typedef struct {
  int kh, kw, sh, sw, ph, pw, dh, dw;
} win_t;

static win_t win_read(void **args, int first, int dilated) {
  win_t g;
  g.kh = ARG(int, first);
  g.kw = ARG(int, first + 1);
  g.sh = ARG(int, first + 2);
  g.sw = ARG(int, first + 3);
  g.ph = ARG(int, first + 4);
  g.pw = ARG(int, first + 5);
  g.dh = dilated ? ARG(int, first + 6) : 1;
  g.dw = dilated ? ARG(int, first + 7) : 1;
  return g;
}

/* ---- max pooling (DilatedMaxPool2d.cu) ---- */

/* The maximum of the window at (oh, ow) of one plane, read through strides (in elements), and
 * the index h * width + w of its first occurrence in scan order (rows, then columns); a NaN
 * wins. *idx starts as the caller's initial index (the kernels differ there). */
static float max_window(int dt, const void *plane, int64_t sh_, int64_t sw_, int64_t height, int64_t width,
                        const win_t *g, int oh, int ow, int64_t *idx) {
  int hstart = oh * g->sh - g->ph, wstart = ow * g->sw - g->pw;
  int hend = imin(hstart + (g->kh - 1) * g->dh + 1, (int)height);
  int wend = imin(wstart + (g->kw - 1) * g->dw + 1, (int)width);
  while (hstart < 0) hstart += g->dh;
  while (wstart < 0) wstart += g->dw;
  float maxval = -INFINITY;
  for (int h = hstart; h < hend; h += g->dh)
    for (int w = wstart; w < wend; w += g->dw) {
      float v = ldf(dt, plane, h * sh_ + w * sw_);
      if (v > maxval || isnan(v)) {
        *idx = (int64_t)h * width + w;
        maxval = v;
      }
    }
  return maxval;
}

/* max_pool_forward_nchw<float, index_t>(index_t nthreads, const float *bottom, int64 channels,
 * height, width, int pooled_height, pooled_width, kernel_h, kernel_w, stride_h, stride_w, pad_h,
 * pad_w, dilation_h, dilation_w, float *top, int64 *mask): contiguous NCHW in and out, output
 * element `index` is (n, c, oh, ow); the initial index is the window's first position. */
static void run_maxpool_fw_nchw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int64_t n = arg_idx(args, 0, k->p[0]);
  const void *in = ARG(const void *, 1);
  int64_t height = ARG(int64_t, 3), width = ARG(int64_t, 4); /* channels (2) is not needed */
  int pooled_h = ARG(int, 5), pooled_w = ARG(int, 6);
  win_t g = win_read(args, 7, 1);
  void *out = ARG(void *, 15);
  int64_t *mask = ARG(int64_t *, 16);
  int dt = k->p[5];
  size_t es = simtw_dt_size((simtw_dt_t)dt);
  for (int64_t i = 0; i < n; i++) {
    int ow = (int)(i % pooled_w), oh = (int)(i / pooled_w % pooled_h);
    int64_t plane = i / pooled_w / pooled_h; /* n * channels + c */
    int hstart = oh * g.sh - g.ph, wstart = ow * g.sw - g.pw;
    while (hstart < 0) hstart += g.dh;
    while (wstart < 0) wstart += g.dw;
    int64_t idx = (int64_t)hstart * width + wstart;
    stf(dt, out, i, max_window(dt, (const char *)in + es * (size_t)(plane * height * width), width, 1, height, width, &g, oh, ow, &idx));
    mask[i] = idx;
  }
}

/* max_pool_forward_nhwc<float, index_t>(const float *bottom, int nbatch, index_t channels, height,
 * width, pooled_height, pooled_width, int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w,
 * dilation_h, dilation_w, index_t in_stride_n, in_stride_c, in_stride_h, in_stride_w,
 * int kernel_stride_C, kernel_size_C, float *top, int64 *mask): the input read through its
 * strides, the output channels-last contiguous; the initial index is 0. */
static void run_maxpool_fw_nhwc(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int is = k->p[0], dt = k->p[5];
  size_t es = simtw_dt_size((simtw_dt_t)dt);
  const void *in = ARG(const void *, 0);
  int nbatch = ARG(int, 1);
  int64_t channels = arg_idx(args, 2, is), height = arg_idx(args, 3, is), width = arg_idx(args, 4, is);
  int64_t pooled_h = arg_idx(args, 5, is), pooled_w = arg_idx(args, 6, is);
  win_t g = win_read(args, 7, 1);
  int64_t st_n = arg_idx(args, 15, is), st_c = arg_idx(args, 16, is);
  int64_t st_h = arg_idx(args, 17, is), st_w = arg_idx(args, 18, is);
  void *out = ARG(void *, 21);
  int64_t *mask = ARG(int64_t *, 22);
  for (int b = 0; b < nbatch; b++)
    for (int64_t oh = 0; oh < pooled_h; oh++)
      for (int64_t ow = 0; ow < pooled_w; ow++)
        for (int64_t c = 0; c < channels; c++) {
          int64_t o = ((b * pooled_h + oh) * pooled_w + ow) * channels + c, idx = 0;
          stf(dt, out, o, max_window(dt, (const char *)in + es * (size_t)(b * st_n + c * st_c), st_h, st_w, height, width, &g, (int)oh, (int)ow, &idx));
          mask[o] = idx;
        }
}

static int p_start(int size, int pad, int kernel, int dilation, int stride) {
  int span = (kernel - 1) * dilation + 1;
  return size + pad < span ? 0 : (size + pad - span) / stride + 1;
}

static int p_end(int size, int pad, int pooled, int stride) { return imin((size + pad) / stride + 1, pooled); }

/* max_pool_backward_nchw<float, float, index_t>(const float *top_diff, const int64 *mask,
 * index_t num, channels, height, width, pooled_height, pooled_width, int kernel_h, kernel_w,
 * stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, float *bottom_diff): every input
 * element of every plane is the sum, over the outputs whose window can hold it (rows, then
 * columns), of the gradients of those whose mask names it. */
static void run_maxpool_bw_nchw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int is = k->p[0], dt = k->p[5];
  const void *top = ARG(const void *, 0);
  const int64_t *mask = ARG(const int64_t *, 1);
  int64_t num = arg_idx(args, 2, is), channels = arg_idx(args, 3, is);
  int64_t height = arg_idx(args, 4, is), width = arg_idx(args, 5, is);
  int64_t pooled_h = arg_idx(args, 6, is), pooled_w = arg_idx(args, 7, is);
  win_t g = win_read(args, 8, 1);
  void *bottom = ARG(void *, 16);
  for (int64_t plane = 0; plane < num * channels; plane++) {
    int64_t t = plane * pooled_h * pooled_w;
    const int64_t *m = mask + plane * pooled_h * pooled_w;
    for (int h = 0; h < height; h++)
      for (int w = 0; w < width; w++) {
        int phs = p_start(h, g.ph, g.kh, g.dh, g.sh), phe = p_end(h, g.ph, (int)pooled_h, g.sh);
        int pws = p_start(w, g.pw, g.kw, g.dw, g.sw), pwe = p_end(w, g.pw, (int)pooled_w, g.sw);
        float grad = 0.0f;
        for (int oh = phs; oh < phe; oh++)
          for (int ow = pws; ow < pwe; ow++)
            if (m[oh * pooled_w + ow] == h * width + w) grad += ldf(dt, top, t + oh * pooled_w + ow);
        stf(dt, bottom, plane * height * width + h * width + w, grad);
      }
  }
}

/* max_pool_backward_nhwc<float, float>(const float *top_diff, const int64 *mask, int nbatch,
 * int64 channels, height, width, int pooled_height, pooled_width, kernel_h, kernel_w, stride_h,
 * stride_w, pad_h, pad_w, dilation_h, dilation_w, out_stride_c, out_stride_h, out_stride_w,
 * kernel_stride_C, kernel_size_C, float *bottom_diff): the gradient and the mask read through the
 * output strides (batch at pooled_h * pooled_w * channels), bottom_diff channels-last
 * contiguous. An input position inside one window only is written only when its mask names it
 * (PyTorch zeroes the gradient before); otherwise with the sum, as in NCHW. */
static void run_maxpool_bw_nhwc(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5];
  const void *top = ARG(const void *, 0);
  const int64_t *mask = ARG(const int64_t *, 1);
  int nbatch = ARG(int, 2);
  int64_t channels = ARG(int64_t, 3), height = ARG(int64_t, 4), width = ARG(int64_t, 5);
  int pooled_h = ARG(int, 6), pooled_w = ARG(int, 7);
  win_t g = win_read(args, 8, 1);
  int64_t osc = ARG(int, 16), osh = ARG(int, 17), osw = ARG(int, 18);
  void *bottom = ARG(void *, 21);
  for (int b = 0; b < nbatch; b++) {
    int64_t t = (int64_t)b * pooled_h * pooled_w * channels;
    const int64_t *m = mask + (int64_t)b * pooled_h * pooled_w * channels;
    int64_t bd = (int64_t)b * height * width * channels;
    for (int h = 0; h < height; h++)
      for (int w = 0; w < width; w++) {
        int phs = p_start(h, g.ph, g.kh, g.dh, g.sh), phe = p_end(h, g.ph, pooled_h, g.sh);
        int pws = p_start(w, g.pw, g.kw, g.dw, g.sw), pwe = p_end(w, g.pw, pooled_w, g.sw);
        int64_t at = (int64_t)h * width + w;
        for (int64_t c = 0; c < channels; c++) {
          if (phs + 1 == phe && pws + 1 == pwe) {
            int64_t o = phs * osh + pws * osw + c * osc;
            if (m[o] == at) stf(dt, bottom, bd + at * channels + c, ldf(dt, top, t + o));
            continue;
          }
          float grad = 0.0f;
          for (int oh = phs; oh < phe; oh++)
            for (int ow = pws; ow < pwe; ow++) {
              int64_t o = oh * osh + ow * osw + c * osc;
              if (m[o] == at) grad += ldf(dt, top, t + o);
            }
          stf(dt, bottom, bd + at * channels + c, grad);
        }
      }
  }
}

/* ---- average pooling (AveragePool2d.cu) ---- */

/* The window at (oh, ow) as the average pooling kernels bound it: *pool_size counts the window
 * clipped to the padded input, [h0, h1) x [w0, w1) the part inside the input. */
static void avg_window(const win_t *g, int height, int width, int oh, int ow, int *h0, int *h1, int *w0,
                       int *w1, int *pool_size) {
  int hstart = oh * g->sh - g->ph, wstart = ow * g->sw - g->pw;
  int hend = imin(hstart + g->kh, height + g->ph), wend = imin(wstart + g->kw, width + g->pw);
  *pool_size = (hend - hstart) * (wend - wstart);
  *h0 = imax(hstart, 0);
  *w0 = imax(wstart, 0);
  *h1 = imin(hend, height);
  *w1 = imin(wend, width);
}

/* The divisor of a window: divisor_override when use_divisor, else the padded window's size
 * when count_include_pad, else the number of input elements it covers. */
static int avg_divisor(int override, int count_include_pad, int use_divisor, int pool_size, int h0, int h1,
                       int w0, int w1) {
  if (use_divisor) return override;
  return count_include_pad ? pool_size : (h1 - h0) * (w1 - w0);
}

/* top_diff[o] / divisor as the backward kernels write it: a scalar_t divided by an int, which
 * for c10::Half and c10::BFloat16 is their own division (in float, rounded to the type). */
static float div_t(int dt, float top, int divisor) {
  float q = top / (float)divisor;
  return dt == DT_F32 ? q : (float)simtw_cast(simtw_fval(q), (simtw_dt_t)dt).f;
}

/* avg_pool2d_out_cuda_frame<float, float>(int nthreads, const float *bottom, int64 channels,
 * height, width, pooled_height, int pooled_width, kernel_h, kernel_w, stride_h, stride_w, pad_h,
 * pad_w, float *top, int divisor_override, bool count_include_pad, bool use_divisor), NCHW
 * contiguous (output element (n, c, oh, ow)), and avg_pool2d_out_cuda_frame_nhwc<float, float>
 * (the same parameters, pooled_height an int), channels-last contiguous (output element
 * (n, oh, ow, c)): the sum of the window's input elements (rows, then columns) over its
 * divisor. */
static void run_avgpool_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int nhwc = k->p[0], dt = k->p[5];
  int n = ARG(int, 0);
  const void *in = ARG(const void *, 1);
  int64_t channels = ARG(int64_t, 2), height = ARG(int64_t, 3), width = ARG(int64_t, 4);
  int64_t pooled_h = nhwc ? ARG(int, 5) : ARG(int64_t, 5);
  int pooled_w = ARG(int, 6);
  win_t g = win_read(args, 7, 0);
  void *out = ARG(void *, 13);
  int override = ARG(int, 14), include_pad = ARG(unsigned char, 15) != 0, use_div = ARG(unsigned char, 16) != 0;
  for (int i = 0; i < n; i++) {
    int64_t c, ow, oh, b;
    split4(i, nhwc, channels, pooled_h, pooled_w, &b, &c, &oh, &ow);
    int h0, h1, w0, w1, ps;
    avg_window(&g, (int)height, (int)width, (int)oh, (int)ow, &h0, &h1, &w0, &w1, &ps);
    float sum = 0.0f;
    for (int h = h0; h < h1; h++)
      for (int w = w0; w < w1; w++)
        sum += ldf(dt, in, nhwc ? ((b * height + h) * width + w) * channels + c : ((b * channels + c) * height + h) * width + w);
    stf(dt, out, i, sum / (float)avg_divisor(override, include_pad, use_div, ps, h0, h1, w0, w1));
  }
}

/* avg_pool2d_backward_out_cuda_frame<float, float, index_t>(index_t nthreads, const float *top_diff,
 * int64 channels, height, width, pooled_height, pooled_width, int kernel_h, kernel_w, stride_h,
 * stride_w, pad_h, pad_w, float *bottom_diff, int divisor_override, bool count_include_pad,
 * bool use_divisor, bool uniform), NCHW, and its _nhwc twin (pooled sizes int), channels-last:
 * every input element is the sum, over the windows that hold it (rows, then columns), of each
 * window's gradient over its divisor. `uniform` tells the kernel that every window has the same
 * divisor (a divisor override, or the padding counted without ceil mode: the wheel sets it then,
 * as the launches show); the twin computes each window's divisor, which is then that one. */
static void run_avgpool_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int nhwc = k->p[0], dt = k->p[5];
  int64_t n = arg_idx(args, 0, k->p[1]);
  const void *top = ARG(const void *, 1);
  int64_t channels = ARG(int64_t, 2), height = ARG(int64_t, 3), width = ARG(int64_t, 4);
  int64_t pooled_h = nhwc ? ARG(int, 5) : ARG(int64_t, 5), pooled_w = nhwc ? ARG(int, 6) : ARG(int64_t, 6);
  win_t g = win_read(args, 7, 0);
  void *bottom = ARG(void *, 13);
  int override = ARG(int, 14), include_pad = ARG(unsigned char, 15) != 0, use_div = ARG(unsigned char, 16) != 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t c, w, h, b;
    split4(i, nhwc, channels, height, width, &b, &c, &h, &w);
    int hp = (int)h + g.ph, wp = (int)w + g.pw;
    int phs = hp < g.kh ? 0 : (hp - g.kh) / g.sh + 1, phe = imin(hp / g.sh + 1, (int)pooled_h);
    int pws = wp < g.kw ? 0 : (wp - g.kw) / g.sw + 1, pwe = imin(wp / g.sw + 1, (int)pooled_w);
    float grad = 0.0f;
    for (int oh = phs; oh < phe; oh++)
      for (int ow = pws; ow < pwe; ow++) {
        int h0, h1, w0, w1, ps;
        avg_window(&g, (int)height, (int)width, oh, ow, &h0, &h1, &w0, &w1, &ps);
        int64_t o = nhwc ? ((b * pooled_h + oh) * pooled_w + ow) * channels + c : ((b * channels + c) * pooled_h + oh) * pooled_w + ow;
        grad += div_t(dt, ldf(dt, top, o), avg_divisor(override, include_pad, use_div, ps, h0, h1, w0, w1));
      }
    stf(dt, bottom, i, grad);
  }
}

/* avg_pool2d_backward_nonoverlap_frame<float, float, index_t>(index_t nthreads,
 * const float *top_diff, int64 channels, height, width, pooled_height, pooled_width,
 * int kernel_h, kernel_w, float *bottom_diff, int divisor_override, bool use_divisor,
 * bool channels_last): PyTorch's path for windows that tile the input (stride equal to the
 * kernel, no padding, no ceil mode): input (h, w) lies in window (h / kernel_h, w / kernel_w)
 * only, its gradient that window's over kernel_h * kernel_w (or divisor_override); inputs past
 * the last whole window get 0. NCHW, or channels-last when the flag says so. */
static void run_avgpool_bw_nonoverlap(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5];
  int64_t n = arg_idx(args, 0, k->p[1]);
  const void *top = ARG(const void *, 1);
  int64_t channels = ARG(int64_t, 2), height = ARG(int64_t, 3), width = ARG(int64_t, 4);
  int64_t pooled_h = ARG(int64_t, 5), pooled_w = ARG(int64_t, 6);
  int kh = ARG(int, 7), kw = ARG(int, 8);
  void *bottom = ARG(void *, 9);
  int override = ARG(int, 10), use_div = ARG(unsigned char, 11) != 0, nhwc = ARG(unsigned char, 12) != 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t c, w, h, b;
    split4(i, nhwc, channels, height, width, &b, &c, &h, &w);
    int64_t oh = h / kh, ow = w / kw;
    if (oh >= pooled_h || ow >= pooled_w) {
      stf(dt, bottom, i, 0.0f);
      continue;
    }
    int64_t o = nhwc ? ((b * pooled_h + oh) * pooled_w + ow) * channels + c : ((b * channels + c) * pooled_h + oh) * pooled_w + ow;
    stf(dt, bottom, i, div_t(dt, ldf(dt, top, o), use_div ? override : kh * kw));
  }
}

/* ---- adaptive average pooling (AdaptiveAveragePooling.cu) ---- */

/* The input window of output position o of osize over isize: [start, end) with start =
 * floor(o * isize / osize) and end = ceil((o + 1) * isize / osize), as START_IND and END_IND
 * compute them. */
static int64_t ad_start(int64_t o, int64_t osize, int64_t isize) { return (o / osize) * isize + ((o % osize) * isize) / osize; }
static int64_t ad_end(int64_t o, int64_t osize, int64_t isize) { return 1 + ((o + 1) * isize - 1) / osize; }

/* scalar_t / int as c10 defines it for the half types (in float, rounded to the type). */
static float div_i(int dt, float a, int64_t b) {
  float q = a / (float)b;
  return dt == DT_F32 ? q : (float)simtw_cast(simtw_fval(q), (simtw_dt_t)dt).f;
}

/* adaptive_average_pool<T, index_t>(const T *input, T *output, index_t isizeH, isizeW, osizeH,
 * osizeW, int64 istrideD, istrideH, istrideW): one plane per blockIdx.x (grid.x planes, the
 * input's at plane * istrideD, the output contiguous); each output is the sum of its window
 * (rows, then columns, in float) / kH / kW. */
static void run_adaptive_avg_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5], is = k->p[0];
  const void *in = ARG(const void *, 0);
  void *out = ARG(void *, 1);
  int64_t ih = arg_idx(args, 2, is), iw = arg_idx(args, 3, is), oh = arg_idx(args, 4, is), ow = arg_idx(args, 5, is);
  int64_t sd = ARG(int64_t, 6), sh = ARG(int64_t, 7), sw = ARG(int64_t, 8);
  for (int64_t plane = 0; plane < (int64_t)grid.x; plane++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t x = 0; x < ow; x++) {
        int64_t h0 = ad_start(y, oh, ih), h1 = ad_end(y, oh, ih), w0 = ad_start(x, ow, iw), w1 = ad_end(x, ow, iw);
        float sum = 0.0f;
        for (int64_t h = h0; h < h1; h++)
          for (int64_t w = w0; w < w1; w++) sum += ldf(dt, in, plane * sd + h * sh + w * sw);
        stf(dt, out, (plane * oh + y) * ow + x, sum / (float)(h1 - h0) / (float)(w1 - w0));
      }
}

/* atomic_adaptive_average_gradinput<T, index_t>(T *gradInput, const T *gradOutput, index_t
 * isizeH, isizeW, osizeH, osizeW) and adaptive_average_gradinput<T, index_t> (the same
 * parameters): both planes contiguous, one per blockIdx.x; every output's gradient / kW / kH
 * (each division in T) is added (in T) to each input of its window, into the gradient PyTorch
 * zeroed before. Outputs in order, as the atomic kernel's adds may land; the non-atomic kernel
 * gathers the same terms per input in the same (output) order. */
static void run_adaptive_avg_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int dt = k->p[5], is = k->p[0];
  void *gin = ARG(void *, 0);
  const void *gout = ARG(const void *, 1);
  int64_t ih = arg_idx(args, 2, is), iw = arg_idx(args, 3, is), oh = arg_idx(args, 4, is), ow = arg_idx(args, 5, is);
  for (int64_t plane = 0; plane < (int64_t)grid.x; plane++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t x = 0; x < ow; x++) {
        int64_t h0 = ad_start(y, oh, ih), h1 = ad_end(y, oh, ih), w0 = ad_start(x, ow, iw), w1 = ad_end(x, ow, iw);
        float d = div_i(dt, div_i(dt, ldf(dt, gout, (plane * oh + y) * ow + x), w1 - w0), h1 - h0);
        for (int64_t h = h0; h < h1; h++)
          for (int64_t w = w0; w < w1; w++) {
            int64_t i = (plane * ih + h) * iw + w;
            stf(dt, gin, i, ldf(dt, gin, i) + d);
          }
      }
}

/* ---- resolution ---- */

/* The element type at s (float, c10::Half or c10::BFloat16) into p[5], followed by `rest`;
 * returns the position after them, or NULL. */
static const char *pool_type(const char *s, const char *rest, simtw_nn_t *k) {
  const char *e;
  simtw_dt_t dt = simtw_dt_parse(s, &e);
  if (dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) return NULL;
  k->p[5] = dt;
  return strncmp(e, rest, strlen(rest)) == 0 ? e + strlen(rest) : NULL;
}

/* The size of an index_t template argument at p ("long>(" or "int>("), 0 for any other. */
static int idx_size(const char *p) {
  if (!p) return 0;
  return strncmp(p, "long>(", 6) == 0 ? 8 : strncmp(p, "int>(", 5) == 0 ? 4 : 0;
}

/* The kernel's name after prefix (which ends with the '<' of its template arguments), when dm is
 * at::native's. */
static const char *pool_kernel(const char *dm, const char *prefix) {
  const char *p = strstr(dm, prefix);
  if (!p || strncmp(dm, "void at::native::", 17) != 0) return NULL;
  return p + strlen(prefix);
}

int simtw_pool_resolve(const char *dm, simtw_nn_t *k) {
  const char *p;
  memset(k, 0, sizeof *k);
  if ((p = pool_kernel(dm, "::max_pool_forward_nchw<"))) {
    if ((k->p[0] = idx_size(pool_type(p, ", ", k)))) k->run = run_maxpool_fw_nchw;
  } else if ((p = pool_kernel(dm, "::max_pool_forward_nhwc<"))) {
    if ((k->p[0] = idx_size(pool_type(p, ", ", k)))) k->run = run_maxpool_fw_nhwc;
  } else if ((p = pool_kernel(dm, "::max_pool_backward_nchw<"))) {
    if ((k->p[0] = idx_size(pool_type(p, ", float, ", k)))) k->run = run_maxpool_bw_nchw;
  } else if ((p = pool_kernel(dm, "::max_pool_backward_nhwc<"))) {
    if (pool_type(p, ", float>(", k)) k->run = run_maxpool_bw_nhwc;
  } else if ((p = pool_kernel(dm, "::avg_pool2d_out_cuda_frame<"))) {
    if (pool_type(p, ", float>(", k)) k->run = run_avgpool_fw;
  } else if ((p = pool_kernel(dm, "::avg_pool2d_out_cuda_frame_nhwc<"))) {
    k->p[0] = 1;
    if (pool_type(p, ", float>(", k)) k->run = run_avgpool_fw;
  } else if ((p = pool_kernel(dm, "::avg_pool2d_backward_out_cuda_frame<"))) {
    if ((k->p[1] = idx_size(pool_type(p, ", float, ", k)))) k->run = run_avgpool_bw;
  } else if ((p = pool_kernel(dm, "::avg_pool2d_backward_out_cuda_frame_nhwc<"))) {
    k->p[0] = 1;
    if ((k->p[1] = idx_size(pool_type(p, ", float, ", k)))) k->run = run_avgpool_bw;
  } else if ((p = pool_kernel(dm, "::avg_pool2d_backward_nonoverlap_frame<"))) {
    if ((k->p[1] = idx_size(pool_type(p, ", float, ", k)))) k->run = run_avgpool_bw_nonoverlap;
  } else if ((p = pool_kernel(dm, "::adaptive_average_pool<"))) {
    if ((k->p[0] = idx_size(pool_type(p, ", ", k)))) k->run = run_adaptive_avg_fw;
  } else if ((p = pool_kernel(dm, "::atomic_adaptive_average_gradinput<")) ||
             (p = pool_kernel(dm, "::adaptive_average_gradinput<"))) {
    if ((k->p[0] = idx_size(pool_type(p, ", ", k)))) k->run = run_adaptive_avg_bw;
  } else {
    return simtw_resample_resolve(dm, k);
  }
  return k->run != NULL;
}
