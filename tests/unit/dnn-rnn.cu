/* dnn-rnn.cu — cuDNN's RNN API (the calls PyTorch's cuDNN RNN path makes) against a
 * double-precision reference written here from cuDNN's documented cell equations.
 *
 * For each cell (RNN_RELU, RNN_TANH, LSTM, GRU), uni- and bidirectional, two layers, both
 * sequence-major and batch-major data, random weights that the reference reads where
 * cudnnGetRNNWeightParams points (checking the descriptors it fills): cudnnRNNForward
 * (training) must give y, hy and cy within 1e-5 of the reference, the inference mode the same
 * bits; cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8 must give the gradients of
 * L = sum(y * gy) + sum(hy * ghy) (+ sum(cy * gcy)) that central differences of the reference
 * give (every weight, input and initial state element; tolerance 1e-3 absolute plus relative).
 * CUDNN_WGRAD_MODE_ADD adds to what dw holds, SET overwrites. Then: sequences of 5, 4, 3 and 2
 * steps, packed (each cell) and unpacked (y's padding holds paddingFill, dx's 0); no biases
 * (CUDNN_RNN_NO_BIAS) and NULL initial states against the reference; half (LSTM) and bfloat16
 * (GRU) data with float math, within their rounding (forward 2e-3 and 1.6e-2, gradients 4e-3
 * and 3e-2); a forward captured from a stream into a CUDA graph is one kernel node per layer
 * and its replay gives the eager bits; dropout between layers in training (dropout()); statuses
 * for bad and unsupported requests.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "check.h"

static cudnnHandle_t dnn;

/* The data type of the runs (float, half or bfloat16), its size, and the tolerances of the
 * forward and of the gradients relative to 1 + |reference|. */
static cudnnDataType_t DT = CUDNN_DATA_FLOAT;
static size_t ES = 4;
static double TOL_F = 1e-5, TOL_B = 1e-3;

/* v rounded to DT. */
static float q(float v) {
  if (DT == CUDNN_DATA_HALF) return __half2float(__float2half_rn(v));
  if (DT == CUDNN_DATA_BFLOAT16) return __bfloat162float(__float2bfloat16_rn(v));
  return v;
}

struct Net {
  cudnnRNNMode_t mode;
  int L, D, T, B, I, H, bias, batch_major;
  int varlen, packed; /* sequence b has T - b steps (at least 1); the packed layout */
};

static int seq_len(const Net &n, int b) { return n.varlen ? (n.T - b > 1 ? n.T - b : 1) : n.T; }

/* Padding value of unpacked outputs of sequences of different lengths. */
static float pad_fill = 7.0f;

static int gates(cudnnRNNMode_t m) { return m == CUDNN_LSTM ? 4 : m == CUDNN_GRU ? 3 : 1; }

/* Offsets (elements) of every matrix and bias in the weight space, from cudnnGetRNNWeightParams. */
struct Layout {
  std::vector<long> m, b; /* [pseudo-layer * 2G + linLayerID] */
  size_t bytes;
};

static unsigned long long rng = 88172645463325252ULL;
static float urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 40) / (double)(1 << 24)) - 0.5f;
}

/* The reference forward in double. x [T][B][I] (seq-major), h0/c0 [L*D][B][H] (may be NULL),
 * w the weight space; y [T][B][D*H], hy, cy. */
