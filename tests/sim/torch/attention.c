/* attention.c — CPU twins of PyTorch's memory-efficient attention kernels (the CUTLASS kernels
 * of mem_eff_attention/kernel_forward.h and kernel_backward.h), which
 * F.scaled_dot_product_attention runs with SDPBackend.EFFICIENT_ATTENTION (the backend the
 * wheel picks for float32 on the simulated device, and for float16/bfloat16 when flash is off).
 *
 *   fmha_cutlassF_<dt>_<aligned>_<qb>x<kb>_<rf|gmem>_sm<arch>(AttentionKernel<scalar_t, Arch,
 *     isAligned, kQueriesPerBlock, kKeysPerBlock, kMaxK, kSupportsDropout, kSupportsBias>::Params)
 *   fmha_cutlassB_<dt>_..._sm<arch>(AttentionBackwardKernel<Arch, scalar_t, kIsAligned,
 *     kApplyDropout, kPreload, kBlockSizeI, kBlockSizeJ, kMaxK, kKeysQueriesAligned>::Params)
 *
 * Both take their Params struct by value (280 and 480 bytes in this wheel). The offsets below are
 * those of the wheel's structs, read from their launches (the field order of the source, with
 * the sliding-window size, q_heads_per_kv for grouped-query attention, a 32-byte
 * PhiloxCudaState, 64-bit strides along M in the backward, and two 4-byte fields before
 * num_heads (forward) and num_splits_key (backward) that PyTorch leaves 0). A launch with any
 * field the twins do not implement set (variable sequence lengths, a sliding window, dropout,
 * or those unknown fields) is refused with a message, never computed.
 *
 * Forward, per batch b (blockIdx.z), head h (blockIdx.y) and the block's kQueriesPerBlock
 * queries (blockIdx.x): s_ij = scale * (q_i . k_j) + bias_ij, keys past the causal diagonal at
 * -inf, then as the kernel does in its base-2 softmax: t = s * log2(e), m = max_j t,
 * p_ij = exp2(t_ij - m), l = sum_j p_ij, out_i = (sum_j p_ij v_j) / l, with p rounded to the
 * element type before the product as the kernel's shared-memory tile is, and
 * logsumexp_i = m / log2(e) + log(l) (+inf for the rows that pad it to a multiple of 32).
 * Key/value heads are h / q_heads_per_kv.
 *
 * Backward, per (b, h), over all keys at once (the kernel splits them over blockIdx.x and adds
 * the partial dq in a workspace the twin leaves alone): p_ij = exp(s_ij - logsumexp_i),
 * D_i = do_i . o_i (read from delta_ptr where PyTorch computed it, for float; computed and stored
 * there for the half types, whose kernels do it themselves), dv_j = sum_i p_ij do_i,
 * ds_ij = p_ij (do_i . v_j - D_i), grad_bias_ij = ds_ij when PyTorch asks for it,
 * dq_i = sum_j (scale ds_ij) k_j and dk_j = sum_i (scale ds_ij) q_i. For float16/bfloat16, p and
 * scale * ds are rounded to the element type before their products, as the kernel's
 * shared-memory tiles are.
 *
 * The arithmetic is float32 with each sum taken in index order: the GPU's tensor-core products
 * (3xTF32 for float on sm80) and its tile-wise order of summation (and the forward's running
 * rescaling when the keys exceed one block) round differently, so results equal a GPU's within
 * rounding, not bit for bit. A query whose keys are all masked gets what the kernel's source
 * gives it: outputs 0 (the epilogue divides by 1 where the sum is 0) and a logsumexp of 0, so
 * that the backward's p = exp(-inf - 0) and the query's gradients are 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

/* AttentionKernel::Params */
#define F_Q 0
#define F_K 8
#define F_V 16
#define F_BIAS 24
#define F_SEQSTART_Q 32
#define F_SEQSTART_K 40
#define F_SEQLEN_K 48
#define F_DIAG_OFF 56
#define F_OUT 64
#define F_LSE 80
#define F_WINDOW 88
#define F_SCALE 92
#define F_HEAD_DIM 96
#define F_HEAD_DIM_V 100
#define F_NQ 104
#define F_NK 108
#define F_MASK 116
#define F_Q_SM 120
#define F_K_SM 124
#define F_V_SM 128
#define F_B_SM 132
#define F_O_SM 136
#define F_Q_SH 140
#define F_K_SH 144
#define F_V_SH 148
#define F_B_SH 152
#define F_Q_SB 160
#define F_K_SB 168
#define F_V_SB 176
#define F_B_SB 184
#define F_NB 192
#define F_UNKNOWN 196 /* 8 bytes PyTorch leaves 0 */
#define F_NH 204
#define F_QPKV 208
#define F_DROPOUT 212
#define F_SIZE 280

