/* fuse-dnn.c — the cuDNN conv → bias → activation state machine (see fuse-dnn.h).
 *
 * States: NONE; CONV (a convolution held); CONV_ADD (a convolution and its bias addition held).
 * Everything held is copied by value at call time: handle, descriptors (handles, plus their
 * contents read back through the real getters, which the descriptors' Set and Destroy calls
 * cannot change meanwhile since every other cuDNN call submits first), pointers, workspace and
 * the host scaling factors. One mutex guards the state and is held while held calls are
 * submitted, so that a concurrent flusher (an ordering call on another thread) returns only
 * after the held work is on its stream. The mutex is only ever taken outside the engine lock
 * and outside any cuDNN call of the same thread (ag__tls.lib), so it cannot close a cycle with
 * either.
 *
 * Why each condition makes the fused call the same operation (cudnn_cnn.h: y = act(alpha1 *
 * conv(x) + alpha2 * z + bias)):
 *   - conv beta 0: the unfused y = alpha*conv(x) does not read y; alpha becomes alpha1;
 *   - z = y with alpha2 = 0: z is not read (cuDNN allows z to alias y);
 *   - add alpha 1, beta 1, A a packed 1×K×1×1 float bias not overlapping y, C = y with y's
 *     layout: y = bias + alpha*conv(x);
 *   - act ReLU without NaN propagation (the only activations the fused call offers, with
 *     identity), alpha 1, beta 0, x = y and the result written in place with y's layout;
 *   - float data and float compute type (FLOAT_CONFIG), 4-d tensors; the fused call gets the
 *     very same x, w, convolution (math type, groups) and y descriptors and the same workspace.
 * An out-of-place activation would leave y holding conv + bias, which the fused call cannot
 * also produce, so only conv + bias is fused there (identity activation, which cuDNN allows
 * only with IMPLICIT_PRECOMP_GEMM) and the activation runs as called. A fused call may pick
 * other kernels than the unfused calls: hence AUTOGRAPH_FUSE=all only (on the simulator the
 * results are bit-identical; on a GPU rounding may differ, to be confirmed there).
 */
#define _GNU_SOURCE
#include "fuse-dnn.h"

#include <pthread.h>
#include <string.h>

#include "config.h"
#include "engine.h"
#include "log.h"
#include "real.h"
#include "stats.h"

ag_fdnn_real_t ag__fdnn_real;

enum { ST_NONE, ST_CONV, ST_CONV_ADD };

/* Descriptor contents, zero-padded so that they compare with memcmp. */
typedef struct tdesc {
  int dt, d[4], s[4];
} tdesc_t;

typedef struct conv_sig {
  const void *handle;
  tdesc_t x, y;
  int wdt, wfmt, wk, wc, wh, ww;
  int pad_h, pad_w, u, v, dil_h, dil_w, mode, ct, math, groups;
  int algo;
  int reserved_; /* explicit tail, so the struct has no padding and memcmp compares only fields */
} conv_sig_t;
_Static_assert(sizeof(conv_sig_t) == sizeof(void *) + 2 * sizeof(tdesc_t) + 18 * sizeof(int),
               "conv_sig_t must have no padding");

/* A convolution that succeeded unfused: the evidence that holding it is safe. */
typedef struct learned {
  conv_sig_t sig;
  size_t ws_size;   /* the smallest workspace it succeeded with */
  int ws_null;      /* it succeeded with a NULL workspace */
  int refused;      /* a fused call with it failed: never held again */
  int used;
} learned_t;

#define LEARNED_MAX 128

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static learned_t learned[LEARNED_MAX];
static unsigned learned_next;
static cudnnActivationDescriptor_t identity;
static int warned;

static struct {
  int state;
  conv_sig_t sig;
  learned_t *entry;
  void *ctx;
  float alpha;
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  const void *x, *w, *bias;
  void *ws, *y;
  size_t ws_size;
} H;