static void ref_forward(const Net &n, const Layout &lay, const double *w, const double *x,
                        const double *h0, const double *c0, double *y, double *hy, double *cy) {
  int G = gates(n.mode), H = n.H, HD = n.D * H;
  std::vector<double> in(x, x + (size_t)n.T * n.B * n.I), out((size_t)n.T * n.B * HD);
  int insz = n.I;
  for (int l = 0; l < n.L; l++) {
    for (int d = 0; d < n.D; d++) {
      int p = l * n.D + d;
      for (int b = 0; b < n.B; b++) {
        std::vector<double> h(H), c(H);
        for (int j = 0; j < H; j++) {
          h[j] = h0 ? h0[((size_t)p * n.B + b) * H + j] : 0;
          c[j] = c0 ? c0[((size_t)p * n.B + b) * H + j] : 0;
        }
        int len = seq_len(n, b);
        for (int s = 0; s < len; s++) {
          int t = d ? len - 1 - s : s;
          std::vector<double> a(G * H), r(G * H), hn(H);
          for (int g = 0; g < G; g++)
            for (int j = 0; j < H; j++) {
              double ax = 0, ah = 0;
              for (int k = 0; k < insz; k++)
                ax += w[lay.m[p * 2 * G + g] + j * insz + k] * in[((size_t)t * n.B + b) * insz + k];
              for (int k = 0; k < H; k++) ah += w[lay.m[p * 2 * G + G + g] + j * H + k] * h[k];
              if (n.bias) ax += w[lay.b[p * 2 * G + g] + j], ah += w[lay.b[p * 2 * G + G + g] + j];
              a[g * H + j] = ax, r[g * H + j] = ah;
            }
          for (int j = 0; j < H; j++) {
            auto sg = [](double v) { return 1 / (1 + exp(-v)); };
            if (n.mode == CUDNN_LSTM) {
              double i_ = sg(a[j] + r[j]), f = sg(a[H + j] + r[H + j]);
              double g_ = tanh(a[2 * H + j] + r[2 * H + j]), o = sg(a[3 * H + j] + r[3 * H + j]);
              c[j] = f * c[j] + i_ * g_;
              hn[j] = o * tanh(c[j]);
            } else if (n.mode == CUDNN_GRU) {
              double rr = sg(a[j] + r[j]), z = sg(a[H + j] + r[H + j]);
              double nn = tanh(a[2 * H + j] + rr * r[2 * H + j]);
              hn[j] = (1 - z) * nn + z * h[j];
            } else {
              double v = a[j] + r[j];
              hn[j] = n.mode == CUDNN_RNN_TANH ? tanh(v) : (v > 0 ? v : 0);
            }
          }
          h = hn;
          for (int j = 0; j < H; j++) out[((size_t)t * n.B + b) * HD + d * H + j] = h[j];
        }
        for (int j = 0; j < H; j++) {
          hy[((size_t)p * n.B + b) * H + j] = h[j];
          if (cy) cy[((size_t)p * n.B + b) * H + j] = c[j];
        }
      }
    }
    in = out;
    insz = HD;
  }
  memcpy(y, out.data(), out.size() * sizeof(double));
}

struct Descs {
  cudnnRNNDescriptor_t rnn;
  cudnnDropoutDescriptor_t drop;
  cudnnRNNDataDescriptor_t xd, yd;
  cudnnTensorDescriptor_t hd;
};

static Descs make_descs(const Net &n, cudnnRNNBiasMode_t bias) {
  Descs s;
  CHECK_DNN(cudnnCreateDropoutDescriptor(&s.drop));
  CHECK_DNN(cudnnSetDropoutDescriptor(s.drop, dnn, 0.0f, NULL, 0, 0));
  CHECK_DNN(cudnnCreateRNNDescriptor(&s.rnn));
  CHECK_DNN(cudnnSetRNNDescriptor_v8(s.rnn, CUDNN_RNN_ALGO_STANDARD, n.mode, bias,
                                     n.D == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                                     CUDNN_LINEAR_INPUT, DT, CUDNN_DATA_FLOAT,
                                     CUDNN_DEFAULT_MATH, n.I, n.H, n.H, n.L, s.drop,
                                     CUDNN_RNN_PADDED_IO_ENABLED));
  std::vector<int> lens(n.B);
  for (int b = 0; b < n.B; b++) lens[b] = seq_len(n, b);
  cudnnRNNDataLayout_t layout = n.packed        ? CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED
                                : n.batch_major ? CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED
                                                : CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
  void *fill = n.varlen ? (void *)&pad_fill : NULL; /* (float runs only) */
  CHECK_DNN(cudnnCreateRNNDataDescriptor(&s.xd));
  CHECK_DNN(cudnnSetRNNDataDescriptor(s.xd, DT, layout, n.T, n.B, n.I, lens.data(), NULL));
  CHECK_DNN(cudnnCreateRNNDataDescriptor(&s.yd));
  CHECK_DNN(cudnnSetRNNDataDescriptor(s.yd, DT, layout, n.T, n.B, n.D * n.H, lens.data(), fill));
  int dims[3] = {n.L * n.D, n.B, n.H}, strides[3] = {n.B * n.H, n.H, 1};
  CHECK_DNN(cudnnCreateTensorDescriptor(&s.hd));
  CHECK_DNN(cudnnSetTensorNdDescriptor(s.hd, DT, 3, dims, strides));
  return s;
}

static void free_descs(Descs &s) {
  CHECK_DNN(cudnnDestroyRNNDescriptor(s.rnn));
  CHECK_DNN(cudnnDestroyDropoutDescriptor(s.drop));
  CHECK_DNN(cudnnDestroyRNNDataDescriptor(s.xd));
  CHECK_DNN(cudnnDestroyRNNDataDescriptor(s.yd));
  CHECK_DNN(cudnnDestroyTensorDescriptor(s.hd));
}

