/* rnnsim.h — the simulated cuDNN's recurrent layers (rnn.c): kernel arguments and the arithmetic
 * the device code (kernels.cu) and the CPU twins (twins.c) share. Included after cudnnsim.h.
 *
 * A network of L layers, D directions (1 or 2), hidden size H, input size I, over T steps of B
 * sequences. Pseudo-layer p = l * D + d. Cells (cuDNN's documented equations, the ones PyTorch
 * uses; gate order i, f, g, o for LSTM and r, z, n for GRU, as the linLayerIDs of the weights):
 *   RNN_RELU / RNN_TANH  h' = act(Wx + bW + (Rh + bR))
 *   LSTM  i = s(.), f = s(.), g = tanh(.), o = s(.) of (W_k x + bW_k) + (R_k h + bR_k);
 *         c' = f * c + i * g; h' = o * tanh(c')
 *   GRU   r = s(.), z = s(.) as above; n = tanh((W_n x + bW_n) + r * (R_n h + bR_n));
 *         h' = n + z * (h - n)  (= (1 - z) * n + z * h)
 * with s(v) = 1 / (1 + expf(-v)). Each matrix-vector product sums k ascending from 0.0f, every
 * product and sum rounded separately (no fused multiply-add); a GPU's cuDNN uses GEMMs of other
 * orders of summation, so results agree with it (and with PyTorch) to float rounding, not bit
 * for bit.
 *
 * Sequence b has len_b steps (T unless their lengths differ): direction 0 runs t = 0 .. len_b-1,
 * direction 1 t = len_b-1 .. 0; hy and cy are h and c after each direction's last step; Y is 0
 * beyond len_b, y holds the padding value there (unpacked layouts; the packed one has no rows),
 * and no gradient flows there.
 *
 * Weight space (elements of the data type), per pseudo-layer in order: the G input matrices
 * (H x in_l, row-major, linLayerIDs 0..G-1), the G recurrent matrices (H x H, IDs G..2G-1), then
 * with CUDNN_RNN_DOUBLE_BIAS the G input and the G recurrent biases (H each, same IDs). in_0 = I,
 * in_l = D * H above. G = 4 (LSTM), 3 (GRU), 1.
 *
 * State area (floats; the reserve space in training, the workspace in inference), one block per
 * layer l of:
 *   Y    [T][B][D*H]        the layer's output (h at every step, both directions)
 *   GATE [T][D][B][G*H]     activated gates (RNN: h itself)
 *   CN   [T][D][B][H]       LSTM: the cell state c; GRU: R_n h + bR_n (unused otherwise)
 *   DG   [T][D][B][G*H(+H)] gradients of the gates' pre-activations, written by backward data
 *                           and read by backward weights; GRU appends the gradient of R_n h + bR_n
 * Backward scratch (training workspace): DX [T][B][D*H] (the gradient passed down between
 * layers) then per (d, b) 3 * H floats.
 *
 * The order of every sum is fixed (each thread sums alone), so results do not depend on how
 * threads are scheduled; the device code and the twins run the same operations in the same
 * order (only expf and tanhf, the CUDA math library's against the C library's, may differ in
 * their last bits).
 *
 * Kernels, one thread each:
 *   cudnnsim_rnn_fwd      one layer; thread (d, b) runs its whole sequence (one launch per layer)
 *   cudnnsim_rnn_bwd_gate one layer; thread (d, b) runs back through its sequence: DG, dhx, dcx
 *   cudnnsim_rnn_bwd_dx   one layer; thread per input element (t, b, k): sum over d, gates, j
 *   cudnnsim_rnn_bwd_w    thread per weight-space element: sum over t, then b, ascending
 *   cudnnsim_rnn_drop_init one thread: writes a dropout descriptor's seed and a zero counter
 */
#ifndef CUDNNSIM_RNN_H
#define CUDNNSIM_RNN_H

/* The most sequences and steps of a batch whose sequences differ in length. */
#define CUDNNSIM_RNN_MAXB 256
#define CUDNNSIM_RNN_MAXT 256

/* cudnnRNNMode_t values. */
enum { CUDNNSIM_RNN_RELU = 0, CUDNNSIM_RNN_TANH = 1, CUDNNSIM_LSTM = 2, CUDNNSIM_GRU = 3 };

