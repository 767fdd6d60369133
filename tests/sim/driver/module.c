/* module.c — modules, libraries, kernels and launches.
 *
 * Images (cubin, fatbin container, fatbin wrapper; zstd-compressed entries included) are read
 * with the library's parser, ag__image_kernels(); PTX text with ptx.c, which reads the entries'
 * parameter lists (a real driver compiles PTX at load time). An image loads as a real driver
 * loads it (select_entry): the cubin of the highest architecture the device runs (same major
 * version, minor not above the device's), else the PTX of the highest architecture not above
 * the device's whose ISA version the driver knows, else nothing, with
 * CUDA_ERROR_NO_BINARY_FOR_GPU (CUDA_ERROR_UNSUPPORTED_PTX_VERSION when only the PTX's version
 * stood in the way). A function is one kernel name of the chosen entry, with its parameter
 * layout. The simulated device runs every kernel that has a CPU twin, whatever the entry's
 * code: what the choice decides is whether the image loads at all. CUmodule and CUlibrary
 * are the same object, and so are CUfunction and CUkernel: the real driver accepts a CUkernel
 * wherever a CUfunction is expected, and the runtime relies on it.
 *
 * Modules (cuModuleLoad*) belong to the context: destroying it (primary-context reset, last
 * release) destroys them, and their handles become invalid. Libraries (cuLibraryLoad*) are
 * context-independent and stay. Freed module and function handles are recycled in the order
 * they were freed, as a driver's pooled allocator may do: loading the same image again after an
 * unload or a context reset hands out the very same handles, so that whoever keeps state keyed
 * by a handle must forget it when the handle dies.
 *
 * A launch copies the argument values (from kernelParams, or from an `extra` parameter buffer
 * unpacked with the layout) and queues the CPU twin sim_<name>, found with
 * dlsym(RTLD_DEFAULT). Kernels of libraries whose names are template instantiations (PyTorch's)
 * are run by a generic twin instead: an exported `int simtw_twin(const char *name, dim3 grid,
 * dim3 block, void **args)` answers, with args NULL, whether it runs kernel `name`, and runs it
 * otherwise. A kernel without a twin fails to launch with CUDA_ERROR_NO_BINARY_FOR_GPU, and its
 * name is printed on stderr once.
 */
#include "drv.h"
#include "common/nvrtccache.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD_MAGIC 0x30D0137Eu
#define FUNC_MAGIC 0xF0C70000u

struct CUmod_st {
  uint32_t magic;
  drv_func_t **funcs;
  size_t n, cap;
  int lib;                /* loaded as a library: survives the context */
  const struct CUctx_st *ctx; /* the context a module was loaded in */
  struct CUmod_st *next;  /* live modules, or the pool of freed ones */
};

/* Live modules and libraries, and the pools of freed handles (FIFO), under pool_lock. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUmod_st *live, *mod_pool, **mod_pool_tail = &mod_pool;
static drv_func_t *func_pool, **func_pool_tail = &func_pool;

static struct CUmod_st *mod_alloc(void) {
  pthread_mutex_lock(&pool_lock);
  struct CUmod_st *m = mod_pool;
  if (m && !(mod_pool = m->next)) mod_pool_tail = &mod_pool;
  pthread_mutex_unlock(&pool_lock);
  if (m) memset(m, 0, sizeof *m);
  return m ? m : calloc(1, sizeof *m);
}

static drv_func_t *func_alloc(void) {
  pthread_mutex_lock(&pool_lock);
  drv_func_t *f = func_pool;
  if (f && !(func_pool = f->pool_next)) func_pool_tail = &func_pool;
  pthread_mutex_unlock(&pool_lock);
  if (f) memset(f, 0, sizeof *f);
  return f ? f : calloc(1, sizeof *f);
}

static CUresult mod_check(struct CUmod_st *m) {
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  return m && m->magic == MOD_MAGIC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult drv_func(CUfunction f, drv_func_t **out) {
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!f || f->magic != FUNC_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  *out = f;
  return CUDA_SUCCESS;
}

typedef int (*generic_twin_fn)(const char *name, dim3 grid, dim3 block, void **args);
static generic_twin_fn generic_twin;

/* Stands for the generic twin in f->twin; drv_launch_run calls simtw_twin with the name instead. */
static void run_generic(dim3 grid, dim3 block, void **args) { (void)grid, (void)block, (void)args; }

