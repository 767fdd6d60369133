/* cuda.c — the driver API: the getter (cuGetProcAddress), its per-entry wrappers, and the
 * driver functions programs call directly.
 *
 * Every (name, ABI version, per-thread) entry of the driver API that cudaTypedefs.h describes is
 * one line of the generated table ag_cu_table.h (tools/gen-cuda-table, classified by
 * shims/cuda-class.def). Launch, module (device code loading) and ordering entries get a
 * wrapper; harmless ones get none.
 *
 * The getter wrapper calls the real getter first and only where it returned a function swaps in
 * the wrapper of the entry with the same name and per-thread flag and the highest version not
 * above the requested one — the ABI the real getter chose. Each entry has its own slot for the
 * real pointer, filled by the first request; a later request that maps to the same entry but got
 * a different function (a driver whose versions this table does not know) is handed the real
 * function untouched rather than a wrapper of the wrong ABI. Requests the table cannot place
 * (names from other headers: GL, EGL, VDPAU interop) are also handed back untouched.
 *
 * One version of each wrapped function is also exported under the name programs link against
 * (cuMemcpyHtoD → cuMemcpyHtoD_v2), so programs linked against libcuda are seen too, and the
 * same wrapper answers dlsym of that name on a driver handle (cuBLASLt's ~32 lookups).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "real.h"
#include "shim.h"
#include "stats.h"

static const char *const cu_sonames[] = {"libcuda.so.1", "libcuda.so", NULL};

/* ---- the table ------------------------------------------------------------------------- */

enum {
#define AG_CU(id, ...) CU_##id,
#include "ag_cu_table.h"
#undef AG_CU
  CU_COUNT_
};