static const float one = 1.0f, zero = 0.0f;

/* ---- descriptors -------------------------------------------------------------------------- */

static int read_tensor(cudnnTensorDescriptor_t d, tdesc_t *t) {
  cudnnDataType_t dt;
  memset(t, 0, sizeof *t);
  if (!d || ag__fdnn_real.get_tensor(d, &dt, &t->d[0], &t->d[1], &t->d[2], &t->d[3], &t->s[0],
                                     &t->s[1], &t->s[2], &t->s[3]) != CUDNN_STATUS_SUCCESS)
    return -AG_EINVAL;
  t->dt = (int)dt;
  return 0;
}

/* Reads the convolution's descriptors; 0 when they are readable and all float. */
static int read_sig(conv_sig_t *s, cudnnHandle_t h, cudnnTensorDescriptor_t xd,
                    cudnnFilterDescriptor_t wd, cudnnConvolutionDescriptor_t cd,
                    cudnnTensorDescriptor_t yd, cudnnConvolutionFwdAlgo_t algo) {
  cudnnDataType_t wdt, ct;
  cudnnTensorFormat_t fmt;
  cudnnConvolutionMode_t mode;
  cudnnMathType_t math;
  memset(s, 0, sizeof *s);
  s->handle = h;
  s->algo = (int)algo;
  if (!wd || !cd || read_tensor(xd, &s->x) || read_tensor(yd, &s->y)) return -AG_EINVAL;
  if (ag__fdnn_real.get_filter(wd, &wdt, &fmt, &s->wk, &s->wc, &s->wh, &s->ww) ||
      ag__fdnn_real.get_conv(cd, &s->pad_h, &s->pad_w, &s->u, &s->v, &s->dil_h, &s->dil_w, &mode,
                             &ct) ||
      ag__fdnn_real.get_math(cd, &math) || ag__fdnn_real.get_groups(cd, &s->groups))
    return -AG_EINVAL;
  s->wdt = (int)wdt, s->wfmt = (int)fmt, s->mode = (int)mode, s->ct = (int)ct, s->math = (int)math;
  if (s->x.dt != CUDNN_DATA_FLOAT || s->y.dt != CUDNN_DATA_FLOAT || s->wdt != CUDNN_DATA_FLOAT ||
      s->ct != CUDNN_DATA_FLOAT)
    return -AG_EUNSUP;
  return 0;
}

static learned_t *find_learned(const conv_sig_t *s) {
  for (int i = 0; i < LEARNED_MAX; i++)
    if (learned[i].used && !memcmp(&learned[i].sig, s, sizeof *s)) return &learned[i];
  return NULL;
}

/* Records a convolution that succeeded unfused (under mu). */
static void learn(const conv_sig_t *s, size_t ws_size, int ws_null) {
  learned_t *e = find_learned(s);
  if (!e) {
    e = &learned[learned_next++ % LEARNED_MAX];
    memset(e, 0, sizeof *e);
    e->sig = *s;
    e->ws_size = ws_size;
    e->ws_null = ws_null;
    e->used = 1;
    return;
  }
  if (ws_size < e->ws_size) e->ws_size = ws_size;
  if (ws_null) e->ws_null = 1;
}

/* Bytes from the first to one past the last element of a 4-d float tensor. */
static size_t extent(const tdesc_t *t) {
  size_t last = 0;
  for (int i = 0; i < 4; i++) last += (size_t)(t->d[i] - 1) * (size_t)t->s[i];
  return (last + 1) * sizeof(float);
}

static int overlaps(const void *a, size_t an, const void *b, size_t bn) {
  const char *p = a, *q = b;
  return p < q + bn && q < p + an;
}

/* ---- submission --------------------------------------------------------------------------- */

static void *current_ctx(void) {
  CUcontext c = NULL;
  if (!ag__real_ready() || !ag__real.cuCtxGetCurrent || ag__real.cuCtxGetCurrent(&c)) return NULL;
  return c;
}

