/* cudart.c — the runtime API entry points (libcudart.so.13's exported names).
 *
 * Every function of shims/cudart.def is exported here under its own name and, where the real
 * runtime has them, its _ptds/_ptsz forms; the preload's definition comes before libcudart's in
 * the global scope, so the program's calls land here. Ordering calls are bracketed with
 * ag__order_enter/leave; the four launch forms are described to the engine (ag__launch) and
 * submitted through the real function; the registration calls feed the registry (stub →
 * device name, fatbin) before returning what the runtime returned.
 *
 * Real functions are looked up lazily, one entry at a time, without a lock: a lookup is
 * idempotent, and a lock (or pthread_once) held across dlsym could deadlock against the
 * loader lock held by a thread whose library constructor is calling into CUDA. Each entry is
 * found once and cached; an entry not found yet (libcudart opened RTLD_LOCAL and not loaded at
 * the first call) is retried at its next call, and the call returns cudaErrorNotSupported.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>

/* The table intercepts deprecated functions too (cudaMemcpyToArray …): programs still call
 * them, and taking their address is not a use worth a warning. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include "graph.h"
#include "registry.h"
#include "shim.h"
#include "stats.h"

static const char *const rt_sonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                         NULL};

/* Expands F once per exported form of a .def line. */
#define AG_RT_VAR_NONE(F, ret, name, ...) F(ret, name, name, __VA_ARGS__)
#define AG_RT_VAR_PTDS(F, ret, name, ...) \
  F(ret, name, name, __VA_ARGS__) F(ret, name##_ptds, name, __VA_ARGS__)
#define AG_RT_VAR_PTSZ(F, ret, name, ...) \
  F(ret, name, name, __VA_ARGS__) F(ret, name##_ptsz, name, __VA_ARGS__)
#define AG_RT(ret, name, cls, fam, var, ...) AG_RT_VAR_##var(AG_RT_F, ret, name, cls, fam, __VA_ARGS__)

/* Registration entry points (hand-written below) share the counters. */
#define AG_RT_REGISTRATION(F)                     \
  F(__cudaRegisterFatBinary)                      \
  F(__cudaRegisterFatBinaryEnd)                   \
  F(__cudaRegisterFunction)                       \
  F(__cudaUnregisterFatBinary)

enum {
#define AG_RT_F(ret, sym, ...) RT_##sym,
#include "cudart.def"
#undef AG_RT_F
#define AG_RT_REG_ENUM(sym) RT_##sym,
  AG_RT_REGISTRATION(AG_RT_REG_ENUM)
  RT_COUNT_
};

static ag_call_t rt_calls[RT_COUNT_] = {
#define AG_RT_F(ret, sym, base, cls, fam, params, args, stream) \
  {#sym, AG_FAM_##fam, 0, #stream, 0},
#include "cudart.def"
#undef AG_RT_F
#define AG_RT_REG_CALL(sym) {#sym, AG_FAM_REGISTER, 0, NULL, 0},
    AG_RT_REGISTRATION(AG_RT_REG_CALL)
};

static const char *const rt_names[RT_COUNT_] = {
#define AG_RT_F(ret, sym, ...) #sym,
#include "cudart.def"
#undef AG_RT_F
#define AG_RT_REG_NAME(sym) #sym,
    AG_RT_REGISTRATION(AG_RT_REG_NAME)
};

/* Nonzero for the per-thread default stream forms (name_ptsz, name_ptds). */
static const unsigned char rt_per_thread[RT_COUNT_] = {
#define AG_RT_F(ret, sym, base, ...) sizeof(#sym) != sizeof(#base),
#include "cudart.def"
#undef AG_RT_F
};

static void *rt_real[RT_COUNT_];

static inline void *rt_real_of(int i) {
  void *p = __atomic_load_n(&rt_real[i], __ATOMIC_ACQUIRE);
  if (AG_LIKELY(p)) return p;
  p = ag__real_lookup(rt_sonames, rt_names[i]);
  if (p) __atomic_store_n(&rt_real[i], p, __ATOMIC_RELEASE);
  return p;
}

/* ---- launches ---------------------------------------------------------------------------- */

typedef cudaError_t (*rt_launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*rt_launch_ex_fn)(const cudaLaunchConfig_t *, const void *, void **);

typedef struct rt_kl {
  void *real;
  const void *func;
  dim3 grid, block;
  void **args;
  size_t shmem;
  cudaStream_t stream;
  const cudaLaunchConfig_t *config;
} rt_kl_t;

static int submit_kernel(const ag_launch_t *l) {
  const rt_kl_t *c = l->ctx;
  return ((rt_launch_fn)c->real)(c->func, c->grid, c->block, c->args, c->shmem, c->stream);
}

/* The common case of the <<<>>> forms: the launch record holds every argument but the real
 * function (l->ctx) and a shared memory size that fits the record's unsigned. */
static int submit_plain(const ag_launch_t *l) {
  dim3 grid = {l->grid[0], l->grid[1], l->grid[2]}, block = {l->block[0], l->block[1], l->block[2]};
  return ((rt_launch_fn)l->ctx)(l->func, grid, block, l->args, l->shmem, (cudaStream_t)l->stream);
}

static int submit_ex(const ag_launch_t *l) {
  const rt_kl_t *c = l->ctx;
  return ((rt_launch_ex_fn)c->real)(c->config, c->func, c->args);
}

/* Inlined into each entry point, where `i`, `fkind` and `coop` are constants. */
static inline __attribute__((always_inline)) cudaError_t
launch(int i, int fkind, int coop, const void *func, dim3 grid, dim3 block, void **args,
       size_t shmem, cudaStream_t stream) {
  void *real = rt_real_of(i);
  if (AG_UNLIKELY(!real)) return cudaErrorNotSupported;
  if (AG_UNLIKELY(!ag__active())) return ((rt_launch_fn)real)(func, grid, block, args, shmem, stream);
  if (AG_UNLIKELY(shmem != (unsigned)shmem)) {
    /* Too large for the record (the runtime rejects it): submitted with the size as given. */
    rt_kl_t c = {real, func, grid, block, args, shmem, stream, NULL};
    ag_launch_t l = {&rt_calls[i], AG_PATH_RUNTIME, func, {grid.x, grid.y, grid.z},
                     {block.x, block.y, block.z}, (unsigned)shmem, stream, args, NULL,
                     submit_kernel, &c, (unsigned char)fkind, (unsigned char)coop,
                     rt_per_thread[i], 0, 0, NULL};
    return (cudaError_t)ag__launch(&l);
  }
  ag_launch_t l = {&rt_calls[i], AG_PATH_RUNTIME, func, {grid.x, grid.y, grid.z},
                   {block.x, block.y, block.z}, (unsigned)shmem, stream, args, NULL,
                   submit_plain, real, (unsigned char)fkind, (unsigned char)coop,
                   rt_per_thread[i], 0, 0, NULL};
  return (cudaError_t)ag__launch(&l);
}

static inline __attribute__((always_inline)) cudaError_t launch_cudaLaunchKernel(int i, const void *func, dim3 grid, dim3 block,
                                           void **args, size_t shmem, cudaStream_t stream) {
  return launch(i, AG_FN_STUB, 0, func, grid, block, args, shmem, stream);
}

static inline __attribute__((always_inline)) cudaError_t launch_cudaLaunchCooperativeKernel(int i, const void *func, dim3 grid,
                                                      dim3 block, void **args, size_t shmem,
                                                      cudaStream_t stream) {
  return launch(i, AG_FN_STUB, 1, func, grid, block, args, shmem, stream);
}

static inline __attribute__((always_inline)) cudaError_t launch___cudaLaunchKernel(int i, cudaKernel_t kernel, dim3 grid, dim3 block,
                                             void **args, size_t shmem, cudaStream_t stream) {
  return launch(i, AG_FN_KERNEL, 0, (const void *)kernel, grid, block, args, shmem, stream);
}

static cudaError_t launch_cudaLaunchKernelExC(int i, const cudaLaunchConfig_t *config,
                                              const void *func, void **args) {
  rt_kl_t c = {.real = rt_real_of(i), .func = func, .args = args, .config = config};
  ag_launch_t l = {.call = &rt_calls[i], .path = AG_PATH_RUNTIME, .func = func, .args = args,
                   .config = config, .submit = submit_ex, .ctx = &c};
  if (!c.real) return cudaErrorNotSupported;
  if (!config || !ag__active()) return (cudaError_t)submit_ex(&l);
  l.grid[0] = config->gridDim.x, l.grid[1] = config->gridDim.y, l.grid[2] = config->gridDim.z;
  l.block[0] = config->blockDim.x, l.block[1] = config->blockDim.y, l.block[2] = config->blockDim.z;
  l.shmem = (unsigned)config->dynamicSmemBytes;
  l.stream = config->stream;
  l.fkind = AG_FN_STUB;
  l.per_thread = rt_per_thread[i];
  l.nattrs = config->numAttrs;
  l.attrs = config->attrs;
  return (cudaError_t)ag__launch(&l);
}

/* ---- stream operations the engine may hold as graph nodes ------------------------------- */

/* The operation `op` of runtime function i, performed by `call`: held, performed quietly and
 * recorded, or handled as the ordering call it also is (src/engine.h, ag__op). */
#define OP_BODY(i, op, perform)                                                            \
  void *real = rt_real_of(i);                                                           \
  cudaError_t r;                                                                        \
  if (!real) return cudaErrorNotSupported;                                              \
  if (!ag__active()) return perform;                                                       \
  (op).call = &rt_calls[i], (op).per_thread = rt_per_thread[i];                         \
  switch (ag__op(&(op))) {                                                              \
  case AG_OP_HELD:                                                                      \
    return (cudaError_t)ag__op_status(0, 1);                                            \
  case AG_OP_PASS:                                                                      \
    ag__tls.quiet++;                                                                    \
    r = perform;                                                                           \
    ag__tls.quiet--;                                                                    \
    return (cudaError_t)ag__op_done(&(op), r, 1);                                       \
  }                                                                                     \
  ag__order_enter(&rt_calls[i], (void *)(op).stream);                                   \
  r = perform;                                                                             \
  return (cudaError_t)ag__order_leave_status(&rt_calls[i], (void *)(op).stream, r, 1);

static cudaError_t op_cudaMemsetAsync(int i, void *dst, int value, size_t count,
                                      cudaStream_t stream) {
  ag_op_t op = {.kind = AG_OP_MEMSET, .stream = stream, .dst = dst, .bytes = count, .value = value};
  OP_BODY(i, op, ((__typeof(&cudaMemsetAsync))real)(dst, value, count, stream))
}

static cudaError_t op_cudaMemcpyAsync(int i, void *dst, const void *src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
  ag_op_t op = {.kind = AG_OP_MEMCPY, .stream = stream, .dst = dst, .src = src, .bytes = count,
                .dir = (int)kind};
  OP_BODY(i, op, ((__typeof(&cudaMemcpyAsync))real)(dst, src, count, kind, stream))
}

static cudaError_t op_cudaEventRecord(int i, cudaEvent_t event, cudaStream_t stream) {
  ag_op_t op = {.kind = AG_OP_EVENT_RECORD, .stream = stream, .event = event};
  OP_BODY(i, op, ((__typeof(&cudaEventRecord))real)(event, stream))
}

static cudaError_t op_cudaStreamWaitEvent(int i, cudaStream_t stream, cudaEvent_t event,
                                          unsigned flags) {
  ag_op_t op = {.kind = AG_OP_EVENT_WAIT, .stream = stream, .event = event, .flags = flags};
  OP_BODY(i, op, ((__typeof(&cudaStreamWaitEvent))real)(stream, event, flags))
}

/* ---- settings and error queries ----------------------------------------------------------- */

/* A setting is keyed by the object it applies to and (call, attribute, device); context-wide
 * ones by the current device's context as the driver reports it. Held launches are flushed
 * before a setting changes (src/engine.h, ag__setting_enter). */
#define SETTING_WHAT(i, attr, dev) \
  (((uint64_t)(unsigned)(i) << 48) ^ ((uint64_t)(unsigned)(attr) << 16) ^ (uint64_t)(unsigned)(dev))
#define SETTING_BODY(i, obj, attr, dev, value, call)                                    \
  void *real = rt_real_of(i);                                                           \
  cudaError_t r;                                                                        \
  if (!real) return cudaErrorNotSupported;                                              \
  if (!ag__active()) return call;                                                       \
  uint64_t what_ = SETTING_WHAT(i, attr, dev), value_ = (uint64_t)(value);              \
  int entered_ = ag__setting_enter(&rt_calls[i], (obj), what_, value_);                 \
  r = call;                                                                             \
  return (cudaError_t)ag__setting_leave(entered_, (obj), what_, value_, r, 1);

static cudaError_t setting_cudaFuncSetAttribute(int i, const void *func, enum cudaFuncAttribute attr,
                                                int value) {
  SETTING_BODY(i, func, attr, 0, value, ((__typeof(&cudaFuncSetAttribute))real)(func, attr, value))
}

static cudaError_t setting_cudaKernelSetAttributeForDevice(int i, cudaKernel_t k,
                                                           enum cudaFuncAttribute attr, int value,
                                                           int device) {
  SETTING_BODY(i, (const void *)k, attr, device, value,
               ((__typeof(&cudaKernelSetAttributeForDevice))real)(k, attr, value, device))
}

static cudaError_t setting_cudaFuncSetCacheConfig(int i, const void *func, enum cudaFuncCache c) {
  SETTING_BODY(i, func, 0, 0, c, ((__typeof(&cudaFuncSetCacheConfig))real)(func, c))
}

static cudaError_t setting_cudaFuncSetSharedMemConfig(int i, const void *func,
                                                      enum cudaSharedMemConfig c) {
  SETTING_BODY(i, func, 0, 0, c, ((__typeof(&cudaFuncSetSharedMemConfig))real)(func, c))
}

/* The runtime applies context-wide settings to the current device's primary context. */
static const void *current_device_key(void) {
  static int (*get)(int *);
  int dev = -1;
  int (*g)(int *) = __atomic_load_n(&get, __ATOMIC_ACQUIRE);
  if (!g) {
    g = (int (*)(int *))ag__real_lookup(rt_sonames, "cudaGetDevice");
    __atomic_store_n(&get, g, __ATOMIC_RELEASE);
  }
  if (!g || g(&dev)) return NULL;
  return (const void *)(uintptr_t)(dev + 1);
}

static cudaError_t setting_cudaDeviceSetLimit(int i, enum cudaLimit limit, size_t value) {
  SETTING_BODY(i, current_device_key(), limit, 0, value,
               ((__typeof(&cudaDeviceSetLimit))real)(limit, value))
}

static cudaError_t setting_cudaDeviceSetCacheConfig(int i, enum cudaFuncCache c) {
  SETTING_BODY(i, current_device_key(), 0, 0, c, ((__typeof(&cudaDeviceSetCacheConfig))real)(c))
}

static cudaError_t setting_cudaDeviceSetSharedMemConfig(int i, enum cudaSharedMemConfig c) {
  SETTING_BODY(i, current_device_key(), 0, 0, c,
               ((__typeof(&cudaDeviceSetSharedMemConfig))real)(c))
}

/* Not ordering calls (PyTorch calls cudaGetLastError after every launch): they add the failed
 * submissions of the thread's held launches to what the runtime reports. */
static cudaError_t error_cudaGetLastError(int i) {
  cudaError_t (*real)(void) = (cudaError_t (*)(void))rt_real_of(i);
  cudaError_t r;
  if (!real) return cudaErrorNotSupported;
  r = real();
  if (!ag__active()) return r;
  return (cudaError_t)ag__error_last(r, 1);
}

static cudaError_t error_cudaPeekAtLastError(int i) {
  cudaError_t (*real)(void) = (cudaError_t (*)(void))rt_real_of(i);
  cudaError_t r;
  if (!real) return cudaErrorNotSupported;
  r = real();
  if (!ag__active()) return r;
  return (cudaError_t)ag__error_last(r, 0);
}

/* ---- generated wrappers ------------------------------------------------------------------ */

#define AG_RT_F(ret, sym, base, cls, fam, params, args, stream) AG_RT_BODY_##cls(ret, sym, base, params, args, stream)
#define AG_RT_BODY_LAUNCH(ret, sym, base, params, args, stream) \
  AG_EXPORT ret sym params { return launch_##base(RT_##sym, AG_ARGS args); }
#define AG_RT_BODY_ORDER(ret, sym, base, params, args, stream) \
  AG_EXPORT ret sym params {                                   \
    __typeof(&sym) real = (__typeof(&sym))rt_real_of(RT_##sym); \
    ret r;                                                     \
    if (!real) return cudaErrorNotSupported;                   \
    if (!ag__active()) return real args;                       \
    ag__order_enter(&rt_calls[RT_##sym], (void *)(stream));    \
    if (RT_##sym == RT_cudaDeviceReset) ag__device_ending(AG_DEV_CURRENT); \
    r = real args;                                             \
    return (ret)ag__order_leave_status(&rt_calls[RT_##sym], (void *)(stream), r, 1); \
  }
#define AG_RT_BODY_OP(ret, sym, base, params, args, stream) \
  AG_EXPORT ret sym params { return op_##base(RT_##sym, AG_ARGS args); }
#define AG_RT_BODY_SETTING(ret, sym, base, params, args, stream) \
  AG_EXPORT ret sym params { return setting_##base(RT_##sym, AG_ARGS args); }
#define AG_RT_BODY_ERROR(ret, sym, base, params, args, stream) \
  AG_EXPORT ret sym params { return error_##base(RT_##sym); }
#include "cudart.def"
#undef AG_RT_F

/* ---- registration ------------------------------------------------------------------------ */

/* Observed and forwarded: the registry keeps stub → device name and fatbin for the engine. */
AG_EXPORT void **__cudaRegisterFatBinary(void *fatCubin) {
  void **(*real)(void *) = (void **(*)(void *))rt_real_of(RT___cudaRegisterFatBinary);
  void **h;
  if (!real) return NULL;
  if (!ag__active()) return real(fatCubin);
  ag__note(&rt_calls[RT___cudaRegisterFatBinary]);
  ag__tls.quiet++;
  h = real(fatCubin);
  ag__tls.quiet--;
  if (h) (void)ag__registry_fatbin(h, fatCubin); /* best effort: the program runs regardless */
  return h;
}

AG_EXPORT void __cudaRegisterFatBinaryEnd(void **handle) {
  void (*real)(void **) = (void (*)(void **))rt_real_of(RT___cudaRegisterFatBinaryEnd);
  if (!real) return;
  if (ag__active()) ag__note(&rt_calls[RT___cudaRegisterFatBinaryEnd]);
  real(handle);
}

typedef void (*rt_register_fn)(void **, const char *, char *, const char *, int, uint3 *, uint3 *,
                               dim3 *, dim3 *, int *);

AG_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
                                      char *deviceFun, const char *deviceName, int thread_limit,
                                      uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim,
                                      int *wSize) {
  rt_register_fn real = (rt_register_fn)rt_real_of(RT___cudaRegisterFunction);
  if (!real) return;
  if (ag__active()) {
    ag__note(&rt_calls[RT___cudaRegisterFunction]);
    (void)ag__registry_function(fatCubinHandle, hostFun, deviceName ? deviceName : deviceFun);
  }
  real(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
}

AG_EXPORT void __cudaUnregisterFatBinary(void **handle) {
  void (*real)(void **) = (void (*)(void **))rt_real_of(RT___cudaUnregisterFatBinary);
  if (ag__active()) {
    ag__note(&rt_calls[RT___cudaUnregisterFatBinary]);
    ag__fatbin_unregistered(handle);
  }
  if (real) real(handle);
}

__attribute__((constructor)) static void rt_register(void) {
  (void)ag__stats_register(rt_calls, RT_COUNT_);
}
