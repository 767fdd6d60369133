/* nn.c — CPU twins of PyTorch's kernels outside the elementwise, reduction and foreach
 * frameworks: softmax and log-softmax (forward and backward), the negative log-likelihood loss,
 * dropout (Philox random numbers), index_select (embeddings) and embedding's backward (float,
 * c10::Half and c10::BFloat16), torch.cat, layer norm and RMS norm (forward and backward, float,
 * c10::Half and c10::BFloat16) and triu/tril. Float32
 * instantiations only where a twin does not say otherwise. Kernels none of these match are
 * passed on to conv.c's resolver (depthwise convolution) and norm.c's (batch norm).
 *
 * Each twin computes what its kernel's contract says from the kernel's own parameters (their
 * order and sizes as PyTorch's sources declare them and the wheel's cubins lay them out), over
 * the whole grid in one call, sums in index order: results equal the GPU's within float rounding,
 * except dropout, whose random numbers are those of cuRAND's Philox4x32-10 as the kernel draws
 * them (bit-exact in the mask, given the same seed and offset).
 *
 * at::cuda::detail::TensorInfo<T, IndexType> is {T *data; IndexType sizes[25]; IndexType
 * strides[25]; int dims;} (strides in elements).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

#define ARG(type, i) (*(type *)args[i])

/* ---- softmax ---- */

/* softmax_warp_forward<in, out, acc, log2_elements, is_log_softmax, is_masked, …>(out *dst,
 * const in *src, int batch_size, int stride, int element_count, const bool *mask,
 * int head_chunk_size, bool is_transformer_mask) (PersistentSoftmax.cuh): batch_size rows of
 * element_count values, row r at r * stride. max, then sum of exp(x - max); softmax is
 * exp(x - max) / sum, log-softmax x - max - log(sum). */
static float ld(simtw_dt_t dt, const void *base, long i) {
  return (float)simtw_load(dt, (const char *)base + (size_t)i * simtw_dt_size(dt)).f;
}

static void st(simtw_dt_t dt, void *base, long i, float v) {
  simtw_store(dt, (char *)base + (size_t)i * simtw_dt_size(dt), simtw_fval(v));
}

/* Rows of element type in (float, c10::Half or c10::BFloat16), computed in float (the kernels'
 * accumulate type), stored as out. */
static void softmax_rows(void *dst, const void *src, long rows, long stride, long n, int is_log,
                         simtw_dt_t in, simtw_dt_t out) {
  for (long r = 0; r < rows; r++) {
    long o = r * stride;
    float max = -INFINITY, sum = 0.0f;
    for (long i = 0; i < n; i++) {
      float x = ld(in, src, o + i);
      max = x > max ? x : max;
    }
    for (long i = 0; i < n; i++) sum += expf(ld(in, src, o + i) - max);
    /* sum >= 1 when n > 0 (the maximum's own term is 1); an empty row logs 0 into -inf, which
     * no value uses. */
    // cppcheck-suppress invalidFunctionArg
    float lse = logf(sum);
    for (long i = 0; i < n; i++) {
      float x = ld(in, src, o + i);
      st(out, dst, o + i, is_log ? x - max - lse : expf(x - max) / sum);
    }
  }
}

/* The backward: log-softmax g - exp(out) * sum(g); softmax g - out * sum(g), where PyTorch
 * passes g = grad * out (an elementwise product it launches before). g and out of type in, the
 * gradient stored as gt. */
static void softmax_bw_rows(void *gin, const void *g, const void *out, long rows, long stride,
                            long n, int is_log, simtw_dt_t in, simtw_dt_t gt) {
  for (long r = 0; r < rows; r++) {
    long o = r * stride;
    float sum = 0.0f;
    for (long i = 0; i < n; i++) sum += ld(in, g, o + i);
    for (long i = 0; i < n; i++) {
      float gr = ld(in, g, o + i), y = ld(in, out, o + i);
      st(gt, gin, o + i, is_log ? gr - expf(y) * sum : gr - y * sum);
    }
  }
}

static void run_softmax_warp(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  softmax_rows(ARG(void *, 0), ARG(const void *, 1), ARG(int, 2), ARG(int, 3), ARG(int, 4), k->p[0],
               (simtw_dt_t)k->p[1], (simtw_dt_t)k->p[2]);
}

static void run_softmax_warp_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  softmax_bw_rows(ARG(void *, 0), ARG(const void *, 1), ARG(const void *, 2), ARG(int, 3),
                  ARG(int, 4), ARG(int, 5), k->p[0], (simtw_dt_t)k->p[1], (simtw_dt_t)k->p[2]);
}

/* cunn_SoftMaxForward<ILP, float, float, float, Epilogue>(out *output, const in *input,
 * int classes), and its shared-memory variant cunn_SoftMaxForwardSmem: one block per row (grid.x
 * rows). */
static void run_cunn_softmax(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int n = ARG(int, 2);
  softmax_rows(ARG(void *, 0), ARG(const void *, 1), (long)grid.x, n, n, k->p[0], DT_F32, DT_F32);
}

/* cunn_SoftMaxBackward<ILP, float, float, float, Epilogue>(gradInput, output, gradOutput,
 * int64 classes), and cunn_SoftMaxBackwardSmem: one block per row; the epilogues are those of
 * the warp kernels (gradOutput is grad * output for softmax). */
static void run_cunn_softmax_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  long n = ARG(long, 3);
  softmax_bw_rows(ARG(void *, 0), ARG(const void *, 2), ARG(const void *, 1), (long)grid.x, n, n, k->p[0],
                  DT_F32, DT_F32);
}

/* ---- the negative log-likelihood loss (Loss.cu) ---- */

/* nll_loss_forward_reduce_cuda_kernel_2d<T, float, long>(output, total_weight, input, target,
 * weights, bool size_average, int64 nframe, ndim, n_classes, ignore_index): output =
 * -sum(w[t] x[i][t]) over the frames whose target is not ignore_index, divided by the sum of
 * those w[t] for the mean; total_weight that sum. */
static void run_nll_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  void *out = ARG(void *, 0), *tw = ARG(void *, 1);
  const void *in = ARG(const void *, 2), *w = ARG(const void *, 4);
  const int64_t *target = ARG(const int64_t *, 3);
  int size_average = ARG(unsigned char, 5) != 0;
  int64_t nframe = ARG(int64_t, 6), ndim = ARG(int64_t, 7), ignore = ARG(int64_t, 9);
  float acc = 0.0f, wsum = 0.0f;
  for (int64_t i = 0; i < nframe; i++) {
    int64_t t = target[i];
    if (t == ignore) continue;
    float cw = w ? ld(dt, w, t) : 1.0f;
    /* input * weight in the element type (c10's operator* rounds), accumulated in float */
    acc -= (float)simtw_cast(simtw_fval(ld(dt, in, i * ndim + t) * cw), dt).f;
    wsum += cw;
  }
  st(dt, tw, 0, wsum);
  st(dt, out, 0, size_average ? acc / wsum : acc);
}