/* A kernel that the simulated NVRTC compiled, in this process or an earlier one, has its host
 * build linked by name in NVRTC's cache folder (tests/sim/nvrtc/nvrtc.c): a program that loads
 * the CUBIN or PTX from a cache of its own, without compiling it, runs it through that build.
 * Loads it (for good, into the global scope); nonzero when it was found. */
static int nvrtc_twin(const char *name) {
  char dir[2048], path[4200];
  sim_nvrtc_cache_dir(dir, sizeof dir);
  if (snprintf(path, sizeof path, "%s/twin-%s.so", dir, name) >= (int)sizeof path) return 0;
  return access(path, R_OK) == 0 && dlopen(path, RTLD_NOW | RTLD_GLOBAL) != NULL;
}

drv_twin_fn drv_func_twin(drv_func_t *f) {
  pthread_mutex_lock(&drv_lock);
  if (!f->twin_resolved) {
    size_t n = strlen(f->name) + 5;
    char *sym = malloc(n);
    if (sym) {
      snprintf(sym, n, "sim_%s", f->name);
      void *p = dlsym(RTLD_DEFAULT, sym);
      if (!p && nvrtc_twin(f->name)) p = dlsym(RTLD_DEFAULT, sym);
      memcpy(&f->twin, &p, sizeof p);
      free(sym);
      f->twin_resolved = 1;
      if (!f->twin) {
        p = dlsym(RTLD_DEFAULT, "simtw_twin");
        memcpy(&generic_twin, &p, sizeof p);
        if (generic_twin && generic_twin(f->name, (dim3){1, 1, 1}, (dim3){1, 1, 1}, NULL))
          f->twin = run_generic;
        else
          fprintf(stderr, "sim: kernel %s has no CPU twin: it cannot run\n", f->name);
      }
    }
  }
  drv_twin_fn t = f->twin;
  pthread_mutex_unlock(&drv_lock);
  return t;
}

static int add_kernel(const ag_kernel_desc_t *k, void *ctx) {
  struct CUmod_st *m = ctx;
  for (size_t i = 0; i < m->n; i++) {
    drv_func_t *f = m->funcs[i];
    if (strcmp(f->name, k->name) != 0) continue;
    if (k->arch <= f->arch) return 0;
    ag_kparam_t *p = malloc((k->nparams ? k->nparams : 1) * sizeof *p);
    if (!p) return -AG_ENOMEM;
    if (k->nparams) memcpy(p, k->params, k->nparams * sizeof *p); /* may be NULL */
    free(f->params);
    f->params = p;
    f->nparams = k->nparams;
    f->param_bytes = k->param_bytes;
    f->arch = k->arch;
    return 0;
  }
  if (m->n == m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 8;
    drv_func_t **g = realloc(m->funcs, ncap * sizeof *g);
    if (!g) return -AG_ENOMEM;
    m->funcs = g;
    m->cap = ncap;
  }
  drv_func_t *f = func_alloc();
  if (!f) return -AG_ENOMEM;
  f->magic = FUNC_MAGIC;
  f->mod = m;
  f->name = strdup(k->name);
  f->params = malloc((k->nparams ? k->nparams : 1) * sizeof *f->params);
  if (!f->name || !f->params) {
    free(f->name);
    free(f->params);
    free(f);
    return -AG_ENOMEM;
  }
  if (k->nparams) memcpy(f->params, k->params, k->nparams * sizeof *f->params); /* may be NULL */
  f->nparams = k->nparams;
  f->param_bytes = k->param_bytes;
  f->arch = k->arch;
  f->max_dyn_shmem = DRV_MAX_SHMEM_DEFAULT;
  f->carveout = -1;
  m->funcs[m->n++] = f;
  return 0;
}

/* Frees a module that is not (or no longer) in the live list: its handles go to the pools,
 * marked dead, so that a stale handle is reported invalid until it is handed out again. */
static void mod_free(struct CUmod_st *m) {
  pthread_mutex_lock(&pool_lock);
  for (size_t i = 0; i < m->n; i++) {
    drv_func_t *f = m->funcs[i];
    f->magic = 0;
    free(f->name);
    free(f->params);
    f->name = NULL, f->params = NULL;
    f->pool_next = NULL;
    *func_pool_tail = f;
    func_pool_tail = &f->pool_next;
  }
  free(m->funcs);
  m->funcs = NULL, m->n = 0;
  m->magic = 0;
  m->next = NULL;
  *mod_pool_tail = m;
  mod_pool_tail = &m->next;
  pthread_mutex_unlock(&pool_lock);
}

