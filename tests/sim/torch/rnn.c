/* rnn.c — CPU twins of PyTorch's fused RNN cell kernels (RNN.cu: lstm_cell_forward,
 * lstm_cell_backward, gru_cell_forward, gru_cell_backward), which nn.LSTM and nn.GRU run between
 * their GEMMs when cuDNN is not used (torch.backends.cudnn.enabled = False, or inputs cuDNN does
 * not take), in float, c10::Half and c10::BFloat16 with float arithmetic (accscalar_t).
 *
 * Every tensor is a TensorInfo<T, IndexType> parameter: {T *data; IndexType sizes[25];
 * IndexType strides[25]; int dims;} (216 bytes with int indices, 416 with long). An element is
 * found as at::cuda::detail::IndexToOffset<T, IndexType, Dims> finds it, Dims being the kernel's
 * indexing kind (1: the tensors were collapsed to one contiguous dimension; 2: two dimensions);
 * biases always with Dims 1. A bias, gradient or output left undefined has a null data pointer.
 * Each thread's arithmetic is the kernel's, in its order, in float, rounded once at each store;
 * sigmoid is 1 / (1 + exp(-x)) and tanh the float function, as the kernels call them (the C
 * library's expf and tanhf may differ from CUDA's by an ulp, and nvcc may contract a product and
 * a sum into one FMA where this computes them apart: results equal a GPU's within rounding).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "twins.h"

typedef struct {
  int dt, dims;
} cellk_t;

static float ld(const cellk_t *c, const simtw_ti_t *t, int64_t id, int dims) {
  size_t es = simtw_dt_size((simtw_dt_t)c->dt);
  return (float)simtw_load((simtw_dt_t)c->dt, t->data + (size_t)simtw_ti_offset(t, dims, id) * es).f;
}

static void st(const cellk_t *c, const simtw_ti_t *t, int64_t id, float v) {
  size_t es = simtw_dt_size((simtw_dt_t)c->dt);
  simtw_store((simtw_dt_t)c->dt, t->data + (size_t)simtw_ti_offset(t, c->dims, id) * es, simtw_fval(v));
}

/* The element type of the kernel's index_type (int or long) parameters. */
static simtw_dt_t index_dt(int isz) { return isz == 4 ? DT_I32 : DT_I64; }

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* lstm_cell_forward(input, hidden, bias1, bias2, cx, hy, cy, workspace, hsz, totalElements). */
static void run_lstm_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  cellk_t c = {k->p[0], k->p[2]};
  int isz = k->p[1];
  simtw_ti_t in = simtw_ti_read(args[0], isz), hid = simtw_ti_read(args[1], isz), b1 = simtw_ti_read(args[2], isz),
          b2 = simtw_ti_read(args[3], isz), cx = simtw_ti_read(args[4], isz), hy = simtw_ti_read(args[5], isz),
          cy = simtw_ti_read(args[6], isz), ws = simtw_ti_read(args[7], isz);
  int64_t hsz = simtw_load(index_dt(isz), args[8]).i, total = simtw_load(index_dt(isz), args[9]).i;
  int has_bias = b1.data != NULL;
  for (int64_t li = 0; li < total; li++) {
    int64_t off = (li / hsz) * 4 * hsz + li % hsz;
    float g[4];
    for (int j = 0; j < 4; j++) {
      float s = ld(&c, &in, off + j * hsz, c.dims) + ld(&c, &hid, off + j * hsz, c.dims);
      if (has_bias)
        s = s + ld(&c, &b1, li % hsz + j * hsz, 1) + ld(&c, &b2, li % hsz + j * hsz, 1);
      else
        s = s + 0.0f + 0.0f;
      g[j] = j == 2 ? tanhf(s) : sigm(s);
    }
    float fcy = g[1] * ld(&c, &cx, li, c.dims) + g[0] * g[2];
    float fhy = g[3] * tanhf(fcy);
    st(&c, &hy, li, fhy);
    st(&c, &cy, li, fcy);
    for (int j = 0; j < 4; j++) {
      size_t es = simtw_dt_size((simtw_dt_t)c.dt);
      simtw_store((simtw_dt_t)c.dt, ws.data + (size_t)simtw_ti_offset(&ws, c.dims, off + j * hsz) * es,
                  simtw_fval(g[j]));
    }
  }
}

/* lstm_cell_backward(storage, gradInGates, cx, cy, gradoutput, gradoutputcell, gradInputCx, hsz,
 * totalElements). */
