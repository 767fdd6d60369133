/* jit.h — the run-time compiler: CUDA C source in, a loadable image (CUBIN or PTX) out.
 *
 * Kernels generated while the program runs (fused replacements of elementwise chains) are
 * compiled with NVRTC on one background worker thread, so that no CUDA call of the program ever
 * waits for a compiler, and kept in a disk cache so that the next run of the same program finds
 * them ready. The service is self-contained: it calls no intercepted entry point and takes no
 * engine lock; the engine submits, polls each time it looks, and loads the image when it is ready.
 *
 *   ag_jit_t *h = ag__jit_submit(src, "fused_k1", opts, tag);   engine thread, context current
 *   ...
 *   if (ag__jit_poll(h, &img, &size, &why) == AG_JIT_READY)     any thread, never blocks
 *     ag__jit_load(h, &module, &function, &err);                engine thread, context current
 *   ag__jit_release(h);
 *
 * NVRTC is found without a link-time dependency, on the worker at its first request
 * (docs/how-it-works.md, "Kernels compiled at run time"): AUTOGRAPH_NVRTC when set (and then
 * only it), else an NVRTC the process has already loaded (PyTorch's wheels load their own), else
 * libnvrtc.so.13 and libnvrtc.so.12 by soname, each only when the driver can load what it
 * makes. Without one the service is off for the process, said once in the log, and every
 * request ends FAILED. AUTOGRAPH_DISABLE turns it off entirely: submit returns NULL.
 */
#ifndef AG_JIT_H
#define AG_JIT_H

#include <cuda.h>
#include <stddef.h>

#include "ag.h"

/* What a request has become. PENDING until the worker is done with it, then READY or FAILED for
 * good. */
enum ag_jit_state { AG_JIT_PENDING, AG_JIT_READY, AG_JIT_FAILED };

/* The image kinds a request can produce. */
enum ag_jit_kind { AG_JIT_CUBIN, AG_JIT_PTX };

typedef struct ag_jit ag_jit_t;

/* Requests the compilation of `source` (CUDA C holding the kernel `name`, extern "C"), with the
 * caller's NVRTC `options` (a NULL-terminated list, may be NULL) after the fixed ones
 * (--gpu-architecture of the current context's device, --fmad=false: results exact), for the
 * build `tag` (anything that changes what the source means, such as the PyTorch build; may be
 * NULL). The strings are copied. Must be called on a thread whose current context is the one the
 * kernel will run in, with the real driver table ready (src/real.h): the device's architecture
 * and the driver's version are read here, since the worker has no context.
 * Never blocks: the request is queued for the worker (started at the first request). Returns a
 * handle to poll and release, already FAILED when the request cannot be served (queue full, no
 * current context, service off); NULL only when the library is disabled or memory ran out. */
ag_jit_t *ag__jit_submit(const char *source, const char *name, const char *const *options,
                         const char *tag);

/* The state of `h`. When READY, *image and *size (each may be NULL) receive the image, valid
 * until ag__jit_release; when FAILED, *reason (may be NULL) receives why, with the NVRTC log of a
 * compile error, valid likewise. Any thread; never blocks (a short lock, never held by the worker
 * while it compiles). */
int ag__jit_poll(ag_jit_t *h, const void **image, size_t *size, const char **reason);

/* The kind of a READY image (enum ag_jit_kind), -AG_EBUSY before. */
int ag__jit_kind(ag_jit_t *h);

/* Loads a READY image with the real cuModuleLoadData and finds its kernel with
 * cuModuleGetFunction. Must run on the thread that will launch it, with the context current that
 * it will run in (the engine's thread, when it builds the graph): a module belongs to the
 * context current when it is loaded, and the worker has none. PTX is compiled by the driver
 * here, which takes milliseconds: call it when a replacement is first put in place, not per
 * launch. Returns 0, -AG_EBUSY when not READY, -AG_ENOENT when the driver table lacks the
 * functions, -AG_ECUDA when the driver refused (its code in *cu_err, may be NULL). The module is
 * the caller's (cuModuleUnload through the real table when done). */
int ag__jit_load(ag_jit_t *h, CUmodule *module, CUfunction *function, int *cu_err);

/* Drops the caller's handle. A request still pending is abandoned: the worker drops its result. */
void ag__jit_release(ag_jit_t *h);

/* 0 once the service is known to be off for the process (disabled, NVRTC missing or unusable),
 * else 1 (on, or not yet known: NVRTC is looked for at the first request). */
int ag__jit_available(void);

/* Requests queued or being compiled at most; more are FAILED at once ("queue full"). */
#define AG_JIT_QUEUE 64
/* Nonzero when AG_JIT_QUEUE requests are queued or being compiled: a request now would fail.
 * A caller that asks first can keep its request for later (a short lock). */
int ag__jit_full(void);

/* The disk cache's bound: after each write, the oldest files (by modification time; a hit
 * refreshes it) go until at most this many files and bytes are left. */
#define AG_JIT_CACHE_MAX_FILES 2048
#define AG_JIT_CACHE_MAX_BYTES (256ull << 20)

/* Removes the oldest cache files (*.agjit, by modification time, then name) of `dir` until at
 * most max_files files and max_bytes bytes of them are left, and temporaries (.tmp.*) more than
 * an hour old, which writers that died left behind. Returns how many cache files it removed, or
 * -AG_ENOENT when dir cannot be read. The worker calls it after each write. */
int ag__jit_cache_trim(const char *dir, size_t max_files, uint64_t max_bytes);

#endif
