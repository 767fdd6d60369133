/* engine.h — the boundary between the entry points (shims/) and the engine (src/).
 *
 * Every exported wrapper does one of four things, all through this header:
 *   - launch:   fills an ag_launch_t and returns ag__launch(&l), the CUDA status of the launch.
 *               The engine decides whether to submit it now (l->submit) or to hold it and
 *               replay it later as part of a graph.
 *   - ordering: ag__order_enter(call, stream) before forwarding, ag__order_leave() after. The
 *               engine submits the held launches the call can observe (all of them, those of
 *               `stream` and its implicit-synchronisation partners, or none: see call_rule in
 *               engine.c) and counts the call.
 *   - library:  ag__lib_enter(call) / ag__lib_leave() around a call into a library that
 *               launches kernels itself (cuDNN); its launches are labelled with that path.
 *   - harmless: forwarded untouched (not wrapped at all where possible).
 * Nesting is tracked per thread: a call that arrives while another wrapped call is in progress
 * on the same thread (the runtime's own driver launch, a flush issued by the engine) passes
 * straight through and is counted at the outermost level only. Launches made inside a library
 * call are still launches (labelled with the library); other calls inside it are not counted.
 * When the library is disabled or still initialising, ag__active() is false and wrappers
 * forward without calling into the engine at all.
 */
#ifndef AG_ENGINE_H
#define AG_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "ag.h"

/* Where a launch entered the library. */
enum ag_path { AG_PATH_RUNTIME, AG_PATH_DRIVER, AG_PATH_CUDNN, AG_PATH_COUNT_ };

/* Families of intercepted calls (stats keys, in this order). */
#define AG_FAMILY_MAP(XX)                                                                  \
  XX(LAUNCH, "launch") XX(COPY, "copy") XX(MEMSET, "memset") XX(EVENT, "event")             \
  XX(STREAM, "stream") XX(SYNC, "sync") XX(ALLOC, "alloc") XX(FREE, "free")                 \
  XX(HOST_FUNC, "host_func") XX(GRAPH, "graph") XX(CAPTURE, "capture") XX(DEVICE, "device") \
  XX(CUDNN, "cudnn") XX(REGISTER, "register") XX(UNCLASSIFIED, "unclassified")

enum ag_family {
#define AG_FAMILY_ENUM_(id, name) AG_FAM_##id,
  AG_FAMILY_MAP(AG_FAMILY_ENUM_)
#undef AG_FAMILY_ENUM_
  AG_FAM_COUNT_
};

/* One intercepted API function as the stats see it; `count` is its per-name counter. Entry
 * points own these (static tables) and register them with ag__stats_register(). */
typedef struct ag_call {
  const char *name;
  int family;
  uint64_t count;           /* updated atomically */
  const char *stream_arg;   /* the table's stream expression as text (the last column of
                             * shims/cudart.def and of the driver's table), or NULL: a call
                             * whose text is not NULL names a stream, passed to ag__order_enter
                             * (a NULL stream there is the default stream) */
  int rule;                 /* the engine's: what the call observes, found at its first call */
} ag_call_t;

/* What `func` of a launch is. */
enum ag_func_kind {
  AG_FN_STUB,     /* a runtime host stub (cudaLaunchKernel, cudaLaunchKernelExC) */
  AG_FN_KERNEL,   /* a cudaKernel_t / CUkernel (__cudaLaunchKernel) */
  AG_FN_FUNCTION, /* a driver CUfunction, or a CUkernel passed as one (cuLaunchKernel*) */
};

/* One kernel launch, normalised. Which API it came from matters only to `submit`, which
 * performs it as an ordinary launch and returns the API's status (cudaError_t, CUresult).
 * The engine may instead hold the launch (copying its arguments by the kernel's layout) and
 * later perform it itself through the driver, as part of a graph or as an ordinary launch. */
