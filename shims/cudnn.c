/* cudnn.c — the cuDNN entry points (libcudnn.so.9's exported names).
 *
 * A cuDNN call is not a launch: the kernels it launches reach the driver (the simulated and the
 * real cuDNN fetch the driver through cuGetProcAddress) and are counted there as launches,
 * labelled with the "cudnn" path because they happen inside a bracketed library call
 * (ag__lib_enter/leave). The call itself is counted once, in the "cudnn" family; calls cuDNN
 * makes internally (its own exported functions, runtime or driver ordering calls) are not.
 * Real functions are looked up lazily per entry, as in cudart.c.
 *
 * cuDNN call fusion (src/fuse-dnn.h): under AUTOGRAPH_FUSE=all the three FUSE calls of the table
 * go to the fusion state machine, and every other call first submits what it holds
 * (ag__fdnn_before). Only outermost calls take part: cuDNN calling its own exported functions
 * from inside a call reaches these wrappers again, nested.
 */
#define _GNU_SOURCE
#include <cudnn.h>

#include "config.h"
#include "fuse-dnn.h"
#include "shim.h"
#include "stats.h"

static const char *const dnn_sonames[] = {"libcudnn.so.9", "libcudnn.so", NULL};

enum {
#define AG_DNN(ret, name, ...) DNN_##name,
#include "cudnn.def"
#undef AG_DNN
  DNN_cudnnGetErrorString,
  DNN_COUNT_
};

static ag_call_t dnn_calls[DNN_COUNT_] = {
#define AG_DNN(ret, name, ...) {#name, AG_FAM_CUDNN, 0, NULL, 0},
#include "cudnn.def"
#undef AG_DNN
    {"cudnnGetErrorString", AG_FAM_CUDNN, 0, NULL, 0},
};

static void *dnn_real[DNN_COUNT_];

static void *dnn_real_of(int i) {
  void *p = __atomic_load_n(&dnn_real[i], __ATOMIC_ACQUIRE);
  if (AG_LIKELY(p)) return p;
  p = ag__real_lookup(dnn_sonames, dnn_calls[i].name);
  if (p) __atomic_store_n(&dnn_real[i], p, __ATOMIC_RELEASE);
  return p;
}

/* Fills the state machine's table of real functions once; nonzero when every one exists. */
static int fuse_ready(void) {
  static int ready; /* 0 unknown, 1 yes, -1 no */
  int r = __atomic_load_n(&ready, __ATOMIC_ACQUIRE);
  if (AG_LIKELY(r)) return r > 0;
  ag_fdnn_real_t t = {
      .conv = (__typeof(t.conv))dnn_real_of(DNN_cudnnConvolutionForward),
      .add = (__typeof(t.add))dnn_real_of(DNN_cudnnAddTensor),
      .act = (__typeof(t.act))dnn_real_of(DNN_cudnnActivationForward),
      .cba = (__typeof(t.cba))dnn_real_of(DNN_cudnnConvolutionBiasActivationForward),
      .get_stream = (__typeof(t.get_stream))dnn_real_of(DNN_cudnnGetStream),
      .get_tensor = (__typeof(t.get_tensor))dnn_real_of(DNN_cudnnGetTensor4dDescriptor),
      .get_filter = (__typeof(t.get_filter))dnn_real_of(DNN_cudnnGetFilter4dDescriptor),
      .get_conv = (__typeof(t.get_conv))dnn_real_of(DNN_cudnnGetConvolution2dDescriptor),
      .get_math = (__typeof(t.get_math))dnn_real_of(DNN_cudnnGetConvolutionMathType),
      .get_groups = (__typeof(t.get_groups))dnn_real_of(DNN_cudnnGetConvolutionGroupCount),
      .get_act = (__typeof(t.get_act))dnn_real_of(DNN_cudnnGetActivationDescriptor),
      .create_act = (__typeof(t.create_act))dnn_real_of(DNN_cudnnCreateActivationDescriptor),
      .set_act = (__typeof(t.set_act))dnn_real_of(DNN_cudnnSetActivationDescriptor),
  };
  r = t.conv && t.add && t.act && t.cba && t.get_stream && t.get_tensor && t.get_filter &&
      t.get_conv && t.get_math && t.get_groups && t.get_act && t.create_act && t.set_act ? 1 : -1;
  /* Racing fillers write the same values; the flag is published after the table. */
  if (r > 0) ag__fdnn_real = t;
  __atomic_store_n(&ready, r, __ATOMIC_RELEASE);
  return r > 0;
}