#define CUDNNSIM_K_RNN_FWD "cudnnsim_rnn_fwd"
#define CUDNNSIM_K_RNN_BWD_GATE "cudnnsim_rnn_bwd_gate"
#define CUDNNSIM_K_RNN_BWD_DX "cudnnsim_rnn_bwd_dx"
#define CUDNNSIM_K_RNN_BWD_W "cudnnsim_rnn_bwd_w"
#define CUDNNSIM_K_RNN_DROP_INIT "cudnnsim_rnn_drop_init"

typedef struct cudnnsim_rnn {
  int mode, T, B, I, H, L, D;
  int bias;        /* 1: double bias; 0: none */
  int dtype;       /* CUDNNSIM_F32, _F16, _BF16: x, y, h, c, weights and their gradients */
  int batch_major; /* x and y are [B][T][v] (else [T][B][v]) */
  int layer;       /* the layer a per-layer launch computes */
  int wgrad_add;   /* backward weights: add to dw (else overwrite) */
  long long hs0, hs1, hs2; /* strides of hx, hy, dhy, dhx ([L*D][B][H]) */
  long long cs0, cs1, cs2; /* strides of cx, cy, dcy, dcx */
  int drop;                /* training with dropout between layers */
  float drop_p;            /* its probability */
  /* Sequences of different lengths (varlen): their lengths, and for the packed layout
   * (x and y rows of step t are those of the sequences longer than t, longest first) the row
   * where each step starts. */
  int varlen, packed;
  float pad;               /* the value of y's padding (unpacked layouts) */
  int lens[CUDNNSIM_RNN_MAXB];
  int start[CUDNNSIM_RNN_MAXT + 1];
} cudnnsim_rnn_t;

/* Steps of sequence b. */
CUDNNSIM_FN int cudnnsim_rnn_len(const cudnnsim_rnn_t *p, int b) {
  return p->varlen ? p->lens[b] : p->T;
}

CUDNNSIM_FN int cudnnsim_rnn_g(const cudnnsim_rnn_t *p) {
  return p->mode == CUDNNSIM_LSTM ? 4 : p->mode == CUDNNSIM_GRU ? 3 : 1;
}

CUDNNSIM_FN long long cudnnsim_rnn_in(const cudnnsim_rnn_t *p, int l) {
  return l == 0 ? p->I : (long long)p->D * p->H;
}

/* Elements of pseudo-layer p's weights and biases. */
CUDNNSIM_FN long long cudnnsim_rnn_wlayer(const cudnnsim_rnn_t *p, int l) {
  long long gh = (long long)cudnnsim_rnn_g(p) * p->H;
  return gh * cudnnsim_rnn_in(p, l) + gh * p->H + (p->bias ? 2 * gh : 0);
}

CUDNNSIM_FN long long cudnnsim_rnn_wcount(const cudnnsim_rnn_t *p) {
  long long n = 0;
  for (int l = 0; l < p->L; l++) n += p->D * cudnnsim_rnn_wlayer(p, l);
  return n;
}

/* Offset of pseudo-layer l * D + d's first weight. */
CUDNNSIM_FN long long cudnnsim_rnn_woff(const cudnnsim_rnn_t *p, int l, int d) {
  long long n = 0;
  for (int q = 0; q < l; q++) n += p->D * cudnnsim_rnn_wlayer(p, q);
  return n + d * cudnnsim_rnn_wlayer(p, l);
}

/* Floats of DG per (t, d, b). */
CUDNNSIM_FN long long cudnnsim_rnn_dgw(const cudnnsim_rnn_t *p) {
  return (long long)(cudnnsim_rnn_g(p) + (p->mode == CUDNNSIM_GRU)) * p->H;
}