#define AG_FAM_NONE AG_FAM_UNCLASSIFIED
static ag_call_t cu_calls[CU_COUNT_] = {
#define AG_CU(id, name, ver, pt, cls, fam, exp, sfx, label, params, args, stream) \
  {label, AG_FAM_##fam, 0, #stream, 0},
#include "ag_cu_table.h"
#undef AG_CU
};

static void *cu_real[CU_COUNT_];

/* The exported (ELF) name of an entry, for entries that have one. */
#define AG_ELF_0(elf) NULL
#define AG_ELF_1(elf) #elf

enum { CLS_HARMLESS, CLS_ORDER, CLS_LAUNCH, CLS_MODULE, CLS_SETTING };
#define CLS_OF_HARMLESS CLS_HARMLESS
#define CLS_OF_ORDER CLS_ORDER
#define CLS_OF_LAUNCH CLS_LAUNCH
#define CLS_OF_MODULE CLS_MODULE
#define CLS_OF_SETTING CLS_SETTING

static const struct cu_entry {
  const char *name;
  const char *elf; /* exported name, or NULL */
  int version, per_thread, cls;
} cu_entries[CU_COUNT_] = {
#define AG_CU(id, name, ver, pt, cls, fam, exp, elf, ...) \
  {#name, AG_ELF_##exp(elf), ver, pt, CLS_OF_##cls},
#include "ag_cu_table.h"
#undef AG_CU
};

/* Real functions. Each wrapped entry has two wrappers: w_<id> for pointers handed out by the
 * getter (real pointer in cu_real, set by the getter) and, for the exported version, x_<id>
 * for the exported name and for dlsym of that name (real pointer in cu_real_x: what dlsym
 * returned, else the next definition of the name). The driver may implement the getter's
 * entry and its exported symbol as different functions, so the two never share a slot. */
static void *cu_real_x[CU_COUNT_];

static void *cu_real_of(int i) { return __atomic_load_n(&cu_real[i], __ATOMIC_ACQUIRE); }

static void *cu_real_x_of(int i) {
  void *p = __atomic_load_n(&cu_real_x[i], __ATOMIC_ACQUIRE);
  if (AG_LIKELY(p) || !cu_entries[i].elf) return p;
  p = ag__real_lookup(cu_sonames, cu_entries[i].elf);
  if (p) {
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&cu_real_x[i], &expected, p, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      p = expected;
  }
  return p;
}

/* ---- launches ---------------------------------------------------------------------------- */

typedef struct cu_kl {
  PFN_cuLaunchKernel_v4000 real;
  CUfunction f;
  unsigned g[3], b[3], shmem;
  CUstream s;
  void **params, **extra;
} cu_kl_t;

static int submit_kernel(const ag_launch_t *l) {
  const cu_kl_t *c = l->ctx;
  return c->real(c->f, c->g[0], c->g[1], c->g[2], c->b[0], c->b[1], c->b[2], c->shmem, c->s,
                 c->params, c->extra);
}

static int submit_coop(const ag_launch_t *l) {
  const cu_kl_t *c = l->ctx;
  return ((PFN_cuLaunchCooperativeKernel_v9000)(void *)c->real)(
      c->f, c->g[0], c->g[1], c->g[2], c->b[0], c->b[1], c->b[2], c->shmem, c->s, c->params);
}

/* The common case (no `extra` buffer): the launch record holds every argument but the real
 * function, which is l->ctx. */
static int submit_plain(const ag_launch_t *l) {
  return ((PFN_cuLaunchKernel_v4000)l->ctx)(
      (CUfunction)l->func, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
      l->block[2], l->shmem, (CUstream)l->stream, l->args, NULL);
}

static int submit_plain_coop(const ag_launch_t *l) {
  return ((PFN_cuLaunchCooperativeKernel_v9000)l->ctx)(
      (CUfunction)l->func, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
      l->block[2], l->shmem, (CUstream)l->stream, l->args);
}

/* Inlined into each wrapper, where `i` and `coop` are constants. */
static inline __attribute__((always_inline)) CUresult
launch_kernel(int i, void *real, int coop, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
              unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
              void **extra) {
  if (AG_UNLIKELY(!real)) return CUDA_ERROR_NOT_FOUND;
  if (AG_UNLIKELY(extra != NULL)) {
    cu_kl_t c = {(PFN_cuLaunchKernel_v4000)real, f, {gx, gy, gz}, {bx, by, bz},
                 shmem, s, params, extra};
    /* The engine reads the arguments from the `extra` array (both forms: the driver refuses). */
    ag_launch_t l = {&cu_calls[i], AG_PATH_DRIVER, f, {gx, gy, gz}, {bx, by, bz}, shmem, s,
                     params ? NULL : extra, NULL, coop ? submit_coop : submit_kernel, &c,
                     AG_FN_FUNCTION, (unsigned char)coop, (unsigned char)cu_entries[i].per_thread,
                     1, 0, NULL};
    if (!ag__active()) return (CUresult)l.submit(&l);
    return (CUresult)ag__launch(&l);
  }
  ag_launch_t l = {&cu_calls[i], AG_PATH_DRIVER, f, {gx, gy, gz}, {bx, by, bz}, shmem, s,
                   params, NULL, coop ? submit_plain_coop : submit_plain, real,
                   AG_FN_FUNCTION, (unsigned char)coop, (unsigned char)cu_entries[i].per_thread,
                   0, 0, NULL};
  if (!ag__active()) return (CUresult)l.submit(&l);
  return (CUresult)ag__launch(&l);
}

static inline __attribute__((always_inline)) CUresult launch_cuLaunchKernel(int i, void *real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                      unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                      CUstream s, void **params, void **extra) {
  /* Nested (the runtime's own launch of a runtime launch, or the engine's): the outer level
   * recorded it, so skip building the record. This is every runtime launch, twice per launch. */
  if (ag__tls.quiet && real)
    return ((PFN_cuLaunchKernel_v4000)real)(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
  return launch_kernel(i, real, 0, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

static inline __attribute__((always_inline)) CUresult launch_cuLaunchCooperativeKernel(int i, void *real, CUfunction f, unsigned gx, unsigned gy,
                                                 unsigned gz, unsigned bx, unsigned by,
                                                 unsigned bz, unsigned shmem, CUstream s,
                                                 void **params) {
  return launch_kernel(i, real, 1, f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL);
}

typedef struct cu_klex {
  PFN_cuLaunchKernelEx_v11060 real;
  const CUlaunchConfig *config;
  CUfunction f;
  void **params, **extra;
} cu_klex_t;

static int submit_ex(const ag_launch_t *l) {
  const cu_klex_t *c = l->ctx;
  return c->real(c->config, c->f, c->params, c->extra);
}

static CUresult launch_cuLaunchKernelEx(int i, void *real, const CUlaunchConfig *config, CUfunction f,
                                        void **params, void **extra) {
  cu_klex_t c = {(PFN_cuLaunchKernelEx_v11060)real, config, f, params, extra};
  ag_launch_t l = {.call = &cu_calls[i], .path = AG_PATH_DRIVER, .func = f, .args = params,
                   .config = config, .submit = submit_ex, .ctx = &c};
  if (!c.real) return CUDA_ERROR_NOT_FOUND;
  if (!config) return c.real(config, f, params, extra); /* the driver reports the error */
  l.grid[0] = config->gridDimX, l.grid[1] = config->gridDimY, l.grid[2] = config->gridDimZ;
  l.block[0] = config->blockDimX, l.block[1] = config->blockDimY, l.block[2] = config->blockDimZ;
  l.shmem = config->sharedMemBytes;
  l.stream = config->hStream;
  l.fkind = AG_FN_FUNCTION;
  l.per_thread = (unsigned char)cu_entries[i].per_thread;
  l.extra = extra != NULL;
  if (extra) l.args = params ? NULL : extra; /* see ag_launch_t.args */
  l.nattrs = config->numAttrs;
  l.attrs = config->attrs;
  if (!ag__active()) return (CUresult)l.submit(&l);
  return (CUresult)ag__launch(&l);
}

/* ---- device code: loading, lookups by name, unloading ------------------------------------- */

/* Each calls the real function and, when it succeeded, tells the engine where kernel handles
 * come from (src/engine.h). That happens at every nesting depth, including the runtime's own
 * loads of registered fatbins; only the count is kept to the outermost level. */

#define MODULE_PRE(i, real)                   \
  if (!(real)) return CUDA_ERROR_NOT_FOUND;   \
  int active_ = ag__active();                 \
  if (active_) ag__note(&cu_calls[i]);
#define MODULE_OK(r) ((r) == CUDA_SUCCESS && active_)

static CUresult module_cuModuleLoad(int i, void *real, CUmodule *m, const char *fname) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuModuleLoad_v2000)real)(m, fname);
  if (MODULE_OK(r) && m) ag__image_file_loaded(*m, fname);
  return r;
}

static CUresult module_cuModuleLoadData(int i, void *real, CUmodule *m, const void *image) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuModuleLoadData_v2000)real)(m, image);
  if (MODULE_OK(r) && m) ag__image_loaded(*m, image);
  return r;
}