static void warn_once(const char *what, cudnnStatus_t st) {
  if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  ag__log(AG_LOG_WARN, "cuDNN fusion: %s failed (cuDNN status %d); further failures not logged",
          what, (int)st);
}

/* The identity activation descriptor of the conv + bias form, created once (under mu). */
static cudnnActivationDescriptor_t identity_desc(void) {
  cudnnActivationDescriptor_t d = NULL;
  if (identity) return identity;
  if (ag__fdnn_real.create_act(&d) != CUDNN_STATUS_SUCCESS) return NULL;
  if (ag__fdnn_real.set_act(d, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0) !=
      CUDNN_STATUS_SUCCESS)
    return NULL; /* leaked: one descriptor, once */
  return identity = d;
}

/* The fused call with activation `ad` over what is held (under mu). */
static cudnnStatus_t run_fused(cudnnActivationDescriptor_t ad) {
  return ag__fdnn_real.cba((cudnnHandle_t)H.sig.handle, &H.alpha, H.xd, H.x, H.wd, H.w, H.cd,
                           (cudnnConvolutionFwdAlgo_t)H.sig.algo, H.ws, H.ws_size, &zero, H.yd,
                           H.y, H.bd, H.bias, ad, H.yd, H.y);
}

/* The held calls as the program made them (under mu); the first error. */
static cudnnStatus_t run_originals(void) {
  cudnnStatus_t st, first;
  first = ag__fdnn_real.conv((cudnnHandle_t)H.sig.handle, &H.alpha, H.xd, H.x, H.wd, H.w, H.cd,
                             (cudnnConvolutionFwdAlgo_t)H.sig.algo, H.ws, H.ws_size, &zero, H.yd,
                             H.y);
  if (first != CUDNN_STATUS_SUCCESS) warn_once("a held cudnnConvolutionForward", first);
  if (H.state == ST_CONV_ADD) {
    st = ag__fdnn_real.add((cudnnHandle_t)H.sig.handle, &one, H.bd, H.bias, &one, H.yd, H.y);
    if (st != CUDNN_STATUS_SUCCESS) {
      warn_once("a held cudnnAddTensor", st);
      if (first == CUDNN_STATUS_SUCCESS) first = st;
    }
  }
  return first;
}

/* A fused call failed: the originals run instead, and this convolution is not held again. */
static cudnnStatus_t fall_back(const char *what, cudnnStatus_t st) {
  warn_once(what, st);
  if (H.entry && !memcmp(&H.entry->sig, &H.sig, sizeof H.sig)) H.entry->refused = 1;
  return run_originals();
}

/* Nothing is held any more (under mu): the hook that makes launches and ordering calls submit
 * first is cleared, and so is the bound the helper thread would submit it at. */
static void nothing_held(void) {
  H.state = ST_NONE;
  __atomic_fetch_and(&ag__hooks, ~AG_HOOK_FDNN, __ATOMIC_RELEASE);
  ag__hold_other(0);
}

/* Submits what is held, in the held context, as cuDNN calls (under mu). The conv + bias form
 * runs as one fused call when cuDNN allows it. Returns the first error of the held calls. */
static cudnnStatus_t submit_locked(void) {
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  int pushed = 0, lib0 = ag__tls.lib;
  const char *call0 = ag__tls.lib_call;
  if (H.state == ST_NONE) return st;
  /* The launches are cuDNN's, whichever hook submits them. */
  if (!ag__tls.lib) ag__tls.lib_call = "cudnnConvolutionForward";
  ag__tls.lib++;
  /* A failed push runs the calls where the thread is, as cuDNN itself would. */
  if (H.ctx) pushed = ag__ctx_enter(H.ctx);
  if (H.state == ST_CONV_ADD && H.sig.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM &&
      identity_desc()) {
    st = run_fused(identity);
    if (st == CUDNN_STATUS_SUCCESS)
      ag__stats_fused("cudnn_conv_bias", 1);
    else
      st = fall_back("cudnnConvolutionBiasActivationForward (identity)", st);
  } else {
    st = run_originals();
  }
  ag__ctx_leave(pushed);
  ag__tls.lib = lib0;
  ag__tls.lib_call = call0;
  nothing_held();
  return st;
}

