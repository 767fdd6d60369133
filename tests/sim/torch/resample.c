/* resample.c — CPU twins of PyTorch's resampling kernels: reflection padding (ReflectionPad.cu),
 * nearest and bilinear 2-D upsampling (UpSampleNearest2d.cu, UpSampleBilinear2d.cu, NCHW), and
 * softmax over a dimension other than the last (SoftMax.cu's cunn_SpatialSoftMax*), each forward
 * and backward, in float, c10::Half and c10::BFloat16.
 *
 * As in pool.c: each twin computes its kernel's contract from the kernel's own parameters over
 * the whole grid in one call, in float (the kernels' accscalar_t), rounding to the element type
 * where the kernel stores (or, for the atomic adds of the backward kernels, adds) one. The
 * backward kernels that add atomically into a zeroed gradient add here in the order of their
 * output elements: sums equal the GPU's within rounding.
 */
#include <math.h>
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

/* v rounded to the element type (an atomic add's or a cast's value). */
static float rnd(int dt, float v) { return dt == DT_F32 ? v : (float)simtw_cast(simtw_fval(v), (simtw_dt_t)dt).f; }

/* gpuAtomicAdd on an element of type dt: the sum rounded to the type. */
static void add_at(int dt, void *base, int64_t i, float v) { stf(dt, base, i, ldf(dt, base, i) + v); }

/* ---- reflection padding (ReflectionPad.cu) ---- */

/* The input coordinate that output coordinate o of a padded dimension reflects (input size n,
 * padding before p), get_index_mapping2d's formula. */
static int64_t reflect(int64_t o, int64_t n, int64_t p) {
  int64_t i_start = p < 0 ? -p : 0, o_start = p > 0 ? p : 0;
  return llabs(o - p) - llabs(o - (n + p - 1)) - o + 2 * p + n - 1 - o_start + i_start;
}

/* reflection_pad2d_out_kernel<T>(const T *input, T *output, int64 input_dim_x, input_dim_y,
 * int pad_t, pad_b, pad_l, pad_r, y_shift, z_shift, nplane) and
 * reflection_pad2d_backward_out_kernel<T>(T *grad_input, const T *grad_output, the same): planes
 * (blockIdx.y + y_shift) + (blockIdx.z + z_shift) * nplane, contiguous; every output element
 * (output_xy < output_dim_x * output_dim_y) copies its reflected input, or in the backward adds
 * its gradient to it (gpuAtomicAdd, in T). */
static void run_reflect_pad2d(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  int dt = k->p[5], bw = k->p[0];
  void *dst = ARG(void *, bw ? 0 : 1);
  const void *src = ARG(const void *, bw ? 1 : 0);
  int64_t ix = ARG(int64_t, 2), iy = ARG(int64_t, 3);
  int pt = ARG(int, 4), pb = ARG(int, 5), pl = ARG(int, 6), pr = ARG(int, 7);
  int y_shift = ARG(int, 8), z_shift = ARG(int, 9), nplane = ARG(int, 10);
  int64_t ox = ix + pl + pr, oy = iy + pt + pb;
  int64_t threads = (int64_t)grid.x * block.x;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++) {
      int64_t plane = ((int64_t)by + y_shift) + ((int64_t)bz + z_shift) * nplane;
      for (int64_t xy = 0; xy < ox * oy && xy < threads; xy++) {
        int64_t x = xy % ox, y = xy / ox;
        int64_t in = plane * ix * iy + reflect(y, iy, pt) * ix + reflect(x, ix, pl), out = plane * ox * oy + xy;
        if (bw)
          add_at(dt, dst, in, ldf(dt, src, out));
        else
          stf(dt, dst, out, ldf(dt, src, in));
      }
    }
}

/* ---- nearest upsampling (UpSampleNearest2d.cu, UpSample.cuh) ---- */

/* nearest_neighbor_compute_source_index and its _exact variant: the input index of output
 * index d, min(floor(d * scale) (exact: floor((d + 0.5) * scale)), n - 1), in float. */