static CUresult module_cuModuleLoadDataEx(int i, void *real, CUmodule *m, const void *image,
                                          unsigned n, CUjit_option *opts, void **vals) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuModuleLoadDataEx_v2010)real)(m, image, n, opts, vals);
  if (MODULE_OK(r) && m) ag__image_loaded(*m, image);
  return r;
}

static CUresult module_cuModuleLoadFatBinary(int i, void *real, CUmodule *m, const void *fatbin) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuModuleLoadFatBinary_v2000)real)(m, fatbin);
  if (MODULE_OK(r) && m) ag__image_loaded(*m, fatbin);
  return r;
}

static CUresult module_cuLibraryLoadData(int i, void *real, CUlibrary *lib, const void *code,
                                         CUjit_option *jo, void **jv, unsigned njo,
                                         CUlibraryOption *lo, void **lv, unsigned nlo) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuLibraryLoadData_v12000)real)(lib, code, jo, jv, njo, lo, lv, nlo);
  if (MODULE_OK(r) && lib) ag__image_loaded(*lib, code);
  return r;
}

static CUresult module_cuLibraryLoadFromFile(int i, void *real, CUlibrary *lib, const char *path,
                                             CUjit_option *jo, void **jv, unsigned njo,
                                             CUlibraryOption *lo, void **lv, unsigned nlo) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuLibraryLoadFromFile_v12000)real)(lib, path, jo, jv, njo, lo, lv, nlo);
  if (MODULE_OK(r) && lib) ag__image_file_loaded(*lib, path);
  return r;
}