/* State area: sizes and offsets (floats) of one layer's parts. */
CUDNNSIM_FN long long cudnnsim_rnn_sy(const cudnnsim_rnn_t *p) {
  return (long long)p->T * p->B * p->D * p->H;
}
CUDNNSIM_FN long long cudnnsim_rnn_sgate(const cudnnsim_rnn_t *p) {
  return cudnnsim_rnn_sy(p) * cudnnsim_rnn_g(p);
}
CUDNNSIM_FN long long cudnnsim_rnn_sdg(const cudnnsim_rnn_t *p) {
  return (long long)p->T * p->D * p->B * cudnnsim_rnn_dgw(p);
}
CUDNNSIM_FN long long cudnnsim_rnn_slayer(const cudnnsim_rnn_t *p) {
  /* Y, GATE, C or NREC (both sized as Y; allocated for every mode), DG */
  return cudnnsim_rnn_sy(p) * 2 + cudnnsim_rnn_sgate(p) + cudnnsim_rnn_sdg(p);
}
CUDNNSIM_FN float *cudnnsim_rnn_Y(const cudnnsim_rnn_t *p, float *st, int l) {
  return st + l * cudnnsim_rnn_slayer(p);
}
CUDNNSIM_FN float *cudnnsim_rnn_GATE(const cudnnsim_rnn_t *p, float *st, int l) {
  return cudnnsim_rnn_Y(p, st, l) + cudnnsim_rnn_sy(p);
}
/* C for LSTM, NREC for GRU. */
CUDNNSIM_FN float *cudnnsim_rnn_CN(const cudnnsim_rnn_t *p, float *st, int l) {
  return cudnnsim_rnn_GATE(p, st, l) + cudnnsim_rnn_sgate(p);
}
CUDNNSIM_FN float *cudnnsim_rnn_DG(const cudnnsim_rnn_t *p, float *st, int l) {
  return cudnnsim_rnn_CN(p, st, l) + cudnnsim_rnn_sy(p);
}

/* The dropout record: 4 words (seed low and high, counter low and high) at the start of a
 * dropout descriptor's states, and copied after the layers' blocks of the state area by the
 * training forward that uses it. */
CUDNNSIM_FN unsigned *cudnnsim_rnn_drec(const cudnnsim_rnn_t *p, float *st) {
  return (unsigned *)(void *)(st + p->L * cudnnsim_rnn_slayer(p));
}

/* Dropout between layers (training): element k of layer l's input at (t, b) is kept when
 * u >= p and then scaled by 1 / (1 - p) (rounded once), else 0; u in [0, 1) is the top 24 bits
 * of splitmix64(seed + (counter * 2^32 + index) * golden ratio), index = ((l * T + t) * B + b)
 * * in + k. Each training forward uses the states' counter and advances it by one. */
CUDNNSIM_FN float cudnnsim_rnn_keep(const cudnnsim_rnn_t *p, float *st, int l, int t, int b,
                                    long long k) {
  if (!p->drop || l == 0) return 1.0f;
  const unsigned *r = cudnnsim_rnn_drec(p, st);
  unsigned long long seed = r[0] | (unsigned long long)r[1] << 32;
  unsigned long long ctr = r[2] | (unsigned long long)r[3] << 32;
  unsigned long long idx = (((unsigned long long)l * p->T + t) * p->B + b) * cudnnsim_rnn_in(p, l) + k;
  unsigned long long z = seed + ((ctr << 32) + idx) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z = z ^ (z >> 31);
  float u = (float)(z >> 40) * (1.0f / 16777216.0f);
  if (u < p->drop_p) return 0.0f;
  return 1.0f / (1.0f - p->drop_p);
}

/* Offset of element (t, b, v) of user data x or y whose vectors have n elements. */
CUDNNSIM_FN long long cudnnsim_rnn_xoff(const cudnnsim_rnn_t *p, int t, int b, long long v,
                                        long long n) {
  if (p->packed) return ((long long)p->start[t] + b) * n + v;
  return p->batch_major ? ((long long)b * p->T + t) * n + v : ((long long)t * p->B + b) * n + v;
}
/* Index of (t, d, b) in the [T][D][B] parts. */
CUDNNSIM_FN long long cudnnsim_rnn_tdb(const cudnnsim_rnn_t *p, int t, int d, int b) {
  return ((long long)t * p->D + d) * p->B + b;
}

CUDNNSIM_FN float cudnnsim_rnn_sig(float v) { return 1.0f / (1.0f + expf(-v)); }

/* Element k of layer l's input at (t, b): x itself for layer 0, layer l-1's Y above. */
CUDNNSIM_FN float cudnnsim_rnn_input(const cudnnsim_rnn_t *p, const void *x, float *st, int l,
                                     int t, int b, long long k) {
  if (l == 0) return cudnnsim_ld(x, p->dtype, cudnnsim_rnn_xoff(p, t, b, k, p->I));
  long long hd = (long long)p->D * p->H;
  float v = cudnnsim_rnn_Y(p, st, l - 1)[((long long)t * p->B + b) * hd + k];
  if (p->drop) v = v * cudnnsim_rnn_keep(p, st, l, t, b, k);
  return v;
}

