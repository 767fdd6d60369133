/* kinfo.h — what the engine knows about each kernel: the CUfunction to launch it with, its
 * name and its parameter layout, learned once and cached.
 *
 * A kernel is identified by the handle a launch names (host stub, cudaKernel_t/CUkernel or
 * CUfunction) together with the context it was launched in, because one host stub stands for a
 * different CUfunction on each device. The layout comes from the driver where it can answer
 * (cuFuncGetParamInfo / cuKernelGetParamInfo), otherwise from the kernel's cubin: the image its
 * handle was obtained from through the driver (cuModuleGetFunction, cuLibraryGetKernel…, keyed
 * by module and name), else the fatbin registered for a host stub (src/registry.c). A kernel
 * whose layout cannot be learned, an NCCL kernel and a kernel the deny list names are marked so
 * and never held.
 *
 * Records, layouts and names live only as long as what they came from: unloading a
 * module or library, unregistering a fatbin, destroying or resetting a context forgets every
 * record obtained from it (ag__kinfo_forget and the functions built on it), so that a handle or
 * host stub the process reuses later is learned afresh. An image is read only while the call
 * that passed it is in progress (ag__kinfo_image): the caller may free, rewrite or unmap it
 * right after. Registered fatbins are the one exception, read when first needed: they are part
 * of a loaded object until __cudaUnregisterFatBinary, which forgets them (ag__kinfo_fatbin_gone).
 *
 * Two kinds of state, two locks:
 *   - the kernel cache (ag__kinfo_find / _add / _unload) belongs to the engine and is used under
 *     its lock; a lookup of a known kernel is one probe of a small direct-mapped cache, else one
 *     hash probe, and never allocates;
 *   - images and handle names (ag__kinfo_image … _func_of) have a private leaf lock that is
 *     never held while calling CUDA: their callers are driver wrappers, which may run inside the
 *     runtime while it holds its own locks, or inside the engine's own calls into the runtime.
 * ag__kinfo_learn holds neither lock while it calls the driver.
 */
#ifndef AG_KINFO_H
#define AG_KINFO_H

#include <stddef.h>
#include <stdint.h>

#include "elf.h"

typedef struct ag_kinfo {
  const void *func; /* key: the launch's handle … */
  void *ctx;        /* … and the context */
  int fkind;        /* enum ag_func_kind */
  void *fn;         /* CUfunction to launch it with (NULL when unknown) */
  uint32_t id;      /* small, stable number: the part of structural hashes naming the kernel */
  int reason;       /* 0: may be held; else the fallback (enum ag_fallback) + 1 */
  uint32_t nparams, param_bytes;
  ag_kparam_t *params;
  char *name;       /* device name, or NULL */
  const void *img;  /* the driver-loaded image it came from (for unloading), or NULL */
  const void *fatbin; /* the registered fatbin it was found in (host stubs), or NULL */
  int dev;          /* the device of `ctx` (a device reset forgets it), or -1 when unknown */
  /* The engine's cache of the last launch's block and shared memory (what its structural hash
   * covers besides the kernel; not the grid) and that hash. Engine lock. */
  unsigned shape[4];
  int shape_known;
  uint64_t shape_hash;
  /* What the driver checks of a launch besides its structure, read from the driver when a
   * launch of the kernel is about to be held and again after a setting changed (src/engine.c,
   * launch_rejected). Engine lock. */
  uint32_t lim_gen;       /* the settings generation they were read at; 0: never read */
  uint32_t lim_fail_gen;  /* the generation at which they could not be read (none is held) */
  unsigned smem_max;      /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  unsigned cluster[3];    /* the cluster dimensions the kernel requires (0: none) */
  int cluster_req;        /* one of them is set */
  unsigned coop_key[2];   /* block threads and dynamic shared memory … */
  unsigned coop_max;      /* … and the most blocks a cooperative launch may have with them */
} ag_kinfo_t;

/* The direct-mapped front of the kernel cache, probed inline on every launch (engine lock). */
#define AG_KCACHE 256 /* power of two */
typedef struct ag_kslot {
  const void *func;
  void *ctx;
  ag_kinfo_t *k;
} ag_kslot_t;
extern __attribute__((visibility("hidden"))) ag_kslot_t ag__kcache[AG_KCACHE];

static inline unsigned ag__kslot(const void *func, void *ctx) {
  uintptr_t p = (uintptr_t)func ^ ((uintptr_t)ctx >> 4);
  return (unsigned)((p >> 4) ^ (p >> 12)) & (AG_KCACHE - 1);
}

/* ag__kinfo_find past a miss of the direct-mapped cache: one hash probe, which refills the slot
 * on a hit. */