static int64_t nn_src(int exact, float scale, int64_t d, int64_t n) {
  float f = exact ? floorf(((float)d + 0.5f) * scale) : floorf((float)d * scale);
  int64_t s = (int64_t)(int)f;
  return s < n - 1 ? s : n - 1;
}

/* nearest_neighbor_bw_compute_source_index and _exact: the first gradient-output index of
 * gradient-input index d, min(ceil(d * scale) (exact: ceil(d * scale - 0.5)), n), in float. */
static int64_t nn_bw_src(int exact, float scale, int64_t d, int64_t n) {
  float f = exact ? ceilf((float)d * scale - 0.5f) : ceilf((float)d * scale);
  int64_t s = (int64_t)(int)f;
  return s < n ? s : n;
}

/* upsample_nearest2d_out_frame<T, index_fn>(const T *idata, T *odata, size_t nc, height1,
 * width1, height2, width2, float height_scale, width_scale): contiguous planes; output (h2, w2)
 * copies input (h1, w1), each by the index function unless the sizes are equal. */
static void run_nearest2d_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], exact = k->p[1];
  const void *in = ARG(const void *, 0);
  void *out = ARG(void *, 1);
  int64_t nc = (int64_t)ARG(uint64_t, 2), h1 = (int64_t)ARG(uint64_t, 3), w1 = (int64_t)ARG(uint64_t, 4);
  int64_t h2 = (int64_t)ARG(uint64_t, 5), w2 = (int64_t)ARG(uint64_t, 6);
  float hs = ARG(float, 7), ws = ARG(float, 8);
  for (int64_t c = 0; c < nc; c++)
    for (int64_t y = 0; y < h2; y++)
      for (int64_t x = 0; x < w2; x++) {
        int64_t sy = h1 == h2 ? y : nn_src(exact, hs, y, h1), sx = w1 == w2 ? x : nn_src(exact, ws, x, w1);
        stf(dt, out, (c * h2 + y) * w2 + x, ldf(dt, in, (c * h1 + sy) * w1 + sx));
      }
}

/* upsample_nearest2d_backward_out_frame<T, float, index_fn>(const T *grad_o, size_t dim_b,
 * dim_c, src_dim_h, src_dim_w, dst_dim_h, dst_dim_w, T *grad_i, float height_scale,
 * width_scale): grad_i (dim_b, dim_c, dst_h, dst_w) element (y, x) is the float sum of grad_o
 * (src_h, src_w) over rows [bw_src(y), bw_src(y + 1)) and the columns likewise. */
static void run_nearest2d_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5], exact = k->p[1];
  const void *go = ARG(const void *, 0);
  int64_t nb = (int64_t)ARG(uint64_t, 1), nc = (int64_t)ARG(uint64_t, 2);
  int64_t sh = (int64_t)ARG(uint64_t, 3), sw = (int64_t)ARG(uint64_t, 4);
  int64_t dh = (int64_t)ARG(uint64_t, 5), dw = (int64_t)ARG(uint64_t, 6);
  void *gi = ARG(void *, 7);
  float hs = ARG(float, 8), ws = ARG(float, 9);
  for (int64_t p = 0; p < nb * nc; p++)
    for (int64_t y = 0; y < dh; y++)
      for (int64_t x = 0; x < dw; x++) {
        int64_t y0 = nn_bw_src(exact, hs, y, sh), y1 = nn_bw_src(exact, hs, y + 1, sh);
        int64_t x0 = nn_bw_src(exact, ws, x, sw), x1 = nn_bw_src(exact, ws, x + 1, sw);
        float g = 0.0f;
        for (int64_t sy = y0; sy < y1; sy++)
          for (int64_t sx = x0; sx < x1; sx++) g += ldf(dt, go, (p * sh + sy) * sw + sx);
        stf(dt, gi, (p * dh + y) * dw + x, g);
      }
}

/* ---- bilinear upsampling (UpSampleBilinear2d.cu) ---- */