/* Submits under the lock; the error when the held calls ran on `handle`. */
static cudnnStatus_t submit_for(const void *handle) {
  const void *held = H.sig.handle;
  cudnnStatus_t st = submit_locked();
  return held == handle ? st : CUDNN_STATUS_SUCCESS;
}

static void atfork_child(void) {
  pthread_mutex_init(&mu, NULL);
  H.state = ST_NONE;
  ag__hooks &= ~AG_HOOK_FDNN; /* the child is single-threaded here */
}

static void init_fork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* ---- the calls ---------------------------------------------------------------------------- */

cudnnStatus_t ag__fdnn_conv(cudnnHandle_t handle, const void *alpha,
                            cudnnTensorDescriptor_t xDesc, const void *x,
                            cudnnFilterDescriptor_t wDesc, const void *w,
                            cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                            void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                            cudnnTensorDescriptor_t yDesc, void *y) {
  conv_sig_t sig;
  cudnnStatus_t d, r;
  cudaStream_t stream = NULL;
  void *ctx;
  int readable;

  pthread_once(&fork_once, init_fork);
  /* Held, the call is under the bound on holds; where holds cannot be bounded it is not held. */
  int bounded = ag__hold_other_ready();
  pthread_mutex_lock(&mu);
  d = submit_for(handle);
  readable = handle && alpha && beta && x && w && y &&
             read_sig(&sig, handle, xDesc, wDesc, convDesc, yDesc, algo) == 0;
  if (bounded && readable && d == CUDNN_STATUS_SUCCESS && *(const float *)beta == 0.0f) {
    learned_t *e = find_learned(&sig);
    if (e && !e->refused && workSpaceSizeInBytes >= e->ws_size && (workSpace || e->ws_null) &&
        ag__fdnn_real.get_stream(handle, &stream) == CUDNN_STATUS_SUCCESS &&
        stream != cudaStreamPerThread && (ctx = current_ctx()) != NULL) {
      /* The per-thread default stream is never held: a flush may run on another thread. */
      H.sig = sig;
      H.entry = e;
      H.ctx = ctx;
      H.alpha = *(const float *)alpha;
      H.xd = xDesc, H.x = x, H.wd = wDesc, H.w = w, H.cd = convDesc, H.yd = yDesc, H.y = y;
      H.ws = workSpace, H.ws_size = workSpaceSizeInBytes;
      H.state = ST_CONV;
      __atomic_fetch_or(&ag__hooks, AG_HOOK_FDNN, __ATOMIC_RELEASE);
      ag__hold_other(1);
      pthread_mutex_unlock(&mu);
      return CUDNN_STATUS_SUCCESS;
    }
  }
  pthread_mutex_unlock(&mu);
  r = ag__fdnn_real.conv(handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace,
                         workSpaceSizeInBytes, beta, yDesc, y);
  if (r == CUDNN_STATUS_SUCCESS && readable) {
    pthread_mutex_lock(&mu);
    learn(&sig, workSpaceSizeInBytes, workSpace == NULL);
    pthread_mutex_unlock(&mu);
  }
  return r != CUDNN_STATUS_SUCCESS ? r : d;
}

