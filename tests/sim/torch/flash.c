/* flash.c — CPU twins of the FlashAttention-2 kernels that PyTorch's flash backend of
 * F.scaled_dot_product_attention launches (aten/src/ATen/native/transformers/cuda/flash_attn,
 * namespace pytorch_flash), in cutlass::half_t and cutlass::bfloat16_t:
 *
 *   flash_fwd_kernel<Traits, Is_dropout, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K,
 *     Is_softcap, Return_softmax>(Flash_fwd_params): out and softmax_lse;
 *   flash_fwd_splitkv_kernel<Traits, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K,
 *     Is_softcap, Split, Append_KV>(Flash_fwd_params) and flash_fwd_splitkv_combine_kernel<Traits,
 *     kBlockM, Log_max_splits, Is_even_K>(Flash_fwd_params), which the forward launches instead
 *     when it splits the keys over num_splits slices (few queries, many keys): the slices'
 *     partial outputs and log-sum-exps (oaccum, softmax_lseaccum), then their combination;
 *   flash_bwd_dot_do_o_kernel<Clear_dQaccum, Traits>(Flash_bwd_params): D = rowsum(dO * O)
 *     into dsoftmax_sum, and zeroes dq_accum when Clear_dQaccum;
 *   flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Traits, Is_dropout, Is_causal, Is_local,
 *     Has_alibi, Is_even_MN, Is_even_K, Is_softcap>(Flash_bwd_params): dK and dV, and dQ
 *     (unscaled, float) added into dq_accum;
 *   flash_bwd_convert_dq_kernel<Traits>(Flash_bwd_params, int nsplits): dQ = the sum of the
 *     nsplits dq_accum slices times scale_softmax_rp_dropout, rounded to the element type.
 *
 * The parameters are one structure passed by value (Flash_fwd_params, 472 bytes;
 * Flash_bwd_params, which extends it, 648), read at the offsets of the FlashAttention 2.6
 * layout PyTorch carries (flash.h: 64-bit strides; window sizes, softcap, the Philox state with
 * the seed and offset pointers, num_splits, the ALiBi pointer and stride, then one more 8-byte
 * field, which the twins do not read, closing the forward part at 472 bytes). The wheel's
 * parameter sizes agree, and so did every field dumped from the wheel's launches (pointers,
 * strides, lengths, rounded lengths, both scales, dropout's 1.0 / 255 / 1.0, is_bf16, is_causal,
 * the backward's pointers and strides). Each launch checks the fields it can (is_bf16 against
 * the kernel's type, h / h_k, d <= d_rounded, the log2 scale) and stops with a message when they
 * disagree.
 *
 * Tensors are addressed as the kernels address them in the batched (not variable-length) case:
 * element [b][i][h][c] of Q at q_ptr + b * q_batch_stride + i * q_row_stride + h *
 * q_head_stride + c (K and V at head h / h_h_k_ratio, grouped-query attention), O, dO, dQ, dK
 * and dV likewise with their strides; softmax_lse as float [b][h][seqlen_q]; dsoftmax_sum as
 * float [b][h][seqlen_q_rounded]; dq_accum as float [b][seqlen_q_rounded][h][d_rounded], slice s
 * at s * dq_accum_split_stride (the deterministic mode's slices). The mask is FlashAttention's:
 * with Is_causal key j is seen by query i when j <= i + seqlen_k - seqlen_q (aligned to the
 * bottom right when the lengths differ), with Is_local when i + seqlen_k - seqlen_q -
 * window_size_left <= j <= i + seqlen_k - seqlen_q + window_size_right (a negative size: no
 * bound on that side; SDPA never asks for a window, so this case is unchecked). A row that sees no key gets softmax_lse = +inf and an output of zeros,
 * as the kernel writes them.
 *
 * Arithmetic: every product of the inputs' half values is summed in float, over the head
 * dimension in order; the softmax uses exp2f with scale_softmax_log2 as the kernels do, and the
 * results are rounded once to the element type at the store. This approximates the GPU, which
 * computes the forward as an online softmax over blocks of kBlockN keys (rescaling its partial
 * sums as the running maximum grows), rounds P and dS to the element type before its
 * tensor-core products and sums in the tensor cores' order: results equal a GPU's within
 * half-precision rounding, not bit for bit. The whole work of each launch is done once, whatever
 * the grid; the backward's dQ is summed into dq_accum's first slice (the GPU spreads the
 * deterministic mode's partial sums over the slices; their sum, which the convert kernel reads,
 * is the same).
 *
 * No twin (the kernel then fails to launch, as any kernel without a twin): dropout (Is_dropout,
 * which would need FlashAttention's Philox stream and writes the RNG state), ALiBi slopes,
 * softcapping, returning the softmax, appending to a KV cache (Append_KV). Stopped with a message at the launch: variable-length batches (cu_seqlens_q,
 * cu_seqlens_k, seqused_k, leftpad_k), a paged or indexed KV cache, a nonzero dropout in the
 * backward's D kernel.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

/* Offsets in Flash_fwd_params / Flash_bwd_params. */
enum {
  O_Q = 0, O_K = 8, O_V = 16,
  O_QB = 24, O_KB = 32, O_VB = 40, O_QR = 48, O_KR = 56, O_VR = 64, O_QH = 72, O_KH = 80, O_VH = 88,
  O_H = 96, O_HK = 100, O_HRATIO = 104,
  O_O = 112, O_OACC = 120, O_OB = 128, O_OR = 136, O_OH = 144, O_LSE = 160, O_LSEACC = 168,
  O_B = 176, O_SQ = 180, O_SK = 184, O_D = 192, O_SQR = 196, O_DR = 204,
  O_SCALE = 216, O_SCALE_LOG2 = 220,
  O_CUQ = 224, O_CUK = 232, O_LEFTPAD = 240, O_SEQUSED = 248,
  O_CACHE_IDX = 344, O_BLOCK_TABLE = 352, O_PDROP = 372, O_SCALE_RP = 384, O_WL = 388, O_WR = 392,
  O_ISBF16 = 440, O_NSPLITS = 444,
  FWD_SIZE = 472,
  O_DO = 472, O_DQ = 480, O_DK = 488, O_DV = 496, O_DQACC = 504,
  O_DOB = 528, O_DOR = 536, O_DOH = 544, O_DQB = 552, O_DKB = 560, O_DVB = 568,
  O_DQR = 576, O_DKR = 584, O_DVR = 592, O_DQH = 600, O_DKH = 608, O_DVH = 616,
  O_DSUM = 624, O_SPLIT_STRIDE = 640,
};