typedef struct ag_launch ag_launch_t;
struct ag_launch {
  ag_call_t *call;       /* the entry point (for per-name counts; never NULL) */
  int path;              /* enum ag_path of the entry point */
  const void *func;      /* host stub, cudaKernel_t, CUfunction or CUkernel */
  unsigned grid[3], block[3];
  unsigned shmem;
  void *stream;
  void **args;           /* one pointer per parameter; with `extra` set, the driver's `extra`
                          * array (NULL when kernelParams came too) */
  const void *config;    /* launch config with attributes (Ex forms), else NULL */
  int (*submit)(const ag_launch_t *l);
  void *ctx;             /* the entry point's own data for submit */
  unsigned char fkind;   /* enum ag_func_kind */
  unsigned char coop;    /* a cooperative launch entry point */
  unsigned char per_thread; /* stream 0 means the per-thread default stream (_ptsz entries) */
  unsigned char extra;   /* arguments come in a driver `extra` buffer (args is NULL) */
  unsigned nattrs;       /* launch attributes of the Ex forms (CUlaunchAttribute layout, which
                          * cudaLaunchAttribute shares) */
  const void *attrs;
};

/* Per-thread nesting state; see the contract above. */
typedef struct ag_tls {
  int quiet; /* wrapped runtime/driver calls in progress: nested calls pass through */
  int lib;   /* library calls (cuDNN) in progress: their launches are labelled AG_PATH_CUDNN */
  void *ctx; /* this thread's current context as last seen (NULL: ask the driver) */
  const char *lib_call; /* the outermost library call in progress (the dump's cudnn_call) */
  int last_err; /* a failed submission reported to this thread through a runtime call: what
                 * cudaGetLastError/cudaPeekAtLastError add to the runtime's own last error */
} ag_tls_t;
extern __thread ag_tls_t ag__tls;

/* Initialises the library once (options, exit hook, fork handlers). Safe to call from any
 * wrapper and re-entrantly: a call made while initialisation is running returns at once. */
void ag__init(void);

enum { AG_INIT_NONE, AG_INIT_RUNNING, AG_INIT_DONE };
extern int ag__init_state;
extern int ag__enabled; /* initialised and not AUTOGRAPH_DISABLE */

/* What a launch must do before anything else, in one word so that the launch path tests it
 * once: AG_HOOK_* bits, set and cleared atomically by their owners. */
extern unsigned ag__hooks;
#define AG_HOOK_FDNN 1u /* a cuDNN call is held for fusion: it runs first (src/fuse-dnn.c) */
#define AG_HOOK_DUMP 2u /* dumps are armed: a requested one is written now (src/dump.c) */
static inline int ag__fdnn_pending(void) {
  return (__atomic_load_n(&ag__hooks, __ATOMIC_ACQUIRE) & AG_HOOK_FDNN) != 0;
}

/* Nonzero when wrappers must hand work to the engine; zero means forward untouched. */
static inline int ag__active(void) {
  if (AG_UNLIKELY(__atomic_load_n(&ag__init_state, __ATOMIC_ACQUIRE) != AG_INIT_DONE)) ag__init();
  return __atomic_load_n(&ag__enabled, __ATOMIC_RELAXED);
}

/* Handles one launch; returns the status of the launch as the API reports it. */
int ag__launch(const ag_launch_t *l);

/* A stream operation the engine may hold as a graph node: cudaMemsetAsync,
 * cudaEventRecord, cudaStreamWaitEvent, cudaMemcpyAsync (and their per-thread forms). The entry point fills one
 * and calls ag__op, which says what to do:
 *   AG_OP_HELD:  it was held (its stream is holding a known sequence it continues); return
 *                ag__op_status(0, rt), performing nothing;
 *   AG_OP_PASS:  perform it now, quietly (ag__tls.quiet around the real call), then return
 *                ag__op_done(op, status, rt): it was recorded in its stream's sequence;
 *   AG_OP_ORDER: not an operation the engine can hold here: handle it as the ordering call it
 *                also is (ag__order_enter / leave). */