static void run_lstm_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  cellk_t c = {k->p[0], k->p[2]};
  int isz = k->p[1];
  simtw_ti_t sto = simtw_ti_read(args[0], isz), gig_t = simtw_ti_read(args[1], isz), cx = simtw_ti_read(args[2], isz),
          cy = simtw_ti_read(args[3], isz), go_t = simtw_ti_read(args[4], isz), goc_t = simtw_ti_read(args[5], isz),
          gcx_t = simtw_ti_read(args[6], isz);
  int64_t hsz = simtw_load(index_dt(isz), args[7]).i, total = simtw_load(index_dt(isz), args[8]).i;
  for (int64_t li = 0; li < total; li++) {
    int64_t off = (li / hsz) * 4 * hsz + li % hsz;
    float ig = ld(&c, &sto, off, c.dims), fg = ld(&c, &sto, off + hsz, c.dims),
          cg = ld(&c, &sto, off + 2 * hsz, c.dims), og = ld(&c, &sto, off + 3 * hsz, c.dims);
    float vcx = ld(&c, &cx, li, c.dims), vcy = ld(&c, &cy, li, c.dims);
    float go = go_t.data ? ld(&c, &go_t, li, c.dims) : 0.0f;
    float goc = goc_t.data ? ld(&c, &goc_t, li, c.dims) : 0.0f;
    float gcx = tanhf(vcy);
    float gog = go * gcx;
    gcx = go * og * (1 - gcx * gcx) + goc;
    float gig = gcx * cg, gfg = gcx * vcx, gcg = gcx * ig;
    gcx = gcx * fg;
    gig = gig * (1 - ig) * ig;
    gfg = gfg * (1 - fg) * fg;
    gcg = gcg * (1 - cg * cg);
    gog = gog * (1 - og) * og;
    float out[4] = {gig, gfg, gcg, gog};
    size_t es = simtw_dt_size((simtw_dt_t)c.dt);
    for (int j = 0; j < 4; j++)
      simtw_store((simtw_dt_t)c.dt, gig_t.data + (size_t)simtw_ti_offset(&gig_t, c.dims, off + j * hsz) * es,
                  simtw_fval(out[j]));
    st(&c, &gcx_t, li, gcx);
  }
}

/* gru_cell_forward(Input, Hidden, Bias1, Bias2, hx, hy, storage, hsz, totalElements). */
static void run_gru_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  cellk_t c = {k->p[0], k->p[2]};
  int isz = k->p[1];
  simtw_ti_t in = simtw_ti_read(args[0], isz), hid = simtw_ti_read(args[1], isz), b1 = simtw_ti_read(args[2], isz),
          b2 = simtw_ti_read(args[3], isz), hx_t = simtw_ti_read(args[4], isz), hy = simtw_ti_read(args[5], isz),
          sto = simtw_ti_read(args[6], isz);
  int64_t hsz = simtw_load(index_dt(isz), args[7]).i, total = simtw_load(index_dt(isz), args[8]).i;
  int has_bias = b1.data != NULL;
  size_t es = simtw_dt_size((simtw_dt_t)c.dt);
  for (int64_t li = 0; li < total; li++) {
    int64_t off = (li / hsz) * 3 * hsz + li % hsz, b = li % hsz;
    float ir = ld(&c, &in, off, c.dims), ii = ld(&c, &in, off + hsz, c.dims),
          inn = ld(&c, &in, off + 2 * hsz, c.dims);
    float hr = ld(&c, &hid, off, c.dims), hi = ld(&c, &hid, off + hsz, c.dims),
          hn = ld(&c, &hid, off + 2 * hsz, c.dims);
    float hx = ld(&c, &hx_t, li, c.dims);
    float b1r = 0, b1i = 0, b1n = 0, b2r = 0, b2i = 0, b2n = 0;
    if (has_bias) {
      b1r = ld(&c, &b1, b, 1), b1i = ld(&c, &b1, b + hsz, 1), b1n = ld(&c, &b1, b + 2 * hsz, 1);
      b2r = ld(&c, &b2, b, 1), b2i = ld(&c, &b2, b + hsz, 1), b2n = ld(&c, &b2, b + 2 * hsz, 1);
    }
    float rg = sigm(ir + hr + b1r + b2r), ig = sigm(ii + hi + b1i + b2i);
    float ng = tanhf(inn + b1n + rg * (hn + b2n));
    st(&c, &hy, li, ng + ig * (hx - ng));
    int64_t so = (li / hsz) * 5 * hsz + li % hsz;
    float saved[5] = {rg, ig, ng, hx, hn + b2n};
    for (int j = 0; j < 5; j++)
      simtw_store((simtw_dt_t)c.dt, sto.data + (size_t)simtw_ti_offset(&sto, c.dims, so + j * hsz) * es,
                  simtw_fval(saved[j]));
  }
}