static Layout layout_of(const Net &n, const Descs &s, void *w) {
  Layout lay;
  CHECK_DNN(cudnnGetRNNWeightSpaceSize(dnn, s.rnn, &lay.bytes));
  int G = gates(n.mode);
  cudnnTensorDescriptor_t md, bd;
  CHECK_DNN(cudnnCreateTensorDescriptor(&md));
  CHECK_DNN(cudnnCreateTensorDescriptor(&bd));
  for (int p = 0; p < n.L * n.D; p++)
    for (int id = 0; id < 2 * G; id++) {
      void *m = NULL, *b = NULL;
      CHECK_DNN(cudnnGetRNNWeightParams(dnn, s.rnn, p, lay.bytes, w, id, md, &m, bd, &b));
      cudnnDataType_t dt;
      int nb, dim[3], str[3];
      CHECK_DNN(cudnnGetTensorNdDescriptor(md, 3, &dt, &nb, dim, str));
      int in = id >= G ? n.H : (p / n.D == 0 ? n.I : n.D * n.H);
      CHECK(nb == 3 && dim[0] == 1 && dim[1] == n.H && dim[2] == in && str[2] == 1);
      lay.m.push_back((long)(((char *)m - (char *)w) / (long)ES));
      if (n.bias) {
        CHECK_DNN(cudnnGetTensorNdDescriptor(bd, 3, &dt, &nb, dim, str));
        CHECK(nb == 3 && dim[1] == n.H && dim[2] == 1);
        lay.b.push_back((long)(((char *)b - (char *)w) / (long)ES));
      } else {
        CHECK_PTR(b, ==, NULL);
      }
    }
  CHECK_DNN(cudnnDestroyTensorDescriptor(md));
  CHECK_DNN(cudnnDestroyTensorDescriptor(bd));
  return lay;
}

/* Device copies of host floats as DT, and back. */
static float *dev(const std::vector<float> &h) {
  float *d;
  std::vector<unsigned short> b(h.size());
  for (size_t i = 0; i < h.size(); i++) {
    if (DT == CUDNN_DATA_HALF) {
      __half v = __float2half_rn(h[i]);
      memcpy(&b[i], &v, 2);
    } else if (DT == CUDNN_DATA_BFLOAT16) {
      __nv_bfloat16 v = __float2bfloat16_rn(h[i]);
      memcpy(&b[i], &v, 2);
    }
  }
  CHECK_CUDA(cudaMalloc(&d, h.size() * ES + 4));
  CHECK_CUDA(cudaMemcpy(d, ES == 4 ? (const void *)h.data() : (const void *)b.data(),
                        h.size() * ES, cudaMemcpyHostToDevice));
  return d;
}