static void live_add(struct CUmod_st *m) {
  pthread_mutex_lock(&pool_lock);
  m->next = live;
  live = m;
  pthread_mutex_unlock(&pool_lock);
}

/* Takes m out of the live list; 0 when it was not there (already destroyed). */
static int live_remove(struct CUmod_st *m) {
  int found = 0;
  pthread_mutex_lock(&pool_lock);
  for (struct CUmod_st **pp = &live; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&pool_lock);
  return found;
}

void drv_modules_ctx_destroyed(const struct CUctx_st *c) {
  struct CUmod_st *dead = NULL;
  pthread_mutex_lock(&pool_lock);
  for (struct CUmod_st **pp = &live; *pp;) {
    struct CUmod_st *m = *pp;
    if (m->lib || m->ctx != c) {
      pp = &m->next;
      continue;
    }
    *pp = m->next;
    m->next = dead;
    dead = m;
  }
  pthread_mutex_unlock(&pool_lock);
  /* Oldest first, so that reloading in the same order hands out the same handles. */
  struct CUmod_st *rev = NULL;
  while (dead) {
    struct CUmod_st *m = dead;
    dead = m->next;
    m->next = rev;
    rev = m;
  }
  while (rev) {
    struct CUmod_st *m = rev;
    rev = m->next;
    mod_free(m);
  }
}

/* ---- which entry of an image a device and driver run ---- */

/* The newest PTX ISA version (times ten) a driver of version v (cuDriverGetVersion's number)
 * compiles: 9.0 for 13.0, then one tenth per minor release; 12.x from 8.0 (12.0) to 8.8
 * (12.9), with 12.5 and 12.6 both at 8.5 (NVIDIA's PTX ISA release history); 11.x: 7.x. */
static int max_ptx_isa(int v) {
  static const int isa12[10] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
  int major = v / 1000, minor = (v % 1000) / 10;
  if (major >= 13) return 90 + 10 * (major - 13) + minor;
  if (major == 12) return isa12[minor > 9 ? 9 : minor];
  return major == 11 ? 70 + minor : 0;
}

/* Whether a cubin of architecture `arch` and ELF ABI version `abi` runs on the simulated device
 * under this driver. SASS runs on the major version it was built for, at the same or a higher
 * minor. ABI version 8 (a changed e_flags layout) is what CUDA 13's ptxas writes; 12.9's writes
 * 7 up to sm_90 and 8 from sm_100 (both checked with the toolkits' ptxas), so a driver older
 * than 13.0 is taken to refuse ABI 8 below sm_100, and one older than 12.8 (the first to know
 * the new layout) everywhere. Inferred from the formats: to confirm on a CUDA 12 driver. */
static int cubin_runs(int arch, int abi) {
  int v = drv_version();
  return arch / 10 == DRV_CC_MAJOR && arch % 10 <= DRV_CC_MINOR &&
         (abi < 8 || v >= 13000 || (arch >= 100 && v >= 12080));
}

/* What select_entry found: the index of the chosen entry and its kind, or why there is none. */
typedef struct {
  int index, n;         /* entries seen so far */
  int cubin, cubin_arch, ptx, ptx_arch; /* best of each (-1: none) */
  int ptx_too_new;      /* a PTX entry the device could run but the driver cannot compile */
  const ag_image_entry_t *want; /* second pass: the entry to load, once reached */
  int want_index;
  struct CUmod_st *m;
  int rc;
} pick_t;

static int pick_entry(const ag_image_entry_t *e, void *ctx) {
  pick_t *p = ctx;
  int i = p->n++;
  if (e->kind == AG_ENTRY_CUBIN) {
    if (cubin_runs(e->arch, e->version) && e->arch > p->cubin_arch) p->cubin = i, p->cubin_arch = e->arch;
  } else if (e->arch <= 10 * DRV_CC_MAJOR + DRV_CC_MINOR) {
    if (e->version > max_ptx_isa(drv_version())) p->ptx_too_new = 1;
    else if (e->arch > p->ptx_arch) p->ptx = i, p->ptx_arch = e->arch;
  }
  return 0;
}

/* The kernels of PTX text of n bytes (not always NUL-terminated in a fatbin) into m. */
static int ptx_into(struct CUmod_st *m, const void *text, size_t n) {
  char *t = malloc(n + 1);
  if (!t) return -AG_ENOMEM;
  memcpy(t, text, n);
  t[n] = 0;
  int e = drv_ptx_kernels(t, add_kernel, m);
  free(t);
  return e;
}