/* nll_loss_backward_reduce_cuda_kernel_2d<T, long>(grad_input, grad_output, target, weights,
 * total_weight, bool size_average, int nframe, int ndim, int64 n_classes, ignore_index):
 * grad_input[i][t] = w[t] * -(grad_output (/ total_weight for the mean)); the rest stays. T is
 * float, c10::Half or c10::BFloat16 (the arithmetic in T: each operation rounds to it). */
static void run_nll_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  void *gin = ARG(void *, 0);
  const void *gout = ARG(const void *, 1), *w = ARG(const void *, 3), *tw = ARG(const void *, 4);
  const int64_t *target = ARG(const int64_t *, 2);
  int size_average = ARG(unsigned char, 5) != 0, nframe = ARG(int, 6), ndim = ARG(int, 7);
  int64_t ignore = ARG(int64_t, 9);
  float g0 = ld(dt, gout, 0);
  float g = -(size_average ? (float)simtw_cast(simtw_fval(g0 / ld(dt, tw, 0)), dt).f : g0);
  for (int i = 0; i < nframe; i++) {
    int64_t t = target[i];
    if (t != ignore) st(dt, gin, (int64_t)i * ndim + t, w ? ld(dt, w, t) * g : g);
  }
}

/* nll_loss_forward_reduce_cuda_kernel_1d<float, long>(output, total_weight, input, target,
 * weights, bool size_average, int64 n_classes, ignore_index): one frame. An ignored target gives
 * 0 and total weight 0; the mean of a zero weight is NaN. */
static void run_nll_fw_1d(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)k, (void)grid, (void)block;
  float *out = ARG(float *, 0), *tw = ARG(float *, 1);
  const float *in = ARG(const float *, 2), *w = ARG(const float *, 4);
  int64_t t = *ARG(const int64_t *, 3), ignore = ARG(int64_t, 7);
  int size_average = ARG(unsigned char, 5) != 0;
  if (t == ignore) {
    *out = 0.0f;
    *tw = 0.0f;
    return;
  }
  float cw = w ? w[t] : 1.0f;
  *tw = cw;
  *out = size_average ? (cw == 0.0f ? NAN : -in[t]) : -cw * in[t];
}

/* nll_loss_backward_reduce_cuda_kernel_1d<float, long>(grad_input, grad_output, weights, target,
 * total_weight, bool size_average, int64 n_classes, ignore_index). */
static void run_nll_bw_1d(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)k, (void)grid, (void)block;
  float *gin = ARG(float *, 0);
  const float *gout = ARG(const float *, 1), *w = ARG(const float *, 2), *tw = ARG(const float *, 4);
  int64_t t = *ARG(const int64_t *, 3), ignore = ARG(int64_t, 7);
  int size_average = ARG(unsigned char, 5) != 0;
  if (t == ignore) return;
  float g = -(size_average ? *gout / *tw : *gout);
  gin[t] = w ? w[t] * g : g;
}

/* ---- Philox and dropout ---- */

void simtw_philox(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
  uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]}, k0 = key_in[0], k1 = key_in[1];
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k0, (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k1, (uint32_t)p0};
    memcpy(c, n, sizeof c);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  memcpy(out, c, sizeof c);
}

/* curandStatePhilox4_32_10_t as curand_init(seed, subsequence, offset) leaves it: the counter's
 * high 64 bits are the subsequence, its low 64 bits offset / 4, and offset % 4 words of the first
 * block are skipped. */
typedef struct {
  uint32_t ctr[4], key[2], output[4];
  int state;
} philox_t;

static void ctr_add(uint32_t ctr[4], uint64_t n) {
  uint64_t lo = ((uint64_t)ctr[1] << 32 | ctr[0]) + n;
  if (lo < n && ++ctr[2] == 0) ctr[3]++;
  ctr[0] = (uint32_t)lo;
  ctr[1] = (uint32_t)(lo >> 32);
}

static void philox_init(philox_t *s, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  memset(s, 0, sizeof *s);
  s->key[0] = (uint32_t)seed;
  s->key[1] = (uint32_t)(seed >> 32);
  uint64_t hi = ((uint64_t)s->ctr[3] << 32 | s->ctr[2]) + subsequence;
  s->ctr[2] = (uint32_t)hi;
  s->ctr[3] = (uint32_t)(hi >> 32);
  s->state = (int)(offset & 3);
  ctr_add(s->ctr, offset / 4);
  simtw_philox(s->ctr, s->key, s->output);
}

/* The next four words of the stream (curand4): from the current output block at `state`, the
 * rest from the next block, which becomes the current one. */
static void philox_next4(philox_t *s, uint32_t w[4]) {
  uint32_t tmp[4];
  memcpy(tmp, s->output, sizeof tmp);
  ctr_add(s->ctr, 1);
  simtw_philox(s->ctr, s->key, s->output);
  for (int i = 0; i < 4; i++) w[i] = i + s->state < 4 ? tmp[i + s->state] : s->output[i + s->state - 4];
}

/* curand_uniform4: the next four words (x * 2^-32 + 2^-33 each, in float). */
static void philox_uniform4(philox_t *s, float r[4]) {
  uint32_t w[4];
  philox_next4(s, w);
  for (int i = 0; i < 4; i++) r[i] = (float)w[i] * 0x1p-32f + 0x1p-33f;
}

/* PhiloxCudaState (32 bytes in this wheel): {seed_ (value or pointer); offset_ (value or
 * pointer); uint64 offset_intragraph_; bool captured_}; unpack() reads through the pointers when
 * captured_. */
static void philox_unpack(const char *st, uint64_t *seed, uint64_t *offset) {
  uint64_t s, o, intra;
  memcpy(&s, st, 8);
  memcpy(&o, st + 8, 8);
  memcpy(&intra, st + 16, 8);
  if (st[24]) {
    const int64_t *sp = (const int64_t *)(uintptr_t)s, *op = (const int64_t *)(uintptr_t)o;
    s = (uint64_t)*sp;
    o = (uint64_t)*op + intra;
  }
  *seed = s;
  *offset = o;
}

/* fused_dropout_kernel_vec<float, float, unsigned, ADims, VEC, mask_t>(TensorInfo a, b, c,
 * unsigned totalElements, float p, PhiloxCudaState) (Dropout.cu), p the keep probability: thread
 * idx (of gridDim.x * blockDim.x) seeds Philox with (seed, idx, offset) and handles VEC elements
 * at idx * VEC, then every grid stride further; per step it draws curand_uniform4 (for VEC 2, every
 * other step reuses the last two numbers); keep = u < p; b = a * keep * (1 / p), c = keep.
 * fused_dropout_kernel<…, ADims, BDims, mask_t> (not contiguous, or VEC 1): per grid stride of
 * 4 elements one curand_uniform4, element li + k * stride uses number k, offsets by
 * IndexToOffset. */