/* The call is outermost (ag__lib_enter done) and fusion is on. */
static inline int fusing(void) {
  return ag__config.fuse >= AG_FUSE_ALL && ag__tls.lib == 1 && !ag__tls.quiet && fuse_ready();
}

/* The handle a call names, for the deferred error of a held call (src/fuse-dnn.h). */
#define DNN_HANDLE_OF_HANDLE(h, ...) ((const void *)(h))
#define DNN_HANDLE_OF_FUSE(h, ...) ((const void *)(h))
#define DNN_HANDLE_OF_CALL(...) NULL
#define DNN_HANDLE_OF_HARMLESS(...) NULL
#define DNN_IS_FUSE_HANDLE 0
#define DNN_IS_FUSE_FUSE 1
#define DNN_IS_FUSE_CALL 0
#define DNN_IS_FUSE_HARMLESS 0
#define DNN_FUSE_cudnnConvolutionForward ag__fdnn_conv
#define DNN_FUSE_cudnnAddTensor ag__fdnn_add
#define DNN_FUSE_cudnnActivationForward ag__fdnn_act
#define DNN_FUSED_FUSE(name, args) DNN_FUSE_##name args
#define DNN_FUSED_HANDLE(name, args) CUDNN_STATUS_SUCCESS
#define DNN_FUSED_CALL(name, args) CUDNN_STATUS_SUCCESS
#define DNN_FUSED_HARMLESS(name, args) CUDNN_STATUS_SUCCESS

/* Every class is bracketed the same way; a call that reaches the engine while a fusion holds
 * work first submits it. A held call's error, found at that submission, is reported by this
 * call when it names the same handle and itself succeeded (as a later call reports an
 * asynchronous error), except by cudnnDestroy, whose success must stay visible. */
#define AG_DNN(ret, name, cls, params, args)                                   \
  AG_EXPORT ret name params {                                                  \
    __typeof(&name) real = (__typeof(&name))dnn_real_of(DNN_##name);           \
    ret r, d = CUDNN_STATUS_SUCCESS;                                           \
    if (!real) return CUDNN_STATUS_NOT_INITIALIZED;                            \
    if (!ag__active()) return real args;                                       \
    ag__lib_enter(&dnn_calls[DNN_##name]);                                     \
    if (DNN_IS_FUSE_##cls && fusing()) {                                       \
      r = DNN_FUSED_##cls(name, args);                                         \
    } else {                                                                   \
      if (AG_UNLIKELY(ag__fdnn_pending()) && \
          ag__tls.lib == 1 && !ag__tls.quiet)                                  \
        d = ag__fdnn_before(DNN_HANDLE_OF_##cls args);                         \
      r = real args;                                                           \
      if (r == CUDNN_STATUS_SUCCESS && DNN_##name != DNN_cudnnDestroy) r = d;  \
    }                                                                          \
    ag__lib_leave();                                                           \
    return r;                                                                  \
  }
#include "cudnn.def"
#undef AG_DNN

AG_EXPORT const char *cudnnGetErrorString(cudnnStatus_t status) {
  const char *(*real)(cudnnStatus_t) =
      (const char *(*)(cudnnStatus_t))dnn_real_of(DNN_cudnnGetErrorString);
  if (!real) return "CUDNN_STATUS_NOT_INITIALIZED";
  if (ag__active()) ag__note(&dnn_calls[DNN_cudnnGetErrorString]);
  return real(status);
}

__attribute__((constructor)) static void dnn_register(void) {
  (void)ag__stats_register(dnn_calls, DNN_COUNT_);
}