/* h before step t of direction d (the previous step's output, or hx, or 0). */
CUDNNSIM_FN float cudnnsim_rnn_hprev(const cudnnsim_rnn_t *p, const void *hx, float *st, int l,
                                     int d, int t, int b, int k) {
  int first = d ? t == cudnnsim_rnn_len(p, b) - 1 : t == 0;
  if (first) {
    if (!hx) return 0.0f;
    return cudnnsim_ld(hx, p->dtype, (l * p->D + d) * p->hs0 + b * p->hs1 + k * p->hs2);
  }
  int tp = d ? t + 1 : t - 1;
  long long hd = (long long)p->D * p->H;
  return cudnnsim_rnn_Y(p, st, l)[((long long)tp * p->B + b) * hd + d * p->H + k];
}

/* The LSTM cell state before step t of direction d. */
CUDNNSIM_FN float cudnnsim_rnn_cprev(const cudnnsim_rnn_t *p, const void *cx, float *st, int l,
                                     int d, int t, int b, int j) {
  int first = d ? t == cudnnsim_rnn_len(p, b) - 1 : t == 0;
  if (first) {
    if (!cx) return 0.0f;
    return cudnnsim_ld(cx, p->dtype, (l * p->D + d) * p->cs0 + b * p->cs1 + j * p->cs2);
  }
  int tp = d ? t + 1 : t - 1;
  return cudnnsim_rnn_CN(p, st, l)[cudnnsim_rnn_tdb(p, tp, d, b) * p->H + j];
}

/* Forward of layer p->layer for thread i = d * B + b over its whole sequence. Writes Y, GATE,
 * C / NREC in the state area, and y (last layer), hy and cy (when given). */