static void run_dropout(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  simtw_ti_t a = simtw_ti_read(args[0], 4), b = simtw_ti_read(args[1], 4), c = simtw_ti_read(args[2], 4);
  uint32_t total = ARG(uint32_t, 3);
  float p = ARG(float, 4);
  uint64_t seed, offset;
  philox_unpack(args[5], &seed, &offset);
  float scale = (float)(1.0 / p);
  int vec = k->p[0], mask_u8 = k->p[1];
  uint64_t threads = (uint64_t)grid.x * block.x;
  (void)mask_u8; /* bool and uint8 masks are both one byte of 0 or 1 */
  for (uint64_t idx = 0; idx < threads; idx++) {
    philox_t s;
    philox_init(&s, seed, idx, offset);
    float r[4];
    if (vec) {
      int loop_state = 0;
      for (uint64_t li = idx * vec; li < total; li += threads * vec) {
        if (vec == 4 || loop_state == 0) {
          philox_uniform4(&s, r);
        } else {
          r[0] = r[2];
          r[1] = r[3];
          loop_state ^= 1;
        }
        for (int j = 0; j < vec && li + j < total; j++) { /* PyTorch vectorises divisible sizes only */
          float keep = r[j] < p;
          float x;
          memcpy(&x, a.data + 4 * (li + j), 4);
          float y = x * keep * scale;
          memcpy(b.data + 4 * (li + j), &y, 4);
          c.data[li + j] = (char)(keep != 0.0f);
        }
      }
    } else {
      for (uint64_t li = idx; li < total; li += threads * 4) {
        philox_uniform4(&s, r);
        for (int j = 0; j < 4; j++) {
          uint64_t e = li + (uint64_t)j * threads;
          if (e >= total) break;
          float keep = r[j] < p, x;
          memcpy(&x, a.data + 4 * simtw_ti_offset(&a, k->p[2], e), 4);
          float y = x * keep * scale;
          uint64_t bo = simtw_ti_offset(&b, k->p[3], e); /* the mask shares b's offsets */
          memcpy(b.data + 4 * bo, &y, 4);
          c.data[bo] = (char)(keep != 0.0f);
        }
      }
    }
  }
}

/* distribution_elementwise_grid_stride_kernel<float, 4, dist, transform>(int64 numel,
 * PhiloxCudaState, dist_func, transform_func) (DistributionTemplates.h), the variant for a
 * contiguous output: thread idx (of gridDim.x * blockDim.x) seeds Philox with (seed, idx,
 * offset); per grid stride of 4 elements it draws one float4 of dist_func (curand_uniform4 for
 * uniform_, curand_normal4 for normal_), element li + k * stride gets number k. The transform is
 * the lambda {char *out_data; int stride0 (bytes); {…}} writing out_data[stride0 * li]: for uniform_ its
 * inner lambda is {range, from, to} and the value rand * range + from (to becomes from), for
 * normal_ {mean, std} and rand * std + mean. curand_normal4 is Box-Muller over two words each:
 * u = x 2^-32 + 2^-33, v = y 2^-32 2π + 2^-33 2π, sqrt(-2 log u) (sin v, cos v); the device's
 * fast sine and cosine round differently from the CPU's, so the normal numbers equal the GPU's
 * only to within a few ulps. */
static void normal4(philox_t *s, float r[4]) {
  uint32_t w[4];
  philox_next4(s, w);
  const float two_pi_inv32 = 1.4629180792671596e-09f;
  for (int i = 0; i < 4; i += 2) {
    float u = (float)w[i] * 0x1p-32f + 0x1p-33f, v = (float)w[i + 1] * two_pi_inv32 + two_pi_inv32 / 2;
    float sq = sqrtf(-2.0f * logf(u));
    r[i] = sinf(v) * sq;
    r[i + 1] = cosf(v) * sq;
  }
}

/* k->p[0]: the distribution (DIST_*); k->p[1]: the output's element type; k->p[2]: the
 * transform is lambda #2 (an output that is not trivially 1-d, a 0-dim tensor say): its
 * captures are {OffsetCalculator<1> offset_calc; char *out_data; transform} and element e goes
 * to out_data + offset_calc.get(e)[0], where lambda #1's are {char *out_data; int stride0;
 * transform} and e goes to out_data + stride0 * e. The transform's own captures: uniform_
 * {opmath range; T from; T to} (the value is static_cast<T>(rand * range + from), and `to`
 * becomes `from`), normal_ {float mean; float std} (static_cast<T>(rand * std + mean)),
 * bernoulli_ {double p} (static_cast<T>(rand < p)), random_ none (below). */
enum { DIST_UNIFORM, DIST_NORMAL, DIST_BERNOULLI, DIST_RANDOM64 };

typedef struct {
  char *out;
  const char *oc, *inner; /* oc: NULL for lambda #1; inner: the transform's captures */
  int stride0;
} dist_out_t;

static dist_out_t dist_out(const simtw_nn_t *k, const char *tf) {
  dist_out_t d = {0};
  if (k->p[2]) {
    size_t at = (simtw_oc_size(1) + 7) & ~(size_t)7;
    d.oc = tf;
    memcpy(&d.out, tf + at, 8);
    d.inner = tf + at + 8;
  } else {
    memcpy(&d.out, tf, 8);
    memcpy(&d.stride0, tf + 8, 4);
    d.inner = tf + 12;
  }
  return d;
}

static char *dist_at(const dist_out_t *d, uint64_t e) {
  return d->oc ? d->out + simtw_oc_get(d->oc, 1, 0, (uint32_t)e) : d->out + (int64_t)d->stride0 * (int64_t)e;
}