static int load_entry(const ag_image_entry_t *e, void *ctx) {
  pick_t *p = ctx;
  if (p->n++ != p->want_index) return 0;
  p->rc = e->kind == AG_ENTRY_CUBIN ? ag__image_kernels(e->data, e->size, add_kernel, p->m, NULL)
                                    : ptx_into(p->m, e->data, e->size);
  return 1; /* done */
}

/* Fills m with the kernels of the entry of `image` the device and driver run. Returns 0, a
 * negative -AG_E… (not an image, out of memory), or a CUresult. */
static int select_entry(struct CUmod_st *m, const void *image) {
  pick_t p = {.cubin = -1, .ptx = -1, .m = m};
  int e = ag__image_entries(image, 0, 0, pick_entry, &p, NULL);
  if (e) return e;
  if (p.cubin < 0 && p.ptx < 0)
    return p.ptx_too_new ? CUDA_ERROR_UNSUPPORTED_PTX_VERSION : CUDA_ERROR_NO_BINARY_FOR_GPU;
  p.want_index = p.cubin >= 0 ? p.cubin : p.ptx;
  p.n = 0;
  e = ag__image_entries(image, 0, 1, load_entry, &p, NULL);
  return e == 1 ? p.rc : e ? e : -AG_ECORRUPT;
}

/* The same for PTX text: its `.target` must not be above the device, its `.version` known to
 * the driver. */
static int ptx_text(struct CUmod_st *m, const char *text) {
  const char *v = strstr(text, ".version"), *t = strstr(text, ".target sm_");
  int major = 0, minor = 0, arch = t ? (int)strtol(t + 11, NULL, 10) : 0;
  if (v && sscanf(v + 8, " %d.%d", &major, &minor) != 2) return -AG_ECORRUPT;
  if (arch > 10 * DRV_CC_MAJOR + DRV_CC_MINOR) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (10 * major + minor > max_ptx_isa(drv_version())) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  return drv_ptx_kernels(text, add_kernel, m);
}

static CUresult load(struct CUmod_st **out, const void *image, int lib) {
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  struct CUmod_st *m = mod_alloc();
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  m->magic = MOD_MAGIC;
  m->lib = lib;
  m->ctx = drv_ctx_current();
  /* PTX text is what a real driver compiles at load time; anything else goes to the parser. */
  int e = drv_is_ptx(image) ? ptx_text(m, image) : select_entry(m, image);
  if (e) {
    mod_free(m);
    return e > 0 ? (CUresult)e : e == -AG_ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
  }
  live_add(m);
  *out = m;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) {
  DRV_FAIL("cuModuleLoadData", CUDA_ERROR_INVALID_IMAGE);
  return load((struct CUmod_st **)m, image, 0);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n,
                                    CUjit_option *opts, void **vals) {
  DRV_FAIL("cuModuleLoadDataEx", CUDA_ERROR_INVALID_IMAGE);
  (void)opts, (void)vals;
  if (n && (!opts || !vals)) return CUDA_ERROR_INVALID_VALUE;
  return load((struct CUmod_st **)m, image, 0);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *m, const void *image) {
  DRV_FAIL("cuModuleLoadFatBinary", CUDA_ERROR_INVALID_IMAGE);
  return load((struct CUmod_st **)m, image, 0);
}

CUresult CUDAAPI cuModuleUnload(CUmodule hm) {
  DRV_FAIL("cuModuleUnload", CUDA_ERROR_INVALID_HANDLE);
  struct CUmod_st *m = (struct CUmod_st *)hm;
  CUresult r = mod_check(m);
  if (r) return r;
  /* Queued launches may still use the functions. */
  pthread_mutex_lock(&drv_lock);
  drv_wait_all_locked();
  pthread_mutex_unlock(&drv_lock);
  if (!live_remove(m)) return CUDA_ERROR_INVALID_HANDLE;
  mod_free(m);
  return CUDA_SUCCESS;
}