/* AttentionBackwardKernel::Params */
#define B_Q 0
#define B_K 8
#define B_V 16
#define B_BIAS 24
#define B_LSE 32
#define B_OUT 40
#define B_GOUT 48
#define B_DELTA 56
#define B_CU_Q 64
#define B_CU_K 72
#define B_GQ 80
#define B_GK 88
#define B_GV 96
#define B_GB 104
#define B_WINDOW 136
#define B_SCALE 140
#define B_HEAD_DIM 144
#define B_HEAD_DIM_V 148
#define B_NQ 152
#define B_NK 156
#define B_NH 160
#define B_QPKV 164
#define B_MASK 168
#define B_Q_SM 176
#define B_K_SM 184
#define B_V_SM 192
#define B_B_SM 200
#define B_GO_SM 208
#define B_GB_SM 216
#define B_GQKV_MULT 224
#define B_DROPOUT_P 272
#define B_O_SH 280
#define B_Q_SH 288
#define B_K_SH 292
#define B_V_SH 296
#define B_B_SH 304
#define B_O_SB 312
#define B_Q_SB 320
#define B_K_SB 328
#define B_V_SB 336
#define B_B_SB 344
#define B_LSE_SB 352
#define B_LSE_SH 360
#define B_DELTA_SB 368
#define B_DELTA_SH 376
#define B_NB 384
#define B_UNKNOWN 388 /* 8 bytes PyTorch leaves 0 */
#define B_GO_SB 400
#define B_GQ_SB 408
#define B_GK_SB 416
#define B_GV_SB 424
#define B_GB_SB 432
#define B_GO_SH 440
#define B_GQ_SH 448
#define B_GK_SH 456
#define B_GV_SH 464
#define B_GB_SH 472
#define B_SIZE 480

enum { MASK_NONE = 0, MASK_TOP_LEFT = 1, MASK_BOTTOM_RIGHT = 2 };
#define LOG2E 1.4426950408889634074f

/* element e of a row of dt at base (strides in elements) */
static float ld(simtw_dt_t dt, const char *base, int64_t e) {
  if (dt == DT_F32) {
    float v;
    memcpy(&v, base + e * 4, 4);
    return v;
  }
  return (float)simtw_load(dt, base + e * (int64_t)simtw_dt_size(dt)).f;
}
static void st(simtw_dt_t dt, char *base, int64_t e, float v) {
  simtw_store(dt, base + e * (int64_t)simtw_dt_size(dt), simtw_fval(v));
}
/* One row of a gradient: dst row = sum over t < n of w[t * wstride] * (row t of src), rows of
 * `width` elements, summed in order of t in float (acc, width floats) and zero weights skipped,
 * then stored rounded to dt. */
static void weighted_rows(simtw_dt_t dt, const float *w, int64_t wstride, int64_t n, const char *src,
                          int64_t src_sm, int64_t width, float *acc, char *dst) {
  for (int64_t c = 0; c < width; c++) acc[c] = 0.0f;
  for (int64_t t = 0; t < n; t++) {
    float x = w[t * wstride];
    if (x != 0.0f)
      for (int64_t c = 0; c < width; c++) acc[c] += x * ld(dt, src, t * src_sm + c);
  }
  for (int64_t c = 0; c < width; c++) st(dt, dst, c, acc[c]);
}
/* v rounded to the element type (the kernels' shared-memory tiles) */
static float rnd(simtw_dt_t dt, float v) {
  return dt == DT_F32 ? v : (float)simtw_cast(simtw_fval(v), dt).f;
}

static void refuse(const char *name, const char *what) {
  fprintf(stderr, "sim: %s: %s, which has no twin; not run\n", name, what);
  abort();
}