static void run_distribution(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  int64_t numel = ARG(int64_t, 0);
  uint64_t seed, offset;
  philox_unpack(args[1], &seed, &offset);
  dist_out_t d = dist_out(k, args[3]);
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  size_t es = simtw_dt_size(dt);
  float a, b;
  double p = 0;
  memcpy(&a, d.inner, 4);
  memcpy(&b, d.inner + 4, 4);
  simtw_val_t from = simtw_load(dt, d.inner + 4), to = simtw_load(dt, d.inner + 4 + es);
  /* a double after lambda #1's int stride0 sits at the next 8-byte boundary */
  if (k->p[0] == DIST_BERNOULLI) memcpy(&p, d.inner + (k->p[2] ? 0 : 4), 8);
  uint64_t threads = (uint64_t)grid.x * block.x;
  for (uint64_t idx = 0; idx < threads; idx++) {
    philox_t s;
    philox_init(&s, seed, idx, offset);
    for (uint64_t li = idx; li < (uint64_t)numel; li += threads * 4) {
      float r[4];
      if (k->p[0] == DIST_NORMAL) normal4(&s, r);
      else philox_uniform4(&s, r);
      for (int j = 0; j < 4; j++) {
        uint64_t e = li + (uint64_t)j * threads;
        if (e >= (uint64_t)numel) break;
        simtw_val_t v;
        if (k->p[0] == DIST_NORMAL) {
          v = simtw_cast(simtw_fval(fmaf(r[j], b, a)), dt); /* {mean, std} */
        } else if (k->p[0] == DIST_BERNOULLI) {
          v = simtw_cast(simtw_fval((double)r[j] < p), dt);
        } else { /* {range, from, to} */
          v = simtw_cast(simtw_fval(fmaf(r[j], a, (float)from.f)), dt);
          if (v.f == to.f) v = from;
        }
        simtw_store(dt, dist_at(&d, e), v);
      }
    }
  }
}

/* random_ on int64 (random_kernel's 64-bit path): distribution_elementwise_grid_stride_kernel<
 * unsigned long, 2, …> draws curand4 per grid stride of 2 elements, as two 64-bit words (x << 32 |
 * y, z << 32 | w), and the transform stores uniform_int<int64_t>: the word modulo 2^63. */
static void run_random64(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  int64_t numel = ARG(int64_t, 0);
  uint64_t seed, offset;
  philox_unpack(args[1], &seed, &offset);
  dist_out_t d = dist_out(k, args[3]);
  uint64_t threads = (uint64_t)grid.x * block.x;
  for (uint64_t idx = 0; idx < threads; idx++) {
    philox_t s;
    philox_init(&s, seed, idx, offset);
    for (uint64_t li = idx; li < (uint64_t)numel; li += threads * 2) {
      uint32_t w[4];
      philox_next4(&s, w);
      uint64_t r[2] = {(uint64_t)w[0] << 32 | w[1], (uint64_t)w[2] << 32 | w[3]};
      for (int j = 0; j < 2; j++) {
        uint64_t e = li + (uint64_t)j * threads;
        if (e >= (uint64_t)numel) break;
        int64_t v = (int64_t)(r[j] % (UINT64_C(1) << 63));
        memcpy(dist_at(&d, e), &v, 8);
      }
    }
  }
}

/* ---- index_select (Indexing.cu) ---- */

/* indexSelectSmallIndex<T, long, unsigned, DstDim, SrcDim, IdxDim>(TensorInfo dst, src, indices,
 * int dstSelectDim, int srcSelectDim, unsigned innerSize, int64 srcSelectDimSize) and
 * indexSelectLargeIndex<…, IndexIsMajor>(dst, src, indices, dstSelectDim, srcSelectDim,
 * unsigned totalSize, unsigned innerSize, int64 srcSelectDimSize): for every index position j
 * and element e of the slice (dst and src have their select dimension collapsed to size 1),
 * dst[e + j * dst.stride[dstSelectDim]] = src[e + indices[j] * src.stride[srcSelectDim]]. */
static void run_index_select(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_ti_t dst = simtw_ti_read(args[0], 4), src = simtw_ti_read(args[1], 4), idx = simtw_ti_read(args[2], 4);
  int dsd = ARG(int, 3), ssd = ARG(int, 4);
  uint32_t inner = ARG(uint32_t, k->p[0] ? 6 : 5);
  size_t es = (size_t)k->p[1];
  uint64_t nidx = simtw_ti_numel(&idx);
  for (uint64_t j = 0; j < nidx; j++) {
    int64_t si;
    memcpy(&si, idx.data + 8 * simtw_ti_offset(&idx, k->p[4], j), 8);
    for (uint64_t e = 0; e < inner; e++) {
      uint64_t d = simtw_ti_offset(&dst, k->p[2], e) + j * dst.strides[dsd];
      uint64_t s = simtw_ti_offset(&src, k->p[3], e) + (uint64_t)si * src.strides[ssd];
      memcpy(dst.data + es * d, src.data + es * s, es);
    }
  }
}

/* ---- torch.cat (Shape.cu) ---- */

/* CatArrayBatchedCopy*<OpaqueType<es>, unsigned, Dims, batch, stride_size[, alignment]>(T *output,
 * CatArrInputTensorMetadata inputs {const T *input[batch]; unsigned offset[batch],
 * dimSize[batch], nElements[batch]; bool isContiguous[batch]; TensorSizeStride<unsigned, 4>
 * tensorStride[stride_size]}, TensorSizeStride<unsigned, 4> os {sizes[4], strides[4]},
 * int concatDim, unsigned dimStride): blockIdx.y picks the input; its element i goes to
 * output[offset * dimStride + CatArrIndexToOffset(os, dimSize, i)], read at i when contiguous.
 * p[4], p[5]: the vectorized variant's alignment and elements per vector, else 0. */
static uint64_t cat_offset(const uint32_t *sizes, const uint32_t *strides, uint32_t dim_size,
                           int concat_dim, int dims, uint64_t i) {
  uint64_t off = 0;
  for (int d = dims - 1; d >= 1; d--) {
    uint32_t n = d == concat_dim ? dim_size : sizes[d];
    off += (i % n) * strides[d];
    i /= n;
  }
  return off + i * strides[0];
}

static void run_cat(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  int es = k->p[0], dims = k->p[1], batch = k->p[2], nstride = k->p[3];
  char *out = ARG(char *, 0);
  const char *m = args[1];
  const char *os = args[2];
  int concat_dim = ARG(int, 3);
  uint32_t dim_stride = ARG(uint32_t, 4), osz[4], ost[4];
  memcpy(osz, os, 16);
  memcpy(ost, os + 16, 16);
  const char *offs = m + 8 * batch, *dsz = offs + 4 * batch, *nel = dsz + 4 * batch, *contig = nel + 4 * batch;
  const char *tss = m + ((21 * (size_t)batch + 3) & ~(size_t)3);
  for (unsigned y = 0; y < grid.y && (int)y < batch; y++) {
    const char *in;
    uint32_t off, dim_size, n;
    memcpy(&in, m + 8 * y, 8);
    memcpy(&off, offs + 4 * y, 4);
    memcpy(&dim_size, dsz + 4 * y, 4);
    memcpy(&n, nel + 4 * y, 4);
    uint32_t isz[4], ist[4];
    const char *ts = tss + 32 * (nstride > 1 ? y : 0);
    memcpy(isz, ts, 16);
    memcpy(ist, ts + 16, 16);
    if (k->p[4]) {
      /* CatArrayBatchedCopy_vectorized<…, alignment, elems_per_vec>: the last parameter is the
       * output's trailing size (its stride at the concatenated dimension), and the kernel works
       * in vectors of `alignment` bytes: the host flattened the dimensions from the
       * concatenated one on (Dims = dim + 1) and gave the output's sizes and strides in
       * vectors; offset and dimSize are scaled by trailing / elems_per_vec. Inputs are
       * contiguous. */
      uint32_t align = (uint32_t)k->p[4], epv = (uint32_t)k->p[5], trailing = dim_stride;
      uint32_t voff = off * trailing / epv, vdim = dim_size * trailing / epv;
      for (uint64_t v = 0; v < n / epv; v++) {
        uint64_t o = (uint64_t)voff * align + cat_offset(osz, ost, vdim, concat_dim, dims, v) * align;
        memcpy(out + o, in + align * v, align);
      }
      continue;
    }
    for (uint64_t i = 0; i < n; i++) {
      uint64_t o = (uint64_t)off * dim_stride + cat_offset(osz, ost, dim_size, concat_dim, dims, i);
      uint64_t s = contig[y] ? i : cat_offset(isz, ist, dim_size, concat_dim, dims, i);
      memcpy(out + (size_t)es * o, in + (size_t)es * s, (size_t)es);
    }
  }
}

