/* kinfo.c — the kernel cache and the layouts of loaded images (see kinfo.h).
 *
 * Kernels: a uthash table by (handle, context), fronted by a small direct-mapped cache so that
 * the launch path usually finds its kernel with one compare. Both belong to the engine's lock.
 *
 * Images: every image the program (or the runtime on its behalf) loads through the driver is an
 * img_t reached from each handle that names it (the CUmodule or CUlibrary, and the CUmodule
 * cuLibraryGetModule gives for a library), holding the layouts of its kernels by name; each
 * function or kernel handle obtained by name from it points back to it (fname_t). Layouts are
 * keyed by (image, name), never by name alone: two modules may hold different kernels of the
 * same name (JIT compilers reuse names). An image loaded through the driver is read while the
 * load is in progress, wherever it lies: the program may free its buffer, write the next image
 * into it, or dlclose the object that held it once the load has returned (the cost is measured
 * on libcuBLASLt in docs/module-lifetimes.md). Fatbins registered with the runtime
 * (__cudaRegisterFatBinary) are keyed by their address and read when one of their kernels first
 * needs a layout: they lie in the read-only data of a loaded object until
 * __cudaUnregisterFatBinary, which forgets them. All of this is under `img_lock`, a leaf lock:
 * nothing here calls CUDA.
 */
#define _GNU_SOURCE
#include "kinfo.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "config.h"
#include "engine.h"
#include "log.h"
#include "real.h"
#include "registry.h"
#include "stats.h"

/* ---- kernels (engine lock) --------------------------------------------------------------- */

typedef struct kkey {
  const void *func;
  void *ctx;
} kkey_t;

typedef struct kent {
  kkey_t key;
  ag_kinfo_t k;
  UT_hash_handle hh;
} kent_t;

ag_kslot_t ag__kcache[AG_KCACHE];

static kent_t *kernels;
static uint32_t next_id = 1; /* atomic: records are numbered outside the engine lock */

/* ---- images (img_lock) ------------------------------------------------------------------- */

typedef struct layout {
  char *name; /* key */
  uint32_t nparams, param_bytes;
  ag_kparam_t *params;
  UT_hash_handle hh;
} layout_t;

typedef struct img {
  const void *pending; /* a registered fatbin still to be read, or NULL */
  int failed;          /* reading it failed: it has no layouts */
  layout_t *layouts;
} img_t;

typedef struct handle {
  const void *h; /* key: CUmodule, CUlibrary, or a registered fatbin's address */
  img_t *img;
  int owner;     /* the loading handle (unloading it frees the image), not an alias */
  UT_hash_handle hh;
} handle_t;

typedef struct fname {
  const void *func; /* key: CUfunction or CUkernel */
  img_t *img;
  int is_kernel;
  char *name;
  UT_hash_handle hh;
} fname_t;

/* Set once the driver has described a parameter of some kernel (atomic): it then implements
 * the parameter queries, CUDA_ERROR_INVALID_VALUE for parameter 0 means "no parameters", and
 * images loaded from then on need not be read (see ag__kinfo_image). Before that the same
 * answer may come from a driver that fails every query that way. */
static int driver_describes;

static pthread_mutex_t img_lock = PTHREAD_MUTEX_INITIALIZER;
static handle_t *mods, *fatbins;
static fname_t *fnames;

int ag__kinfo_is_nccl(const char *name) {
  /* NCCL's device kernels are ncclKernel_* (up to 2.18) and ncclDevKernel_* (2.19 and later);
   * every one carries "nccl" in its (possibly mangled) name. */
  return name && strstr(name, "nccl") != NULL;
}

static int keep_layout(const ag_kernel_desc_t *d, void *ctx) {
  img_t *img = ctx;
  layout_t *l;
  HASH_FIND_STR(img->layouts, d->name, l);
  if (l) return 0; /* same kernel in another cubin of the image: the layout is the same */
  if (!(l = calloc(1, sizeof *l))) return -AG_ENOMEM;
  l->name = strdup(d->name);
  l->params = d->nparams ? malloc(d->nparams * sizeof *l->params) : NULL;
  if (!l->name || (d->nparams && !l->params)) {
    free(l->name), free(l->params), free(l);
    return -AG_ENOMEM;
  }
  if (d->nparams) memcpy(l->params, d->params, d->nparams * sizeof *l->params);
  l->nparams = d->nparams;
  l->param_bytes = d->param_bytes;
  HASH_ADD_KEYPTR(hh, img->layouts, l->name, strlen(l->name), l);
  return 0;
}

