/* cudnn.c — the cuDNN entry points (libcudnn.so.9's exported names).
 *
 * A cuDNN call is not a launch: the kernels it launches reach the driver (the simulated and the
 * real cuDNN fetch the driver through cuGetProcAddress) and are counted there as launches,
 * labelled with the "cudnn" path because they happen inside a bracketed library call
 * (ag__lib_enter/leave). The call itself is counted once, in the "cudnn" family; calls cuDNN
 * makes internally (its own exported functions, runtime or driver ordering calls) are not.
 * Real functions are looked up lazily per entry, as in cudart.c.
 */
#define _GNU_SOURCE
#include <cudnn.h>

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
#define AG_DNN(ret, name, ...) {#name, AG_FAM_CUDNN, 0},
#include "cudnn.def"
#undef AG_DNN
    {"cudnnGetErrorString", AG_FAM_CUDNN, 0},
};

static void *dnn_real[DNN_COUNT_];

static void *dnn_real_of(int i) {
  void *p = __atomic_load_n(&dnn_real[i], __ATOMIC_ACQUIRE);
  if (AG_LIKELY(p)) return p;
  p = ag__real_lookup(dnn_sonames, dnn_calls[i].name);
  if (p) __atomic_store_n(&dnn_real[i], p, __ATOMIC_RELEASE);
  return p;
}

/* Both classes are bracketed the same way today; CALL marks the calls that launch kernels,
 * which the graph engine will treat as a unit. */
#define AG_DNN(ret, name, cls, params, args)                       \
  AG_EXPORT ret name params {                                      \
    __typeof(&name) real = (__typeof(&name))dnn_real_of(DNN_##name); \
    ret r;                                                         \
    if (!real) return CUDNN_STATUS_NOT_INITIALIZED;                \
    if (!ag__active()) return real args;                           \
    ag__lib_enter(&dnn_calls[DNN_##name]);                         \
    r = real args;                                                 \
    ag__lib_leave();                                               \
    return r;                                                      \
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