/* ---- layer norm and RMS norm (layer_norm_kernel.cu) ---- */

/* The kernels are templated <T, float, rms_norm> with T float, c10::Half or c10::BFloat16 (p[1]):
 * X, Y, gamma, beta and the gradients of type T, mean and rstd float, all arithmetic in float
 * (T_ACC), rounded to T at the store. rms_norm (p[0]) drops the mean: the rows are scaled by
 * 1 / sqrt(mean square + eps) and there is no beta; mean is then not read or written (PyTorch
 * passes NULL). */

/* Mean and 1 / sqrt(biased variance + eps) of a row of n values of type dt (rms_norm: mean 0,
 * the variance is the mean square). */
static void row_moments(simtw_dt_t dt, const void *x, long n, float eps, int rms, float *mean, float *rstd) {
  double s = 0.0, s2 = 0.0;
  for (long i = 0; i < n; i++) s += ld(dt, x, i);
  float m = rms ? 0.0f : (float)(s / (double)n);
  for (long i = 0; i < n; i++) {
    double d = (double)ld(dt, x, i) - m;
    s2 += d * d;
  }
  float var = (float)(s2 / (double)n);
  *mean = m;
  *rstd = 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
}

/* The element at i of a row (or 1 / 0 when the optional vector is NULL). */
static float ld_or(simtw_dt_t dt, const void *p, long i, float dflt) { return p ? ld(dt, p, i) : dflt; }

static const void *row_at(simtw_dt_t dt, const void *base, long r, long n) {
  return (const char *)base + (size_t)r * (size_t)n * simtw_dt_size(dt);
}

/* vectorized_layer_norm_kernel<T, float, rms_norm>(int N, float eps, X, gamma, beta, mean, rstd,
 * Y): one block per row (grid.x rows); Y = gamma * (rstd * (X - mean)) + beta, gamma and beta
 * optional (NULL). */
static void run_ln_vec(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  int n = ARG(int, 0), rms = k->p[0];
  float eps = ARG(float, 1);
  const void *x = ARG(const void *, 2), *g = ARG(const void *, 3), *b = ARG(const void *, 4);
  float *mean = ARG(float *, 5), *rstd = ARG(float *, 6);
  void *y = ARG(void *, 7);
  for (unsigned r = 0; r < grid.x; r++) {
    float m, rs;
    const void *xr = row_at(dt, x, r, n);
    row_moments(dt, xr, n, eps, rms, &m, &rs);
    if (mean && !rms) mean[r] = m;
    if (rstd) rstd[r] = rs;
    for (int i = 0; i < n; i++) {
      float v = rs * (ld(dt, xr, i) - m);
      if (g) v = ld(dt, g, i) * v;
      if (b) v += ld(dt, b, i);
      st(dt, y, (long)r * n + i, v);
    }
  }
}

/* RowwiseMomentsCUDAKernel<T, float, rms_norm>(int64 M, int64 N, float eps, X, mean, rstd): M
 * rows of N (this wheel's kernels take the row count and stride over rows). */
static void run_ln_moments(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  int64_t m = ARG(int64_t, 0), n = ARG(int64_t, 1);
  float eps = ARG(float, 2);
  const void *x = ARG(const void *, 3);
  float *mean = ARG(float *, 4), *rstd = ARG(float *, 5);
  for (int64_t r = 0; r < m; r++) {
    float mu, rs;
    row_moments(dt, row_at(dt, x, r, n), n, eps, k->p[0], &mu, &rs);
    if (!k->p[0]) mean[r] = mu;
    rstd[r] = rs;
  }
}

/* LayerNormForwardCUDAKernel<T, float, rms_norm>(int64 M, int64 N, X, mean, rstd, gamma, beta,
 * Y): Y = (X - mean) * rstd * gamma + beta; rms_norm: X * rstd * gamma. */
static void run_ln_forward(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  int rms = k->p[0];
  int64_t m = ARG(int64_t, 0), n = ARG(int64_t, 1);
  const void *x = ARG(const void *, 2);
  const float *mean = ARG(const float *, 3), *rstd = ARG(const float *, 4);
  const void *g = ARG(const void *, 5), *b = ARG(const void *, 6);
  void *y = ARG(void *, 7);
  for (int64_t r = 0; r < m; r++)
    for (int64_t i = 0; i < n; i++) {
      float xv = ld(dt, x, r * n + i), gv = ld_or(dt, g, i, 1.0f);
      float v = rms ? xv * rstd[r] * gv : (xv - mean[r]) * rstd[r] * gv + ld_or(dt, b, i, 0.0f);
      st(dt, y, r * n + i, v);
    }
}

/* layer_norm_grad_input_kernel<T, float, rms_norm>(dY, X, mean, rstd, gamma, dX, int N) and its
 * _vectorized twin: one block per row (grid.x rows); with g = dY * gamma (gamma NULL: 1),
 * xhat = (X - mean) * rstd, dX = (N g - xhat sum(g xhat) - sum(g)) * rstd / N; rms_norm: mean 0
 * and no sum(g) term. */