typedef struct ag_op {
  ag_call_t *call;
  int kind;            /* AG_OP_MEMSET, AG_OP_EVENT_RECORD, AG_OP_EVENT_WAIT, AG_OP_MEMCPY
                        * (src/graph.h) */
  void *stream;        /* as passed (NULL: the default stream) */
  unsigned char per_thread;
  void *dst;           /* memset: destination, bytes, value; memcpy: destination, source, */
  const void *src;     /* bytes and direction (a cudaMemcpyKind) */
  size_t bytes;
  int value;
  int dir;
  void *event;         /* event record / wait */
  unsigned flags;      /* wait flags */
  uint32_t gen;        /* out (AG_OP_PASS): the sequence it was recorded in */
} ag_op_t;
enum { AG_OP_ORDER = -1, AG_OP_PASS = 0, AG_OP_HELD = 1 };
int ag__op(ag_op_t *op);
int ag__op_done(const ag_op_t *op, int status, int rt);
int ag__op_status(int status, int rt);

/* Brackets an ordering call on `stream` (NULL when the call names none or all streams). For
 * the event calls that observe one event (query, synchronize, destroy) `stream` is that event. */
void ag__order_enter(ag_call_t *call, void *stream);
void ag__order_leave(void);
/* As ag__order_leave, for calls whose status the engine sees (capture begin and end) and that
 * report failed submissions: returns the status the wrapper must return, `status` (what the
 * real call returned, a cudaError_t when `rt`, else a CUresult) or, when that is success, an
 * unreported failed submission of the calling thread's held launches (ag__error_take). */
int ag__order_leave_status(ag_call_t *call, void *stream, int status, int rt);

/* Failed submissions. A held launch was told success; if its submission fails
 * later (on whatever thread submits it), the error is kept for the thread that made the launch
 * and returned once, by that thread's next wrapped call that would have returned success
 * (launch, ordering call, setting), outside library calls; a runtime call also makes it the
 * thread's last error, as CUDA does for a failing call. ag__pending_err is nonzero while one
 * waits (read on every call, so that the check costs one load).
 *   error_take: the calling thread's waiting error as a cudaError_t (rt) or CUresult, or 0;
 *   error_last: cudaGetLastError (clear) / cudaPeekAtLastError given the real one's `status`:
 *               that status when not success, else the library's last error of the thread. */
extern int ag__pending_err;
int ag__error_take(int rt);
int ag__error_last(int status, int clear);

/* Brackets a call that changes what a held launch's submission depends on: a function's or
 * kernel's attribute or cache/shared-memory config, a context limit or config. (obj, what)
 * names the setting (a handle, and the call, attribute and device packed by the caller), value
 * its new value. Held work is submitted first unless the setting already has that value
 * (remembered per setting after each successful call); no launch is held while the call runs.
 * enter returns what leave needs; leave returns the status to return, as
 * ag__order_leave_status. */
int ag__setting_enter(ag_call_t *call, const void *obj, uint64_t what, uint64_t value);
int ag__setting_leave(int entered, const void *obj, uint64_t what, uint64_t value, int status,
                      int rt);
/* (Remembered settings are forgotten with the code and contexts they name: see
 * ag__image_unloaded, ag__fatbin_unregistered, ag__ctx_ending, ag__device_ending.) */

/* Brackets a library call that launches kernels of its own (cuDNN). */
void ag__lib_enter(ag_call_t *call);
void ag__lib_leave(void);

/* Counts a call of a harmless-but-observed function (registration) at the outermost level. */
void ag__note(ag_call_t *call);