static int any_set(const char *p, int off, int n) {
  for (int i = 0; i < n; i++)
    if (p[off + i]) return 1;
  return 0;
}

/* The last key query i (of nq, nk keys) attends to under mask type m (diagonal offset off). */
static int64_t last_key(int m, int64_t i, int64_t nq, int64_t nk, int64_t off) {
  if (m == MASK_NONE) return nk - 1;
  if (m == MASK_BOTTOM_RIGHT) off += nk - nq;
  int64_t last = i + off;
  return last < nk - 1 ? last : nk - 1;
}

/* k->p: [0] element type, [1] kQueriesPerBlock (forward) */
static void run_fwd(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  const char *P = args[0];
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  int kq = k->p[1];
  if (simtw_read_ptr(P, F_SEQSTART_Q) || simtw_read_ptr(P, F_SEQSTART_K) || simtw_read_ptr(P, F_SEQLEN_K))
    refuse(k->name, "variable sequence lengths (seqstart/seqlen pointers)");
  if (simtw_read_i32(P, F_WINDOW)) refuse(k->name, "a sliding window");
  if (P[F_DROPOUT]) refuse(k->name, "dropout (use_dropout set)");
  if (any_set(P, F_UNKNOWN, 8)) refuse(k->name, "a parameter field PyTorch leaves 0 set");
  int mask = (unsigned char)P[F_MASK];
  if (mask > MASK_BOTTOM_RIGHT) refuse(k->name, "an unknown custom mask type");
  const char *q0 = simtw_read_ptr(P, F_Q), *k0 = simtw_read_ptr(P, F_K), *v0 = simtw_read_ptr(P, F_V), *b0 = simtw_read_ptr(P, F_BIAS);
  char *o0 = simtw_read_ptr(P, F_OUT);
  float *lse0 = (float *)simtw_read_ptr(P, F_LSE);
  float scale = simtw_read_f32(P, F_SCALE);
  int64_t hd = simtw_read_i32(P, F_HEAD_DIM), hdv = simtw_read_i32(P, F_HEAD_DIM_V), nq = simtw_read_i32(P, F_NQ), nk = simtw_read_i32(P, F_NK);
  int64_t nh = simtw_read_i32(P, F_NH), qpkv = simtw_read_i32(P, F_QPKV), diag = (uint32_t)simtw_read_i32(P, F_DIAG_OFF);
  int64_t q_sm = simtw_read_i32(P, F_Q_SM), k_sm = simtw_read_i32(P, F_K_SM), v_sm = simtw_read_i32(P, F_V_SM), b_sm = simtw_read_i32(P, F_B_SM);
  int64_t o_sm = simtw_read_i32(P, F_O_SM), q_sh = simtw_read_i32(P, F_Q_SH), k_sh = simtw_read_i32(P, F_K_SH), v_sh = simtw_read_i32(P, F_V_SH);
  int64_t b_sh = simtw_read_i64(P, F_B_SH), q_sb = simtw_read_i64(P, F_Q_SB), k_sb = simtw_read_i64(P, F_K_SB), v_sb = simtw_read_i64(P, F_V_SB);
  int64_t b_sb = simtw_read_i64(P, F_B_SB);
  if (qpkv < 1) refuse(k->name, "q_heads_per_kv below 1");
  int64_t lse_dim = (nq + 31) / 32 * 32;
  float *t = malloc(sizeof(float) * (size_t)(nk ? nk : 1));
  float *accf = malloc(sizeof(float) * (size_t)(hdv ? hdv : 1));
  if (!t || !accf) refuse(k->name, "out of host memory");
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned hy = 0; hy < grid.y; hy++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        int64_t b = bz, h = hy, kvh = h / qpkv, first = (int64_t)bx * kq;
        if (first >= nq) continue;
        int64_t end = first + kq < nq ? first + kq : nq;
        const char *qb = q0 + (b * q_sb + h * q_sh) * (int64_t)simtw_dt_size(dt);
        const char *kb = k0 + (b * k_sb + kvh * k_sh) * (int64_t)simtw_dt_size(dt);
        const char *vb = v0 + (b * v_sb + kvh * v_sh) * (int64_t)simtw_dt_size(dt);
        const char *bb = b0 ? b0 + (b * b_sb + h * b_sh) * (int64_t)simtw_dt_size(dt) : NULL;
        for (int64_t i = first; i < end; i++) {
          int64_t last = last_key(mask, i, nq, nk, diag);
          float m = -INFINITY;
          for (int64_t j = 0; j < nk; j++) {
            float s = -INFINITY;
            if (j <= last) {
              float d = 0.0f;
              for (int64_t c = 0; c < hd; c++) d += ld(dt, qb, i * q_sm + c) * ld(dt, kb, j * k_sm + c);
              s = d * scale;
              if (bb) s += ld(dt, bb, i * b_sm + j);
            }
            t[j] = s * LOG2E;
            if (t[j] > m) m = t[j];
          }
          /* all keys at -inf: the kernel takes 0 for the maximum, so every p is 0 */
          float mi = m == -INFINITY ? 0.0f : m, l = 0.0f;
          for (int64_t c = 0; c < hdv; c++) accf[c] = 0.0f;
          for (int64_t j = 0; j < nk; j++) {
            float pj = j <= last ? exp2f(t[j] - mi) : 0.0f;
            l += pj;
            float pr = rnd(dt, pj);
            if (pr != 0.0f)
              for (int64_t c = 0; c < hdv; c++) accf[c] += pr * ld(dt, vb, j * v_sm + c);
          }
          float alpha = 1.0f / (l == 0.0f ? 1.0f : l); /* the epilogue's: a row of no keys gives 0 */
          char *orow = o0 + ((b * nq + i) * o_sm + h * hdv) * (int64_t)simtw_dt_size(dt);
          for (int64_t c = 0; c < hdv; c++) st(dt, orow, c, accf[c] * alpha);
          /* the kernel's for a query with no keys: maximum 0 and sum 1, so a logsumexp of 0 */
          if (lse0)
            lse0[(b * nh + h) * lse_dim + i] = (m == -INFINITY ? 0.0f : m) / LOG2E + logf(l == 0.0f ? 1.0f : l);
        }
        if (lse0)
          for (int64_t i = end; i < lse_dim && i < first + kq; i++) lse0[(b * nh + h) * lse_dim + i] = INFINITY;
      }
  free(t);
  free(accf);
}