static std::vector<float> host(const float *d, size_t n) {
  std::vector<float> h(n);
  std::vector<unsigned short> b(n);
  CHECK_CUDA(cudaMemcpy(ES == 4 ? (void *)h.data() : (void *)b.data(), d, n * ES,
                        cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n && ES == 2; i++) {
    if (DT == CUDNN_DATA_HALF) {
      __half v;
      memcpy(&v, &b[i], 2);
      h[i] = __half2float(v);
    } else {
      __nv_bfloat16 v;
      memcpy(&v, &b[i], 2);
      h[i] = __bfloat162float(v);
    }
  }
  return h;
}

static std::vector<float> rand_vec(size_t n) {
  std::vector<float> v(n);
  for (auto &e : v) e = q(urand());
  return v;
}

/* The user's x or y (layout of n) at (t, b, v) in seq-major order. */
static size_t uoff(const Net &n, int t, int b, int v, int vs) {
  if (n.packed) { /* rows of step t: the sequences longer than t, after those of earlier steps */
    size_t row = 0;
    for (int q = 0; q < t; q++)
      for (int c = 0; c < n.B; c++) row += seq_len(n, c) > q;
    return (row + b) * vs + v;
  }
  return n.batch_major ? ((size_t)b * n.T + t) * vs + v : ((size_t)t * n.B + b) * vs + v;
}

/* Whether step t of sequence b exists. */
static int valid(const Net &n, int t, int b) { return t < seq_len(n, b); }

static void near(const char *what, double got, double want, double tol, const Net &n, size_t i) {
  if (!(fabs(got - want) <= tol * (1 + fabs(want))))
    CHECK_FAIL_("mode %d D %d batch_major %d bias %d: %s[%zu] = %.8g, reference %.8g", n.mode,
                n.D, n.batch_major, n.bias, what, i, got, want);
}

static double maxdiff = 0;

static void run(const Net &n, int with_states) {
  int G = gates(n.mode), HD = n.D * n.H, lstm = n.mode == CUDNN_LSTM;
  Descs s = make_descs(n, n.bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS);
  size_t wbytes;
  CHECK_DNN(cudnnGetRNNWeightSpaceSize(dnn, s.rnn, &wbytes));
  size_t nw = wbytes / ES, nx = (size_t)n.T * n.B * n.I, ny = (size_t)n.T * n.B * HD;
  size_t nh = (size_t)n.L * n.D * n.B * n.H;
  std::vector<float> w = rand_vec(nw), x = rand_vec(nx), h0 = rand_vec(nh), c0 = rand_vec(nh);
  std::vector<float> gy = rand_vec(ny), ghy = rand_vec(nh), gcy = rand_vec(nh);
  float *dw_ = dev(w), *dx_ = dev(x), *dh0 = dev(h0), *dc0 = dev(c0);
  Layout lay = layout_of(n, s, dw_);
  size_t ws, rs, wsi, rsi;
  CHECK_DNN(cudnnGetRNNTempSpaceSizes(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, s.xd, &ws, &rs));
  CHECK_DNN(cudnnGetRNNTempSpaceSizes(dnn, s.rnn, CUDNN_FWD_MODE_INFERENCE, s.xd, &wsi, &rsi));
  CHECK_INT(rsi, ==, 0);
  void *work, *res, *worki;
  CHECK_CUDA(cudaMalloc(&work, ws));
  CHECK_CUDA(cudaMalloc(&res, rs));
  CHECK_CUDA(cudaMalloc(&worki, wsi));
  float *y, *hy, *cy, *yi, *hyi;
  CHECK_CUDA(cudaMalloc(&y, ny * ES));
  CHECK_CUDA(cudaMalloc(&yi, ny * ES));
  CHECK_CUDA(cudaMalloc(&hy, nh * ES));
  CHECK_CUDA(cudaMalloc(&hyi, nh * ES));
  CHECK_CUDA(cudaMalloc(&cy, nh * ES));
  const float *hx = with_states ? dh0 : NULL, *cx = with_states && lstm ? dc0 : NULL;
  cudnnTensorDescriptor_t cd = lstm ? s.hd : NULL;
  CHECK_DNN(cudnnRNNForward(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, NULL, s.xd, dx_, s.yd, y, s.hd,
                            hx, hy, cd, cx, lstm ? cy : NULL, wbytes, dw_, ws, work, rs, res));
  CHECK_DNN(cudnnRNNForward(dnn, s.rnn, CUDNN_FWD_MODE_INFERENCE, NULL, s.xd, dx_, s.yd, yi, s.hd,
                            hx, hyi, cd, cx, NULL, wbytes, dw_, wsi, worki, 0, NULL));

  /* Reference, in seq-major order. */
  std::vector<double> W(w.begin(), w.end()), X(nx), H0(h0.begin(), h0.end()), C0(c0.begin(), c0.end());
  for (int t = 0; t < n.T; t++)
    for (int b = 0; b < n.B; b++)
      for (int k = 0; k < n.I && valid(n, t, b); k++)
        X[((size_t)t * n.B + b) * n.I + k] = x[uoff(n, t, b, k, n.I)];
  const double *rh = with_states ? H0.data() : NULL, *rc = with_states && lstm ? C0.data() : NULL;
  std::vector<double> RY(ny), RH(nh), RC(nh);
  ref_forward(n, lay, W.data(), X.data(), rh, rc, RY.data(), RH.data(), lstm ? RC.data() : NULL);
  std::vector<float> Y = host(y, ny), Yi = host(yi, ny), HY = host(hy, nh), HYi = host(hyi, nh);
  std::vector<float> CY = host(cy, nh);
  for (int t = 0; t < n.T; t++)
    for (int b = 0; b < n.B; b++)
      for (int v = 0; v < HD; v++) {
        if (!valid(n, t, b)) {
          /* no row in a packed layout; the padding value in an unpacked one */
          if (!n.packed) CHECK(Y[uoff(n, t, b, v, HD)] == pad_fill);
          continue;
        }
        size_t u = uoff(n, t, b, v, HD), r = ((size_t)t * n.B + b) * HD + v;
        near("y", Y[u], RY[r], TOL_F, n, u);
        CHECK(Yi[u] == Y[u]);
        if (DT == CUDNN_DATA_FLOAT) maxdiff = fmax(maxdiff, fabs(Y[u] - RY[r]));
      }
  for (size_t i = 0; i < nh; i++) {
    near("hy", HY[i], RH[i], TOL_F, n, i);
    CHECK(HYi[i] == HY[i]);
    if (lstm) near("cy", CY[i], RC[i], TOL_F, n, i);
  }

  /* Backward: dw prefilled with 1 and ADD, then SET into a second buffer. */
  float *ddy = dev(gy), *ddhy = dev(ghy), *ddcy = dev(gcy), *ddx, *ddhx, *ddcx;
  CHECK_CUDA(cudaMalloc(&ddx, nx * ES));
  CHECK_CUDA(cudaMalloc(&ddhx, nh * ES));
  CHECK_CUDA(cudaMalloc(&ddcx, nh * ES));
  std::vector<float> ones(nw, 1.0f), zeros(nw, 0.0f);
  float *dwa = dev(ones), *dws = dev(ones);
  CHECK_DNN(cudnnRNNBackwardData_v8(dnn, s.rnn, NULL, s.yd, y, ddy, s.xd, ddx, s.hd, hx, ddhy,
                                    ddhx, cd, cx, lstm ? ddcy : NULL, lstm ? ddcx : NULL, wbytes,
                                    dw_, ws, work, rs, res));
  CHECK_DNN(cudnnRNNBackwardWeights_v8(dnn, s.rnn, CUDNN_WGRAD_MODE_ADD, NULL, s.xd, dx_, s.hd, hx,
                                       s.yd, y, wbytes, dwa, ws, work, rs, res));
  CHECK_DNN(cudnnRNNBackwardWeights_v8(dnn, s.rnn, CUDNN_WGRAD_MODE_SET, NULL, s.xd, dx_, s.hd, hx,
                                       s.yd, y, wbytes, dws, ws, work, rs, res));
  std::vector<float> DX = host(ddx, nx), DHX = host(ddhx, nh), DCX = host(ddcx, nh);
  std::vector<float> DWA = host(dwa, nw), DWS = host(dws, nw);
  /* (in half types 1 + dw is rounded once more than dw) */
  for (size_t i = 0; i < nw; i++) CHECK(DWA[i] == q(1.0f + DWS[i]) || (ES == 2 && fabs(DWA[i] - 1.0f - DWS[i]) <= 1e-2));

  /* Central differences of the reference loss. */
  auto loss = [&](void) {
    std::vector<double> a(ny), b(nh), c(nh);
    ref_forward(n, lay, W.data(), X.data(), rh, rc, a.data(), b.data(), lstm ? c.data() : NULL);
    double l = 0;
    for (int t = 0; t < n.T; t++)
      for (int bb = 0; bb < n.B; bb++)
        for (int v = 0; v < HD && valid(n, t, bb); v++)
          l += a[((size_t)t * n.B + bb) * HD + v] * gy[uoff(n, t, bb, v, HD)];
    for (size_t i = 0; i < nh; i++) l += b[i] * ghy[i] + (lstm ? c[i] * gcy[i] : 0);
    return l;
  };
  /* small enough that no ReLU pre-activation crosses 0 within it, large enough for double */
  const double eps = 1e-6;
  auto fd = [&](double &v) {
    double keep = v;
    v = keep + eps;
    double a = loss();
    v = keep - eps;
    double b = loss();
    v = keep;
    return (a - b) / (2 * eps);
  };
  for (size_t i = 0; i < nw; i++) near("dw", DWS[i], fd(W[i]), TOL_B, n, i);
  for (int t = 0; t < n.T; t++)
    for (int b = 0; b < n.B; b++)
      for (int k = 0; k < n.I; k++) {
        if (valid(n, t, b))
          near("dx", DX[uoff(n, t, b, k, n.I)], fd(X[((size_t)t * n.B + b) * n.I + k]), TOL_B, n, k);
        else if (!n.packed)
          CHECK(DX[uoff(n, t, b, k, n.I)] == 0.0f);
      }
  for (size_t i = 0; i < nh && with_states; i++) {
    near("dhx", DHX[i], fd(H0[i]), TOL_B, n, i);
    if (lstm) near("dcx", DCX[i], fd(C0[i]), TOL_B, n, i);
  }

  void *ptrs[] = {dw_, dx_, dh0, dc0, work, res, worki, y, yi, hy, hyi, cy,
                  ddy, ddhy, ddcy, ddx, ddhx, ddcx, dwa, dws};
  for (void *p : ptrs) CHECK_CUDA(cudaFree(p));
  free_descs(s);
}

/* A training forward captured from a stream: one kernel node per layer, replayed to the same
 * bits as the eager call. */
static void capture(void) {
  Net n = {CUDNN_LSTM, 3, 2, 4, 2, 3, 5, 1, 0};
  Descs s = make_descs(n, CUDNN_RNN_DOUBLE_BIAS);
  size_t wbytes, ws, rs, ny = (size_t)n.T * n.B * n.D * n.H;
  CHECK_DNN(cudnnGetRNNWeightSpaceSize(dnn, s.rnn, &wbytes));
  CHECK_DNN(cudnnGetRNNTempSpaceSizes(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, s.xd, &ws, &rs));
  float *w = dev(rand_vec(wbytes / 4)), *x = dev(rand_vec((size_t)n.T * n.B * n.I)), *y1, *y2;
  void *work, *res;
  CHECK_CUDA(cudaMalloc(&work, ws));
  CHECK_CUDA(cudaMalloc(&res, rs));
  CHECK_CUDA(cudaMalloc(&y1, ny * 4));
  CHECK_CUDA(cudaMalloc(&y2, ny * 4));
  cudaStream_t st;
  /* The uploads above run on the legacy stream (a pageable copy returns once staged), which a
   * non-blocking stream does not wait for. */
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CHECK_DNN(cudnnSetStream(dnn, st));
  CHECK_DNN(cudnnRNNForward(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, NULL, s.xd, x, s.yd, y1, s.hd,
                            NULL, NULL, s.hd, NULL, NULL, wbytes, w, ws, work, rs, res));
  cudaGraph_t g;
  CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  CHECK_DNN(cudnnRNNForward(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, NULL, s.xd, x, s.yd, y2, s.hd,
                            NULL, NULL, s.hd, NULL, NULL, wbytes, w, ws, work, rs, res));
  CHECK_CUDA(cudaStreamEndCapture(st, &g));
  size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(g, NULL, &nodes));
  CHECK_INT(nodes, ==, n.L);
  cudaGraphExec_t e;
  CHECK_CUDA(cudaGraphInstantiate(&e, g, 0));
  CHECK_CUDA(cudaGraphLaunch(e, st));
  CHECK_CUDA(cudaStreamSynchronize(st));
  std::vector<float> a = host(y1, ny), b = host(y2, ny);
  CHECK(memcmp(a.data(), b.data(), ny * 4) == 0);
  CHECK_DNN(cudnnSetStream(dnn, NULL));
  CHECK_CUDA(cudaGraphExecDestroy(e));
  CHECK_CUDA(cudaGraphDestroy(g));
  CHECK_CUDA(cudaStreamDestroy(st));
  void *ptrs[] = {w, x, work, res, y1, y2};
  for (void *p : ptrs) CHECK_CUDA(cudaFree(p));
  free_descs(s);
}