static void run_ln_grad_input(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  int rms = k->p[0];
  const void *dy = ARG(const void *, 0), *x = ARG(const void *, 1);
  const float *mean = ARG(const float *, 2), *rstd = ARG(const float *, 3);
  const void *gamma = ARG(const void *, 4);
  void *dx = ARG(void *, 5);
  int n = ARG(int, 6);
  for (unsigned r = 0; r < grid.x; r++) {
    const void *dyr = row_at(dt, dy, r, n), *xr = row_at(dt, x, r, n);
    float s1 = 0.0f, s2 = 0.0f, m = rms ? 0.0f : mean[r], rs = rstd[r];
    for (int i = 0; i < n; i++) {
      float gv = ld_or(dt, gamma, i, 1.0f), c_loss = ld(dt, dyr, i);
      if (!rms) s1 += c_loss * gv;
      s2 += c_loss * gv * (ld(dt, xr, i) - m) * rs;
    }
    float fh = (float)n, term = (1.0f / fh) * rs;
    for (int i = 0; i < n; i++) {
      float gv = ld_or(dt, gamma, i, 1.0f);
      float f = fh * gv * ld(dt, dyr, i);
      f -= (ld(dt, xr, i) - m) * rs * s2;
      if (!rms) f -= s1;
      st(dt, dx, (long)r * n + i, f * term);
    }
  }
}

/* GammaBetaBackwardCUDAKernelTemplate<T, float, block_dim_x, block_dim_y, rows_per_block_y,
 * partial_reduction, aligned_grid, rms_norm>(int64 M, int64 N, dY, X, mean, rstd, dgamma,
 * dbeta): the column sums dgamma[j] = sum_i dY[i][j] (X[i][j] - mean[i]) rstd[i] and
 * dbeta[j] = sum_i dY[i][j] (rms_norm: mean 0, no dbeta), either pointer NULL when not wanted.
 * With partial_reduction each thread row ty = blockIdx.y * blockDim.y + threadIdx.y writes its
 * own sums to row ty of dgamma and dbeta (PyTorch sums those rows after): its rows are the tiles
 * of rows_per_block_y starting at blockIdx.y's, every gridDim.y-th, each thread taking
 * rows_per_block_y / blockDim.y consecutive rows of a tile; with a single thread row that is the
 * whole column. Without it the block reduces its thread rows into row 0. */
static void run_ln_gamma_beta(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  int rms = k->p[0], partial = k->p[2], rows_per_block = k->p[3];
  int64_t m = ARG(int64_t, 0), n = ARG(int64_t, 1);
  const void *dy = ARG(const void *, 2), *x = ARG(const void *, 3);
  const float *mean = ARG(const float *, 4), *rstd = ARG(const float *, 5);
  void *dg = ARG(void *, 6), *db = ARG(void *, 7);
  unsigned gy = partial ? grid.y : 1, by = partial ? block.y : 1;
  int64_t rows_per_thread = partial ? rows_per_block / (int)block.y : rows_per_block;
  int64_t tile_step = partial ? (int64_t)rows_per_block * grid.y : rows_per_block;
  for (unsigned yb = 0; yb < gy; yb++)
    for (unsigned ty = 0; ty < by; ty++) {
      int64_t out_row = (int64_t)yb * by + ty;
      for (int64_t j = 0; j < n; j++) {
        float sg = 0.0f, sb = 0.0f;
        for (int64_t t0 = (int64_t)yb * rows_per_block; t0 < m; t0 += tile_step)
          for (int64_t i = t0 + ty * rows_per_thread; i < t0 + (ty + 1) * rows_per_thread && i < m; i++) {
            float d = ld(dt, dy, i * n + j);
            sg += d * (ld(dt, x, i * n + j) - (rms ? 0.0f : mean[i])) * rstd[i];
            sb += d;
          }
        if (dg) st(dt, dg, out_row * n + j, sg);
        if (db && !rms) st(dt, db, out_row * n + j, sb);
      }
    }
}

/* ---- embedding backward (Embedding.cu) ---- */

/* embedding_backward_feature_kernel<T, float, index_t>(const index_t *indices, const T *grad,
 * T *grad_weight, int n, int64 stride, int padding_idx), T float, c10::Half or c10::BFloat16
 * (p[1]), index_t int or int64 (p[0] bytes): the positions are taken in chunks of blockDim.y
 * consecutive ones; within a chunk the gradients of the positions naming the same row (not
 * padding_idx) are summed in float, in position order, and that sum, rounded to T, is added (in
 * T) to the row of grad_weight (rows of stride values); the chunks in order. */
static void run_embedding_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  const char *idx = ARG(const char *, 0);
  const void *grad = ARG(const void *, 1);
  void *gw = ARG(void *, 2);
  int n = ARG(int, 3), pad = ARG(int, 5), is = k->p[0];
  int64_t stride = ARG(int64_t, 4);
  int chunk = block.y ? (int)block.y : 1;
  for (int c0 = 0; c0 < n; c0 += chunk) {
    int c1 = c0 + chunk < n ? c0 + chunk : n;
    for (int j = c0; j < c1; j++) {
      int64_t row = is == 8 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
      int first = 1;
      for (int i = c0; i < j && first; i++)
        first = (is == 8 ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i]) != row;
      /* the kernel compares the indices as int */
      if ((int)row == pad || !first) continue;
      for (int64_t f = 0; f < stride; f++) {
        float acc = ld(dt, grad, (long)((int64_t)j * stride + f));
        for (int i = j + 1; i < c1; i++)
          if ((is == 8 ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i]) == row)
            acc += ld(dt, grad, (long)((int64_t)i * stride + f));
        long at = (long)(row * stride + f);
        float part = (float)simtw_cast(simtw_fval(acc), dt).f;
        st(dt, gw, at, ld(dt, gw, at) + part);
      }
    }
  }
}

/* ---- triu / tril ---- */

/* triu_tril_kernel<T, int, upper, elements_per_thread, inplace>(TensorInfo result, self,
 * int64 k, int64 N_padded, int last_dim_padded): over the last two dimensions (row, col),
 * result = self where col - row >= k (upper) or <= k (lower), else 0; in place only the zeros
 * are written. */
static void run_triu(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_ti_t res = simtw_ti_read(args[0], 4), self = simtw_ti_read(args[1], 4);
  int64_t kk = ARG(int64_t, 2);
  int upper = k->p[0], inplace = k->p[1];
  size_t es = (size_t)k->p[2];
  if (res.dims < 2) return;
  uint64_t n = simtw_ti_numel(&res);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t ro = 0, so = 0, rest = i;
    int64_t col = 0, row = 0;
    for (int d = res.dims - 1; d >= 0; d--) {
      uint64_t c = rest % res.sizes[d];
      rest /= res.sizes[d];
      if (d == res.dims - 1) col = (int64_t)c;
      if (d == res.dims - 2) row = (int64_t)c;
      ro += c * res.strides[d];
      so += c * self.strides[d];
    }
    int keep = upper ? col - row >= kk : col - row <= kk;
    if (keep && !inplace) memcpy(res.data + es * ro, self.data + es * so, es);
    if (!keep) memset(res.data + es * ro, 0, es);
  }
}

/* ---- resolution ---- */