/* k->p: [0] element type, [1] whether the kernel computes delta itself */
static void run_bwd(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  const char *P = args[0];
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  int64_t es = (int64_t)simtw_dt_size(dt);
  if (simtw_read_ptr(P, B_CU_Q) || simtw_read_ptr(P, B_CU_K)) refuse(k->name, "variable sequence lengths (cu_seqlens pointers)");
  if (simtw_read_i32(P, B_WINDOW)) refuse(k->name, "a sliding window");
  if (simtw_read_f32(P, B_DROPOUT_P) != 0.0f) refuse(k->name, "dropout (dropout_prob above 0)");
  if (any_set(P, B_UNKNOWN, 8)) refuse(k->name, "a parameter field PyTorch leaves 0 set");
  int mask = (unsigned char)P[B_MASK];
  if (mask > MASK_BOTTOM_RIGHT) refuse(k->name, "an unknown custom mask type");
  const char *q0 = simtw_read_ptr(P, B_Q), *k0 = simtw_read_ptr(P, B_K), *v0 = simtw_read_ptr(P, B_V), *b0 = simtw_read_ptr(P, B_BIAS);
  const char *o0 = simtw_read_ptr(P, B_OUT), *go0 = simtw_read_ptr(P, B_GOUT);
  const float *lse0 = (const float *)simtw_read_ptr(P, B_LSE);
  float *delta0 = (float *)simtw_read_ptr(P, B_DELTA);
  char *gq0 = simtw_read_ptr(P, B_GQ), *gk0 = simtw_read_ptr(P, B_GK), *gv0 = simtw_read_ptr(P, B_GV), *gb0 = simtw_read_ptr(P, B_GB);
  float scale = simtw_read_f32(P, B_SCALE);
  int64_t hd = simtw_read_i32(P, B_HEAD_DIM), hdv = simtw_read_i32(P, B_HEAD_DIM_V), nq = simtw_read_i32(P, B_NQ), nk = simtw_read_i32(P, B_NK);
  int64_t nh = simtw_read_i32(P, B_NH), qpkv = simtw_read_i32(P, B_QPKV), mult = simtw_load(DT_I8, P + B_GQKV_MULT).i;
  int64_t q_sm = simtw_read_i64(P, B_Q_SM), k_sm = simtw_read_i64(P, B_K_SM), v_sm = simtw_read_i64(P, B_V_SM), b_sm = simtw_read_i64(P, B_B_SM);
  int64_t go_sm = simtw_read_i64(P, B_GO_SM), gb_sm = simtw_read_i64(P, B_GB_SM);
  int64_t o_sh = simtw_read_i64(P, B_O_SH), q_sh = simtw_read_i32(P, B_Q_SH), k_sh = simtw_read_i32(P, B_K_SH), v_sh = simtw_read_i32(P, B_V_SH);
  int64_t b_sh = simtw_read_i64(P, B_B_SH), o_sb = simtw_read_i64(P, B_O_SB), q_sb = simtw_read_i64(P, B_Q_SB), k_sb = simtw_read_i64(P, B_K_SB);
  int64_t v_sb = simtw_read_i64(P, B_V_SB), b_sb = simtw_read_i64(P, B_B_SB), lse_sb = simtw_read_i64(P, B_LSE_SB), lse_sh = simtw_read_i64(P, B_LSE_SH);
  int64_t d_sb = simtw_read_i64(P, B_DELTA_SB), d_sh = simtw_read_i64(P, B_DELTA_SH);
  int64_t go_sb = simtw_read_i64(P, B_GO_SB), gq_sb = simtw_read_i64(P, B_GQ_SB), gk_sb = simtw_read_i64(P, B_GK_SB), gv_sb = simtw_read_i64(P, B_GV_SB);
  int64_t gb_sb = simtw_read_i64(P, B_GB_SB), go_sh = simtw_read_i64(P, B_GO_SH), gq_sh = simtw_read_i64(P, B_GQ_SH), gk_sh = simtw_read_i64(P, B_GK_SH);
  int64_t gv_sh = simtw_read_i64(P, B_GV_SH), gb_sh = simtw_read_i64(P, B_GB_SH);
  if (qpkv < 1) refuse(k->name, "q_heads_per_kv below 1");
  /* gq and gk have the same row stride (their rows are head dimension wide) */
  int64_t o_sm = hdv * nh, gq_sm = mult * nh * hd, gk_sm = gq_sm, gv_sm = mult * nh * hdv;
  size_t nqk = nq > 0 && nk > 0 ? (size_t)(nq * nk) : 1;
  float *pm = malloc(sizeof(float) * nqk), *ds = malloc(sizeof(float) * nqk);
  float *dl = malloc(sizeof(float) * (size_t)(nq ? nq : 1));
  int64_t wmax = hd > hdv ? hd : hdv;
  float *accv = malloc(sizeof(float) * (size_t)(wmax ? wmax : 1));
  if (!pm || !ds || !dl || !accv) refuse(k->name, "out of host memory");
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned hy = 0; hy < grid.y; hy++) {
      int64_t b = bz, h = hy, kvh = h / qpkv;
      const char *qb = q0 + (b * q_sb + h * q_sh) * es;
      const char *kb = k0 + (b * k_sb + kvh * k_sh) * es;
      const char *vb = v0 + (b * v_sb + kvh * v_sh) * es;
      const char *bb = b0 ? b0 + (b * b_sb + h * b_sh) * es : NULL;
      const char *ob = o0 + (b * o_sb + h * o_sh) * es;
      const char *gob = go0 + (b * go_sb + h * go_sh) * es;
      const float *lse = lse0 + b * lse_sb + h * lse_sh;
      float *delta = delta0 + b * d_sb + h * d_sh;
      char *gqb = gq0 + (b * gq_sb + h * gq_sh) * es, *gkb = gk0 + (b * gk_sb + h * gk_sh) * es;
      char *gvb = gv0 + (b * gv_sb + h * gv_sh) * es;
      char *gbb = gb0 ? gb0 + (b * gb_sb + h * gb_sh) * es : NULL;
      for (int64_t i = 0; i < nq; i++) {
        if (k->p[1]) {
          float d = 0.0f;
          for (int64_t c = 0; c < hdv; c++) d += ld(dt, gob, i * go_sm + c) * ld(dt, ob, i * o_sm + c);
          delta[i] = d;
        }
        dl[i] = delta[i];
        int64_t last = last_key(mask, i, nq, nk, 0);
        for (int64_t j = 0; j < nk; j++) {
          float p = 0.0f, dp = 0.0f;
          if (j <= last) {
            float s = 0.0f;
            for (int64_t c = 0; c < hd; c++) s += ld(dt, qb, i * q_sm + c) * ld(dt, kb, j * k_sm + c);
            s *= scale;
            if (bb) s += ld(dt, bb, i * b_sm + j);
            p = expf(s - lse[i]);
            for (int64_t c = 0; c < hdv; c++) dp += ld(dt, gob, i * go_sm + c) * ld(dt, vb, j * v_sm + c);
          }
          float d = rnd(dt, p) * (dp - dl[i]);
          pm[i * nk + j] = rnd(dt, p);
          ds[i * nk + j] = rnd(dt, d * scale);
          if (gbb) st(dt, gbb, i * gb_sm + j, d);
        }
      }
      for (int64_t j = 0; j < nk; j++) { /* dv_j = P^T dO, dk_j = dS^T Q */
        weighted_rows(dt, pm + j, nk, nq, gob, go_sm, hdv, accv, gvb + j * gv_sm * es);
        weighted_rows(dt, ds + j, nk, nq, qb, q_sm, hd, accv, gkb + j * gk_sm * es);
      }
      for (int64_t i = 0; i < nq; i++) /* dq_i = dS K */
        weighted_rows(dt, ds + i * nk, 1, nk, kb, k_sm, hd, accv, gqb + i * gq_sm * es);
    }
  free(pm);
  free(ds);
  free(dl);
  free(accv);
}