/* area_pixel_compute_source_index (not cubic), the source row or column of output index d, split
 * into its integer part, the step to the next (0 at the edge) and the two weights. */
typedef struct {
  int64_t i, p;
  float l0, l1;
} lin_t;

static lin_t lin_src(float scale, int64_t d, int align_corners, int64_t n) {
  float r;
  if (align_corners) {
    r = scale * (float)d;
  } else {
    r = scale * ((float)d + 0.5f) - 0.5f;
    if (r < 0.0f) r = 0.0f;
  }
  lin_t l;
  l.i = (int)r;
  l.p = l.i < n - 1 ? 1 : 0;
  l.l1 = r - (float)l.i;
  l.l0 = 1.0f - l.l1;
  return l;
}

/* PackedTensorAccessor64<T, 4>: {T *data; int64 sizes[4]; int64 strides[4];} (strides in
 * elements). */
typedef struct {
  char *data;
  int64_t sizes[4], strides[4];
} pta4_t;

static pta4_t pta4(const void *arg) {
  pta4_t a;
  memcpy(&a.data, arg, 8);
  memcpy(a.sizes, (const char *)arg + 8, 32);
  memcpy(a.strides, (const char *)arg + 40, 32);
  return a;
}

static int64_t pta4_at(const pta4_t *a, int64_t n, int64_t c, int64_t h, int64_t w) {
  return n * a->strides[0] + c * a->strides[1] + h * a->strides[2] + w * a->strides[3];
}

/* upsample_bilinear2d_out_frame<T, float>(int n, float rheight, float rwidth, bool
 * align_corners, PackedTensorAccessor64<const T, 4> idata, PackedTensorAccessor64<T, 4> odata):
 * every output (h2, w2) of n = height2 * width2, for every batch and channel,
 * h0l * (w0l * in[h1][w1] + w1l * in[h1][w1 + w1p]) + h1l * (w0l * in[h1 + h1p][w1] +
 * w1l * in[h1 + h1p][w1 + w1p]). */
static void run_bilinear2d_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5];
  int n = ARG(int, 0), ac = ARG(unsigned char, 3) != 0;
  float rh = ARG(float, 1), rw = ARG(float, 2);
  pta4_t in = pta4(args[4]), out = pta4(args[5]);
  int64_t w2n = out.sizes[3];
  for (int64_t idx = 0; idx < n; idx++) {
    int64_t x = idx % w2n, y = idx / w2n;
    lin_t h = lin_src(rh, y, ac, in.sizes[2]), w = lin_src(rw, x, ac, in.sizes[3]);
    for (int64_t b = 0; b < in.sizes[0]; b++)
      for (int64_t c = 0; c < in.sizes[1]; c++) {
        float a00 = ldf(dt, in.data, pta4_at(&in, b, c, h.i, w.i)), a01 = ldf(dt, in.data, pta4_at(&in, b, c, h.i, w.i + w.p));
        float a10 = ldf(dt, in.data, pta4_at(&in, b, c, h.i + h.p, w.i));
        float a11 = ldf(dt, in.data, pta4_at(&in, b, c, h.i + h.p, w.i + w.p));
        float v = h.l0 * (w.l0 * a00 + w.l1 * a01) + h.l1 * (w.l0 * a10 + w.l1 * a11);
        stf(dt, out.data, pta4_at(&out, b, c, y, x), v);
      }
  }
}

/* upsample_bilinear2d_backward_out_frame<T, float>(size_t nc, int height1, width1, height2,
 * width2, float rheight, rwidth, bool align_corners, T *idata, const T *odata): contiguous; each
 * gradient-output element adds T(h0l * w0l * g), T(h0l * w1l * g), T(h1l * w0l * g) and
 * T(h1l * w1l * g) to its four sources (atomic adds in T). */