static int after_int(const char *s, const char *prefix, int *v) {
  const char *p = strstr(s, prefix);
  if (!p) return 0;
  *v = atoi(p + strlen(prefix));
  return 1;
}

/* The n-th (from 0) comma-separated template argument after `open` (a '<'), as an int. */
static int targ(const char *open, int n, int *v) {
  const char *p = open;
  int depth = 0;
  for (p = open + 1; *p; p++) {
    if (depth == 0 && n == 0) {
      while (*p == ' ') p++;
      if (strncmp(p, "true", 4) == 0) *v = 1;
      else if (strncmp(p, "false", 5) == 0) *v = 0;
      else *v = atoi(p);
      return 1;
    }
    if (*p == '<') depth++;
    else if (*p == '>') {
      if (depth == 0) return 0;
      depth--;
    } else if (*p == ',' && depth == 0) {
      n--;
    }
  }
  return 0;
}

#define DIST_PREFIX \
  "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, at::native::templates::cuda::"
#define DIST64_PREFIX                                                                              \
  "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<unsigned long, 2, "   \
  "at::native::templates::cuda::random_kernel<"

/* Which of distribution_nullary_kernel's two transforms the kernel dm ends with: 1 (a trivially
 * 1-d output), 2 (through an offset calculator), else 0; acc: the accumulation type's spelling. */
static int dist_lambda(const char *dm, const char *acc) {
  char tail[64];
  size_t n = strlen(dm);
  for (int v = 1; v <= 2; v++) {
    snprintf(tail, sizeof tail, "{lambda(int, %s)#%d})", acc, v);
    if (n > strlen(tail) && strcmp(dm + n - strlen(tail), tail) == 0) return v;
  }
  return 0;
}

/* amp_update_scale_cuda_kernel(float *scale, int *growth_tracker, const float *found_inf,
 * double growth_factor, double backoff_factor, int growth_interval), one thread (GradScaler's
 * update): after an inf or NaN the scale is multiplied by backoff_factor (in double, stored as
 * float) and the tracker reset; else the tracker counts successful steps, and at
 * growth_interval the scale grows by growth_factor when the product stays finite. */
static void run_amp_update_scale(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)k, (void)grid, (void)block;
  float *scale = ARG(float *, 0);
  int *tracker = ARG(int *, 1);
  const float *found_inf = ARG(const float *, 2);
  double growth = ARG(double, 3), backoff = ARG(double, 4);
  int interval = ARG(int, 5);
  if (*found_inf != 0.0f) {
    *scale = (float)((double)*scale * backoff);
    *tracker = 0;
    return;
  }
  int successful = *tracker + 1;
  if (successful == interval) {
    float grown = (float)((double)*scale * growth);
    if (isfinite(grown)) *scale = grown;
    *tracker = 0;
  } else {
    *tracker = successful;
  }
}

/* The warp softmax kernels' <input_t, output_t, float, …>: float, c10::Half or c10::BFloat16
 * each (into p[1] and p[2]), accumulated in float. */
static int softmax_types(const char *s, simtw_nn_t *k) {
  const char *e;
  simtw_dt_t in = simtw_dt_parse(s, &e), out;
  if (!simtw_dt_is_float(in) || in == DT_F64 || strncmp(e, ", ", 2) != 0) return 0;
  out = simtw_dt_parse(e + 2, &e);
  if (!simtw_dt_is_float(out) || out == DT_F64 || strncmp(e, ", float, ", 9) != 0) return 0;
  k->p[1] = in, k->p[2] = out;
  return 1;
}

/* The element type of the 2-d nll_loss kernels (float, c10::Half, c10::BFloat16) into p[1],
 * followed by the rest of their template arguments. */
static int nll_type(const char *s, const char *rest, simtw_nn_t *k) {
  const char *e;
  simtw_dt_t dt = simtw_dt_parse(s, &e);
  if (dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) return 0;
  k->p[1] = dt;
  return strncmp(e, rest, strlen(rest)) == 0;
}

/* The layer norm kernels' <T, float, ...> (p at the kernel's name): T float, c10::Half or
 * c10::BFloat16 into p[1], the accumulate type float. */
static int ln_types(const char *p, simtw_nn_t *k) {
  const char *e;
  simtw_dt_t dt = simtw_dt_parse(strchr(p, '<') + 1, &e);
  if (dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) return 0;
  k->p[1] = dt;
  return strncmp(e, ", float, ", 9) == 0;
}