ag_kinfo_t *ag__kinfo_find_slow(const void *func, void *ctx);

/* The cached record for (func, ctx), or NULL. Engine lock held. */
static inline ag_kinfo_t *ag__kinfo_find(const void *func, void *ctx) {
  const ag_kslot_t *s = &ag__kcache[ag__kslot(func, ctx)];
  if (__builtin_expect(s->func == func && s->ctx == ctx && s->k != NULL, 1)) return s->k;
  return ag__kinfo_find_slow(func, ctx);
}

/* Learns (func, ctx) from the driver and the known images; the record is not cached yet.
 * Called without the engine lock (it calls the driver and the runtime, whose own calls pass
 * through the wrappers quietly). Returns NULL only when memory ran out. */
ag_kinfo_t *ag__kinfo_learn(const void *func, int fkind, void *ctx);

/* Caches a record from ag__kinfo_learn and returns it, or, when another thread cached the same
 * kernel meanwhile, frees it and returns that one. Engine lock held. */
ag_kinfo_t *ag__kinfo_add(ag_kinfo_t *k);

/* Frees a record from ag__kinfo_learn that was never cached. */
void ag__kinfo_free(ag_kinfo_t *k);

/* An image loaded through the driver under handle `mod` (CUmodule or CUlibrary). Its layouts
 * are read now, whatever memory holds it: the caller may free it, rewrite it (a JIT reusing one
 * buffer) or unmap it (dlclose) once the load has returned, and the driver keeps its own copy.
 * Once the driver has described a kernel's parameters (it is 12.4 or later) images are no
 * longer read: the driver will describe theirs. `size` is the number of readable bytes, or 0
 * when unknown. Returns 0 or -AG_E… (the image is then remembered as one without layouts). */
int ag__kinfo_image(const void *mod, const void *image, size_t size);

/* As ag__kinfo_image for an image file (cuModuleLoad, cuLibraryLoadFromFile): read now. */
int ag__kinfo_image_file(const void *mod, const char *path);

/* `alias` (the CUmodule of a CUlibrary, cuLibraryGetModule) names the image of `mod`. */
void ag__kinfo_image_alias(const void *alias, const void *mod);

/* Handle `func` (a CUkernel when is_kernel, else a CUfunction) was obtained for `name` from the
 * image loaded as `mod`. */
void ag__kinfo_name(const void *func, int is_kernel, const void *mod, const char *name);

/* `func` is the CUfunction of CUkernel `kernel` (cuKernelGetFunction): same name and image. */
void ag__kinfo_func_of(const void *func, const void *kernel);

/* Which cached kernels ag__kinfo_forget forgets. */
typedef struct ag_kforget {
  const void *img;    /* obtained from this image (ag_kinfo_t.img), or */
  const void *fatbin; /* found in this registered fatbin, or */
  void *ctx;          /* learned in this context, or */
  int dev;            /* learned in a context of this device (>= 0), or */
  int all;            /* every one */
} ag_kforget_t;

/* Forgets (frees) every cached kernel `what` names, and stores their ids, sorted ascending, in a
 * malloc'd array at *ids (NULL when none, or when out of memory: then *ids_lost is set and the
 * caller must forget every sequence). Engine lock held; nothing held by the engine may refer to
 * those kernels. Their ids are never reused. Returns the number forgotten. */
size_t ag__kinfo_forget(const ag_kforget_t *what, uint32_t **ids, int *ids_lost);

/* The image loaded as `mod` was unloaded: forgets its layouts and handle names, then, as
 * ag__kinfo_forget, every cached kernel obtained from it (a later module may reuse the
 * handles). Engine lock held. Returns the number of kernels forgotten. */
size_t ag__kinfo_unload(const void *mod, uint32_t **ids, int *ids_lost);

/* The registered fatbin `fatbin` (the pointer __cudaRegisterFatBinary was given) was
 * unregistered: forgets its layouts, then, as ag__kinfo_forget, every cached kernel found in it
 * (its host stubs may come back at the same addresses in another object). Engine lock held. */
size_t ag__kinfo_fatbin_gone(const void *fatbin, uint32_t **ids, int *ids_lost);

/* Behaves as if the driver had described a kernel's parameters (benchmarks and tests). */
void ag__kinfo_driver_describes(void);

/* Number of images whose layouts are kept (module images and registered fatbins; for tests). */
size_t ag__kinfo_images(void);

/* Nonzero when `name` is an NCCL kernel (never held: its progress depends on other ranks). */
int ag__kinfo_is_nccl(const char *name);

/* Forgets everything (fork child). */
void ag__kinfo_reset(void);

#endif