/* Dropout 0.5 between the layers of a 3-layer LSTM in training: each forward draws new masks
 * (the states' counter advances), a descriptor set again with the same seed draws the same ones,
 * inference draws none, and the backward passes follow the masks of their forward: with the
 * states put back before each forward, central differences of the training forward (in float)
 * give the gradients backward data and weights computed. */
static void dropout(void) {
  Net n = {CUDNN_LSTM, 3, 1, 3, 2, 3, 4, 1, 0};
  size_t ss;
  CHECK_DNN(cudnnDropoutGetStatesSize(dnn, &ss));
  void *states;
  CHECK_CUDA(cudaMalloc(&states, ss));
  Descs s = make_descs(n, CUDNN_RNN_DOUBLE_BIAS);
  CHECK_DNN(cudnnSetDropoutDescriptor(s.drop, dnn, 0.5f, states, ss, 7));
  size_t wbytes, ws, rs, wsi, nx = (size_t)n.T * n.B * n.I, ny = (size_t)n.T * n.B * n.H;
  size_t nh = (size_t)n.L * n.B * n.H;
  CHECK_DNN(cudnnGetRNNWeightSpaceSize(dnn, s.rnn, &wbytes));
  CHECK_DNN(cudnnGetRNNTempSpaceSizes(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, s.xd, &ws, &rs));
  CHECK_DNN(cudnnGetRNNTempSpaceSizes(dnn, s.rnn, CUDNN_FWD_MODE_INFERENCE, s.xd, &wsi, NULL));
  size_t nw = wbytes / 4;
  std::vector<float> w = rand_vec(nw), x = rand_vec(nx), gy = rand_vec(ny), ghy = rand_vec(nh),
                     gcy = rand_vec(nh);
  for (auto &v : w) v *= 2; /* larger weights: the masks matter more */
  float *dw = dev(w), *dx = dev(x), *y, *hy, *cy;
  void *work, *res, *worki;
  CHECK_CUDA(cudaMalloc(&work, ws));
  CHECK_CUDA(cudaMalloc(&res, rs));
  CHECK_CUDA(cudaMalloc(&worki, wsi));
  CHECK_CUDA(cudaMalloc(&y, ny * 4));
  CHECK_CUDA(cudaMalloc(&hy, nh * 4));
  CHECK_CUDA(cudaMalloc(&cy, nh * 4));
  auto fwd = [&](cudnnForwardMode_t mode) {
    int tr = mode == CUDNN_FWD_MODE_TRAINING;
    CHECK_DNN(cudnnRNNForward(dnn, s.rnn, mode, NULL, s.xd, dx, s.yd, y, s.hd, NULL, hy, s.hd,
                              NULL, cy, wbytes, dw, tr ? ws : wsi, tr ? work : worki, tr ? rs : 0,
                              tr ? res : NULL));
    return host(y, ny);
  };
  std::vector<unsigned char> saved(ss);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(saved.data(), states, ss, cudaMemcpyDeviceToHost));
  std::vector<float> y1 = fwd(CUDNN_FWD_MODE_TRAINING), y2 = fwd(CUDNN_FWD_MODE_TRAINING);
  std::vector<float> yi = fwd(CUDNN_FWD_MODE_INFERENCE), yi2 = fwd(CUDNN_FWD_MODE_INFERENCE);
  CHECK(y1 != y2 && y1 != yi && yi == yi2);
  CHECK_DNN(cudnnSetDropoutDescriptor(s.drop, dnn, 0.5f, states, ss, 7));
  CHECK(fwd(CUDNN_FWD_MODE_TRAINING) == y1);
  CHECK_DNN(cudnnSetDropoutDescriptor(s.drop, dnn, 0.5f, states, ss, 8));
  CHECK(fwd(CUDNN_FWD_MODE_TRAINING) != y1);

  /* The gradients of one training forward... */
  auto restore = [&](void) {
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(states, saved.data(), ss, cudaMemcpyHostToDevice));
  };
  restore();
  CHECK(fwd(CUDNN_FWD_MODE_TRAINING) == y1);
  float *ddy = dev(gy), *ddhy = dev(ghy), *ddcy = dev(gcy), *ddx, *gw;
  CHECK_CUDA(cudaMalloc(&ddx, nx * 4));
  CHECK_CUDA(cudaMalloc(&gw, wbytes));
  CHECK_DNN(cudnnRNNBackwardData_v8(dnn, s.rnn, NULL, s.yd, y, ddy, s.xd, ddx, s.hd, NULL, ddhy,
                                    NULL, s.hd, NULL, ddcy, NULL, wbytes, dw, ws, work, rs, res));
  CHECK_DNN(cudnnRNNBackwardWeights_v8(dnn, s.rnn, CUDNN_WGRAD_MODE_SET, NULL, s.xd, dx, s.hd, NULL,
                                       s.yd, y, wbytes, gw, ws, work, rs, res));
  std::vector<float> GW = host(gw, nw), GX = host(ddx, nx);
  /* ...against central differences of the same masks' forward. */
  auto loss = [&](void) {
    restore();
    std::vector<float> Y = fwd(CUDNN_FWD_MODE_TRAINING), HY = host(hy, nh), CY = host(cy, nh);
    double l = 0;
    for (size_t i = 0; i < ny; i++) l += (double)Y[i] * gy[i];
    for (size_t i = 0; i < nh; i++) l += (double)HY[i] * ghy[i] + (double)CY[i] * gcy[i];
    return l;
  };
  auto fd = [&](std::vector<float> &v, float *d, size_t i) {
    const float eps = 1e-2f;
    float keep = v[i];
    v[i] = keep + eps;
    CHECK_CUDA(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    double a = loss();
    v[i] = keep - eps;
    CHECK_CUDA(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    double b = loss();
    v[i] = keep;
    CHECK_CUDA(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    return (a - b) / (2 * (double)eps);
  };
  for (size_t i = 0; i < nw; i += 7) near("dropout dw", GW[i], fd(w, dw, i), 5e-3, n, i);
  for (size_t i = 0; i < nx; i++) near("dropout dx", GX[i], fd(x, dx, i), 5e-3, n, i);
  void *ptrs[] = {states, dw, dx, y, hy, cy, work, res, worki, ddy, ddhy, ddcy, ddx, gw};
  for (void *p : ptrs) CHECK_CUDA(cudaFree(p));
  free_descs(s);
}

static void statuses(void) {
  Net n = {CUDNN_GRU, 2, 1, 3, 2, 3, 4, 1, 0};
  Descs s = make_descs(n, CUDNN_RNN_DOUBLE_BIAS);
  size_t wbytes, ws, rs;
  CHECK_DNN(cudnnGetRNNWeightSpaceSize(dnn, s.rnn, &wbytes));
  CHECK_DNN(cudnnGetRNNTempSpaceSizes(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, s.xd, &ws, &rs));
  float *w = dev(rand_vec(wbytes / 4)), *x = dev(rand_vec(64)), *y = dev(rand_vec(64));
  void *work, *res, *m, *b;
  CHECK_CUDA(cudaMalloc(&work, ws));
  CHECK_CUDA(cudaMalloc(&res, rs));
  /* pseudo-layer and linLayerID out of range; a weight space too small */
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM, cudnnGetRNNWeightParams(dnn, s.rnn, 2, wbytes, w, 0, NULL, &m, NULL, &b));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM, cudnnGetRNNWeightParams(dnn, s.rnn, 0, wbytes, w, 6, NULL, &m, NULL, &b));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM, cudnnGetRNNWeightParams(dnn, s.rnn, 0, wbytes - 4, w, 0, NULL, &m, NULL, &b));
  /* a reserve space or workspace smaller than asked for; y of the wrong width */
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM,
                  cudnnRNNForward(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, NULL, s.xd, x, s.yd, y, s.hd, NULL,
                                  NULL, NULL, NULL, NULL, wbytes, w, ws, work, rs - 4, res));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM,
                  cudnnRNNForward(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, NULL, s.xd, x, s.yd, y, s.hd, NULL,
                                  NULL, NULL, NULL, NULL, wbytes, w, ws - 4, work, rs, res));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM,
                  cudnnRNNForward(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, NULL, s.xd, x, s.xd, y, s.hd, NULL,
                                  NULL, NULL, NULL, NULL, wbytes, w, ws, work, rs, res));
  /* an empty sequence; a packed batch not sorted longest first */
  cudnnRNNDataDescriptor_t shortd;
  int lens[2] = {3, 0}, unsorted[2] = {2, 3};
  CHECK_DNN(cudnnCreateRNNDataDescriptor(&shortd));
  CHECK_DNN(cudnnSetRNNDataDescriptor(shortd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, 3, 2, 3, lens, NULL));
  size_t a1, a2;
  CHECK_STATUS_EQ(CUDNN_STATUS_NOT_SUPPORTED, cudnnGetRNNTempSpaceSizes(dnn, s.rnn, CUDNN_FWD_MODE_TRAINING, shortd, &a1, &a2));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM,
                  cudnnSetRNNDataDescriptor(shortd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, 3, 2, 3, unsorted, NULL));
  CHECK_DNN(cudnnDestroyRNNDataDescriptor(shortd));
  /* a projection; dropout states too small */
  cudnnDropoutDescriptor_t drop;
  size_t ss;
  CHECK_DNN(cudnnDropoutGetStatesSize(dnn, &ss));
  void *states;
  CHECK_CUDA(cudaMalloc(&states, ss));
  CHECK_DNN(cudnnCreateDropoutDescriptor(&drop));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM, cudnnSetDropoutDescriptor(drop, dnn, 0.5f, states, ss - 1, 1));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM, cudnnSetDropoutDescriptor(drop, dnn, 0.5f, NULL, ss, 1));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM, cudnnSetDropoutDescriptor(drop, dnn, 1.5f, states, ss, 1));
  cudnnRNNDescriptor_t r;
  CHECK_DNN(cudnnCreateRNNDescriptor(&r));
  CHECK_DNN(cudnnSetRNNDescriptor_v8(r, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
                                     CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 3, 4, 2, 2,
                                     NULL, 0));
  CHECK_STATUS_EQ(CUDNN_STATUS_NOT_SUPPORTED, cudnnGetRNNWeightSpaceSize(dnn, r, &a1));
  CHECK_STATUS_EQ(CUDNN_STATUS_BAD_PARAM,
                  cudnnSetRNNDescriptor_v8(r, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
                                           CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 3, 4, 5, 2,
                                           NULL, 0));
  CHECK_DNN(cudnnDestroyRNNDescriptor(r));
  CHECK_DNN(cudnnDestroyDropoutDescriptor(drop));
  void *ptrs[] = {w, x, y, work, res, states};
  for (void *p : ptrs) CHECK_CUDA(cudaFree(p));
  free_descs(s);
}