/* Reads the image's layouts into `img`, which no other thread can reach yet or which img_lock
 * protects. A failed read keeps what it found so far. */
static int img_read(img_t *img, const void *image, size_t size) {
  ag_image_err_t err;
  int r = ag__image_kernels(image, size, keep_layout, img, &err);
  if (r < 0) {
    img->failed = 1;
    /* A missing library (zstd) is the machine's, not the image's: said once, as a warning,
     * since every launch of such images then passes through. */
    static int warned;
    if (r == -AG_ELIB && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      ag__log(AG_LOG_WARN, "kernels of compressed images unknown, their launches pass through: %s",
              err.msg);
    else
      ag__log(AG_LOG_DEBUG, "image %p: no layouts (%s)", image, err.msg);
  }
  return r < 0 ? r : 0;
}

/* The NOLINTs on HASH_DEL in this file: inside HASH_ITER, uthash's deletion-safe loop, the Clang
 * analyser loses the hash list's invariants and reports a use after free (a false positive). */
static void img_free(img_t *img) {
  layout_t *l, *tmp;
  if (!img) return;
  HASH_ITER(hh, img->layouts, l, tmp) {
    HASH_DEL(img->layouts, l); // NOLINT(clang-analyzer-unix.Malloc)
    free(l->name), free(l->params), free(l);
  }
  free(img);
}

/* The layout of `name` in `img`, reading a pending image first (img_lock held). */
static const layout_t *img_layout(img_t *img, const char *name) {
  layout_t *l;
  if (img->pending) {
    const void *p = img->pending;
    img->pending = NULL;
    (void)img_read(img, p, 0);
  }
  HASH_FIND_STR(img->layouts, name, l);
  return l;
}

static handle_t *handle_add(handle_t **tab, const void *h, img_t *img, int owner) {
  handle_t *e;
  HASH_FIND_PTR(*tab, &h, e);
  if (e) { /* a handle the driver reuses after an unload we did not see: the new image wins */
    if (e->owner && e->img != img) {
      /* Names still pointing at the old image would find no layouts; forget them too. */
      fname_t *f, *tmp;
      HASH_ITER(hh, fnames, f, tmp) if (f->img == e->img) {
        HASH_DEL(fnames, f); // NOLINT(clang-analyzer-unix.Malloc)
        free(f->name), free(f);
      }
      img_free(e->img);
    }
    e->img = img, e->owner = owner;
    return e;
  }
  if (!(e = calloc(1, sizeof *e))) return NULL;
  e->h = h, e->img = img, e->owner = owner;
  HASH_ADD_PTR(*tab, h, e);
  return e;
}

int ag__kinfo_image(const void *mod, const void *image, size_t size) {
  img_t *img;
  int r = 0;
  if (!mod || !image) return -AG_EINVAL;
  if (!(img = calloc(1, sizeof *img))) return -AG_ENOMEM;
  /* Read now, without the lock: the image is the caller's only until the load returns. Not at
   * all once the driver has shown that it describes parameters (12.4 and later): its kernels'
   * layouts will come from the driver, and reading a large image costs up to a tenth of a
   * second (docs/module-lifetimes.md). A kernel the driver then fails to describe has no
   * layout and is never held: slower, never wrong. */
  if (!__atomic_load_n(&driver_describes, __ATOMIC_RELAXED)) r = img_read(img, image, size);
  pthread_mutex_lock(&img_lock);
  if (!handle_add(&mods, mod, img, 1)) {
    img_free(img);
    r = -AG_ENOMEM;
  }
  pthread_mutex_unlock(&img_lock);
  return r;
}

int ag__kinfo_image_file(const void *mod, const char *path) {
  struct stat st;
  void *map = MAP_FAILED;
  int fd, r;
  if (!mod || !path || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return -AG_ENOENT;
  if (fstat(fd, &st) == 0 && st.st_size > 0)
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -AG_ENOENT;
  /* Read now: the file may change or go away once loaded. */
  r = ag__kinfo_image(mod, map, (size_t)st.st_size);
  munmap(map, (size_t)st.st_size);
  return r;
}

void ag__kinfo_image_alias(const void *alias, const void *mod) {
  handle_t *e;
  if (!alias || !mod || alias == mod) return;
  pthread_mutex_lock(&img_lock);
  HASH_FIND_PTR(mods, &mod, e);
  if (e) (void)handle_add(&mods, alias, e->img, 0);
  pthread_mutex_unlock(&img_lock);
}

static void name_add(const void *func, int is_kernel, img_t *img, const char *name) {
  fname_t *f;
  HASH_FIND_PTR(fnames, &func, f);
  if (f) { /* the driver hands out the same handle again (or reuses a freed one) */
    if (f->img == img && !strcmp(f->name, name)) {
      f->is_kernel |= is_kernel;
      return;
    }
    HASH_DEL(fnames, f);
    free(f->name), free(f);
  }
  if (!(f = calloc(1, sizeof *f))) return;
  if (!(f->name = strdup(name))) {
    free(f);
    return;
  }
  f->func = func, f->img = img, f->is_kernel = is_kernel;
  HASH_ADD_PTR(fnames, func, f);
}

void ag__kinfo_name(const void *func, int is_kernel, const void *mod, const char *name) {
  handle_t *e;
  if (!func || !name) return;
  pthread_mutex_lock(&img_lock);
  HASH_FIND_PTR(mods, &mod, e);
  name_add(func, is_kernel, e ? e->img : NULL, name);
  pthread_mutex_unlock(&img_lock);
}

void ag__kinfo_func_of(const void *func, const void *kernel) {
  fname_t *k;
  if (!func || !kernel || func == kernel) return;
  pthread_mutex_lock(&img_lock);
  HASH_FIND_PTR(fnames, &kernel, k);
  if (k) name_add(func, 0, k->img, k->name);
  pthread_mutex_unlock(&img_lock);
}

/* The image of a registered fatbin, read lazily (img_lock held). */
static img_t *fatbin_img(const void *fatbin) {
  handle_t *e;
  img_t *img;
  HASH_FIND_PTR(fatbins, &fatbin, e);
  if (e) return e->img;
  if (!(img = calloc(1, sizeof *img))) return NULL;
  img->pending = fatbin; /* registered fatbins stay mapped for the life of the program */
  if (!handle_add(&fatbins, fatbin, img, 1)) {
    free(img);
    return NULL;
  }
  return img;
}

/* ---- learning one kernel ----------------------------------------------------------------- */

/* Reads the layout from the driver; returns 0, -AG_ENOENT when the driver cannot say, or 1 when
 * it says the kernel has no parameters (the layout is then empty). */
static int layout_from_driver(ag_kinfo_t *k, int as_kernel) {
  ag_kparam_t p[256];
  uint32_t n = 0, bytes = 0;
  for (;;) {
    size_t off = 0, size = 0;
    CUresult r;
    if (as_kernel)
      r = ag__real.cuKernelGetParamInfo ? ag__real.cuKernelGetParamInfo((CUkernel)k->func, n, &off, &size)
                                        : CUDA_ERROR_NOT_SUPPORTED;
    else
      r = ag__real.cuFuncGetParamInfo ? ag__real.cuFuncGetParamInfo((CUfunction)k->fn, n, &off, &size)
                                      : CUDA_ERROR_NOT_SUPPORTED;
    /* Past the last parameter the driver answers CUDA_ERROR_INVALID_VALUE; at the first one
     * that means the kernel has none, once the driver has shown that it answers
     * these queries at all. The caller still prefers an image that lists parameters for it. */
    if (r == CUDA_ERROR_INVALID_VALUE) {
      if (n > 0) break;
      if (!__atomic_load_n(&driver_describes, __ATOMIC_RELAXED)) return -AG_ENOENT;
      k->nparams = 0, k->param_bytes = 0;
      return 1;
    }
    if (r != CUDA_SUCCESS || n == AG_ARRAY_SIZE(p)) return -AG_ENOENT;
    __atomic_store_n(&driver_describes, 1, __ATOMIC_RELAXED);
    p[n].offset = (uint32_t)off, p[n].size = (uint32_t)size;
    if (off + size > bytes) bytes = (uint32_t)(off + size);
    n++;
  }
  if (n && !(k->params = malloc(n * sizeof *k->params))) return -AG_ENOMEM;
  if (n) memcpy(k->params, p, n * sizeof *p);
  k->nparams = n, k->param_bytes = bytes;
  return 0;
}

/* Copies a layout found in an image (img_lock held). */
static int layout_copy(ag_kinfo_t *k, const layout_t *l) {
  if (!l || (l->nparams && !(k->params = malloc(l->nparams * sizeof *k->params)))) return -AG_ENOENT;
  if (l->nparams) memcpy(k->params, l->params, l->nparams * sizeof *k->params);
  k->nparams = l->nparams, k->param_bytes = l->param_bytes;
  return 0;
}

static void learn(ag_kinfo_t *k) {
  char name[512] = "";
  const void *fatbin = NULL;
  img_t *img = NULL;
  int is_kernel = k->fkind == AG_FN_KERNEL, have_layout = 0;

  /* What the module lookups said about a driver handle: its name and image. */
  if (k->fkind != AG_FN_STUB) {
    fname_t *f;
    pthread_mutex_lock(&img_lock);
    HASH_FIND_PTR(fnames, &k->func, f);
    if (f) {
      snprintf(name, sizeof name, "%s", f->name);
      img = f->img;
      is_kernel |= f->is_kernel;
    }
    pthread_mutex_unlock(&img_lock);
  }

  /* The CUfunction to launch with. A CUkernel handed to cuLaunchKernel as a CUfunction is
   * launched through its function, which is what graph nodes take. */
  if (k->fkind == AG_FN_STUB) {
    void *fn = NULL;
    if (ag__real.cudaGetFuncBySymbol && ag__real.cudaGetFuncBySymbol(&fn, k->func) == 0) k->fn = fn;
  } else if (is_kernel) {
    CUfunction fn = NULL;
    if (ag__real.cuKernelGetFunction && ag__real.cuKernelGetFunction(&fn, (CUkernel)k->func) == 0)
      k->fn = fn;
    else if (k->fkind == AG_FN_FUNCTION)
      k->fn = (void *)k->func;
  } else {
    k->fn = (void *)k->func;
  }

  /* The name: what a module lookup said, else the driver's, else the registration's. */
  if (!name[0] && k->fn) {
    const char *n = NULL;
    if (ag__real.cuFuncGetName && ag__real.cuFuncGetName(&n, (CUfunction)k->fn) == 0 && n)
      snprintf(name, sizeof name, "%s", n);
  }
  if (k->fkind == AG_FN_STUB) {
    char regname[512];
    if (ag__registry_lookup(k->func, regname, sizeof regname, &fatbin) == 0 && !name[0])
      snprintf(name, sizeof name, "%s", regname);
  }
  if (name[0]) k->name = strdup(name);

  /* The layout: the driver, else the image the handle came from, else the registered fatbin. A
   * driver that says "no parameters" is believed unless an image lists some. */
  int empty = 0, dr = k->fn ? layout_from_driver(k, 0) : -AG_ENOENT;
  if (dr == 0) have_layout = 1;
  if (dr == 1) empty = 1;
  if (!have_layout && k->fkind != AG_FN_STUB && (dr = layout_from_driver(k, 1)) >= 0) {
    CUfunction fn = NULL;
    have_layout = dr == 0;
    if (dr == 1) empty = 1;
    if (!is_kernel && k->fkind == AG_FN_FUNCTION && ag__real.cuKernelGetFunction &&
        ag__real.cuKernelGetFunction(&fn, (CUkernel)k->func) == 0)
      k->fn = fn;
  }
  if (!have_layout && name[0]) {
    CUmodule mod = NULL;
    /* A function found without a module lookup (enumerated, or from the runtime): ask the
     * driver which module it belongs to. */
    if (!img && !fatbin && k->fn && ag__real.cuFuncGetModule &&
        ag__real.cuFuncGetModule(&mod, (CUfunction)k->fn) != CUDA_SUCCESS)
      mod = NULL;
    pthread_mutex_lock(&img_lock);
    if (!img && mod) {
      handle_t *e;
      HASH_FIND_PTR(mods, &mod, e);
      if (e) img = e->img;
    }
    if (img) {
      have_layout = layout_copy(k, img_layout(img, name)) == 0;
    } else {
      if (!fatbin) (void)ag__registry_fatbin_of(name, &fatbin);
      img_t *fb = fatbin ? fatbin_img(fatbin) : NULL;
      if (fb) have_layout = layout_copy(k, img_layout(fb, name)) == 0;
    }
    pthread_mutex_unlock(&img_lock);
  }
  if (!have_layout && empty) {
    k->nparams = 0, k->param_bytes = 0;
    have_layout = 1;
  }
  /* Even when the driver gave the layout: unloading the image, unregistering the fatbin or
   * resetting the device forgets the record. */
  k->img = img;
  k->fatbin = fatbin;
  k->dev = -1;
  {
    CUdevice dev;
    if (ag__real.cuCtxGetDevice && ag__real.cuCtxGetDevice(&dev) == CUDA_SUCCESS) k->dev = (int)dev;
  }

  if (!k->fn || !have_layout || k->nparams > 256)
    k->reason = AG_FB_LAYOUT_UNKNOWN + 1;
  else if (ag__kinfo_is_nccl(k->name) || ag__config_denied(ag__config.deny, k->name))
    k->reason = AG_FB_DENIED + 1;
  ag__log(AG_LOG_DEBUG, "kernel %s: %u parameters, %u bytes%s", k->name ? k->name : "(unnamed)",
          k->nparams, k->param_bytes,
          k->reason == AG_FB_LAYOUT_UNKNOWN + 1 ? ", layout unknown"
          : k->reason == AG_FB_DENIED + 1       ? ", denied"
                                                : "");
}

ag_kinfo_t *ag__kinfo_find_slow(const void *func, void *ctx) {
  ag_kslot_t *s = &ag__kcache[ag__kslot(func, ctx)];
  kkey_t key;
  kent_t *e;
  memset(&key, 0, sizeof key);
  key.func = func, key.ctx = ctx;
  HASH_FIND(hh, kernels, &key, sizeof key, e);
  if (!e) return NULL;
  s->func = func, s->ctx = ctx, s->k = &e->k;
  return &e->k;
}

ag_kinfo_t *ag__kinfo_learn(const void *func, int fkind, void *ctx) {
  kent_t *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->key.func = func, e->key.ctx = ctx;
  e->k.func = func, e->k.ctx = ctx, e->k.fkind = fkind;
  e->k.id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
  learn(&e->k);
  return &e->k;
}

static kent_t *kent_of(ag_kinfo_t *k) { return (kent_t *)((char *)k - offsetof(kent_t, k)); }

void ag__kinfo_free(ag_kinfo_t *k) {
  if (!k) return;
  free(k->params), free(k->name), free(kent_of(k));
}

ag_kinfo_t *ag__kinfo_add(ag_kinfo_t *k) {
  kent_t *e = kent_of(k);
  ag_kinfo_t *have = ag__kinfo_find(k->func, k->ctx);
  if (have) {
    ag__kinfo_free(k);
    return have;
  }
  HASH_ADD(hh, kernels, key, sizeof e->key, e);
  return k;
}

static int forgets(const ag_kforget_t *w, const ag_kinfo_t *k) {
  if (w->all) return 1;
  if (w->img && k->img == w->img) return 1;
  if (w->fatbin && k->fatbin == w->fatbin) return 1;
  if (w->ctx && k->ctx == w->ctx) return 1;
  /* A record whose device is unknown may belong to the device being reset. */
  return w->dev >= 0 && (k->dev == w->dev || k->dev < 0);
}

static int cmp_id(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

size_t ag__kinfo_forget(const ag_kforget_t *what, uint32_t **ids, int *ids_lost) {
  kent_t *e, *etmp;
  size_t n = 0, cap = 0;
  uint32_t *v = NULL;
  *ids = NULL, *ids_lost = 0;
  HASH_ITER(hh, kernels, e, etmp) {
    if (!forgets(what, &e->k)) continue;
    if (n == cap && !*ids_lost) {
      uint32_t *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
      if (!nv) {
        free(v), v = NULL;
        *ids_lost = 1;
      } else {
        v = nv;
      }
    }
    if (v) v[n] = e->k.id;
    HASH_DEL(kernels, e); // NOLINT(clang-analyzer-unix.Malloc)
    ag__kinfo_free(&e->k);
    n++;
  }
  if (n) memset(ag__kcache, 0, sizeof ag__kcache);
  if (v) qsort(v, n, sizeof *v, cmp_id);
  *ids = v;
  return n;
}

size_t ag__kinfo_unload(const void *mod, uint32_t **ids, int *ids_lost) {
  handle_t *h, *htmp;
  fname_t *f, *ftmp;
  img_t *img;
  ag_kforget_t what = {0};
  *ids = NULL, *ids_lost = 0;
  if (!mod) return 0;
  pthread_mutex_lock(&img_lock);
  HASH_FIND_PTR(mods, &mod, h);
  if (!h) {
    pthread_mutex_unlock(&img_lock);
    return 0;
  }
  img = h->img;
  if (!h->owner) { /* an alias: the library still holds the image */
    HASH_DEL(mods, h);
    free(h);
    pthread_mutex_unlock(&img_lock);
    return 0;
  }
  HASH_ITER(hh, mods, h, htmp) if (h->img == img) {
    HASH_DEL(mods, h); // NOLINT(clang-analyzer-unix.Malloc)
    free(h);
  }
  HASH_ITER(hh, fnames, f, ftmp) if (f->img == img) {
    HASH_DEL(fnames, f); // NOLINT(clang-analyzer-unix.Malloc)
    free(f->name), free(f);
  }
  img_free(img);
  pthread_mutex_unlock(&img_lock);
  /* Kernels obtained from it: their handles may come back for other kernels. The pointer is
   * only compared, never followed, from here on. */
  what.img = img, what.dev = -1;
  return ag__kinfo_forget(&what, ids, ids_lost);
}

size_t ag__kinfo_fatbin_gone(const void *fatbin, uint32_t **ids, int *ids_lost) {
  handle_t *h;
  ag_kforget_t what = {0};
  *ids = NULL, *ids_lost = 0;
  if (!fatbin) return 0;
  pthread_mutex_lock(&img_lock);
  HASH_FIND_PTR(fatbins, &fatbin, h);
  if (h) {
    HASH_DEL(fatbins, h);
    img_free(h->img);
    free(h);
  }
  pthread_mutex_unlock(&img_lock);
  what.fatbin = fatbin, what.dev = -1;
  return ag__kinfo_forget(&what, ids, ids_lost);
}

void ag__kinfo_driver_describes(void) { __atomic_store_n(&driver_describes, 1, __ATOMIC_RELAXED); }

size_t ag__kinfo_images(void) {
  size_t n;
  pthread_mutex_lock(&img_lock);
  n = HASH_COUNT(mods) + HASH_COUNT(fatbins);
  pthread_mutex_unlock(&img_lock);
  return n;
}

/* Tables given up in a forked child (volatile: stores that are never read must still happen). */
static void *volatile forsaken[4];

void ag__kinfo_reset(void) {
  /* In a forked child: the parent's handles mean nothing here. Leak rather than free: another
   * thread of the parent may have been in the middle of changing these tables. They stay
   * pointed to, so that a leak checker sees them kept on purpose rather than lost. */
  forsaken[0] = kernels, forsaken[1] = mods, forsaken[2] = fatbins, forsaken[3] = fnames;
  kernels = NULL, mods = NULL, fatbins = NULL, fnames = NULL;
  memset(ag__kcache, 0, sizeof ag__kcache);
  pthread_mutex_init(&img_lock, NULL);
}