typedef struct {
  const char *base;
  simtw_dt_t dt;
  size_t es;
  int b, h, hk, ratio, sq, sk, d, sqr, dr;
  float scale, scale_log2;
  int causal, local, wl, wr;
} fa_t;

static void stop(const simtw_nn_t *k, const char *why) {
  fprintf(stderr, "sim: %s: %s; stopped\n", k->name, why);
  abort();
}

/* Reads and checks the shared part of the parameters. k->p: [0] dtype, [1] Is_causal,
 * [2] Is_local. */
static fa_t fa_read(const simtw_nn_t *k, const char *p) {
  fa_t f;
  f.base = p;
  f.dt = (simtw_dt_t)k->p[0];
  f.es = simtw_dt_size(f.dt);
  f.b = simtw_read_i32(p, O_B), f.h = simtw_read_i32(p, O_H), f.hk = simtw_read_i32(p, O_HK), f.ratio = simtw_read_i32(p, O_HRATIO);
  f.sq = simtw_read_i32(p, O_SQ), f.sk = simtw_read_i32(p, O_SK), f.d = simtw_read_i32(p, O_D), f.sqr = simtw_read_i32(p, O_SQR), f.dr = simtw_read_i32(p, O_DR);
  f.scale = simtw_read_f32(p, O_SCALE), f.scale_log2 = simtw_read_f32(p, O_SCALE_LOG2);
  f.causal = k->p[1], f.local = k->p[2];
  f.wl = simtw_read_i32(p, O_WL), f.wr = simtw_read_i32(p, O_WR);
  int bf16 = (unsigned char)p[O_ISBF16];
  if (bf16 != (f.dt == DT_BF16) || f.b <= 0 || f.h <= 0 || f.hk <= 0 || f.h % f.hk || f.ratio != f.h / f.hk ||
      f.sq < 0 || f.sk < 0 || f.d <= 0 || f.d > f.dr || f.sq > f.sqr ||
      fabsf(f.scale_log2 - f.scale * (float)M_LOG2E) > 1e-5f * fabsf(f.scale_log2) + 1e-30f)
    stop(k, "Flash_fwd_params of an unknown layout (is_bf16, heads, lengths or scales disagree)");
  if (simtw_read_ptr(p, O_CUQ) || simtw_read_ptr(p, O_CUK) || simtw_read_ptr(p, O_SEQUSED) || simtw_read_ptr(p, O_LEFTPAD))
    stop(k, "a variable-length batch (cu_seqlens, seqused_k or leftpad_k), which has no twin");
  return f;
}