CUDNNSIM_FN void cudnnsim_rnn_fwd_thread(const cudnnsim_rnn_t *p, const void *x, const void *hx,
                                         const void *cx, const void *w, float *st, void *y,
                                         void *hy, void *cy, unsigned *states, long long i) {
  if (p->drop && p->layer == 0 && i == 0) {
    /* The counter this forward uses, for the later layers and the backward passes; the next
     * forward uses the following one. Only layers above 0 read the copy (later launches). */
    unsigned *r = cudnnsim_rnn_drec(p, st);
    for (int q = 0; q < 4; q++) r[q] = states[q];
    unsigned long long ctr = (states[2] | (unsigned long long)states[3] << 32) + 1;
    states[2] = (unsigned)ctr, states[3] = (unsigned)(ctr >> 32);
  }
  int l = p->layer, d = (int)(i / p->B), b = (int)(i % p->B), G = cudnnsim_rnn_g(p), H = p->H;
  long long in = cudnnsim_rnn_in(p, l), hd = (long long)p->D * H;
  long long wo = cudnnsim_rnn_woff(p, l, d), ro = wo + (long long)G * H * in;
  long long bo = ro + (long long)G * H * H, bro = bo + (long long)G * H;
  float *Y = cudnnsim_rnn_Y(p, st, l), *GT = cudnnsim_rnn_GATE(p, st, l);
  float *CN = cudnnsim_rnn_CN(p, st, l);
  int dt = p->dtype, len = cudnnsim_rnn_len(p, b);
  /* Beyond a shorter sequence's end: 0 in Y, the padding value in an unpacked y. */
  for (int t = len; t < p->T; t++)
    for (int j = 0; j < H; j++) {
      cudnnsim_store(&Y[((long long)t * p->B + b) * hd + d * H + j], 0.0f);
      if (l == p->L - 1 && y && !p->packed)
        cudnnsim_st(y, dt, cudnnsim_rnn_xoff(p, t, b, d * H + j, hd), p->pad);
    }
  for (int s = 0; s < len; s++) {
    int t = d ? len - 1 - s : s;
    long long tdb = cudnnsim_rnn_tdb(p, t, d, b);
    for (int j = 0; j < H; j++) {
      float a[4], r[4];
      for (int g = 0; g < G; g++) {
        long long row = (long long)g * H + j;
        float ax, ah;
        ax = 0.0f;
        for (long long k = 0; k < in; k++) {
          float prod = cudnnsim_ld(w, dt, wo + row * in + k) *
                       cudnnsim_rnn_input(p, x, st, l, t, b, k);
          ax = ax + prod;
        }
        ah = 0.0f;
        for (int k = 0; k < H; k++) {
          float prod = cudnnsim_ld(w, dt, ro + row * H + k) *
                       cudnnsim_rnn_hprev(p, hx, st, l, d, t, b, k);
          ah = ah + prod;
        }
        if (p->bias) {
          ax = ax + cudnnsim_ld(w, dt, bo + row);
          ah = ah + cudnnsim_ld(w, dt, bro + row);
        }
        a[g] = ax;
        r[g] = ah;
      }
      float h;
      if (p->mode == CUDNNSIM_LSTM) {
        float ig = cudnnsim_rnn_sig(a[0] + r[0]), fg = cudnnsim_rnn_sig(a[1] + r[1]);
        float gg = tanhf(a[2] + r[2]), og = cudnnsim_rnn_sig(a[3] + r[3]);
        float c0 = cudnnsim_rnn_cprev(p, cx, st, l, d, t, b, j);
        float fc = fg * c0, ic = ig * gg, c = fc + ic;
        h = og * tanhf(c);
        GT[tdb * G * H + 0 * H + j] = ig;
        GT[tdb * G * H + 1 * H + j] = fg;
        GT[tdb * G * H + 2 * H + j] = gg;
        GT[tdb * G * H + 3 * H + j] = og;
        CN[tdb * H + j] = c;
        if (cy && s == len - 1)
          cudnnsim_st(cy, dt, (l * p->D + d) * p->cs0 + b * p->cs1 + j * p->cs2, c);
      } else if (p->mode == CUDNNSIM_GRU) {
        float rg = cudnnsim_rnn_sig(a[0] + r[0]), zg = cudnnsim_rnn_sig(a[1] + r[1]);
        float rn = rg * r[2], ng = tanhf(a[2] + rn);
        float h0 = cudnnsim_rnn_hprev(p, hx, st, l, d, t, b, j);
        float dif = h0 - ng, zd = zg * dif;
        h = ng + zd;
        GT[tdb * G * H + 0 * H + j] = rg;
        GT[tdb * G * H + 1 * H + j] = zg;
        GT[tdb * G * H + 2 * H + j] = ng;
        CN[tdb * H + j] = r[2];
      } else {
        float v = a[0] + r[0];
        if (p->mode == CUDNNSIM_RNN_TANH) h = tanhf(v);
        else h = v > 0.0f ? v : 0.0f;
        GT[tdb * H + j] = h;
      }
      /* Stored after the gates: every later unit of this step reads the previous step's Y. */
      cudnnsim_store(&Y[((long long)t * p->B + b) * hd + d * H + j], h);
      if (l == p->L - 1 && y) cudnnsim_st(y, dt, cudnnsim_rnn_xoff(p, t, b, d * H + j, hd), h);
      if (hy && s == len - 1)
        cudnnsim_st(hy, dt, (l * p->D + d) * p->hs0 + b * p->hs1 + j * p->hs2, h);
    }
  }
}

/* Backward through layer p->layer's sequence for thread i = d * B + b: dy is the user's dy
 * (last layer, of the data type) or DX (floats) below it. Per step, in reverse processing
 * order: dh_t = dh + dy[t]; the gates' pre-activation gradients into DG; then
 * dh = direct + sum over g, then j ascending of R[g][j][k] * dgrec[g][j] (direct: z * dh_t for
 * GRU, 0 otherwise); LSTM's dc = dc_t * f. dhx and dcx receive the final dh and dc. */