static CUresult module_cuModuleGetFunction(int i, void *real, CUfunction *f, CUmodule m,
                                           const char *name) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuModuleGetFunction_v2000)real)(f, m, name);
  if (MODULE_OK(r) && f) ag__func_named(*f, 0, m, name);
  return r;
}

static CUresult module_cuLibraryGetKernel(int i, void *real, CUkernel *k, CUlibrary lib,
                                          const char *name) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuLibraryGetKernel_v12000)real)(k, lib, name);
  if (MODULE_OK(r) && k) ag__func_named(*k, 1, lib, name);
  return r;
}

static CUresult module_cuLibraryGetModule(int i, void *real, CUmodule *m, CUlibrary lib) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuLibraryGetModule_v12000)real)(m, lib);
  if (MODULE_OK(r) && m) ag__image_alias(*m, lib);
  return r;
}

static CUresult module_cuKernelGetFunction(int i, void *real, CUfunction *f, CUkernel k) {
  MODULE_PRE(i, real)
  CUresult r = ((PFN_cuKernelGetFunction_v12000)real)(f, k);
  if (MODULE_OK(r) && f) ag__func_of_kernel(*f, k);
  return r;
}

/* Unloading orders work (queued launches may use the module) and ends its handles' meaning. */
#define MODULE_UNLOAD(name, pfn, type)                                    \
  static CUresult module_##name(int i, void *real, type h) {             \
    CUresult r;                                                           \
    if (!real) return CUDA_ERROR_NOT_FOUND;                               \
    if (!ag__active()) return ((pfn)real)(h);                             \
    ag__order_enter(&cu_calls[i], NULL);                                  \
    r = ((pfn)real)(h);                                                   \
    ag__order_leave();                                                    \
    if (r == CUDA_SUCCESS) ag__image_unloaded(h);                         \
    return r;                                                             \
  }
MODULE_UNLOAD(cuModuleUnload, PFN_cuModuleUnload_v2000, CUmodule)
MODULE_UNLOAD(cuLibraryUnload, PFN_cuLibraryUnload_v12000, CUlibrary)

/* Ending a context ends its modules, functions and graphs: the engine forgets what refers to
 * them while the context still exists (src/engine.h), at every nesting depth (cudaDeviceReset
 * resets through the driver). */
#define CTX_END(name, pfn, type, forget) CTX_END_(name, pfn, type, forget)
/* (cuda.h #defines these names to their _v2 symbols; the table's wrappers use those.) */
#define CTX_END_(name, pfn, type, forget)                                 \
  static CUresult module_##name(int i, void *real, type h) {             \
    CUresult r;                                                           \
    if (!real) return CUDA_ERROR_NOT_FOUND;                               \
    if (!ag__active()) return ((pfn)real)(h);                             \
    ag__order_enter(&cu_calls[i], NULL);                                  \
    forget;                                                               \
    r = ((pfn)real)(h);                                                   \
    r = (CUresult)ag__order_leave_status(&cu_calls[i], NULL, r, 0);      \
    return r;                                                             \
  }
CTX_END(cuCtxDestroy, PFN_cuCtxDestroy_v4000, CUcontext, ag__ctx_ending(h))
CTX_END(cuDevicePrimaryCtxReset, PFN_cuDevicePrimaryCtxReset_v11000, CUdevice, ag__device_ending((int)h))
CTX_END(cuDevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000, CUdevice,
        ag__device_ending((int)h))

/* ---- settings ----------------------------------------------------------------------------- */