static float ld(const fa_t *f, const char *t, int64_t el) { return (float)simtw_load(f->dt, t + (size_t)el * f->es).f; }
static void st(const fa_t *f, char *t, int64_t el, float v) { simtw_store(f->dt, t + (size_t)el * f->es, simtw_fval(v)); }

/* Whether query i sees key j. */
static int seen(const fa_t *f, int i, int j) {
  int diag = i + f->sk - f->sq;
  if (f->causal) return j <= diag;
  if (f->local) return (f->wr < 0 || j <= diag + f->wr) && (f->wl < 0 || j >= diag - f->wl);
  return 1;
}

/* Element offsets of row i, head h, batch b of a tensor with the strides at (batch, row, head). */
static int64_t at(const char *p, int ob, int orow, int oh, int b, int i, int h) {
  return (int64_t)b * simtw_read_i64(p, ob) + (int64_t)i * simtw_read_i64(p, orow) + (int64_t)h * simtw_read_i64(p, oh);
}

/* Rows 0..n-1 of one (batch, head) of the tensor at pointer offset optr with the strides at
 * (ob, orow, oh), d values each, converted to float into out[n][d]. */
static void load(const fa_t *f, int optr, int ob, int orow, int oh, int b, int h, int n, float *out) {
  const char *p = f->base, *t = simtw_read_ptr(p, optr);
  for (int i = 0; i < n; i++) {
    int64_t o = at(p, ob, orow, oh, b, i, h);
    for (int c = 0; c < f->d; c++) out[(size_t)i * f->d + c] = ld(f, t, o + c);
  }
}

/* Q, K and V of one (batch, head) as float (K and V of its key head), and its scores S[i][j] =
 * q_i . k_j, summed in float over the head dimension in order. buf holds (sq + 2 sk) * d floats,
 * s sq * sk. */
typedef struct {
  float *q, *k, *v;
} qkv_t;

static qkv_t scores(const fa_t *f, int b, int h, float *buf, float *s) {
  qkv_t t = {buf, buf + (size_t)f->sq * f->d, buf + (size_t)(f->sq + f->sk) * f->d};
  load(f, O_Q, O_QB, O_QR, O_QH, b, h, f->sq, t.q);
  load(f, O_K, O_KB, O_KR, O_KH, b, h / f->ratio, f->sk, t.k);
  load(f, O_V, O_VB, O_VR, O_VH, b, h / f->ratio, f->sk, t.v);
  for (int i = 0; i < f->sq; i++)
    for (int j = 0; j < f->sk; j++) {
      const float *qi = t.q + (size_t)i * f->d, *kj = t.k + (size_t)j * f->d;
      float acc = 0.0f;
      for (int c = 0; c < f->d; c++) acc += qi[c] * kj[c];
      s[(size_t)i * f->sk + j] = acc;
    }
  return t;
}

/* Query i's attention to keys [j0, j1) of one (batch, head): acc = sum of exp2(S * scale_log2 -
 * max * scale_log2) * v_j over the keys it sees, *sum the sum of those weights, *mx the largest
 * score (-inf when it sees none of them). row holds S[i][*], v the values as float. */