cudnnStatus_t ag__fdnn_add(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t aDesc,
                           const void *A, const void *beta, cudnnTensorDescriptor_t cDesc,
                           void *C) {
  tdesc_t a, c;
  cudnnStatus_t d, r;
  pthread_mutex_lock(&mu);
  if (H.state == ST_CONV && handle == H.sig.handle && C == H.y && A && alpha && beta &&
      read_tensor(aDesc, &a) == 0 && read_tensor(cDesc, &c) == 0 &&
      !memcmp(&c, &H.sig.y, sizeof c) && a.dt == CUDNN_DATA_FLOAT && a.d[0] == 1 &&
      a.d[1] == c.d[1] && a.d[2] == 1 && a.d[3] == 1 && a.s[1] == 1 &&
      *(const float *)alpha == 1.0f && *(const float *)beta == 1.0f &&
      !overlaps(A, (size_t)a.d[1] * sizeof(float), C, extent(&c))) {
    H.bd = aDesc, H.bias = A;
    H.state = ST_CONV_ADD;
    ag__hold_other(1); /* the bound counts from the last call that joined the hold */
    pthread_mutex_unlock(&mu);
    return CUDNN_STATUS_SUCCESS;
  }
  d = submit_for(handle);
  pthread_mutex_unlock(&mu);
  r = ag__fdnn_real.add(handle, alpha, aDesc, A, beta, cDesc, C);
  return r != CUDNN_STATUS_SUCCESS ? r : d;
}

cudnnStatus_t ag__fdnn_act(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                           const void *alpha, cudnnTensorDescriptor_t xDesc, const void *x,
                           const void *beta, cudnnTensorDescriptor_t yDesc, void *y) {
  tdesc_t xt, yt;
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef;
  cudnnStatus_t d, r;
  pthread_mutex_lock(&mu);
  if (H.state == ST_CONV_ADD && handle == H.sig.handle && x == H.y && y == H.y && alpha && beta &&
      activationDesc && read_tensor(xDesc, &xt) == 0 && read_tensor(yDesc, &yt) == 0 &&
      !memcmp(&xt, &H.sig.y, sizeof xt) && !memcmp(&yt, &H.sig.y, sizeof yt) &&
      *(const float *)alpha == 1.0f && *(const float *)beta == 0.0f &&
      ag__fdnn_real.get_act(activationDesc, &mode, &nan, &coef) == CUDNN_STATUS_SUCCESS &&
      mode == CUDNN_ACTIVATION_RELU && nan == CUDNN_NOT_PROPAGATE_NAN && H.ctx == current_ctx()) {
    r = run_fused(activationDesc);
    if (r == CUDNN_STATUS_SUCCESS) {
      ag__stats_fused("cudnn_conv_bias_act", 1);
      d = CUDNN_STATUS_SUCCESS;
    } else {
      d = fall_back("cudnnConvolutionBiasActivationForward", r);
      r = ag__fdnn_real.act(handle, activationDesc, alpha, xDesc, x, beta, yDesc, y);
    }
    nothing_held();
    pthread_mutex_unlock(&mu);
    return r != CUDNN_STATUS_SUCCESS ? r : d;
  }
  /* Anything else, an out-of-place activation included: conv + bias as held (fused with the
   * identity activation where allowed), then this call as made. */
  d = submit_for(handle);
  pthread_mutex_unlock(&mu);
  r = ag__fdnn_real.act(handle, activationDesc, alpha, xDesc, x, beta, yDesc, y);
  return r != CUDNN_STATUS_SUCCESS ? r : d;
}

cudnnStatus_t ag__fdnn_before(const void *handle) {
  cudnnStatus_t st;
  pthread_mutex_lock(&mu);
  st = submit_for(handle);
  pthread_mutex_unlock(&mu);
  return st;
}

void ag__fdnn_flush(void) {
  if (ag__tls.lib || ag__tls.quiet) return;
  pthread_mutex_lock(&mu);
  (void)submit_locked();
  pthread_mutex_unlock(&mu);
}

void ag__fdnn_reset(void) {
  pthread_mutex_lock(&mu);
  memset(learned, 0, sizeof learned);
  learned_next = 0;
  identity = NULL;
  warned = 0;
  nothing_held();
  pthread_mutex_unlock(&mu);
}
