/* kinfo.c — the kernel cache (see kinfo.h).
 *
 * Three uthash tables, all under the engine lock: kernels by (handle, context); layouts read
 * from images the program loaded through the driver, by kernel name; and names of driver
 * handles (cuModuleGetFunction / cuLibraryGetKernel results). Images are parsed when loaded,
 * since the program may free its buffer afterwards; registered fatbins stay mapped for the life
 * of the program, so they are parsed only when one of their kernels is first launched.
 */
#include "kinfo.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "config.h"
#include "engine.h"
#include "log.h"
#include "real.h"
#include "registry.h"
#include "stats.h"

typedef struct kkey {
  const void *func;
  void *ctx;
} kkey_t;

typedef struct kent {
  kkey_t key;
  ag_kinfo_t k;
  UT_hash_handle hh;
} kent_t;

typedef struct layout {
  char *name; /* key */
  uint32_t nparams, param_bytes;
  ag_kparam_t *params;
  UT_hash_handle hh;
} layout_t;

typedef struct hname {
  const void *func; /* key */
  char *name;
  UT_hash_handle hh;
} hname_t;

static kent_t *kernels;
static layout_t *layouts;
static hname_t *hnames;
static uint32_t next_id = 1;

int ag__kinfo_is_nccl(const char *name) {
  /* NCCL's device kernels are ncclKernel_* (up to 2.18) and ncclDevKernel_* (2.19 and later);
   * every one carries "nccl" in its (possibly mangled) name. */
  return name && strstr(name, "nccl") != NULL;
}

/* ---- layouts from images ----------------------------------------------------------------- */

static int keep_layout(const ag_kernel_desc_t *d, void *ctx) {
  layout_t *l;
  (void)ctx;
  HASH_FIND_STR(layouts, d->name, l);
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
  HASH_ADD_KEYPTR(hh, layouts, l->name, strlen(l->name), l);
  return 0;
}

int ag__kinfo_image(const void *image) {
  ag_image_err_t err;
  int r = ag__image_kernels(image, 0, keep_layout, NULL, &err);
  if (r < 0) ag__log(AG_LOG_DEBUG, "image %p: no layouts (%s)", image, err.msg);
  return r < 0 ? r : 0;
}

void ag__kinfo_name(const void *func, const char *name) {
  hname_t *h;
  if (!func || !name) return;
  HASH_FIND_PTR(hnames, &func, h);
  if (h) return;
  if (!(h = malloc(sizeof *h))) return;
  h->func = func;
  if (!(h->name = strdup(name))) {
    free(h);
    return;
  }
  HASH_ADD_PTR(hnames, func, h);
}

/* Layout of `name` in a registered fatbin: parsed on demand into the same table. */
typedef struct find_ctx {
  const char *name;
  int found;
} find_ctx_t;

static int keep_if_named(const ag_kernel_desc_t *d, void *ctx) {
  find_ctx_t *f = ctx;
  int r = keep_layout(d, NULL);
  if (r) return r;
  if (!strcmp(d->name, f->name)) f->found = 1;
  return 0;
}

static layout_t *layout_from_fatbin(const char *name, const void *fatbin) {
  layout_t *l;
  find_ctx_t f = {name, 0};
  HASH_FIND_STR(layouts, name, l);
  if (l || !fatbin) return l;
  ag_image_err_t err;
  int r = ag__image_kernels(fatbin, 0, keep_if_named, &f, &err);
  if (r < 0) ag__log(AG_LOG_DEBUG, "fatbin %p: %s (error %d)", fatbin, err.msg, r);
  HASH_FIND_STR(layouts, name, l);
  return l;
}

/* ---- learning one kernel ----------------------------------------------------------------- */