static void attend(const fa_t *f, const float *row, const float *v, int i, int j0, int j1, float *acc, float *mx,
                   float *sum) {
  float m = -INFINITY, s = 0.0f;
  for (int j = j0; j < j1; j++)
    if (seen(f, i, j) && row[j] > m) m = row[j];
  for (int c = 0; c < f->d; c++) acc[c] = 0.0f;
  float mscaled = m == -INFINITY ? 0.0f : m * f->scale_log2;
  for (int j = j0; j < j1; j++) {
    if (!seen(f, i, j)) continue;
    float e = exp2f(row[j] * f->scale_log2 - mscaled);
    const float *vj = v + (size_t)j * f->d;
    s += e;
    for (int c = 0; c < f->d; c++) acc[c] += e * vj[c];
  }
  *mx = m, *sum = s;
}

/* flash_fwd_kernel, and flash_fwd_splitkv_kernel (k->p[4]: Split, k->p[5]: kBlockN). Without
 * Split: out (element type) and softmax_lse, +inf for a row that sees no key. With Split, each
 * of the num_splits slices of ceil(ceil(seqlen_k / kBlockN) / num_splits) blocks of kBlockN keys
 * writes its normalised partial output to oaccum (float [split][b][h][seqlen_q][d_rounded]) and
 * its log-sum-exp to softmax_lseaccum (float [split][b][h][seqlen_q]; -inf for none). */
static void run_fwd(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  const char *p = args[0];
  fa_t f = fa_read(k, p);
  if (simtw_read_f32(p, O_PDROP) < 1.0f) stop(k, "dropout in a kernel without it");
  if (simtw_read_ptr(p, O_BLOCK_TABLE) || simtw_read_ptr(p, O_CACHE_IDX)) stop(k, "a paged or indexed KV cache, which has no twin");
  int split = k->p[4], nsplit = split ? simtw_read_i32(p, O_NSPLITS) : 1, bn = k->p[5];
  int per = split && bn > 0 && nsplit > 0 ? ((f.sk + bn - 1) / bn + nsplit - 1) / nsplit * bn : f.sk;
  if (split && (nsplit < 1 || bn <= 0)) stop(k, "a split count of an unknown layout");
  char *o = simtw_read_ptr(p, O_O);
  float *lse = (float *)simtw_read_ptr(p, O_LSE), *oacc = (float *)simtw_read_ptr(p, O_OACC), *lacc = (float *)simtw_read_ptr(p, O_LSEACC);
  float *s = malloc(sizeof(float) * ((size_t)f.sq * f.sk + (size_t)(f.sq + 2 * f.sk + 1) * f.d));
  if (!s) stop(k, "out of memory");
  float *acc = s + (size_t)f.sq * f.sk, *buf = acc + f.d;
  for (int b = 0; b < f.b; b++)
    for (int h = 0; h < f.h; h++) {
      qkv_t t = scores(&f, b, h, buf, s);
      for (int i = 0; i < f.sq; i++)
        for (int sp = 0; sp < nsplit; sp++) {
          int j0 = sp * per, j1 = j0 + per < f.sk ? j0 + per : f.sk;
          float mx, sum;
          attend(&f, s + (size_t)i * f.sk, t.v, i, j0 < f.sk ? j0 : f.sk, j1, acc, &mx, &sum);
          int none = sum == 0.0f || sum != sum;
          float inv = none ? 1.0f : 1.0f / sum, l = mx * f.scale + logf(sum);
          size_t row = (((size_t)sp * f.b + b) * f.h + h) * f.sq + i;
          if (split) {
            for (int c = 0; c < f.d; c++) oacc[row * f.dr + c] = acc[c] * inv;
            lacc[row] = none ? -INFINITY : l;
          } else {
            int64_t oo = at(p, O_OB, O_OR, O_OH, b, i, h);
            for (int c = 0; c < f.d; c++) st(&f, o, oo + c, acc[c] * inv);
            lse[row] = none ? INFINITY : l;
          }
        }
    }
  free(s);
}

/* flash_fwd_splitkv_combine_kernel: for each row, lse = log(sum_s exp(lseaccum_s - m)) + m (m
 * the largest, 0 when all are -inf; +inf when the sum is 0) into softmax_lse, and out = sum_s
 * exp(lseaccum_s - lse) * oaccum_s, over the slices in order, rounded to the element type. */