/* Each names its setting by an object and (entry, attribute, device), context-wide ones by the
 * current context; held launches are submitted before the value changes (src/engine.h). */
#define SETTING_WHAT(i, attr, dev) \
  (((uint64_t)(unsigned)(i) << 48) ^ ((uint64_t)(unsigned)(attr) << 16) ^ (uint64_t)(unsigned)(dev))
#define SETTING_BODY(i, real, obj, attr, dev, value, call)                              \
  CUresult r;                                                                           \
  if (!(real)) return CUDA_ERROR_NOT_FOUND;                                             \
  if (!ag__active()) return call;                                                       \
  const void *obj_ = (obj);                                                             \
  uint64_t what_ = SETTING_WHAT(i, attr, dev), value_ = (uint64_t)(value);              \
  int entered_ = ag__setting_enter(&cu_calls[i], obj_, what_, value_);                  \
  r = call;                                                                             \
  return (CUresult)ag__setting_leave(entered_, obj_, what_, value_, r, 0);

static const void *current_ctx_key(void) {
  CUcontext c = NULL;
  if (!ag__real_ready() || !ag__real.cuCtxGetCurrent || ag__real.cuCtxGetCurrent(&c)) return NULL;
  return c;
}

static CUresult setting_cuFuncSetAttribute(int i, void *real, CUfunction f, CUfunction_attribute a,
                                           int v) {
  SETTING_BODY(i, real, f, a, 0, v, ((PFN_cuFuncSetAttribute_v9000)real)(f, a, v))
}

static CUresult setting_cuKernelSetAttribute(int i, void *real, CUfunction_attribute a, int v,
                                             CUkernel k, CUdevice d) {
  SETTING_BODY(i, real, k, a, d, v, ((PFN_cuKernelSetAttribute_v12000)real)(a, v, k, d))
}

static CUresult setting_cuFuncSetCacheConfig(int i, void *real, CUfunction f, CUfunc_cache c) {
  SETTING_BODY(i, real, f, 0, 0, c, ((PFN_cuFuncSetCacheConfig_v3000)real)(f, c))
}

static CUresult setting_cuKernelSetCacheConfig(int i, void *real, CUkernel k, CUfunc_cache c,
                                               CUdevice d) {
  SETTING_BODY(i, real, k, 0, d, c, ((PFN_cuKernelSetCacheConfig_v12000)real)(k, c, d))
}

static CUresult setting_cuFuncSetSharedMemConfig(int i, void *real, CUfunction f,
                                                 CUsharedconfig c) {
  SETTING_BODY(i, real, f, 0, 0, c, ((PFN_cuFuncSetSharedMemConfig_v4020)real)(f, c))
}

static CUresult setting_cuCtxSetLimit(int i, void *real, CUlimit l, size_t v) {
  SETTING_BODY(i, real, current_ctx_key(), l, 0, v, ((PFN_cuCtxSetLimit_v3010)real)(l, v))
}

static CUresult setting_cuCtxSetCacheConfig(int i, void *real, CUfunc_cache c) {
  SETTING_BODY(i, real, current_ctx_key(), 0, 0, c, ((PFN_cuCtxSetCacheConfig_v3020)real)(c))
}

static CUresult setting_cuCtxSetSharedMemConfig(int i, void *real, CUsharedconfig c) {
  SETTING_BODY(i, real, current_ctx_key(), 0, 0, c,
               ((PFN_cuCtxSetSharedMemConfig_v4020)real)(c))
}

/* ---- wrappers ---------------------------------------------------------------------------- */

#define AG_CU(id, name, ver, pt, cls, fam, exp, elf, label, params, args, stream) \
  AG_CU_WRAP_##cls(w_##id, cu_real_of, id, name, params, args, stream)           \
  AG_CU_X_##exp(cls, id, name, params, args, stream)
#define AG_CU_X_0(cls, id, name, params, args, stream)
#define AG_CU_X_1(cls, id, name, params, args, stream) \
  AG_CU_WRAP_##cls(x_##id, cu_real_x_of, id, name, params, args, stream)