CUDNNSIM_FN void cudnnsim_rnn_bwd_gate_thread(const cudnnsim_rnn_t *p, const void *dy,
                                              const void *hx, const void *cx, const void *dhy,
                                              const void *dcy, const void *w, float *st,
                                              float *ws, void *dhx, void *dcx, long long i) {
  int l = p->layer, d = (int)(i / p->B), b = (int)(i % p->B), G = cudnnsim_rnn_g(p), H = p->H;
  long long in = cudnnsim_rnn_in(p, l), hd = (long long)p->D * H, dgw = cudnnsim_rnn_dgw(p);
  long long ro = cudnnsim_rnn_woff(p, l, d) + (long long)G * H * in;
  float *GT = cudnnsim_rnn_GATE(p, st, l), *CN = cudnnsim_rnn_CN(p, st, l);
  float *DG = cudnnsim_rnn_DG(p, st, l);
  float *dh = ws + cudnnsim_rnn_sy(p) + i * 3 * H, *dc = dh + H, *dir = dc + H;
  int dt = p->dtype, top = l == p->L - 1;
  for (int j = 0; j < H; j++) {
    dh[j] = dhy ? cudnnsim_ld(dhy, dt, (l * p->D + d) * p->hs0 + b * p->hs1 + j * p->hs2) : 0.0f;
    dc[j] = dcy && p->mode == CUDNNSIM_LSTM
                ? cudnnsim_ld(dcy, dt, (l * p->D + d) * p->cs0 + b * p->cs1 + j * p->cs2)
                : 0.0f;
  }
  int len = cudnnsim_rnn_len(p, b);
  /* No gradient beyond a shorter sequence's end (backward weights sums over every step). */
  for (int t = len; t < p->T; t++)
    for (long long q = 0; q < dgw; q++) DG[cudnnsim_rnn_tdb(p, t, d, b) * dgw + q] = 0.0f;
  for (int s = len - 1; s >= 0; s--) {
    int t = d ? len - 1 - s : s;
    long long tdb = cudnnsim_rnn_tdb(p, t, d, b);
    float *gt = GT + tdb * G * H, *dg = DG + tdb * dgw;
    for (int j = 0; j < H; j++) {
      long long yo = ((long long)t * p->B + b) * hd + d * H + j;
      float g = top ? cudnnsim_ld(dy, dt, cudnnsim_rnn_xoff(p, t, b, d * H + j, hd))
                    : ((const float *)dy)[yo];
      float dht = dh[j] + g;
      if (p->mode == CUDNNSIM_LSTM) {
        float ig = gt[j], fg = gt[H + j], gg = gt[2 * H + j], og = gt[3 * H + j];
        float c = CN[tdb * H + j], tc = tanhf(c);
        float c0 = cudnnsim_rnn_cprev(p, cx, st, l, d, t, b, j);
        float dog = dht * tc;
        float one_tc = 1.0f - tc * tc, dho = dht * og, dct = dho * one_tc;
        dct = dc[j] + dct;
        float dig = dct * gg, dgg = dct * ig, dfg = dct * c0;
        dc[j] = dct * fg;
        dg[j] = dig * (ig * (1.0f - ig));
        dg[H + j] = dfg * (fg * (1.0f - fg));
        dg[2 * H + j] = dgg * (1.0f - gg * gg);
        dg[3 * H + j] = dog * (og * (1.0f - og));
        dir[j] = 0.0f;
      } else if (p->mode == CUDNNSIM_GRU) {
        float rg = gt[j], zg = gt[H + j], ng = gt[2 * H + j];
        float h0 = cudnnsim_rnn_hprev(p, hx, st, l, d, t, b, j);
        float dn = dht * (1.0f - zg), dz = dht * (h0 - ng);
        float dnp = dn * (1.0f - ng * ng), dzp = dz * (zg * (1.0f - zg));
        float hn = CN[tdb * H + j], dr = dnp * hn;
        dg[j] = dr * (rg * (1.0f - rg));
        dg[H + j] = dzp;
        dg[2 * H + j] = dnp;
        dg[3 * H + j] = dnp * rg; /* gradient of R_n h + bR_n */
        dir[j] = dht * zg;
      } else {
        float h = gt[j];
        float dv = p->mode == CUDNNSIM_RNN_TANH ? dht * (1.0f - h * h) : (h > 0.0f ? dht : 0.0f);
        dg[j] = dv;
        dir[j] = 0.0f;
      }
    }
    for (int k = 0; k < H; k++) {
      float acc = dir[k];
      for (int g = 0; g < G; g++) {
        const float *src = (p->mode == CUDNNSIM_GRU && g == 2) ? dg + 3 * H : dg + g * H;
        for (int j = 0; j < H; j++) {
          float prod = cudnnsim_ld(w, dt, ro + ((long long)g * H + j) * H + k) * src[j];
          acc = acc + prod;
        }
      }
      dh[k] = acc;
    }
  }
  for (int j = 0; j < H; j++) {
    if (dhx) cudnnsim_st(dhx, dt, (l * p->D + d) * p->hs0 + b * p->hs1 + j * p->hs2, dh[j]);
    if (dcx && p->mode == CUDNNSIM_LSTM)
      cudnnsim_st(dcx, dt, (l * p->D + d) * p->cs0 + b * p->cs1 + j * p->cs2, dc[j]);
  }
}