/* Reads the layout from the driver; returns 0, or -AG_ENOENT when the driver cannot say. */
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
    /* Past the last parameter the driver answers CUDA_ERROR_INVALID_VALUE. For the first one
     * that is ambiguous (no parameters, or a driver that cannot describe this handle and says
     * so the same way), so a kernel without parameters is learned from its cubin instead. */
    if (r == CUDA_ERROR_INVALID_VALUE && n > 0) break;
    if (r != CUDA_SUCCESS || n == AG_ARRAY_SIZE(p)) return -AG_ENOENT;
    p[n].offset = (uint32_t)off, p[n].size = (uint32_t)size;
    if (off + size > bytes) bytes = (uint32_t)(off + size);
    n++;
  }
  if (n && !(k->params = malloc(n * sizeof *k->params))) return -AG_ENOMEM;
  if (n) memcpy(k->params, p, n * sizeof *p);
  k->nparams = n, k->param_bytes = bytes;
  return 0;
}

static void learn(ag_kinfo_t *k) {
  const char *name = NULL;
  const void *fatbin = NULL;
  char regname[512];
  int have_layout = 0;

  /* The CUfunction to launch with. */
  if (k->fkind == AG_FN_STUB) {
    void *fn = NULL;
    if (ag__real.cudaGetFuncBySymbol && ag__real.cudaGetFuncBySymbol(&fn, k->func) == 0) k->fn = fn;
  } else if (k->fkind == AG_FN_KERNEL) {
    CUfunction fn = NULL;
    if (ag__real.cuKernelGetFunction && ag__real.cuKernelGetFunction(&fn, (CUkernel)k->func) == 0)
      k->fn = fn;
  } else {
    k->fn = (void *)k->func;
  }

  /* The name: the driver's, else what registration or module lookup said. */
  if (k->fn && ag__real.cuFuncGetName && ag__real.cuFuncGetName(&name, (CUfunction)k->fn) != 0)
    name = NULL;
  if (k->fkind == AG_FN_STUB &&
      ag__registry_lookup(k->func, regname, sizeof regname, &fatbin) == 0 && !name)
    name = regname;
  if (!name) {
    hname_t *h;
    HASH_FIND_PTR(hnames, &k->func, h);
    if (h) name = h->name;
  }
  if (name) k->name = strdup(name);

  /* The layout: the driver, else the cubin. */
  if (k->fn && layout_from_driver(k, 0) == 0) have_layout = 1;
  if (!have_layout && k->fkind != AG_FN_STUB && layout_from_driver(k, 1) == 0) {
    /* A CUkernel handed to cuLaunchKernel as a CUfunction: launch it through its function. */
    CUfunction fn = NULL;
    have_layout = 1;
    if (k->fkind == AG_FN_FUNCTION && ag__real.cuKernelGetFunction &&
        ag__real.cuKernelGetFunction(&fn, (CUkernel)k->func) == 0)
      k->fn = fn;
  }
  if (!have_layout && k->name) {
    if (!fatbin) (void)ag__registry_fatbin_of(k->name, &fatbin);
    layout_t *l = layout_from_fatbin(k->name, fatbin);
    if (l && (!l->nparams || (k->params = malloc(l->nparams * sizeof *k->params)))) {
      if (l->nparams) memcpy(k->params, l->params, l->nparams * sizeof *k->params);
      k->nparams = l->nparams, k->param_bytes = l->param_bytes;
      have_layout = 1;
    }
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

ag_kinfo_t *ag__kinfo_get(const void *func, int fkind, void *ctx) {
  kkey_t key;
  kent_t *e;
  memset(&key, 0, sizeof key);
  key.func = func, key.ctx = ctx;
  HASH_FIND(hh, kernels, &key, sizeof key, e);
  if (AG_LIKELY(e)) return &e->k;
  if (!(e = calloc(1, sizeof *e))) return NULL;
  e->key = key;
  e->k.func = func, e->k.ctx = ctx, e->k.fkind = fkind, e->k.id = next_id++;
  learn(&e->k);
  HASH_ADD(hh, kernels, key, sizeof key, e);
  return &e->k;
}

void ag__kinfo_reset(void) {
  /* In a forked child: the parent's handles mean nothing here. Leak rather than free: another
   * thread of the parent may have been in the middle of changing these tables. */
  kernels = NULL, layouts = NULL, hnames = NULL;
}