int simtw_nn_resolve(const char *dm, simtw_nn_t *k) {
  const char *p;
  int v;
  memset(k, 0, sizeof *k);
  if ((p = strstr(dm, "softmax_warp_forward<")) && softmax_types(strchr(p, '<') + 1, k) &&
      targ(strchr(p, '<'), 4, &k->p[0]) && targ(strchr(p, '<'), 5, &v) && v == 0 &&
      strncmp(dm, "void (anonymous namespace)::softmax_warp_forward<", 49) == 0) {
    k->run = run_softmax_warp;
  } else if ((p = strstr(dm, "softmax_warp_backward<")) && softmax_types(strchr(p, '<') + 1, k) &&
             targ(strchr(p, '<'), 4, &k->p[0]) && targ(strchr(p, '<'), 5, &v) && v == 0 &&
             strncmp(dm, "void (anonymous namespace)::softmax_warp_backward<", 50) == 0) {
    k->run = run_softmax_warp_bw;
  } else if (((p = strstr(dm, "::cunn_SoftMaxForward<")) || (p = strstr(dm, "::cunn_SoftMaxForwardSmem<"))) &&
             strstr(p, ", float, float, float, at::native::(anonymous namespace)::")) {
    k->p[0] = strstr(p, "LogSoftMaxForwardEpilogue>") != NULL;
    if (k->p[0] || strstr(p, "::SoftMaxForwardEpilogue>")) k->run = run_cunn_softmax;
  } else if (((p = strstr(dm, "::cunn_SoftMaxBackward<")) || (p = strstr(dm, "::cunn_SoftMaxBackwardSmem<"))) &&
             strstr(p, ", float, float, float, at::native::(anonymous namespace)::")) {
    k->p[0] = strstr(p, "LogSoftMaxBackwardEpilogue>") != NULL;
    if (k->p[0] || strstr(p, "::SoftMaxBackwardEpilogue>")) k->run = run_cunn_softmax_bw;
  } else if ((p = strstr(dm, "::nll_loss_forward_reduce_cuda_kernel_2d<")) &&
             nll_type(p + 41, ", float, long>(", k)) {
    k->run = run_nll_fw;
  } else if (strstr(dm, "::nll_loss_forward_reduce_cuda_kernel_1d<float, long>(")) {
    k->run = run_nll_fw_1d;
  } else if (strstr(dm, "::nll_loss_backward_reduce_cuda_kernel_1d<float, long>(")) {
    k->run = run_nll_bw_1d;
  } else if ((p = strstr(dm, "::nll_loss_backward_reduce_cuda_kernel_2d<")) &&
             nll_type(p + 42, ", long>(", k)) {
    k->run = run_nll_bw;
  } else if ((p = strstr(dm, "::fused_dropout_kernel_vec<float, float, unsigned int, ")) && targ(strchr(p, '<'), 4, &k->p[0])) {
    k->p[1] = strstr(p, ", unsigned char>(") != NULL;
    if (k->p[0] == 2 || k->p[0] == 4) k->run = run_dropout;
  } else if ((p = strstr(dm, "::fused_dropout_kernel<float, float, unsigned int, ")) && targ(strchr(p, '<'), 3, &k->p[2]) &&
             targ(strchr(p, '<'), 4, &k->p[3])) {
    k->p[0] = 0;
    k->run = run_dropout;
  } else if (strncmp(dm, DIST_PREFIX, strlen(DIST_PREFIX)) == 0 && (v = dist_lambda(dm, "float")) != 0) {
    /* uniform_, normal_ and bernoulli_(p) into float, c10::Half or c10::BFloat16 */
    k->p[2] = v == 2;
    const char *t = dm + strlen(DIST_PREFIX), *rest;
    int dt = DT_NONE;
    if ((rest = simtw_dt_float_then(strncmp(t, "uniform_and_transform<", 22) ? NULL : t + 22, ", float, ", &dt))) {
      if (strstr(rest, "templates::cuda::uniform_kernel<")) k->p[0] = DIST_UNIFORM, k->run = run_distribution;
      else if (strstr(rest, "templates::cuda::bernoulli_kernel<")) k->p[0] = DIST_BERNOULLI, k->run = run_distribution;
    } else if ((rest = simtw_dt_float_then(strncmp(t, "normal_and_transform<", 21) ? NULL : t + 21, ", float, ", &dt)) &&
               strstr(rest, "templates::cuda::normal_kernel<")) {
      k->p[0] = DIST_NORMAL, k->run = run_distribution;
    }
    k->p[1] = dt;
  } else if (strncmp(dm, DIST64_PREFIX, strlen(DIST64_PREFIX)) == 0 && (v = dist_lambda(dm, "unsigned long")) != 0 &&
             strstr(dm, "::distribution_nullary_kernel<long, unsigned long, ulonglong2, ")) {
    /* random_ on int64 */
    k->p[0] = DIST_RANDOM64, k->p[1] = DT_I64, k->p[2] = v == 2, k->run = run_random64;
  } else if ((p = strstr(dm, "::indexSelectSmallIndex<")) || (p = strstr(dm, "::indexSelectLargeIndex<"))) {
    const char *o = strchr(p, '<');
    const char *e;
    simtw_dt_t dt = simtw_dt_parse(o + 1, &e);
    k->p[0] = strstr(p, "LargeIndex") != NULL;
    k->p[1] = (int)simtw_dt_size(dt);
    if (dt != DT_NONE && strncmp(e, ", long, unsigned int, ", 22) == 0 && targ(o, 3, &k->p[2]) &&
        targ(o, 4, &k->p[3]) && targ(o, 5, &k->p[4]))
      k->run = run_index_select;
  } else if ((p = strstr(dm, "::CatArrayBatchedCopy")) && after_int(p, "OpaqueType<", &k->p[0]) &&
             strstr(p, ">, unsigned int, ")) {
    /* <OpaqueType<es>, unsigned int, Dims, batch, stride_size, …> */
    const char *o = strchr(p, '<');
    if (targ(o, 2, &k->p[1]) && targ(o, 3, &k->p[2]) && targ(o, 4, &k->p[3]) && k->p[1] >= 1 && k->p[1] <= 4 &&
        (!strstr(p, "::CatArrayBatchedCopy_vectorized<") ||
         (targ(o, 5, &k->p[4]) && targ(o, 6, &k->p[5]) && k->p[4] > 0 && k->p[5] > 0 && k->p[4] % k->p[5] == 0)))
      k->run = run_cat;
  } else if ((p = strstr(dm, "::vectorized_layer_norm_kernel<")) && ln_types(p, k) && targ(strchr(p, '<'), 2, &k->p[0])) {
    k->run = run_ln_vec;
  } else if ((p = strstr(dm, "::RowwiseMomentsCUDAKernel<")) && ln_types(p, k) && targ(strchr(p, '<'), 2, &k->p[0])) {
    k->run = run_ln_moments;
  } else if ((p = strstr(dm, "::LayerNormForwardCUDAKernel<")) && ln_types(p, k) && targ(strchr(p, '<'), 2, &k->p[0])) {
    k->run = run_ln_forward;
  } else if (((p = strstr(dm, "::layer_norm_grad_input_kernel<")) || (p = strstr(dm, "::layer_norm_grad_input_kernel_vectorized<"))) &&
             ln_types(p, k) && targ(strchr(p, '<'), 2, &k->p[0])) {
    k->run = run_ln_grad_input;
  } else if ((p = strstr(dm, "::GammaBetaBackwardCUDAKernelTemplate<")) && ln_types(p, k) && targ(strchr(p, '<'), 4, &k->p[3]) &&
             targ(strchr(p, '<'), 5, &k->p[2]) && targ(strchr(p, '<'), 7, &k->p[0]) && k->p[3] > 0) {
    k->run = run_ln_gamma_beta;
  } else if ((p = strstr(dm, "::embedding_backward_feature_kernel<")) && ln_types(p, k)) {
    /* <T, float, int|long> */
    const char *e = strstr(p, ", float, ") + 9;
    k->p[0] = strncmp(e, "long>(", 6) == 0 ? 8 : strncmp(e, "int>(", 5) == 0 ? 4 : 0;
    if (k->p[0]) k->run = run_embedding_bw;
  } else if ((p = strstr(dm, "at::native::triu_tril_kernel<")) && strstr(p, ", int, ")) {
    const char *o = strchr(p, '<'), *e;
    simtw_dt_t dt = simtw_dt_parse(o + 1, &e);
    k->p[2] = (int)simtw_dt_size(dt);
    if (dt != DT_NONE && targ(o, 2, &k->p[0]) && targ(o, 4, &k->p[1])) k->run = run_triu;
  } else if (strcmp(dm, "at::native::amp_update_scale_cuda_kernel(float*, int*, float const*, double, double, int)") == 0) {
    k->run = run_amp_update_scale;
  }
  if (k->run) return 1;
  return simtw_conv_resolve(dm, k) || simtw_norm_resolve(dm, k) || simtw_rnn_resolve(dm, k) ||
         simtw_attn_resolve(dm, k);
}