static void run_combine(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  const char *p = args[0];
  fa_t f = fa_read(k, p);
  int nsplit = simtw_read_i32(p, O_NSPLITS);
  if (nsplit < 1 || nsplit > 1 << k->p[4]) stop(k, "a split count beyond the kernel's");
  char *o = simtw_read_ptr(p, O_O);
  float *lse = (float *)simtw_read_ptr(p, O_LSE);
  const float *oacc = (const float *)simtw_read_ptr(p, O_OACC), *lacc = (const float *)simtw_read_ptr(p, O_LSEACC);
  size_t rows = (size_t)f.b * f.h * f.sq;
  for (size_t r = 0; r < rows; r++) {
    float m = -INFINITY, sum = 0.0f;
    for (int sp = 0; sp < nsplit; sp++)
      if (lacc[sp * rows + r] > m) m = lacc[sp * rows + r];
    if (m == -INFINITY) m = 0.0f;
    for (int sp = 0; sp < nsplit; sp++) sum += expf(lacc[sp * rows + r] - m);
    float l = sum == 0.0f || sum != sum ? INFINITY : logf(sum) + m;
    lse[r] = l;
    int b = (int)(r / ((size_t)f.h * f.sq)), h = (int)(r / f.sq % f.h), i = (int)(r % f.sq);
    int64_t oo = at(p, O_OB, O_OR, O_OH, b, i, h);
    for (int c = 0; c < f.d; c++) {
      float v = 0.0f;
      for (int sp = 0; sp < nsplit; sp++) v += expf(lacc[sp * rows + r] - l) * oacc[(sp * rows + r) * f.dr + c];
      st(&f, o, oo + c, v);
    }
  }
}

static float *dq_slot(const fa_t *f, float *acc, int b, int i, int h) {
  return acc + (((size_t)b * f->sqr + i) * f->h + h) * f->dr;
}

static void run_dot_do_o(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  const char *p = args[0];
  fa_t f = fa_read(k, p);
  float pdrop = simtw_read_f32(p, O_PDROP);
  if (pdrop < 1.0f) stop(k, "dropout (p_dropout < 1), which has no twin");
  const char *o = simtw_read_ptr(p, O_O), *dout = simtw_read_ptr(p, O_DO);
  float *dsum = (float *)simtw_read_ptr(p, O_DSUM), *acc = (float *)simtw_read_ptr(p, O_DQACC);
  for (int b = 0; b < f.b; b++)
    for (int h = 0; h < f.h; h++)
      for (int i = 0; i < f.sq; i++) {
        int64_t oo = at(p, O_OB, O_OR, O_OH, b, i, h), go = at(p, O_DOB, O_DOR, O_DOH, b, i, h);
        float dot = 0.0f;
        for (int c = 0; c < f.d; c++) dot += ld(&f, dout, go + c) * ld(&f, o, oo + c);
        dsum[((size_t)b * f.h + h) * f.sqr + i] = dot * pdrop;
      }
  if (k->p[3]) /* Clear_dQaccum: the whole rounded rows, as the kernel's blocks clear them */
    for (int b = 0; b < f.b; b++)
      for (int i = 0; i < f.sqr; i++)
        for (int h = 0; h < f.h; h++) memset(dq_slot(&f, acc, b, i, h), 0, sizeof(float) * (size_t)f.dr);
}