static void run_bilinear2d_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int dt = k->p[5];
  int64_t nc = (int64_t)ARG(uint64_t, 0);
  int64_t h1n = ARG(int, 1), w1n = ARG(int, 2), h2n = ARG(int, 3), w2n = ARG(int, 4);
  float rh = ARG(float, 5), rw = ARG(float, 6);
  int ac = ARG(unsigned char, 7) != 0;
  void *gi = ARG(void *, 8);
  const void *go = ARG(const void *, 9);
  for (int64_t idx = 0; idx < nc * h2n * w2n; idx++) {
    int64_t x = idx % w2n, y = idx / w2n % h2n, p = idx / w2n / h2n;
    lin_t h = lin_src(rh, y, ac, h1n), w = lin_src(rw, x, ac, w1n);
    float g = ldf(dt, go, idx);
    int64_t base = p * h1n * w1n;
    add_at(dt, gi, base + h.i * w1n + w.i, rnd(dt, h.l0 * w.l0 * g));
    add_at(dt, gi, base + h.i * w1n + w.i + w.p, rnd(dt, h.l0 * w.l1 * g));
    add_at(dt, gi, base + (h.i + h.p) * w1n + w.i, rnd(dt, h.l1 * w.l0 * g));
    add_at(dt, gi, base + (h.i + h.p) * w1n + w.i + w.p, rnd(dt, h.l1 * w.l1 * g));
  }
}

/* ---- softmax over a non-last dimension (SoftMax.cu) ---- */

/* cunn_SpatialSoftMaxForward<T, float, OutT, index_t, Epilogue>(OutT *output, const T *input,
 * index_t outer_size, dim_size, inner_size): for every (outer, inner) the dim_size values at
 * (outer * dim_size + d) * inner_size + inner: max, sum of exp(x - max) in float; softmax
 * exp(x - max) / sum, log-softmax x - max - log(sum), stored as OutT. */
static void run_spatial_softmax_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int in_dt = k->p[1], out_dt = k->p[2], is_log = k->p[0], is = k->p[3];
  void *out = ARG(void *, 0);
  const void *in = ARG(const void *, 1);
  int64_t outer = is == 8 ? ARG(int64_t, 2) : ARG(int, 2), dim = is == 8 ? ARG(int64_t, 3) : ARG(int, 3);
  int64_t inner = is == 8 ? ARG(int64_t, 4) : ARG(int, 4);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * dim * inner + i;
      float max = -INFINITY, sum = 0.0f;
      for (int64_t d = 0; d < dim; d++) {
        float x = ldf(in_dt, in, base + d * inner);
        max = x > max ? x : max;
      }
      for (int64_t d = 0; d < dim; d++) sum += expf(ldf(in_dt, in, base + d * inner) - max);
      /* sum >= 1 when dim > 0 (the maximum's own term). */
      // cppcheck-suppress invalidFunctionArg
      float lse = logf(sum);
      for (int64_t d = 0; d < dim; d++) {
        float x = ldf(in_dt, in, base + d * inner);
        stf(out_dt, out, base + d * inner, is_log ? x - max - lse : expf(x - max) / sum);
      }
    }
}

/* cunn_SpatialSoftMaxBackward<T, float, OutT, index_t, Epilogue>(T *gradInput, const OutT
 * *output, const OutT *gradOutput, index_t outer_size, dim_size, inner_size): sum of gradOutput
 * over the dimension (in float); softmax gradOutput - output * sum (PyTorch passes gradOutput
 * already multiplied by the output), log-softmax gradOutput - exp(output) * sum; stored as T. */
static void run_spatial_softmax_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int gin_dt = k->p[1], out_dt = k->p[2], is_log = k->p[0], is = k->p[3];
  void *gin = ARG(void *, 0);
  const void *out = ARG(const void *, 1), *gout = ARG(const void *, 2);
  int64_t outer = is == 8 ? ARG(int64_t, 3) : ARG(int, 3), dim = is == 8 ? ARG(int64_t, 4) : ARG(int, 4);
  int64_t inner = is == 8 ? ARG(int64_t, 5) : ARG(int, 5);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * dim * inner + i;
      float sum = 0.0f;
      for (int64_t d = 0; d < dim; d++) sum += ldf(out_dt, gout, base + d * inner);
      for (int64_t d = 0; d < dim; d++) {
        float g = ldf(out_dt, gout, base + d * inner), y = ldf(out_dt, out, base + d * inner);
        stf(gin_dt, gin, base + d * inner, is_log ? g - expf(y) * sum : g - y * sum);
      }
    }
}

