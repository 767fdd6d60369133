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

#define TI_DIMS 25

/* A TensorInfo parameter, read. */
typedef struct {
  char *data;
  int64_t sizes[TI_DIMS], strides[TI_DIMS];
  int dims;
} tinfo_t;

static tinfo_t tinfo(const void *arg, int isz) {
  tinfo_t t;
  const char *p = arg;
  memcpy(&t.data, p, sizeof t.data);
  for (int i = 0; i < TI_DIMS; i++) {
    if (isz == 4) {
      int32_t a, b;
      memcpy(&a, p + 8 + 4 * i, 4), memcpy(&b, p + 8 + 4 * TI_DIMS + 4 * i, 4);
      t.sizes[i] = a, t.strides[i] = b;
    } else {
      memcpy(&t.sizes[i], p + 8 + 8 * i, 8), memcpy(&t.strides[i], p + 8 + 8 * TI_DIMS + 8 * i, 8);
    }
  }
  memcpy(&t.dims, p + 8 + 2 * TI_DIMS * isz, 4);
  return t;
}

/* IndexToOffset<T, IndexType, dims>::get(id, t): the element offset of linear index id. */
static int64_t offset(const tinfo_t *t, int64_t id, int dims) {
  int64_t off = 0;
  for (int i = dims - 1; i > 0; i--) {
    off += (id % t->sizes[i]) * t->strides[i];
    id /= t->sizes[i];
  }
  return off + id * t->strides[0];
}

typedef struct {
  int dt, dims;
} cellk_t;

static float ld(const cellk_t *c, const tinfo_t *t, int64_t id, int dims) {
  size_t es = simtw_dt_size((simtw_dt_t)c->dt);
  return (float)simtw_load((simtw_dt_t)c->dt, t->data + (size_t)offset(t, id, dims) * es).f;
}

static void st(const cellk_t *c, const tinfo_t *t, int64_t id, float v) {
  size_t es = simtw_dt_size((simtw_dt_t)c->dt);
  simtw_store((simtw_dt_t)c->dt, t->data + (size_t)offset(t, id, c->dims) * es, simtw_fval(v));
}

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

static int64_t idx_arg(void *arg, int isz) {
  if (isz == 4) {
    int32_t v;
    memcpy(&v, arg, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, arg, 8);
  return v;
}

/* lstm_cell_forward(input, hidden, bias1, bias2, cx, hy, cy, workspace, hsz, totalElements). */
static void run_lstm_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  cellk_t c = {k->p[0], k->p[2]};
  int isz = k->p[1];
  tinfo_t in = tinfo(args[0], isz), hid = tinfo(args[1], isz), b1 = tinfo(args[2], isz),
          b2 = tinfo(args[3], isz), cx = tinfo(args[4], isz), hy = tinfo(args[5], isz),
          cy = tinfo(args[6], isz), ws = tinfo(args[7], isz);
  int64_t hsz = idx_arg(args[8], isz), total = idx_arg(args[9], isz);
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
      simtw_store((simtw_dt_t)c.dt, ws.data + (size_t)offset(&ws, off + j * hsz, c.dims) * es,
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
  tinfo_t sto = tinfo(args[0], isz), gig_t = tinfo(args[1], isz), cx = tinfo(args[2], isz),
          cy = tinfo(args[3], isz), go_t = tinfo(args[4], isz), goc_t = tinfo(args[5], isz),
          gcx_t = tinfo(args[6], isz);
  int64_t hsz = idx_arg(args[7], isz), total = idx_arg(args[8], isz);
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
      simtw_store((simtw_dt_t)c.dt, gig_t.data + (size_t)offset(&gig_t, off + j * hsz, c.dims) * es,
                  simtw_fval(out[j]));
    st(&c, &gcx_t, li, gcx);
  }
}

/* gru_cell_forward(Input, Hidden, Bias1, Bias2, hx, hy, storage, hsz, totalElements). */
static void run_gru_fw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  cellk_t c = {k->p[0], k->p[2]};
  int isz = k->p[1];
  tinfo_t in = tinfo(args[0], isz), hid = tinfo(args[1], isz), b1 = tinfo(args[2], isz),
          b2 = tinfo(args[3], isz), hx_t = tinfo(args[4], isz), hy = tinfo(args[5], isz),
          sto = tinfo(args[6], isz);
  int64_t hsz = idx_arg(args[7], isz), total = idx_arg(args[8], isz);
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
      simtw_store((simtw_dt_t)c.dt, sto.data + (size_t)offset(&sto, so + j * hsz, c.dims) * es,
                  simtw_fval(saved[j]));
  }
}

/* gru_cell_backward(gradInInput, gradInHidden, gradOutput, gradInputHx, storage, hsz,
 * totalElements). */
static void run_gru_bw(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  cellk_t c = {k->p[0], k->p[2]};
  int isz = k->p[1];
  tinfo_t gin_t = tinfo(args[0], isz), ghid_t = tinfo(args[1], isz), go_t = tinfo(args[2], isz),
          ghx_t = tinfo(args[3], isz), sto = tinfo(args[4], isz);
  int64_t hsz = idx_arg(args[5], isz), total = idx_arg(args[6], isz);
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
      simtw_store((simtw_dt_t)c.dt, gin_t.data + (size_t)offset(&gin_t, off + j * hsz, c.dims) * es,
                  simtw_fval(a[j]));
      simtw_store((simtw_dt_t)c.dt, ghid_t.data + (size_t)offset(&ghid_t, off + j * hsz, c.dims) * es,
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