/* "float", "cutlass::half_t" or "cutlass::bfloat16_t" at s: the type, *end after it */
static simtw_dt_t cutlass_dt(const char *s, const char **end) {
  static const struct {
    const char *name;
    simtw_dt_t dt;
  } T[] = {{"float", DT_F32}, {"cutlass::half_t", DT_F16}, {"cutlass::bfloat16_t", DT_BF16}};
  for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
    if (strncmp(s, T[i].name, strlen(T[i].name)) == 0) {
      *end = s + strlen(T[i].name);
      return T[i].dt;
    }
  return DT_NONE;
}

int simtw_attn_resolve(const char *dm, simtw_nn_t *k) {
  const char *p, *e;
  char al[6], dr[6], bias[6], pre[6], seq[6];
  int arch = 0, qb = 0, kb = 0, maxk = 0, n = 0;
  if (strncmp(dm, "fmha_cutlassF_", 14) == 0 &&
      (p = strstr(dm, "(PyTorchMemEffAttention::AttentionKernel<"))) {
    simtw_dt_t dt = cutlass_dt(p + 41, &e);
    if (dt == DT_NONE ||
        sscanf(e, ", cutlass::arch::Sm%d, %5[a-z], %d, %d, %d, %5[a-z], %5[a-z]>::Params)%n", &arch, al, &qb, &kb,
               &maxk, dr, bias, &n) != 7 ||
        e[n] || strcmp(bias, "true") != 0 || qb <= 0)
      return 0;
    k->p[0] = dt;
    k->p[1] = qb;
    k->run = run_fwd;
    return 1;
  }
  if (strncmp(dm, "fmha_cutlassB_", 14) == 0 &&
      (p = strstr(dm, "(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm"))) {
    if (sscanf(p + 66, "%d, %n", &arch, &n) != 1 || !n) return 0;
    simtw_dt_t dt = cutlass_dt(p + 66 + n, &e);
    if (dt == DT_NONE ||
        sscanf(e, ", %5[a-z], %5[a-z], %5[a-z], %d, %d, %d, %5[a-z]>::Params)%n", al, dr, pre, &qb, &kb, &maxk, seq,
               &n) != 7 ||
        e[n] || qb <= 0)
      return 0;
    k->p[0] = dt;
    /* kKernelComputesDelta: kIsHalf && (kOutputInRF || the architecture is not sm70), kOutputInRF
     * being kIsHalf && kMaxK <= kBlockSizeI */
    k->p[1] = dt != DT_F32 && (maxk <= qb || arch != 70);
    k->run = run_bwd;
    return 1;
  }
  return 0;
}