int main(void) {
  CHECK_DNN(cudnnCreate(&dnn));
  const cudnnRNNMode_t modes[] = {CUDNN_RNN_RELU, CUDNN_RNN_TANH, CUDNN_LSTM, CUDNN_GRU};
  for (cudnnRNNMode_t m : modes)
    for (int D = 1; D <= 2; D++) {
      Net n = {m, 2, D, 4, 3, 3, 5, 1, D == 2};
      run(n, 1);
    }
  Net nb = {CUDNN_GRU, 2, 2, 3, 2, 4, 3, 0, 0};
  run(nb, 0);
  Net nl = {CUDNN_LSTM, 1, 1, 3, 2, 2, 3, 0, 1};
  run(nl, 0);
  /* Sequences of 5, 4, 3 and 2 steps: packed (as PyTorch's packed sequences) and unpacked. */
  for (cudnnRNNMode_t m : modes) {
    Net np = {m, 2, 2, 5, 4, 3, 4, 1, 0, 1, 1};
    run(np, 1);
  }
  Net nu = {CUDNN_LSTM, 2, 2, 5, 4, 3, 4, 1, 1, 1, 0};
  run(nu, 1);
  /* Half and bfloat16 data (float math): outputs and gradients rounded once each. */
  DT = CUDNN_DATA_HALF, ES = 2, TOL_F = 2e-3, TOL_B = 4e-3;
  Net nh = {CUDNN_LSTM, 2, 2, 3, 2, 3, 4, 1, 0};
  run(nh, 1);
  DT = CUDNN_DATA_BFLOAT16, TOL_F = 1.6e-2, TOL_B = 3e-2;
  Net ng = {CUDNN_GRU, 2, 2, 3, 2, 3, 4, 1, 1};
  run(ng, 1);
  DT = CUDNN_DATA_FLOAT, ES = 4, TOL_F = 1e-5, TOL_B = 1e-3;
  capture();
  dropout();
  statuses();
  CHECK_DNN(cudnnDestroy(dnn));
  printf("dnn-rnn: 4 cells, 1 and 2 directions, both layouts, with and without biases and initial "
         "states, float, half and bfloat16: forward (float) within %.1e of the reference, gradients match central differences; "
         "graph capture and statuses checked\n", maxdiff);
  return 0;
}