static void run_bwd(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  const char *p = args[0];
  fa_t f = fa_read(k, p);
  if (simtw_read_f32(p, O_PDROP) < 1.0f) stop(k, "dropout in a kernel without it");
  char *dk = simtw_read_ptr(p, O_DK), *dv = simtw_read_ptr(p, O_DV);
  const float *lse = (const float *)simtw_read_ptr(p, O_LSE), *dsum = (const float *)simtw_read_ptr(p, O_DSUM);
  float *acc = (float *)simtw_read_ptr(p, O_DQACC);
  float scale_rp = simtw_read_f32(p, O_SCALE_RP);
  size_t n = (size_t)f.sq * f.sk;
  float *s = malloc(sizeof(float) * (2 * n + (size_t)(2 * f.sq + 2 * f.sk + 2) * f.d));
  if (!s) stop(k, "out of memory");
  float *ds = s + n, *gk = ds + n, *gv = gk + f.d, *go = gv + f.d, *buf = go + (size_t)f.sq * f.d;
  for (int b = 0; b < f.b; b++)
    for (int h = 0; h < f.h; h++) {
      qkv_t t = scores(&f, b, h, buf, s);
      load(&f, O_DO, O_DOB, O_DOR, O_DOH, b, h, f.sq, go);
      /* s becomes P, ds becomes dS = P * (dP - D) with dP = dO . V */
      for (int i = 0; i < f.sq; i++) {
        float l = lse[((size_t)b * f.h + h) * f.sq + i], di = dsum[((size_t)b * f.h + h) * f.sqr + i];
        float lscaled = l == -INFINITY ? 0.0f : l * (float)M_LOG2E;
        const float *goi = go + (size_t)i * f.d;
        for (int j = 0; j < f.sk; j++) {
          size_t ij = (size_t)i * f.sk + j;
          if (!seen(&f, i, j)) {
            s[ij] = ds[ij] = 0.0f;
            continue;
          }
          s[ij] = exp2f(s[ij] * f.scale_log2 - lscaled);
          const float *vj = t.v + (size_t)j * f.d;
          float dp = 0.0f;
          for (int c = 0; c < f.d; c++) dp += goi[c] * vj[c];
          ds[ij] = s[ij] * (dp - di);
        }
      }
      for (int j = 0; j < f.sk; j++) {
        for (int c = 0; c < f.d; c++) gk[c] = gv[c] = 0.0f;
        for (int i = 0; i < f.sq; i++) {
          size_t ij = (size_t)i * f.sk + j;
          const float *goi = go + (size_t)i * f.d, *qi = t.q + (size_t)i * f.d;
          for (int c = 0; c < f.d; c++) {
            gv[c] += s[ij] * goi[c];
            gk[c] += ds[ij] * qi[c];
          }
        }
        int64_t ko = at(p, O_DKB, O_DKR, O_DKH, b, j, h), vo = at(p, O_DVB, O_DVR, O_DVH, b, j, h);
        for (int c = 0; c < f.d; c++) {
          st(&f, dk, ko + c, gk[c] * scale_rp);
          st(&f, dv, vo + c, gv[c]);
        }
      }
      for (int i = 0; i < f.sq; i++) {
        float *slot = dq_slot(&f, acc, b, i, h);
        for (int j = 0; j < f.sk; j++) {
          float d = ds[(size_t)i * f.sk + j];
          const float *kj = t.k + (size_t)j * f.d;
          for (int c = 0; c < f.d; c++) slot[c] += d * kj[c];
        }
      }
    }
  free(s);
}

static void run_convert_dq(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  const char *p = args[0];
  fa_t f = fa_read(k, p);
  int nsplits = *(const int *)args[1];
  char *dq = simtw_read_ptr(p, O_DQ);
  const float *acc = (const float *)simtw_read_ptr(p, O_DQACC);
  int64_t split = simtw_read_i64(p, O_SPLIT_STRIDE);
  float scale_rp = simtw_read_f32(p, O_SCALE_RP);
  if (nsplits < 1 || (nsplits > 1 && split <= 0)) stop(k, "a dq_accum split count or stride of an unknown layout");
  for (int b = 0; b < f.b; b++)
    for (int i = 0; i < f.sq; i++)
      for (int h = 0; h < f.h; h++) {
        int64_t qo = at(p, O_DQB, O_DQR, O_DQH, b, i, h);
        for (int c = 0; c < f.d; c++) {
          float sum = 0.0f;
          for (int sp = 0; sp < nsplits; sp++) sum += dq_slot(&f, (float *)acc + sp * split, b, i, h)[c];
          st(&f, dq, qo + c, sum * scale_rp);
        }
      }
}

/* "true"/"false" list after pos: fills v[0..n-1]; returns the position after, or NULL. */
static const char *bools(const char *s, int n, int *v) {
  for (int i = 0; i < n; i++) {
    if (strncmp(s, ", ", 2)) return NULL;
    s += 2;
    if (!strncmp(s, "true", 4)) v[i] = 1, s += 4;
    else if (!strncmp(s, "false", 5)) v[i] = 0, s += 5;
    else return NULL;
  }
  return s;
}