/* ---- resolution ---- */

/* The name after prefix (ending with its '<') when dm is one of at::native's kernels. */
static const char *kernel_args(const char *dm, const char *prefix) {
  const char *p = strstr(dm, prefix);
  if (!p || strncmp(dm, "void at::native::", 17) != 0) return NULL;
  return p + strlen(prefix);
}

int simtw_resample_resolve(const char *dm, simtw_nn_t *k) {
  const char *p, *e;
  memset(k, 0, sizeof *k);
  if ((p = kernel_args(dm, "::reflection_pad2d_out_kernel<")) && simtw_dt_float_then(p, ">(", &k->p[5])) {
    k->run = run_reflect_pad2d;
  } else if ((p = kernel_args(dm, "::reflection_pad2d_backward_out_kernel<")) && simtw_dt_float_then(p, ">(", &k->p[5])) {
    k->p[0] = 1;
    k->run = run_reflect_pad2d;
  } else if ((p = kernel_args(dm, "::upsample_nearest2d_out_frame<")) && (e = simtw_dt_float_then(p, ", &at::native::nearest_neighbor_", &k->p[5]))) {
    if (strncmp(e, "compute_source_index>(", 22) == 0) k->run = run_nearest2d_fw;
    else if (strncmp(e, "exact_compute_source_index>(", 28) == 0) k->p[1] = 1, k->run = run_nearest2d_fw;
  } else if ((p = kernel_args(dm, "::upsample_nearest2d_backward_out_frame<")) &&
             (e = simtw_dt_float_then(p, ", float, &at::native::nearest_neighbor_", &k->p[5]))) {
    if (strncmp(e, "bw_compute_source_index>(", 25) == 0) k->run = run_nearest2d_bw;
    else if (strncmp(e, "exact_bw_compute_source_index>(", 31) == 0) k->p[1] = 1, k->run = run_nearest2d_bw;
  } else if ((p = kernel_args(dm, "::upsample_bilinear2d_out_frame<")) && simtw_dt_float_then(p, ", float>(", &k->p[5])) {
    k->run = run_bilinear2d_fw;
  } else if ((p = kernel_args(dm, "::upsample_bilinear2d_backward_out_frame<")) && simtw_dt_float_then(p, ", float>(", &k->p[5])) {
    k->run = run_bilinear2d_bw;
  } else if (((p = kernel_args(dm, "::cunn_SpatialSoftMaxForward<")) || (p = kernel_args(dm, "::cunn_SpatialSoftMaxBackward<"))) &&
             (e = simtw_dt_float_then(p, ", float, ", &k->p[1])) && (e = simtw_dt_float_then(e, ", ", &k->p[2]))) {
    /* <T, float, OutT, index_t, at::native::(anonymous namespace)::[Log]SoftMax{Forward,Backward}Epilogue> */
    int bw = strstr(dm, "::cunn_SpatialSoftMaxBackward<") != NULL;
    k->p[3] = strncmp(e, "long, ", 6) == 0 ? 8 : strncmp(e, "int, ", 5) == 0 ? 4 : 0;
    e += k->p[3] == 8 ? 6 : 5;
    const char *ns = "at::native::(anonymous namespace)::";
    if (k->p[3] && strncmp(e, ns, strlen(ns)) == 0) {
      e += strlen(ns);
      const char *plain = bw ? "SoftMaxBackwardEpilogue>(" : "SoftMaxForwardEpilogue>(";
      if (strncmp(e, "Log", 3) == 0) k->p[0] = 1, e += 3;
      if (strncmp(e, plain, strlen(plain)) == 0) k->run = bw ? run_spatial_softmax_bw : run_spatial_softmax_fw;
    }
  }
  return k->run != NULL;
}