#define AG_CU_WRAP_HARMLESS(fn, real_of, id, name, params, args, stream)
#define AG_CU_WRAP_LAUNCH(fn, real_of, id, name, params, args, stream) \
  static CUresult fn params { return launch_##name(CU_##id, real_of(CU_##id), AG_ARGS args); }
#define AG_CU_WRAP_MODULE(fn, real_of, id, name, params, args, stream) \
  static CUresult fn params { return module_##name(CU_##id, real_of(CU_##id), AG_ARGS args); }
#define AG_CU_WRAP_SETTING(fn, real_of, id, name, params, args, stream) \
  static CUresult fn params { return setting_##name(CU_##id, real_of(CU_##id), AG_ARGS args); }
#define AG_CU_WRAP_ORDER(fn, real_of, id, name, params, args, stream)  \
  static CUresult fn params {                                          \
    PFN_##id real = (PFN_##id)real_of(CU_##id);                        \
    CUresult r;                                                        \
    if (!real) return CUDA_ERROR_NOT_FOUND;                            \
    if (!ag__active()) return real args;                               \
    ag__order_enter(&cu_calls[CU_##id], (void *)(stream));             \
    r = real args;                                                     \
    return (CUresult)ag__order_leave_status(&cu_calls[CU_##id], (void *)(stream), r, 0); \
  }
#include "ag_cu_table.h"
#undef AG_CU

static void *const cu_x_wrappers[CU_COUNT_] = {
#define AG_CU(id, name, ver, pt, cls, fam, exp, ...) AG_CU_XPTR_##exp(id)
#define AG_CU_XPTR_0(id) NULL,
#define AG_CU_XPTR_1(id) (void *)x_##id,
#include "ag_cu_table.h"
#undef AG_CU
};

static void *const cu_wrappers[CU_COUNT_] = {
#define AG_CU(id, name, ver, pt, cls, ...) AG_CU_PTR_##cls(id)
#define AG_CU_PTR_HARMLESS(id) NULL,
#define AG_CU_PTR_LAUNCH(id) (void *)w_##id,
#define AG_CU_PTR_ORDER(id) (void *)w_##id,
#define AG_CU_PTR_MODULE(id) (void *)w_##id,
#define AG_CU_PTR_SETTING(id) (void *)w_##id,
#include "ag_cu_table.h"
#undef AG_CU
};

/* Exports: one version of each wrapped function under the name programs link against (see
 * tools/gen-cuda-table); cuda.h's prototype checks the choice. */
#define AG_CU(id, name, ver, pt, cls, fam, exp, elf, ...) AG_CU_EXPORT_##exp(id, elf)
#define AG_CU_EXPORT_0(id, elf)
#define AG_CU_EXPORT_1(id, elf) \
  extern __typeof(x_##id) elf __attribute__((alias("x_" #id), visibility("default")));
#include "ag_cu_table.h"
#undef AG_CU

/* ---- the getter -------------------------------------------------------------------------- */

static PFN_cuGetProcAddress_v11030 real_getter_v1;
static PFN_cuGetProcAddress_v12000 real_getter_v2;

static void *swap(const char *sym, int version, cuuint64_t flags, void *p);
static void store_real(void **slot, void *p);

static CUresult getter_v1(const char *symbol, void **pfn, int version, cuuint64_t flags) {
  PFN_cuGetProcAddress_v11030 real = __atomic_load_n(&real_getter_v1, __ATOMIC_ACQUIRE);
  CUresult r;
  if (!real) {
    real = (PFN_cuGetProcAddress_v11030)ag__real_lookup(cu_sonames, "cuGetProcAddress");
    if (real) store_real((void **)&real_getter_v1, (void *)real);
  }
  if (!real) return CUDA_ERROR_NOT_FOUND;
  r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn && ag__active())
    *pfn = swap(symbol, version, flags, *pfn);
  return r;
}

static CUresult getter_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status) {
  PFN_cuGetProcAddress_v12000 real = __atomic_load_n(&real_getter_v2, __ATOMIC_ACQUIRE);
  CUresult r;
  if (!real) {
    real = (PFN_cuGetProcAddress_v12000)ag__real_lookup(cu_sonames, "cuGetProcAddress_v2");
    if (real) store_real((void **)&real_getter_v2, (void *)real);
  }
  if (!real) return CUDA_ERROR_NOT_FOUND;
  r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn && ag__active())
    *pfn = swap(symbol, version, flags, *pfn);
  return r;
}

AG_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                       cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  return getter_v2(symbol, pfn, version, flags, status);
}

/* cuda.h renames cuGetProcAddress to cuGetProcAddress_v2; the 11030 ABI keeps the plain name. */
extern __typeof(getter_v1) ag_cuGetProcAddress_v1 __asm__("cuGetProcAddress")
    __attribute__((alias("getter_v1"), visibility("default")));

static void store_real(void **slot, void *p) {
  void *expected = NULL;
  if (!ag__is_ours(p))
    __atomic_compare_exchange_n(slot, &expected, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Whether the real getter hands out `p` for `sym` at `version` with `flags`. */
static int real_gives(const char *sym, int version, cuuint64_t flags, void *p) {
  PFN_cuGetProcAddress_v12000 g2 = __atomic_load_n(&real_getter_v2, __ATOMIC_ACQUIRE);
  PFN_cuGetProcAddress_v11030 g1 = __atomic_load_n(&real_getter_v1, __ATOMIC_ACQUIRE);
  CUdriverProcAddressQueryResult st;
  void *q = NULL;
  if (g2) {
    if (g2(sym, &q, version, flags, &st) != CUDA_SUCCESS) return 0;
  } else if (!g1 || g1(sym, &q, version, flags) != CUDA_SUCCESS) {
    return 0;
  }
  return q == p;
}

static void *swap(const char *sym, int version, cuuint64_t flags, void *p) {
  int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, best = -1;
  int want_pt = pt;

  if (!strcmp(sym, "cuGetProcAddress")) {
    /* The runtime asks for the getter itself (11030 and 12000 ABIs): answer with ours. */
    if (version >= 12000) {
      store_real((void **)&real_getter_v2, p);
      return (void *)getter_v2;
    }
    store_real((void **)&real_getter_v1, p);
    return (void *)getter_v1;
  }
  /* Never wrap our own wrapper (an interposer between us and the driver that resolves names
   * globally could hand one back): its real function would be itself. */
  if (ag__is_ours(p)) return p;
  for (int tries = 0; tries < 2 && best < 0; tries++, pt = 0) {
    for (int i = 0; i < CU_COUNT_; i++) {
      const struct cu_entry *e = &cu_entries[i];
      if (e->per_thread != pt || e->version > version || strcmp(e->name, sym)) continue;
      if (best < 0 || e->version > cu_entries[best].version) best = i;
    }
  }
  if (best < 0) {
    /* Nothing known about it (interop, an old ABI, a newer driver): it may order work. */
    void *t = ag__tramp_for(sym, p);
    ag__log(AG_LOG_DEBUG, "getter: %s (version %d, flags %llu) is not in the table; %s", sym,
            version, (unsigned long long)flags, t ? "treated as ordering" : "not watched");
    return t ? t : p;
  }
  if (cu_entries[best].cls == CLS_HARMLESS) return p;
  if (want_pt && !cu_entries[best].per_thread &&
      !real_gives(sym, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, p)) {
    /* A per-thread request below the version of the name's per-thread entry fell back to the
     * legacy entry, but the driver handed out another function than the legacy one: its
     * per-thread form. The legacy wrapper would take stream 0 for the legacy stream and keep a
     * per-thread function in the legacy slot. Where the driver hands out that very function for
     * the per-thread entry (the first version that has one), that entry's wrapper is the right
     * one; otherwise it is watched as an unknown ordering function. */
    int alt = -1;
    for (int i = 0; i < CU_COUNT_; i++) {
      const struct cu_entry *e = &cu_entries[i];
      if (!e->per_thread || strcmp(e->name, sym)) continue;
      if (alt < 0 || e->version < cu_entries[alt].version) alt = i;
    }
    if (alt >= 0 && cu_entries[alt].cls != CLS_HARMLESS &&
        real_gives(sym, cu_entries[alt].version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, p)) {
      best = alt;
    } else {
      void *t = ag__tramp_for(sym, p);
      ag__log(AG_LOG_DEBUG, "getter: %s (version %d, per-thread) is not the legacy function; %s",
              sym, version, t ? "treated as ordering" : "not watched");
      return t ? t : p;
    }
  }
  void *expected = NULL;
  if (!__atomic_compare_exchange_n(&cu_real[best], &expected, p, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE) &&
      expected != p) {
    /* A different function for the same entry: an ABI this table does not know. Its
     * arguments cannot be read, but it can still order. */
    void *t = ag__tramp_for(sym, p);
    ag__log(AG_LOG_DEBUG, "getter: %s (version %d) differs from the known ABI; %s", sym, version,
            t ? "treated as ordering" : "not watched");
    return t ? t : p;
  }
  return cu_wrappers[best];
}

void *ag__cu_dlsym_swap(const char *name, void *p) {
  if (!strcmp(name, "cuGetProcAddress")) {
    store_real((void **)&real_getter_v1, p);
    return (void *)getter_v1;
  }
  if (!strcmp(name, "cuGetProcAddress_v2")) {
    store_real((void **)&real_getter_v2, p);
    return (void *)getter_v2;
  }
  if (ag__is_ours(p)) return p;
  for (int i = 0; i < CU_COUNT_; i++) {
    if (!cu_entries[i].elf || strcmp(cu_entries[i].elf, name)) continue;
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&cu_real_x[i], &expected, p, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE) &&
        expected != p)
      return p;
    return cu_x_wrappers[i];
  }
  return p;
}

/* ---- the engine's own driver functions ---------------------------------------------------- */

static const char *const rt_sonames_[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                          NULL};

/* Fills the engine's table (src/real.h) through the real getter: the real functions, never our
 * wrappers, so the engine's own calls are not seen as the program's. */
static int resolve_real(ag_real_t *t) {
  PFN_cuGetProcAddress_v12000 get = __atomic_load_n(&real_getter_v2, __ATOMIC_ACQUIRE);
  CUdriverProcAddressQueryResult st;
  if (!get) get = (PFN_cuGetProcAddress_v12000)ag__real_lookup(cu_sonames, "cuGetProcAddress_v2");
  if (!get || ag__is_ours((void *)get)) {
    ag__log(AG_LOG_DEBUG, "engine: the driver's getter is not known yet");
    return -AG_ENOENT;
  }
  memset(t, 0, sizeof *t);
  /* A driver's getter hands out its own functions. Should something between us and the driver
   * hand back one of ours (another interposer asking dlsym(RTLD_DEFAULT)), the engine would
   * call itself: that entry is treated as missing instead. */
#define AG_REAL_GET_(name, ver)                                                       \
  if (get(#name, (void **)&t->name, ver, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) ||    \
      ag__is_ours((void *)t->name))                                                    \
    t->name = NULL;
  AG_REAL_DRV_MAP(AG_REAL_GET_)
#undef AG_REAL_GET_
  t->cudaGetFuncBySymbol = (int (*)(void **, const void *))ag__real_lookup(rt_sonames_, "cudaGetFuncBySymbol");
  t->cudaRuntimeGetVersion = (int (*)(int *))ag__real_lookup(rt_sonames_, "cudaRuntimeGetVersion");
  if (!t->cuLaunchKernel) ag__log(AG_LOG_DEBUG, "engine: the driver has no cuLaunchKernel");
  return t->cuLaunchKernel ? 0 : -AG_ENOENT;
}

__attribute__((constructor)) static void cu_register(void) {
  ag__stats_register(cu_calls, CU_COUNT_);
  ag__real_set_resolver(resolve_real);
}
