/* validity.c — whether the driver would refuse a launch or operation about to be held (see
 * validity.h and docs/launch-safety.md).
 *
 * The limits of a kernel that settings can change (its dynamic shared-memory limit, the cluster
 * dimensions it requires) are read once and again after any setting changed; the co-residency
 * limit of cooperative launches is read for the block and shared memory last seen. None of it
 * is read for launches that are not about to be held.
 */
#include "validity.h"

#include <pthread.h>
#include <string.h>

#include "real.h"

uint32_t ag__valid_gen = 1; /* 0 in a record means "never read" */

void ag__valid_settings_changed(void) {
  /* Never 0 after wrapping around. */
  if (__atomic_add_fetch(&ag__valid_gen, 1, __ATOMIC_RELAXED) == 0)
    __atomic_add_fetch(&ag__valid_gen, 1, __ATOMIC_RELAXED);
}

/* ---- launches ----------------------------------------------------------------------------- */

static int func_attr(const ag_kinfo_t *k, CUfunction_attribute a, int *v) {
  return ag__real.cuFuncGetAttribute && k->fn &&
         ag__real.cuFuncGetAttribute(v, a, (CUfunction)k->fn) == CUDA_SUCCESS;
}

/* Reads k's limits that settings can change; 0 when they cannot be read. */
static int read_limits(ag_kinfo_t *k, uint32_t gen) {
  int smem = 0, cw = 0, ch = 0, cd = 0, ok;
  ag__tls.quiet++;
  ok = func_attr(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &smem) && smem >= 0;
  /* Drivers before 11.8 know no cluster attributes: no cluster is required there. */
  if (ok && func_attr(k, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, &cw) &&
      func_attr(k, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, &ch))
    (void)func_attr(k, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, &cd);
  ag__tls.quiet--;
  k->coop_max = 0; /* the occupancy depends on the shared-memory limit too */
  if (!ok) {
    k->lim_gen = 0, k->lim_fail_gen = gen;
    return 0;
  }
  k->smem_max = (unsigned)smem;
  k->cluster[0] = cw > 0 ? (unsigned)cw : 0;
  k->cluster[1] = ch > 0 ? (unsigned)ch : 0;
  k->cluster[2] = cd > 0 ? (unsigned)cd : 0;
  k->cluster_req = (k->cluster[0] | k->cluster[1] | k->cluster[2]) != 0;
  k->lim_gen = gen;
  return 1;
}

/* The most blocks a cooperative launch of k with this block and shared memory may have, or 0
 * when the driver cannot say. */
static unsigned coop_limit(ag_kinfo_t *k, unsigned threads, unsigned shmem) {
  if (k->coop_max && k->coop_key[0] == threads && k->coop_key[1] == shmem) return k->coop_max;
  int per_sm = 0, sms = 0;
  CUdevice dev = k->dev;
  unsigned max = 0;
  ag__tls.quiet++;
  if (ag__real.cuOccupancyMaxActiveBlocksPerMultiprocessor && ag__real.cuDeviceGetAttribute &&
      (k->dev >= 0 || (ag__real.cuCtxGetDevice && ag__real.cuCtxGetDevice(&dev) == CUDA_SUCCESS)) &&
      ag__real.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (CUfunction)k->fn, (int)threads,
                                                           shmem) == CUDA_SUCCESS &&
      ag__real.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) ==
          CUDA_SUCCESS &&
      per_sm > 0 && sms > 0)
    max = (unsigned)per_sm * (unsigned)sms;
  ag__tls.quiet--;
  k->coop_key[0] = threads, k->coop_key[1] = shmem, k->coop_max = max;
  return max;
}

static int divides(const unsigned d[3], const unsigned grid[3]) {
  return (!d[0] || grid[0] % d[0] == 0) && (!d[1] || grid[1] % d[1] == 0) &&
         (!d[2] || grid[2] % d[2] == 0);
}

const char *ag__valid_launch(ag_kinfo_t *k, const ag_launch_t *l) {
  const unsigned *g = l->grid;
  uint32_t gen = __atomic_load_n(&ag__valid_gen, __ATOMIC_RELAXED);
  /* Unsigned wrap-around makes a zero dimension fail the same test as a too large one. */
  if (g[0] - 1u > 0x7ffffffeu || g[1] - 1u > 65534u || g[2] - 1u > 65534u)
    return "grid out of range";
  if (k->lim_gen != gen && (k->lim_fail_gen == gen || !read_limits(k, gen)))
    return "kernel limits unknown";
  if (l->shmem > k->smem_max) return "dynamic shared memory above the kernel's limit";
  if (!divides(k->cluster, g)) return "grid not a multiple of the kernel's cluster";
  if (ag__lattr_any(l)) {
    unsigned cl[3], pref[3];
    int coop;
    ag__lattr_geometry(l, cl, pref, &coop);
    if (!divides(cl, g) || !divides(pref, g)) return "grid not a multiple of the cluster";
    if (coop) {
      uint64_t blocks = (uint64_t)g[0] * g[1] * g[2];
      unsigned max = coop_limit(k, l->block[0] * l->block[1] * l->block[2], l->shmem);
      if (!max) return "cooperative limit unknown";
      if (blocks > max) return "cooperative grid too large";
    }
  }
  return NULL;
}

/* ---- memory ------------------------------------------------------------------------------- */