/* Input gradient of layer p->layer, element i = (t * B + b) * in + k: sum over d, then g, then
 * j ascending of W[d][g][j][k] * DG_in[t][d][b][g][j]; into dx (layer 0, the data type) or DX. */
CUDNNSIM_FN void cudnnsim_rnn_bwd_dx_elem(const cudnnsim_rnn_t *p, const void *w, float *st,
                                          float *ws, void *dx, long long i) {
  int l = p->layer, G = cudnnsim_rnn_g(p), H = p->H;
  long long in = cudnnsim_rnn_in(p, l), dgw = cudnnsim_rnn_dgw(p);
  long long k = i % in, tb = i / in;
  int b = (int)(tb % p->B), t = (int)(tb / p->B);
  float *DG = cudnnsim_rnn_DG(p, st, l);
  float acc = 0.0f;
  for (int d = 0; d < p->D; d++) {
    long long wo = cudnnsim_rnn_woff(p, l, d);
    const float *dg = DG + cudnnsim_rnn_tdb(p, t, d, b) * dgw;
    for (int g = 0; g < G; g++)
      for (int j = 0; j < H; j++) {
        float prod = cudnnsim_ld(w, p->dtype, wo + ((long long)g * H + j) * in + k) * dg[g * H + j];
        acc = acc + prod;
      }
  }
  if (l == 0) {
    /* a packed layout has no rows beyond a sequence's end (an unpacked one gets 0 there) */
    if (!p->packed || t < cudnnsim_rnn_len(p, b))
      cudnnsim_st(dx, p->dtype, cudnnsim_rnn_xoff(p, t, b, k, p->I), acc);
  }
  else {
    /* through the dropout between the layers: the gradient of layer l-1's output */
    if (p->drop) acc = acc * cudnnsim_rnn_keep(p, st, l, t, b, k);
    cudnnsim_store(&ws[i], acc);
  }
}

/* Weight gradient element e of the weight space: sum over t, then b ascending of
 * DG_in * input (input matrices), DG_rec * h before the step (recurrent matrices), DG_in and
 * DG_rec (biases); added to dw (CUDNN_WGRAD_MODE_ADD) or stored. */
CUDNNSIM_FN void cudnnsim_rnn_bwd_w_elem(const cudnnsim_rnn_t *p, const void *x, const void *hx,
                                         float *st, void *dw, long long e) {
  int G = cudnnsim_rnn_g(p), H = p->H, l = 0, d = 0;
  long long off = e;
  for (;;) {
    long long n = cudnnsim_rnn_wlayer(p, l);
    if (off < n) break;
    off -= n;
    if (++d == p->D) d = 0, l++;
  }
  long long in = cudnnsim_rnn_in(p, l), gh = (long long)G * H, dgw = cudnnsim_rnn_dgw(p);
  int kind; /* 0 input matrix, 1 recurrent matrix, 2 input bias, 3 recurrent bias */
  long long row, col = 0;
  if (off < gh * in) kind = 0, row = off / in, col = off % in;
  else if ((off -= gh * in) < gh * H) kind = 1, row = off / H, col = off % H;
  else if ((off -= gh * H) < gh) kind = 2, row = off;
  else kind = 3, row = off - gh;
  int g = (int)(row / H), j = (int)(row % H);
  long long dgi = (kind & 1) && p->mode == CUDNNSIM_GRU && g == 2 ? 3 * H + j : row;
  float *DG = cudnnsim_rnn_DG(p, st, l);
  float acc = 0.0f;
  for (int t = 0; t < p->T; t++)
    for (int b = 0; b < p->B; b++) {
      if (t >= cudnnsim_rnn_len(p, b)) continue; /* its gradients are 0 */
      float gv = DG[cudnnsim_rnn_tdb(p, t, d, b) * dgw + dgi], prod;
      if (kind == 0) prod = gv * cudnnsim_rnn_input(p, x, st, l, t, b, col);
      else if (kind == 1) prod = gv * cudnnsim_rnn_hprev(p, hx, st, l, d, t, b, (int)col);
      else prod = gv;
      acc = acc + prod;
    }
  if (p->wgrad_add) acc = cudnnsim_ld(dw, p->dtype, e) + acc;
  cudnnsim_st(dw, p->dtype, e, acc);
}

#endif