static CUresult get_function(drv_func_t **out, struct CUmod_st *m, const char *name) {
  CUresult r = mod_check(m);
  if (r) return r;
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) {
      *out = m->funcs[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  DRV_FAIL("cuModuleGetFunction", CUDA_ERROR_NOT_FOUND);
  return get_function((drv_func_t **)f, (struct CUmod_st *)m, name);
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *n, CUmodule hm) {
  DRV_FAIL("cuModuleGetFunctionCount", CUDA_ERROR_INVALID_VALUE);
  struct CUmod_st *m = (struct CUmod_st *)hm;
  CUresult r = mod_check(m);
  if (r) return r;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = (unsigned)m->n;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *fs, unsigned int n, CUmodule hm) {
  DRV_FAIL("cuModuleEnumerateFunctions", CUDA_ERROR_INVALID_VALUE);
  struct CUmod_st *m = (struct CUmod_st *)hm;
  CUresult r = mod_check(m);
  if (r) return r;
  if (!fs) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < m->n && i < n; i++) fs[i] = m->funcs[i];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
  DRV_FAIL("cuModuleGetLoadingMode", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_check_init();
  if (r) return r;
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

/* ---- libraries (the same objects as modules) ---- */

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
                                   unsigned int njo, CUlibraryOption *lo, void **lv,
                                   unsigned int nlo) {
  DRV_FAIL("cuLibraryLoadData", CUDA_ERROR_INVALID_IMAGE);
  (void)jo, (void)jv, (void)lo, (void)lv;
  if ((njo && (!jo || !jv)) || (nlo && (!lo || !lv))) return CUDA_ERROR_INVALID_VALUE;
  return load((struct CUmod_st **)lib, code, 1);
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary lib) {
  DRV_FAIL("cuLibraryUnload", CUDA_ERROR_INVALID_HANDLE);
  return cuModuleUnload((CUmodule)lib);
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name) {
  DRV_FAIL("cuLibraryGetKernel", CUDA_ERROR_NOT_FOUND);
  return get_function((drv_func_t **)k, (struct CUmod_st *)lib, name);
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *m, CUlibrary lib) {
  DRV_FAIL("cuLibraryGetModule", CUDA_ERROR_INVALID_VALUE);
  CUresult r = mod_check((struct CUmod_st *)lib);
  if (r) return r;
  if (!m) return CUDA_ERROR_INVALID_VALUE;
  *m = (CUmodule)lib;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *n, CUlibrary lib) {
  DRV_FAIL("cuLibraryGetKernelCount", CUDA_ERROR_INVALID_VALUE);
  return cuModuleGetFunctionCount(n, (CUmodule)lib);
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *ks, unsigned int n, CUlibrary lib) {
  DRV_FAIL("cuLibraryEnumerateKernels", CUDA_ERROR_INVALID_VALUE);
  return cuModuleEnumerateFunctions((CUfunction *)ks, n, (CUmodule)lib);
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *f, CUkernel k) {
  DRV_FAIL("cuKernelGetFunction", CUDA_ERROR_INVALID_HANDLE);
  drv_func_t *fn;
  CUresult r = drv_func((CUfunction)k, &fn);
  if (r) return r;
  if (!f) return CUDA_ERROR_INVALID_VALUE;
  *f = fn;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *lib, CUkernel k) {
  DRV_FAIL("cuKernelGetLibrary", CUDA_ERROR_INVALID_HANDLE);
  drv_func_t *fn;
  CUresult r = drv_func((CUfunction)k, &fn);
  if (r) return r;
  if (!lib) return CUDA_ERROR_INVALID_VALUE;
  *lib = (CUlibrary)fn->mod;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *m, CUfunction f) {
  DRV_FAIL("cuFuncGetModule", CUDA_ERROR_INVALID_HANDLE);
  return cuKernelGetLibrary((CUlibrary *)m, (CUkernel)f);
}

static CUresult get_name(const char **name, CUfunction f) {
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  *name = fn->name;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction f) {
  DRV_FAIL("cuFuncGetName", CUDA_ERROR_INVALID_HANDLE);
  return get_name(name, f);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel k) {
  DRV_FAIL("cuKernelGetName", CUDA_ERROR_INVALID_HANDLE);
  return get_name(name, (CUfunction)k);
}

static CUresult param_info(CUfunction f, size_t i, size_t *off, size_t *size) {
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  if (i >= fn->nparams || (!off && !size)) return CUDA_ERROR_INVALID_VALUE;
  if (off) *off = fn->params[i].offset;
  if (size) *size = fn->params[i].size;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  DRV_FAIL("cuFuncGetParamInfo", CUDA_ERROR_INVALID_VALUE);
  return param_info(f, i, off, size);
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size) {
  DRV_FAIL("cuKernelGetParamInfo", CUDA_ERROR_INVALID_VALUE);
  return param_info((CUfunction)k, i, off, size);
}

CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction f) {
  DRV_FAIL("cuFuncIsLoaded", CUDA_ERROR_INVALID_HANDLE);
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  if (!state) return CUDA_ERROR_INVALID_VALUE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncLoad(CUfunction f) {
  DRV_FAIL("cuFuncLoad", CUDA_ERROR_INVALID_HANDLE);
  drv_func_t *fn;
  return drv_func(f, &fn);
}

/* Plausible static resources of a small kernel; dynamic shared memory as configured. */
static CUresult func_attr(int *v, CUfunction_attribute a, CUfunction f) {
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = fn->arch ? fn->arch : 90; break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = fn->arch ? fn->arch : 90; break;
  case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = fn->max_dyn_shmem; break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *v = fn->carveout; break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *v = 0; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static CUresult func_set_attr(CUfunction f, CUfunction_attribute a, int v) {
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    if (v < 0 || v > DRV_MAX_SHMEM_OPTIN) return CUDA_ERROR_INVALID_VALUE;
    fn->max_dyn_shmem = v;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    if (v < -1 || v > 100) return CUDA_ERROR_INVALID_VALUE;
    fn->carveout = v;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  DRV_FAIL("cuFuncGetAttribute", CUDA_ERROR_INVALID_VALUE);
  return func_attr(v, a, f);
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  DRV_FAIL("cuFuncSetAttribute", CUDA_ERROR_INVALID_VALUE);
  return func_set_attr(f, a, v);
}

CUresult CUDAAPI cuKernelGetAttribute(int *v, CUfunction_attribute a, CUkernel k, CUdevice d) {
  DRV_FAIL("cuKernelGetAttribute", CUDA_ERROR_INVALID_VALUE);
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  return func_attr(v, a, (CUfunction)k);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d) {
  DRV_FAIL("cuKernelSetAttribute", CUDA_ERROR_INVALID_VALUE);
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  return func_set_attr((CUfunction)k, a, v);
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c) {
  DRV_FAIL("cuFuncSetCacheConfig", CUDA_ERROR_INVALID_VALUE);
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  return (unsigned)c <= CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel k, CUfunc_cache c, CUdevice d) {
  DRV_FAIL("cuKernelSetCacheConfig", CUDA_ERROR_INVALID_VALUE);
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  return cuFuncSetCacheConfig((CUfunction)k, c);
}

/* ---- launches ---- */

CUresult drv_launch_prepare(drv_launch_t *l, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **params,
                            void **extra) {
  memset(l, 0, sizeof *l);
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  if (!gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
  if (gx > 2147483647u || gy > 65535 || gz > 65535) return CUDA_ERROR_INVALID_VALUE;
  if (bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (shmem > (unsigned)fn->max_dyn_shmem) return CUDA_ERROR_INVALID_VALUE;
  if (params && extra) return CUDA_ERROR_INVALID_VALUE;
  const void *buf = NULL;
  size_t bufsize = 0;
  if (extra) {
    int have_size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        bufsize = *(size_t *)extra[i + 1];
        have_size = 1;
      } else return CUDA_ERROR_INVALID_VALUE;
    }
    if (fn->nparams && (!buf || !have_size)) return CUDA_ERROR_INVALID_VALUE;
  } else if (fn->nparams && !params) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint32_t need = 0;
  for (uint32_t i = 0; i < fn->nparams; i++)
    if (fn->params[i].offset + fn->params[i].size > need)
      need = fn->params[i].offset + fn->params[i].size;
  if (extra && fn->nparams && bufsize < need) return CUDA_ERROR_INVALID_VALUE;
  /* CUDA 12.1 raised the limit from 4,096 to 32,764 bytes; a larger block cannot be passed. */
  if (need > DRV_MAX_PARAM_BYTES || fn->param_bytes > DRV_MAX_PARAM_BYTES ||
      (extra && bufsize > DRV_MAX_PARAM_BYTES))
    return CUDA_ERROR_INVALID_VALUE;
  size_t blob_size = need > fn->param_bytes ? need : fn->param_bytes;
  /* A buffer larger than the kernel's parameters (sizeof of a struct that ends in padding
   * the parameters do not have) is refused as an H200's driver refused it: seen there for 4
   * bytes of trailing padding; that any excess is refused is inferred. */
  if (extra && bufsize > blob_size) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  l->blob = calloc(1, blob_size ? blob_size : 1);
  l->argv = calloc(fn->nparams ? fn->nparams : 1, sizeof *l->argv);
  if (!l->blob || !l->argv) {
    drv_launch_fini(l);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (uint32_t i = 0; i < fn->nparams; i++) {
    const ag_kparam_t *p = &fn->params[i];
    l->argv[i] = l->blob + p->offset;
    if (extra) memcpy(l->blob + p->offset, (const char *)buf + p->offset, p->size);
    else memcpy(l->blob + p->offset, params[i], p->size);
  }
  l->f = fn;
  l->grid = (dim3){gx, gy, gz};
  l->block = (dim3){bx, by, bz};
  l->shmem = shmem;
  return CUDA_SUCCESS;
}

void drv_launch_fini(drv_launch_t *l) {
  free(l->blob);
  free(l->argv);
  free(l->attrs);
  l->blob = NULL;
  l->argv = NULL;
  l->attrs = NULL;
}

CUresult drv_launch_copy(drv_launch_t *dst, const drv_launch_t *src) {
  *dst = *src;
  dst->attrs = NULL;
  if (src->attrs) {
    dst->blob = NULL, dst->argv = NULL;
    if (!(dst->attrs = malloc(sizeof *dst->attrs))) return CUDA_ERROR_OUT_OF_MEMORY;
    *dst->attrs = *src->attrs;
  }
  uint32_t n = src->f->nparams;
  size_t bytes = 0;
  for (uint32_t i = 0; i < n; i++) {
    size_t end = src->f->params[i].offset + src->f->params[i].size;
    if (end > bytes) bytes = end;
  }
  if (src->f->param_bytes > bytes) bytes = src->f->param_bytes;
  dst->blob = malloc(bytes ? bytes : 1);
  dst->argv = malloc((n ? n : 1) * sizeof *dst->argv);
  if (!dst->blob || !dst->argv) {
    drv_launch_fini(dst);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(dst->blob, src->blob, bytes);
  for (uint32_t i = 0; i < n; i++) dst->argv[i] = dst->blob + src->f->params[i].offset;
  return CUDA_SUCCESS;
}

void drv_launch_run(const drv_launch_t *l) {
  drv_twin_fn t = drv_func_twin(l->f);
  drv_kattr_running(l->attrs ? l->attrs : &drv_kattrs_none);
  if (t == run_generic) generic_twin(l->f->name, l->grid, l->block, l->argv);
  else if (t) t(l->grid, l->block, l->argv);
  drv_kattr_running(NULL);
}

static void launch_op_run(drv_op_t *op) { drv_launch_run(op->arg); }
static void launch_op_fini(drv_op_t *op) {
  drv_launch_fini(op->arg);
  free(op->arg);
}

static CUresult fill_kernel(struct CUgraphNode_st *n, void *arg) {
  return drv_launch_copy(&n->u.k, arg);
}

/* The common path of every launch API. The modelled host cost is spent on the caller. */
/* SIM_LAUNCH_LOG=<path>: one JSON line per kernel launch whose configuration and parameters
 * were valid (also those captured into a graph), written and flushed on the launching thread
 * before the call returns, so that a tool can tell which launches an operation made by the
 * file's size before and after it: the kernel's name, grid, block, parameter bytes (hex, in the
 * packed layout of the kernel's parameters) and whether it has a twin (without one the launch
 * then fails with CUDA_ERROR_NO_BINARY_FOR_GPU). Appends; a path that cannot be opened is
 * reported once and nothing is logged. */
static pthread_once_t launch_log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t launch_log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *launch_log;

static void launch_log_open(void) {
  const char *path = getenv("SIM_LAUNCH_LOG");
  if (!path || !*path) return;
  if (!(launch_log = fopen(path, "a")))
    fprintf(stderr, "sim: SIM_LAUNCH_LOG: cannot open %s: %s\n", path, strerror(errno));
}

static void launch_log_write(const drv_launch_t *l, size_t bytes, int twin) {
  pthread_once(&launch_log_once, launch_log_open);
  if (!launch_log) return;
  pthread_mutex_lock(&launch_log_lock);
  fprintf(launch_log, "{\"name\": \"%s\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"params\": \"",
          l->f->name, l->grid.x, l->grid.y, l->grid.z, l->block.x, l->block.y, l->block.z);
  for (size_t i = 0; i < bytes; i++) fprintf(launch_log, "%02x", (unsigned char)l->blob[i]);
  fprintf(launch_log, "\", \"twin\": %s}\n", twin ? "true" : "false");
  fflush(launch_log);
  pthread_mutex_unlock(&launch_log_lock);
}

static CUresult launch(int ptds, const char *api, CUfunction f, unsigned gx, unsigned gy,
                       unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                       CUstream h, void **params, void **extra, const drv_kattrs_t *ka) {
  (void)api;
  drv_cost(simc_cost(SIMC_LAUNCH_NS));
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  /* A kernel runs on a stream of the current context only. */
  if (s->ctx != drv_ctx_current()) return CUDA_ERROR_INVALID_HANDLE;
  if ((r = drv_async_error())) return r;
  drv_launch_t *l = malloc(sizeof *l);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  r = drv_launch_prepare(l, f, gx, gy, gz, bx, by, bz, shmem, params, extra);
  if (!r) {
    int twin = drv_func_twin(l->f) != NULL;
    launch_log_write(l, l->f->param_bytes, twin);
    if (!twin) r = CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (!r && ka && ka->set) {
    if ((l->attrs = malloc(sizeof *l->attrs)) != NULL) *l->attrs = *ka;
    else r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (r) {
    drv_launch_fini(l);
    free(l);
    return r;
  }
  pthread_mutex_lock(&drv_lock);
  if (s->cap) {
    drv_capture_node(s, CU_GRAPH_NODE_TYPE_KERNEL, fill_kernel, l, &r);
    pthread_mutex_unlock(&drv_lock);
    drv_launch_fini(l);
    free(l);
    return r;
  }
  drv_op_t *op = drv_op_new(launch_op_run, launch_op_fini, l);
  if (!op) {
    pthread_mutex_unlock(&drv_lock);
    drv_launch_fini(l);
    free(l);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  op->kind = DRV_OP_KERNEL;
  r = drv_submit_locked(s, op);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

static CUresult launch_kernel(int ptds, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                              unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream h,
                              void **params, void **extra) {
  DRV_FAIL("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  return launch(ptds, "cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shmem, h, params, extra,
                NULL);
}
DRV_BOTH(launch_kernel, cuLaunchKernel, cuLaunchKernel_ptsz,
         (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
          unsigned bz, unsigned shmem, CUstream h, void **params, void **extra),
         (f, gx, gy, gz, bx, by, bz, shmem, h, params, extra))

static CUresult launch_cooperative(int ptds, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                   CUstream h, void **params) {
  DRV_FAIL("cuLaunchCooperativeKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  /* All blocks must be co-resident: at most the occupancy's blocks per SM on every SM. */
  CUresult r = drv_coop_check((dim3){gx, gy, gz}, (dim3){bx, by, bz}, shmem);
  if (r) return r;
  drv_kattrs_t ka;
  memset(&ka, 0, sizeof ka);
  ka.set = 1u << CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  ka.v[CU_LAUNCH_ATTRIBUTE_COOPERATIVE].cooperative = 1;
  return launch(ptds, "cuLaunchCooperativeKernel", f, gx, gy, gz, bx, by, bz, shmem, h, params,
                NULL, &ka);
}
DRV_BOTH(launch_cooperative, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz,
         (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
          unsigned bz, unsigned shmem, CUstream h, void **params),
         (f, gx, gy, gz, bx, by, bz, shmem, h, params))

/* The attributes of a cuLaunchKernelEx, validated (attrs.c) into *ka. */
static CUresult launch_attrs(const CUlaunchConfig *c, drv_kattrs_t *ka) {
  drv_kshape_t sh = {{c->gridDimX, c->gridDimY, c->gridDimZ},
                     {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes};
  memset(ka, 0, sizeof *ka);
  if (c->numAttrs && !c->attrs) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const CUlaunchAttribute *a = &c->attrs[i];
    CUresult r;
    if ((int)a->id == CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
      return CUDA_ERROR_INVALID_VALUE; /* graphs only: an ordinary launch refuses it */
    if ((r = drv_kattr_set(ka, DRV_KATTR_LAUNCH, a->id, &a->value, sh))) return r;
  }
  return CUDA_SUCCESS;
}

static CUresult launch_kernel_ex(int ptds, const CUlaunchConfig *c, CUfunction f, void **params,
                                 void **extra) {
  DRV_FAIL("cuLaunchKernelEx", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  drv_kattrs_t ka;
  CUresult r = launch_attrs(c, &ka);
  if (r) return r;
  return launch(ptds, "cuLaunchKernelEx", f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra, &ka);
}
DRV_BOTH(launch_kernel_ex, cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
         (const CUlaunchConfig *c, CUfunction f, void **params, void **extra),
         (c, f, params, extra))