int ag__valid_range(const void *p, size_t bytes, unsigned *type, int *managed) {
  CUdeviceptr base = 0;
  size_t size = 0;
  unsigned t = 0;
  int m = 0;
  CUresult r;
  uintptr_t a = (uintptr_t)p;
  ag__tls.quiet++;
  if (ag__real.cuPointerGetAttributes) {
    /* One query for all: an address the driver does not know reads as zeros. */
    CUpointer_attribute at[4] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *out[4] = {&base, &size, &t, &m};
    r = ag__real.cuPointerGetAttributes(type ? 4 : 2, at, out, (CUdeviceptr)a);
  } else if (ag__real.cuPointerGetAttribute) {
    r = ag__real.cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                       (CUdeviceptr)a);
    if (r == CUDA_SUCCESS)
      r = ag__real.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)a);
    if (r == CUDA_SUCCESS && type)
      r = ag__real.cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)a);
    if (r == CUDA_SUCCESS && type)
      r = ag__real.cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)a);
  } else {
    r = CUDA_ERROR_NOT_FOUND;
  }
  ag__tls.quiet--;
  if (type) *type = t, *managed = m;
  /* An address the driver does not know has base 0 and size 0. */
  return r == CUDA_SUCCESS && base && a >= base && bytes <= size && a - base <= size - bytes;
}

/* ---- device faults ------------------------------------------------------------------------ */

/* Contexts that reported a device fault, with their device. A process has few; when the table
 * is full every context counts as faulted (nothing is held any more, which is always safe). */
#define AG_FAULTED 8
static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  const void *ctx;
  int dev;
} faulted[AG_FAULTED];
int ag__valid_nfaulted; /* entries used; AG_FAULTED + 1: every context */

/* The errors after which a context is unusable and every later call returns the same error
 * (CUresult and cudaError_t share these values). */
static int is_fault(int e) {
  switch (e) {
  case 700: /* illegal address */
  case 702: /* launch timeout */
  case 710: /* device-side assert */
  case 713: /* hardware stack error */
  case 714: /* illegal instruction */
  case 715: /* misaligned address */
  case 716: /* invalid address space */
  case 717: /* invalid program counter */
  case 719: /* launch failure */
    return 1;
  }
  return 0;
}

void ag__valid_status(int status, const void *ctx) {
  if (AG_LIKELY(!status) || !is_fault(status)) return;
  CUcontext c = (CUcontext)(uintptr_t)ctx;
  CUdevice d = -1;
  ag__tls.quiet++;
  if (!c && ag__real.cuCtxGetCurrent) ag__real.cuCtxGetCurrent(&c);
  /* Its device: asked with the context current (pushed when it is not). */
  int pushed = c ? ag__ctx_enter(c) : -1;
  if (pushed < 0 || !ag__real.cuCtxGetDevice || ag__real.cuCtxGetDevice(&d) != CUDA_SUCCESS)
    d = -1;
  ag__ctx_leave(pushed);
  ag__tls.quiet--;
  pthread_mutex_lock(&fault_mu);
  int n = ag__valid_nfaulted, known = n > AG_FAULTED;
  for (int i = 0; i < n && !known; i++) known = faulted[i].ctx == c;
  if (!known) {
    if (c && n < AG_FAULTED) {
      faulted[n].ctx = c, faulted[n].dev = (int)d;
      n++;
    } else {
      n = AG_FAULTED + 1; /* too many, or the context is unknown */
    }
    __atomic_store_n(&ag__valid_nfaulted, n, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&fault_mu);
}

int ag__valid_faulted_slow(const void *ctx) {
  int hit;
  pthread_mutex_lock(&fault_mu);
  hit = ag__valid_nfaulted > AG_FAULTED;
  for (int i = 0; i < ag__valid_nfaulted && i < AG_FAULTED && !hit; i++)
    hit = faulted[i].ctx == ctx;
  pthread_mutex_unlock(&fault_mu);
  return hit;
}

/* Drops the entries `drop` selects. */
static void drop_faults(int (*drop)(int i, const void *arg), const void *arg) {
  pthread_mutex_lock(&fault_mu);
  int n = ag__valid_nfaulted;
  if (n > AG_FAULTED) {
    n = 0; /* which one it was is not known: the end of any clears it */
  } else {
    for (int i = 0; i < n;)
      if (drop(i, arg)) faulted[i] = faulted[--n];
      else i++;
  }
  __atomic_store_n(&ag__valid_nfaulted, n, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&fault_mu);
}

static int ctx_is(int i, const void *ctx) { return !ctx || faulted[i].ctx == ctx; }
static int dev_is(int i, const void *dev) {
  return *(const int *)dev < 0 || faulted[i].dev == *(const int *)dev;
}

void ag__valid_ctx_gone(const void *ctx) {
  if (__atomic_load_n(&ag__valid_nfaulted, __ATOMIC_ACQUIRE)) drop_faults(ctx_is, ctx);
}

void ag__valid_dev_gone(int dev) {
  if (!__atomic_load_n(&ag__valid_nfaulted, __ATOMIC_ACQUIRE)) return;
  if (dev == AG_DEV_CURRENT) {
    CUdevice d;
    CUcontext c = NULL;
    dev = -1; /* unknown: every device */
    ag__tls.quiet++;
    if (ag__real.cuCtxGetCurrent && ag__real.cuCtxGetCurrent(&c) == CUDA_SUCCESS && c &&
        ag__real.cuCtxGetDevice && ag__real.cuCtxGetDevice(&d) == CUDA_SUCCESS)
      dev = (int)d;
    ag__tls.quiet--;
  }
  drop_faults(dev_is, &dev);
}