/* gru_cell_backward(gradInInput, gradInHidden, gradOutput, gradInputHx, storage, hsz,
 * totalElements). */
static void run_gru_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  cellk_t c = {k->p[0], k->p[2]};
  int isz = k->p[1];
  simtw_ti_t gin_t = simtw_ti_read(args[0], isz), ghid_t = simtw_ti_read(args[1], isz), go_t = simtw_ti_read(args[2], isz),
          ghx_t = simtw_ti_read(args[3], isz), sto = simtw_ti_read(args[4], isz);
  int64_t hsz = simtw_load(index_dt(isz), args[5]).i, total = simtw_load(index_dt(isz), args[6]).i;
  size_t es = simtw_dt_size((simtw_dt_t)c.dt);
  for (int64_t li = 0; li < total; li++) {
    int64_t so = (li / hsz) * 5 * hsz + li % hsz;
    float rg = ld(&c, &sto, so, c.dims), ig = ld(&c, &sto, so + hsz, c.dims),
          ng = ld(&c, &sto, so + 2 * hsz, c.dims), hx = ld(&c, &sto, so + 3 * hsz, c.dims),
          hn = ld(&c, &sto, so + 4 * hsz, c.dims);
    float go = ld(&c, &go_t, li, c.dims);
    int64_t off = (li / hsz) * 3 * hsz + li % hsz;
    float gig = go * (hx - ng) * (1 - ig) * ig;
    float ghx = go * ig;
    float gin = go * (1 - ig) * (1 - ng * ng);
    float ghn = gin * rg;
    float grg = gin * hn * (1 - rg) * rg;
    float a[3] = {grg, gig, gin}, h[3] = {grg, gig, ghn};
    for (int j = 0; j < 3; j++) {
      simtw_store((simtw_dt_t)c.dt, gin_t.data + (size_t)simtw_ti_offset(&gin_t, c.dims, off + j * hsz) * es,
                  simtw_fval(a[j]));
      simtw_store((simtw_dt_t)c.dt, ghid_t.data + (size_t)simtw_ti_offset(&ghid_t, c.dims, off + j * hsz) * es,
                  simtw_fval(h[j]));
    }
    st(&c, &ghx_t, li, ghx);
  }
}

int simtw_rnn_resolve(const char *dm, simtw_nn_t *k) {
  static const struct {
    const char *name;
    simtw_run_fn run;
  } cells[] = {{"lstm_cell_forward<", run_lstm_fw},
               {"lstm_cell_backward<", run_lstm_bw},
               {"gru_cell_forward<", run_gru_fw},
               {"gru_cell_backward<", run_gru_bw}};
  static const char prefix[] = "void at::native::(anonymous namespace)::kernel::";
  static const struct {
    const char *spelling;
    simtw_dt_t dt;
  } types[] = {{"float", DT_F32}, {"c10::Half", DT_F16}, {"c10::BFloat16", DT_BF16}};
  if (strncmp(dm, prefix, sizeof prefix - 1)) return 0;
  const char *p = dm + sizeof prefix - 1;
  for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
    size_t n = strlen(cells[i].name);
    if (strncmp(p, cells[i].name, n)) continue;
    const char *t = p + n;
    for (size_t j = 0; j < sizeof types / sizeof types[0]; j++) {
      size_t m = strlen(types[j].spelling);
      char tail[64];
      if (strncmp(t, types[j].spelling, m)) continue;
      for (int isz = 4; isz <= 8; isz += 4)
        for (int dims = 1; dims <= 2; dims++) {
          snprintf(tail, sizeof tail, ", float, %s, %d>(", isz == 4 ? "int" : "long", dims);
          if (strncmp(t + m, tail, strlen(tail))) continue;
          memset(k, 0, sizeof *k);
          k->run = cells[i].run;
          k->p[0] = types[j].dt, k->p[1] = isz, k->p[2] = dims;
          return 1;
        }
    }
    return 0;
  }
  return 0;
}