/* The traits argument at s ("Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, ...,
 * Flash_kernel_traits<...> >"): its element type, kBlockN, and the position after it. */
static const char *traits(const char *s, const char *kind, simtw_dt_t *dt, int *bn) {
  int hd, bm, n = 0;
  if (strncmp(s, kind, strlen(kind))) return NULL;
  if (sscanf(s + strlen(kind), "%d, %d, %d", &hd, &bm, &n) != 3) return NULL;
  if (bn) *bn = n;
  const char *e = strstr(s, "> >");
  if (!e) return NULL;
  const char *h = strstr(s, "cutlass::half_t"), *bf = strstr(s, "cutlass::bfloat16_t");
  if (h && h < e) *dt = DT_F16;
  else if (bf && bf < e) *dt = DT_BF16;
  else return NULL;
  return e + 3;
}

int simtw_flash_resolve(const char *dm, simtw_nn_t *k) {
  static const char pre[] = "void pytorch_flash::";
  if (strncmp(dm, pre, sizeof pre - 1)) return 0;
  const char *s = dm + sizeof pre - 1, *e;
  simtw_dt_t dt = DT_NONE;
  int b[8];
  int n = 0;
  memset(k, 0, sizeof *k);
  if (!strncmp(s, "flash_fwd_kernel<", 17) && (e = traits(s + 17, "Flash_fwd_kernel_traits<", &dt, NULL)) &&
      (e = bools(e, 8, b)) && !strcmp(e, ">(pytorch_flash::Flash_fwd_params)")) {
    /* Is_dropout, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K, Is_softcap, Return_softmax */
    if (b[0] || b[3] || b[6] || b[7]) return 0;
    k->run = run_fwd, k->p[1] = b[1], k->p[2] = b[2];
  } else if (!strncmp(s, "flash_fwd_splitkv_kernel<", 25) &&
             (e = traits(s + 25, "Flash_fwd_kernel_traits<", &dt, &k->p[5])) && (e = bools(e, 8, b)) &&
             !strcmp(e, ">(pytorch_flash::Flash_fwd_params)")) {
    /* Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K, Is_softcap, Split, Append_KV */
    if (b[2] || b[5] || b[7]) return 0;
    k->run = run_fwd, k->p[1] = b[0], k->p[2] = b[1], k->p[4] = b[6];
  } else if (!strncmp(s, "flash_fwd_splitkv_combine_kernel<", 33) &&
             (e = traits(s + 33, "Flash_fwd_kernel_traits<", &dt, NULL)) &&
             sscanf(e, ", %*d, %d%n", &k->p[4], &n) == 1 && n > 0 && (e = bools(e + n, 1, b)) &&
             !strcmp(e, ">(pytorch_flash::Flash_fwd_params)")) {
    k->run = run_combine; /* p[4]: Log_max_splits */
  } else if (!strncmp(s, "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<", 45) &&
             (e = traits(s + 45, "Flash_bwd_kernel_traits<", &dt, NULL)) && (e = bools(e, 7, b)) &&
             !strcmp(e, ">(pytorch_flash::Flash_bwd_params)")) {
    /* Is_dropout, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K, Is_softcap */
    if (b[0] || b[3] || b[6]) return 0;
    k->run = run_bwd, k->p[1] = b[1], k->p[2] = b[2];
  } else if (!strncmp(s, "flash_bwd_dot_do_o_kernel<", 26) &&
             (!strncmp(s + 26, "true, ", 6) || !strncmp(s + 26, "false, ", 7)) &&
             (e = traits(s + (s[26] == 't' ? 32 : 33), "Flash_bwd_kernel_traits<", &dt, NULL)) &&
             !strcmp(e, " >(pytorch_flash::Flash_bwd_params)")) {
    k->run = run_dot_do_o, k->p[3] = s[26] == 't'; /* Clear_dQaccum */
  } else if (!strncmp(s, "flash_bwd_convert_dq_kernel<", 28) && (e = traits(s + 28, "Flash_bwd_kernel_traits<", &dt, NULL)) &&
             !strcmp(e, " >(pytorch_flash::Flash_bwd_params, int)")) {
    k->run = run_convert_dq;
  } else {
    return 0;
  }
  k->p[0] = (int)dt;
  return 1;
}