/* Device code loaded through the driver (shims/cuda.c, after the real call succeeded). The
 * engine reads kernel layouts from an image when it is loaded, since the program may free,
 * rewrite or unmap the buffer right after, and keeps them by (module, kernel name) for drivers
 * that cannot describe a kernel's parameters (before 12.4). Safe to call from any thread, at
 * any nesting depth (the runtime loads its own fatbins from inside other calls); they never
 * call CUDA.
 *   image_loaded:  `image` (cubin, fatbin, wrapper; anything else has no layouts) as `mod`, a
 *                  CUmodule or CUlibrary; image_file_loaded: the same from a file;
 *   image_alias:   `alias` is another handle of `mod`'s image (cuLibraryGetModule);
 *   func_named:    `func` (a CUkernel when is_kernel, else a CUfunction) is kernel `name` of
 *                  `mod` (cuModuleGetFunction, cuLibraryGetKernel);
 *   func_of_kernel: `func` is the CUfunction of CUkernel `kernel` (cuKernelGetFunction);
 *   image_unloaded: `mod` was unloaded; its kernels, and the sequences and graphs naming them,
 *                   are forgotten (handles may be reused). */
void ag__image_loaded(const void *mod, const void *image);
void ag__image_file_loaded(const void *mod, const char *path);
void ag__image_alias(const void *alias, const void *mod);
void ag__func_named(const void *func, int is_kernel, const void *mod, const char *name);
void ag__func_of_kernel(const void *func, const void *kernel);
void ag__image_unloaded(const void *mod);

/* The ends of what kernels come from. Each submits what is held, then forgets every
 * kernel record, layout, sequence and graph that refers to what ends, so that a handle, host
 * stub or context the process reuses later is learned afresh. They never fail and may forget
 * more than needed (relearning is cheap; a stale record replays the wrong kernel).
 *   fatbin_unregistered: __cudaUnregisterFatBinary(handle), before the real call (a dlclosed
 *                        plugin's stubs may come back at the same addresses); it also drops
 *                        the registry's entries;
 *   ctx_ending:          before a context is destroyed (cuCtxDestroy), while its graphs can
 *                        still be destroyed; NULL: every context;
 *   device_ending:       before the primary context of device `dev` is reset or released
 *                        (cuDevicePrimaryCtxReset/Release, cudaDeviceReset), every context of
 *                        that device; AG_DEV_CURRENT: the calling thread's current device. */
#define AG_DEV_CURRENT (-2)
void ag__fatbin_unregistered(void **handle);
void ag__ctx_ending(void *ctx);
void ag__device_ending(int dev);

/* Makes `ctx` the calling thread's current context for a while, keeping the engine's per-thread
 * context cache right (work held in one context may be submitted from another thread).
 * Returns 0 when it already was current, 1 when it was pushed, -1 when it could not be; pass
 * the result to ag__ctx_leave. */
int ag__ctx_enter(void *ctx);
void ag__ctx_leave(int pushed);

/* Set (before the first launch) by a program that runs the engine over a recorded trace, where
 * no real time passes (tools/predict.c): holds are then not bounded in time and no helper
 * thread is started. Never set in the preloaded library. */
extern int ag__hold_offline;

/* The bound on holds. ag__hold_next: the earliest time (ag__now_ns) at which a hold with
 * something still to submit reaches its bound, 0 when none; ag__hold_expire: submits every such
 * hold whose bound is at or before `now`, returning how many. The helper thread runs them; a
 * program that runs the engine over a recorded trace (ag__hold_offline) calls them itself with
 * the trace's own time. */
uint64_t ag__hold_next(void);
int ag__hold_expire(uint64_t now);

/* Holds that are not a stream's: a cuDNN call held for fusion (src/fuse-dnn.c) is under the
 * same bound, AUTOGRAPH_HOLD_US after the last call joined it, and the helper thread submits it
 * then (ag__fdnn_flush). ag__hold_other_ready, called before such a hold and outside every
 * lock, starts the helper if needed and says whether holds can be bounded (nothing may be
 * held otherwise); ag__hold_other(1) sets the bound from now (a call joined the hold), (0)
 * clears it (what was held was submitted). */
int ag__hold_other_ready(void);
void ag__hold_other(int on);

/* Submits every held launch (at exit, before fork, or when the caller needs the device to be
 * up to date). */
void ag__flush_all(void);

#endif
