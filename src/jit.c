/* jit.c — the run-time compiler (see jit.h).
 *
 * One worker thread, started at the first request, takes requests from a short queue, looks each
 * up in the disk cache, compiles it with NVRTC when it is not there, and publishes the image. The
 * one lock (`mu`) guards the queue and the requests' states; the worker never holds it while it
 * reads files or compiles, so a poll never waits for a compiler. The worker calls NVRTC (which
 * this library does not intercept), the C library and nothing of the engine: no intercepted
 * entry point, no engine lock, no driver call (the device's architecture and the driver's version
 * come with each request, read on the submitting thread).
 *
 * Exit: an atexit handler marks the service closing: the worker takes nothing more from the
 * queue and waits until the process ends; the queue is abandoned, nothing is joined. A
 * compilation running at that moment is waited for, at most AG_JIT_EXIT_WAIT_MS: exit destroys
 * NVRTC's own static objects, and a compilation running through them crashes the process (seen
 * with CUDA 13.0's NVRTC). Handlers run in the reverse order of their registration and NVRTC
 * registers some of its destructors during its first compilation, so the handler is registered
 * again after NVRTC is loaded and again after its first compilation: from then on it runs before
 * every destructor of NVRTC's. An exit during the process's very first compilation is not
 * covered (NVRTC's destructors registered by it then run first). Exit waits for one compilation
 * at most, never for the queue. The thread is detached and blocks every signal, so
 * no signal of the program lands on it. The thread does not end itself: a thread ending while the
 * process exits races with the exit's own work (a leak checker then sees the thread's half-freed
 * data as lost).
 * Fork: the child has no worker; the handlers take the lock around the fork, and in the child
 * every request queued or being compiled ends FAILED; a later request starts a worker there.
 *
 * Cache files (docs/how-it-works.md, "Kernels compiled at run time"): <key>.agjit, where key is
 * 128 bits of hash of everything the image depends on; the file holds a header (magic, version,
 * kind, lengths, checksum), the key's text itself (compared in full on reading, so a hash
 * collision is a miss, never a wrong kernel) and the image. Written to a temporary file and
 * renamed, so a reader sees a whole file or none; a file that is short, long or fails its
 * checksum is counted as rejected and compiled again (the new file replaces it).
 */
#define _GNU_SOURCE
#include "jit.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <nvrtc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "real.h"
#include "stats.h"

struct ag_jit {
  ag_jit_t *next;       /* queue link */
  int refs;             /* the caller's, and the queue's or worker's while it has it */
  int state;            /* enum ag_jit_state */
  int kind;             /* enum ag_jit_kind, when READY */
  int cc;               /* the device's compute capability, major * 10 + minor */
  int driver_version;   /* the driver's, as cuDriverGetVersion gives it (0: unknown) */
  char *source, *name, *tag;
  char **options;       /* NULL-terminated */
  void *image;
  size_t size;
  char *reason;         /* when FAILED */
};

/* ---- state shared with the worker, under mu ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER; /* the worker has no request running */

/* The longest exit waits for the compilation running then. */
#define AG_JIT_EXIT_WAIT_MS 10000
static ag_jit_t *head, *tail; /* queued requests, oldest first */
static ag_jit_t *running;     /* the request the worker has, else NULL */
static int queued;            /* requests queued or running */
static int worker_on, closing;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

/* Off for the process (atomic): NVRTC missing or unusable. The reason is written before. */
static int off;
static char off_why[1024];

/* ---- NVRTC, found and used by the worker only ---- */

static struct {
  int tried;                /* the search ran (its outcome is `off`) */
  int version;              /* major * 1000 + minor * 10, as the driver's */
  int archs[64], narchs;    /* the real architectures it compiles for, ascending */
  char path[512];           /* where it came from, for the log */
  const char *(*error_string)(nvrtcResult);
  nvrtcResult (*get_version)(int *, int *);
  nvrtcResult (*num_archs)(int *);
  nvrtcResult (*get_archs)(int *);
  nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                        const char *const *);
  nvrtcResult (*destroy)(nvrtcProgram *);
  nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*log_size)(nvrtcProgram, size_t *);
  nvrtcResult (*log)(nvrtcProgram, char *);
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
  nvrtcResult (*cubin)(nvrtcProgram, char *);
  nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
  nvrtcResult (*ptx)(nvrtcProgram, char *);
} nv;

/* Writing to the cache failed once: no more attempts in this process (worker only). */
static int cache_write_off;

static void free_request(ag_jit_t *j) {
  if (!j) return;
  free(j->source), free(j->name), free(j->tag);
  for (char **o = j->options; o && *o; o++) free(*o);
  free(j->options), free(j->image), free(j->reason);
  free(j);
}

/* Drops one reference; mu held. */
static void unref(ag_jit_t *j) {
  if (--j->refs == 0) free_request(j);
}

/* Ends `j` FAILED with `why`; mu held, or `j` not yet shared. */
static void fail(ag_jit_t *j, const char *why) {
  free(j->reason);
  j->reason = strdup(why);
  j->state = AG_JIT_FAILED;
  AG_STAT_ADD(ag__stats.jit_failures, 1);
}

int ag__jit_available(void) {
  return !ag__config.disable && !__atomic_load_n(&off, __ATOMIC_ACQUIRE);
}

int ag__jit_full(void) {
  pthread_mutex_lock(&mu);
  int full = queued >= AG_JIT_QUEUE;
  pthread_mutex_unlock(&mu);
  return full;
}

/* ---- finding NVRTC --------------------------------------------------------------------------
 *
 * The symbols are looked up with dlsym on the handle. In the preload library that call reaches
 * the library's own dlsym (shims/dl.c), which hands every name not starting with "cu" straight
 * to the real dlsym: nvrtc* names never take the interception path. */

/* Opens `path` (with RTLD_NOLOAD: only if already loaded) and fills nv when it is usable with
 * the driver `drv`. Returns 0, or -1 with the reason in why. */
static int nv_open(const char *path, int noload, int drv, char *why, size_t n) {
  void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL | (noload ? RTLD_NOLOAD : 0));
  int major = 0, minor = 0;
  if (!h) {
    const char *e = dlerror();
    snprintf(why, n, "%s", e ? e : path);
    return -1;
  }
#define NV_SYM_(field, sym) *(void **)&nv.field = dlsym(h, sym)
  NV_SYM_(error_string, "nvrtcGetErrorString");
  NV_SYM_(get_version, "nvrtcVersion");
  NV_SYM_(num_archs, "nvrtcGetNumSupportedArchs");
  NV_SYM_(get_archs, "nvrtcGetSupportedArchs");
  NV_SYM_(create, "nvrtcCreateProgram");
  NV_SYM_(destroy, "nvrtcDestroyProgram");
  NV_SYM_(compile, "nvrtcCompileProgram");
  NV_SYM_(log_size, "nvrtcGetProgramLogSize");
  NV_SYM_(log, "nvrtcGetProgramLog");
  NV_SYM_(cubin_size, "nvrtcGetCUBINSize");
  NV_SYM_(cubin, "nvrtcGetCUBIN");
  NV_SYM_(ptx_size, "nvrtcGetPTXSize");
  NV_SYM_(ptx, "nvrtcGetPTX");
#undef NV_SYM_
  if (!nv.error_string || !nv.get_version || !nv.create || !nv.destroy || !nv.compile ||
      !nv.log_size || !nv.log || !nv.cubin_size || !nv.cubin || !nv.ptx_size || !nv.ptx) {
    snprintf(why, n, "%s lacks a function of NVRTC", path);
    goto refuse;
  }
  if (nv.get_version(&major, &minor) != NVRTC_SUCCESS) {
    snprintf(why, n, "%s does not tell its version", path);
    goto refuse;
  }
  /* A driver loads the CUBIN and PTX of toolkits of its own major version or older only. */
  if (drv > 0 && major > drv / 1000) {
    snprintf(why, n, "%s is NVRTC %d.%d, newer than the driver (CUDA %d.%d): the driver could "
             "not load what it compiles", path, major, minor, drv / 1000, drv % 1000 / 10);
    goto refuse;
  }
  nv.version = major * 1000 + minor * 10;
  nv.narchs = 0;
  int count = 0;
  if (nv.num_archs && nv.get_archs && nv.num_archs(&count) == NVRTC_SUCCESS && count > 0 &&
      count <= (int)AG_ARRAY_SIZE(nv.archs) && nv.get_archs(nv.archs) == NVRTC_SUCCESS)
    nv.narchs = count;
  snprintf(nv.path, sizeof nv.path, "%s", path);
  return 0; /* the handle is kept for the life of the process */
refuse:
  dlclose(h);
  return -1;
}

/* dl_iterate_phdr callback: the path of a loaded NVRTC (not its builtins library). */
static int find_loaded(struct dl_phdr_info *info, size_t size, void *data) {
  const char *name = info->dlpi_name, *base;
  (void)size;
  if (!name || !*name) return 0;
  base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (strncmp(base, "libnvrtc.so", 11) != 0) return 0;
  snprintf(data, 512, "%s", name);
  return 1;
}

/* Worker: the search, once, for the driver `drv`. Sets `off` with its reason when nothing fits. */
static void nv_find(int drv) {
  char why[512] = "", last[512] = "", loaded[512] = "";
  int found = -1;
  nv.tried = 1;
  if (ag__config.nvrtc[0]) {
    /* Asked for by name: that one or none, so that a mistake does not go unnoticed. */
    found = nv_open(ag__config.nvrtc, 0, drv, why, sizeof why);
    if (found != 0) {
      snprintf(off_why, sizeof off_why, "AUTOGRAPH_NVRTC=%.400s cannot be used: %s",
               ag__config.nvrtc, why);
      goto out;
    }
  } else {
    if (dl_iterate_phdr(find_loaded, loaded) && (found = nv_open(loaded, 1, drv, why, sizeof why)))
      snprintf(last, sizeof last, "%s", why);
    /* By soname, newest first, skipping what the driver could not load. */
    static const struct { const char *soname; int major; } sonames[] = {
        {"libnvrtc.so.13", 13}, {"libnvrtc.so.12", 12}};
    for (size_t i = 0; found != 0 && i < AG_ARRAY_SIZE(sonames); i++) {
      if (drv > 0 && sonames[i].major > drv / 1000) continue;
      if ((found = nv_open(sonames[i].soname, 0, drv, why, sizeof why)) != 0 && !last[0])
        snprintf(last, sizeof last, "%s", why);
    }
    if (found != 0)
      snprintf(off_why, sizeof off_why, "no usable NVRTC (%.480s)",
               last[0] ? last : "none for this driver");
  }
out:
  if (found != 0) {
    ag__log(AG_LOG_WARN, "kernels compiled at run time are off: %s", off_why);
    __atomic_store_n(&off, 1, __ATOMIC_RELEASE);
  } else {
    ag__log(AG_LOG_DEBUG, "jit: NVRTC %d.%d from %s", nv.version / 1000, nv.version % 1000 / 10,
            nv.path);
  }
}

/* ---- the target ---------------------------------------------------------------------------- */

/* The --gpu-architecture option for a device of compute capability cc, and the image kind it
 * gives: the device's own CUBIN when NVRTC knows it, else PTX of the newest architecture NVRTC
 * knows below it, which the driver compiles at load, but only when the driver is at least as new
 * as NVRTC (a CUBIN loads on an older driver of the same major version, PTX does not). Returns 0,
 * or -1 with the reason in why. */
static int target(int cc, int drv, char *opt, size_t n, int *kind, char *why, size_t wn) {
  int below = 0;
  if (!nv.narchs) { /* an NVRTC that does not list them: trust it with the device's own */
    snprintf(opt, n, "--gpu-architecture=sm_%d", cc);
    *kind = AG_JIT_CUBIN;
    return 0;
  }
  for (int i = 0; i < nv.narchs; i++) {
    if (nv.archs[i] == cc) {
      snprintf(opt, n, "--gpu-architecture=sm_%d", cc);
      *kind = AG_JIT_CUBIN;
      return 0;
    }
    if (nv.archs[i] < cc && nv.archs[i] > below) below = nv.archs[i];
  }
  if (!below) {
    snprintf(why, wn, "NVRTC %d.%d compiles for no architecture up to the device's sm_%d",
             nv.version / 1000, nv.version % 1000 / 10, cc);
    return -1;
  }
  if (drv > 0 && nv.version > drv) {
    snprintf(why, wn, "NVRTC %d.%d does not know the device's sm_%d, and its PTX is too new "
             "for the driver (CUDA %d.%d)", nv.version / 1000, nv.version % 1000 / 10, cc,
             drv / 1000, drv % 1000 / 10);
    return -1;
  }
  snprintf(opt, n, "--gpu-architecture=compute_%d", below);
  *kind = AG_JIT_PTX;
  return 0;
}

/* Options that would let NVRTC round differently from the kernels a fused one replaces. */
static const char *inexact_option(char *const *options) {
  static const char *const bad[] = {"--use_fast_math", "-use_fast_math", "--fmad=true",
                                    "-fmad=true", "--ftz=true", "-ftz=true", "--prec-div=false",
                                    "-prec-div=false", "--prec-sqrt=false", "-prec-sqrt=false"};
  for (char *const *o = options; o && *o; o++)
    for (size_t i = 0; i < AG_ARRAY_SIZE(bad); i++)
      if (!strcmp(*o, bad[i])) return *o;
  return NULL;
}

/* ---- the cache key ------------------------------------------------------------------------- */

typedef struct buf {
  char *p;
  size_t n, cap;
  int oom;
} buf_t;

/* Appends s and its terminating NUL (fields of the key are NUL-separated). */
static void put(buf_t *b, const char *s) {
  size_t k = strlen(s) + 1;
  if (b->oom) return;
  if (b->n + k > b->cap) {
    size_t cap = (b->n + k) * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, s, k);
  b->n += k;
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27, x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The options NVRTC gets: the target, the fixed ones that keep results exact (no contraction of
 * a product and a sum into one rounding; fast math is never on unless asked, and asking is
 * refused), then the caller's. Returns how many, or -1 when there are too many. */
#define MAX_OPTIONS 64
static int nvrtc_options(const ag_jit_t *j, const char *arch, const char **opts) {
  int n = 0;
  opts[n++] = arch;
  opts[n++] = "--fmad=false";
  for (char **o = j->options; o && *o; o++) {
    if (n == MAX_OPTIONS) return -1;
    opts[n++] = *o;
  }
  return n;
}

/* Everything the image depends on, in one text: the format, NVRTC's version, the kernel's name,
 * the caller's tag, every option NVRTC gets (the target among them) and the source. */
static void make_key(buf_t *b, const ag_jit_t *j, const char *const *opts, int nopt) {
  char ver[32];
  snprintf(ver, sizeof ver, "nvrtc %d", nv.version);
  put(b, "libautograph-jit 1");
  put(b, ver);
  put(b, j->name);
  put(b, j->tag ? j->tag : "");
  for (int i = 0; i < nopt; i++) put(b, opts[i]);
  put(b, ""); /* end of the options (an empty option is never stored) */
  put(b, j->source);
}

/* ---- the disk cache ------------------------------------------------------------------------ */

#define CACHE_MAGIC "AGJITIMG"
#define CACHE_VERSION 1u
#define CACHE_SUFFIX ".agjit"
#define CACHE_TMP ".tmp." /* the start of a temporary's name */
#define CACHE_MAX_IMAGE (512ull << 20)

typedef struct cache_hdr {
  char magic[8];
  uint32_t version, kind;
  uint64_t key_len, image_len;
  uint64_t checksum; /* FNV-1a over the key and then the image */
} cache_hdr_t;

static int read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    c += r, n -= (size_t)r;
  }
  return 0;
}

/* Looks the key up in `path`. Returns 0 with the image (malloc'd) on a hit, -AG_ENOENT when there
 * is no file, -AG_ECORRUPT when the file is not a whole, matching entry. */
static int cache_read(const char *path, const buf_t *key, void **image, size_t *size, int *kind) {
  cache_hdr_t h;
  struct stat st;
  char *data = NULL;
  int rc = -AG_ECORRUPT;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -AG_ENOENT;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof h ||
      read_all(fd, &h, sizeof h) != 0)
    goto out;
  if (memcmp(h.magic, CACHE_MAGIC, sizeof h.magic) != 0 || h.version != CACHE_VERSION ||
      h.kind > AG_JIT_PTX || h.key_len != key->n || h.image_len == 0 ||
      h.image_len > CACHE_MAX_IMAGE || (uint64_t)st.st_size != sizeof h + h.key_len + h.image_len)
    goto out;
  if (!(data = malloc(h.key_len + h.image_len))) {
    rc = -AG_ENOMEM;
    goto out;
  }
  if (read_all(fd, data, h.key_len + h.image_len) != 0 ||
      fnv1a(data, h.key_len + h.image_len, 0xcbf29ce484222325ull) != h.checksum)
    goto out;
  if (memcmp(data, key->p, key->n) != 0) goto out; /* another key of the same hash */
  memmove(data, data + h.key_len, h.image_len);
  *image = data, data = NULL;
  *size = h.image_len;
  *kind = (int)h.kind;
  /* A hit makes the file young again for the bound (cache_trim); failure is harmless. */
  (void)futimens(fd, NULL);
  rc = 0;
out:
  free(data);
  close(fd);
  return rc;
}

/* Creates `dir` and the folders above it that are missing, private to the user. */
static int mkdir_p(const char *dir) {
  char p[sizeof ag__config.cache_dir];
  size_t n = strlen(dir);
  if (n >= sizeof p) return -1;
  memcpy(p, dir, n + 1);
  for (char *c = p + 1; *c; c++) {
    if (*c != '/') continue;
    *c = 0;
    if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
    *c = '/';
  }
  return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

typedef struct entry {
  struct timespec mtime;
  off_t size;
  char name[64];
} entry_t;

static int older(const void *a, const void *b) {
  const entry_t *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

int ag__jit_cache_trim(const char *dir, size_t max_files, uint64_t max_bytes) {
  DIR *d = opendir(dir);
  entry_t *v = NULL;
  size_t n = 0, cap = 0, removed = 0;
  uint64_t bytes = 0;
  struct dirent *e;
  if (!d) return -AG_ENOENT;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    struct stat st;
    /* A temporary an hour old belongs to a writer that died before its rename. */
    if (!strncmp(e->d_name, CACHE_TMP, strlen(CACHE_TMP)) &&
        fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        st.st_mtime < time(NULL) - 3600) {
      (void)unlinkat(dirfd(d), e->d_name, 0);
      continue;
    }
    if (len <= strlen(CACHE_SUFFIX) || len >= sizeof v->name ||
        strcmp(e->d_name + len - strlen(CACHE_SUFFIX), CACHE_SUFFIX) != 0 ||
        fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (n == cap) {
      entry_t *w = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
      if (!w) break;
      v = w;
    }
    v[n].mtime = st.st_mtim, v[n].size = st.st_size;
    memcpy(v[n].name, e->d_name, len + 1);
    bytes += (uint64_t)st.st_size, n++;
  }
  if (n > max_files || bytes > max_bytes) {
    qsort(v, n, sizeof *v, older);
    for (size_t i = 0; i < n && (n - removed > max_files || bytes > max_bytes); i++)
      if (unlinkat(dirfd(d), v[i].name, 0) == 0) bytes -= (uint64_t)v[i].size, removed++;
  }
  closedir(d);
  free(v);
  return (int)removed;
}

/* Writes the entry whole under a temporary name, then renames it into place. A failure turns
 * writing off for the process, with one line in the log; compiling goes on. */
static void cache_write(const char *dir, const char *path, const buf_t *key, const void *image,
                        size_t size, int kind) {
  static unsigned seq;
  char tmp[sizeof ag__config.cache_dir + 128];
  cache_hdr_t h;
  int fd = -1;
  if (cache_write_off) return;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CACHE_MAGIC, sizeof h.magic);
  h.version = CACHE_VERSION, h.kind = (uint32_t)kind;
  h.key_len = key->n, h.image_len = size;
  h.checksum = fnv1a(image, size, fnv1a(key->p, key->n, 0xcbf29ce484222325ull));
  snprintf(tmp, sizeof tmp, "%s/" CACHE_TMP "%ld.%u", dir, (long)getpid(), seq++);
  if (mkdir_p(dir) != 0 ||
      (fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
    goto fail;
  if (ag__write_all(fd, &h, sizeof h) != 0 || ag__write_all(fd, key->p, key->n) != 0 ||
      ag__write_all(fd, image, size) != 0 || close(fd) != 0) {
    fd = -1;
    goto fail_tmp;
  }
  fd = -1;
  if (rename(tmp, path) != 0) goto fail_tmp;
  (void)ag__jit_cache_trim(dir, AG_JIT_CACHE_MAX_FILES, AG_JIT_CACHE_MAX_BYTES);
  return;
fail_tmp: {
  int saved = errno;
  if (fd >= 0) close(fd);
  unlink(tmp);
  errno = saved;
}
fail:
  cache_write_off = 1;
  ag__log(AG_LOG_WARN, "cannot write compiled kernels to %s (%s): they are not kept for the "
          "next run", dir, strerror(errno));
}

/* ---- the worker ---------------------------------------------------------------------------- */

/* The outcome of one request, filled without the lock. */
typedef struct result {
  int state, kind;
  void *image;
  size_t size;
  char *reason;
} result_t;

static void result_fail(result_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result_fail(result_t *r, const char *fmt, ...) {
  va_list ap;
  free(r->reason);
  r->reason = NULL;
  va_start(ap, fmt);
  if (vasprintf(&r->reason, fmt, ap) < 0) r->reason = NULL;
  va_end(ap);
  r->state = AG_JIT_FAILED;
}

/* Compiles j with the options opts (nvrtc_options) into an image of `kind`; fills r. */
static void compile(const ag_jit_t *j, const char *const *opts, int nopt, int kind, result_t *r) {
  nvrtcProgram p;
  char file[160], *log = NULL;
  size_t logn = 0, n = 0;
  nvrtcResult e;
  snprintf(file, sizeof file, "%.128s.cu", j->name);
  if ((e = nv.create(&p, j->source, file, 0, NULL, NULL)) != NVRTC_SUCCESS) {
    result_fail(r, "nvrtcCreateProgram: %s", nv.error_string(e));
    return;
  }
  e = nv.compile(p, nopt, opts);
  if (nv.log_size(p, &logn) == NVRTC_SUCCESS && logn > 1 && (log = malloc(logn + 1))) {
    if (nv.log(p, log) != NVRTC_SUCCESS) log[0] = 0;
    log[logn] = 0;
  }
  if (e != NVRTC_SUCCESS) {
    result_fail(r, "nvrtcCompileProgram: %s%s%s", nv.error_string(e), log ? "\n" : "",
                log ? log : "");
    goto out;
  }
  e = kind == AG_JIT_CUBIN ? nv.cubin_size(p, &n) : nv.ptx_size(p, &n);
  if (e == NVRTC_SUCCESS && n && !(r->image = malloc(n))) {
    result_fail(r, "out of memory for an image of %zu bytes", n);
    goto out;
  }
  if (e == NVRTC_SUCCESS && n)
    e = kind == AG_JIT_CUBIN ? nv.cubin(p, r->image) : nv.ptx(p, r->image);
  if (e != NVRTC_SUCCESS || !n) {
    result_fail(r, "NVRTC gave no %s: %s", kind == AG_JIT_CUBIN ? "CUBIN" : "PTX",
                nv.error_string(e));
    goto out;
  }
  r->size = n, r->kind = kind, r->state = AG_JIT_READY;
out:
  free(log);
  nv.destroy(&p);
}

/* Serves one request: the cache, else NVRTC (and then the cache is written). */
static void serve(const ag_jit_t *j, result_t *r) {
  char arch[64], why[512], path[sizeof ag__config.cache_dir + 64];
  const char *bad, *opts[MAX_OPTIONS];
  int kind = AG_JIT_CUBIN, hit, nopt;
  buf_t key = {0};
  if (!nv.tried) nv_find(j->driver_version);
  if (__atomic_load_n(&off, __ATOMIC_ACQUIRE)) {
    result_fail(r, "%s", off_why);
    return;
  }
  if ((bad = inexact_option(j->options))) {
    result_fail(r, "the option %s would make results inexact", bad);
    return;
  }
  if (target(j->cc, j->driver_version, arch, sizeof arch, &kind, why, sizeof why) != 0) {
    result_fail(r, "%s", why);
    return;
  }
  if ((nopt = nvrtc_options(j, arch, opts)) < 0) {
    result_fail(r, "more than %d options", MAX_OPTIONS - 2);
    return;
  }
  make_key(&key, j, opts, nopt);
  if (key.oom) {
    result_fail(r, "out of memory");
    goto out;
  }
  path[0] = 0;
  if (ag__config.cache_dir[0]) {
    uint64_t h1 = fnv1a(key.p, key.n, 0xcbf29ce484222325ull);
    uint64_t h2 = mix64(fnv1a(key.p, key.n, 0x84222325cbf29ce4ull) ^ h1);
    snprintf(path, sizeof path, "%s/%016llx%016llx" CACHE_SUFFIX, ag__config.cache_dir,
             (unsigned long long)h1, (unsigned long long)h2);
    hit = cache_read(path, &key, &r->image, &r->size, &r->kind);
    if (hit == 0 && r->kind == kind) {
      r->state = AG_JIT_READY;
      AG_STAT_ADD(ag__stats.jit_cache_hits, 1);
      goto out;
    }
    if (hit == 0) { /* the key names the kind; a file that disagrees is damaged */
      free(r->image), r->image = NULL;
      hit = -AG_ECORRUPT;
    }
    if (hit == -AG_ECORRUPT) {
      AG_STAT_ADD(ag__stats.jit_cache_rejected, 1);
      ag__log(AG_LOG_INFO, "jit: %s is damaged or stale; compiling again", path);
    }
  }
  compile(j, opts, nopt, kind, r);
  if (r->state != AG_JIT_READY) goto out;
  AG_STAT_ADD(ag__stats.jit_compiles, 1);
  if (path[0]) cache_write(ag__config.cache_dir, path, &key, r->image, r->size, kind);
out:
  free(key.p);
}

static void at_exit(void);
static int late_hooks; /* the worker's thread only */

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    ag_jit_t *j;
    result_t r = {.state = AG_JIT_FAILED};
    pthread_mutex_lock(&mu);
    while (!head || closing) pthread_cond_wait(&cv, &mu); /* closing: until the end */
    j = head;
    head = j->next;
    if (!head) tail = NULL;
    j->next = NULL;
    if (j->refs == 1) { /* released while queued: nobody wants it */
      queued--;
      unref(j);
      pthread_mutex_unlock(&mu);
      continue;
    }
    running = j;
    pthread_mutex_unlock(&mu);

    serve(j, &r); /* j's inputs never change once queued: read without the lock */

    if (!late_hooks) {
      /* NVRTC is loaded and has compiled (its own libraries too): the exit handler, registered
       * again, now runs before their destructors. */
      late_hooks = 1;
      atexit(at_exit);
    }
    pthread_mutex_lock(&mu);
    pthread_cond_broadcast(&idle_cv);
    if (running == j) { /* else a fork's child took it over (never happens in the parent) */
      running = NULL;
      queued--;
      if (r.state == AG_JIT_READY) {
        j->image = r.image, j->size = r.size, j->kind = r.kind;
        j->state = AG_JIT_READY;
        r.image = NULL;
      } else {
        fail(j, r.reason ? r.reason : "out of memory");
      }
      unref(j);
    }
    pthread_mutex_unlock(&mu);
    free(r.image);
    free(r.reason);
  }
  return NULL; /* never reached: the thread lasts as long as the process */
}

/* ---- process events ----------------------------------------------------------------------- */

static void at_exit(void) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += AG_JIT_EXIT_WAIT_MS / 1000;
  pthread_mutex_lock(&mu);
  closing = 1;
  while (running && pthread_cond_timedwait(&idle_cv, &mu, &until) == 0) {
  }
  pthread_mutex_unlock(&mu);
}

static void atfork_prepare(void) { pthread_mutex_lock(&mu); }

static void atfork_parent(void) { pthread_mutex_unlock(&mu); }

static void atfork_child(void) {
  /* The worker is not copied: what it had, and what waited for it, ends here. */
  ag_jit_t *j, *next;
  pthread_mutex_init(&mu, NULL);
  pthread_cond_init(&cv, NULL);
  pthread_cond_init(&idle_cv, NULL);
  for (j = head; j; j = next) {
    next = j->next;
    j->next = NULL;
    fail(j, "abandoned: the process forked while it was pending");
    unref(j);
  }
  if (running) {
    fail(running, "abandoned: the process forked while it was being compiled");
    unref(running);
  }
  head = tail = running = NULL;
  queued = 0, worker_on = 0;
}

static void hooks(void) {
  atexit(at_exit);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* mu held. Starts the worker with every signal blocked, detached. Returns 0 or -1. */
static int start_worker(void) {
  pthread_attr_t attr;
  pthread_t t;
  sigset_t all, old;
  int rc;
  if (worker_on) return 0;
  if (pthread_attr_init(&attr) != 0) return -1;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&t, &attr, worker, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) return -1;
  pthread_setname_np(t, "autograph-jit");
  worker_on = 1;
  return 0;
}

/* ---- the API ------------------------------------------------------------------------------- */

/* The device's compute capability from the current context, or -1. */
static int current_cc(void) {
  CUdevice dev;
  int major = 0, minor = 0;
  if (!ag__real_ready() || !ag__real.cuCtxGetDevice || !ag__real.cuDeviceGetAttribute ||
      ag__real.cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
      ag__real.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
      ag__real.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    return -1;
  return major * 10 + minor;
}

ag_jit_t *ag__jit_submit(const char *source, const char *name, const char *const *options,
                         const char *tag) {
  ag_jit_t *j;
  size_t n = 0, k = 0;
  int saved = errno;
  if (ag__config.disable) return NULL;
  if (!(j = calloc(1, sizeof *j))) return NULL;
  for (const char *const *o = options; o && *o; o++) n++;
  j->refs = 1;
  j->state = AG_JIT_PENDING;
  j->source = strdup(source ? source : "");
  j->name = strdup(name ? name : "");
  j->tag = tag ? strdup(tag) : NULL;
  j->options = calloc(n + 1, sizeof *j->options);
  if (!j->source || !j->name || (tag && !j->tag) || !j->options) goto oom;
  for (const char *const *o = options; o && *o; o++)
    if (**o && !(j->options[k++] = strdup(*o))) goto oom;

  if (!__atomic_load_n(&off, __ATOMIC_ACQUIRE) && (j->cc = current_cc()) < 0)
    fail(j, "no current context, or the driver cannot tell its device");
  if (j->state == AG_JIT_PENDING && !source)
    fail(j, "no source");
  if (j->state != AG_JIT_PENDING) {
    errno = saved;
    return j;
  }
  j->driver_version = ag__real.driver_version;

  pthread_once(&hooks_once, hooks);
  pthread_mutex_lock(&mu);
  if (__atomic_load_n(&off, __ATOMIC_ACQUIRE))
    fail(j, off_why);
  else if (closing)
    fail(j, "the process is exiting");
  else if (queued >= AG_JIT_QUEUE)
    fail(j, "queue full");
  else if (start_worker() != 0)
    fail(j, "cannot start the compiler's thread");
  if (j->state == AG_JIT_PENDING) {
    j->refs++;
    if (tail)
      tail->next = j;
    else
      head = j;
    tail = j;
    queued++;
    pthread_cond_signal(&cv);
  }
  pthread_mutex_unlock(&mu);
  errno = saved;
  return j;
oom:
  free_request(j);
  errno = saved;
  return NULL;
}

int ag__jit_poll(ag_jit_t *h, const void **image, size_t *size, const char **reason) {
  int state;
  pthread_mutex_lock(&mu);
  state = h->state;
  pthread_mutex_unlock(&mu);
  /* Once READY or FAILED the fields below never change again. */
  if (state == AG_JIT_READY) {
    if (image) *image = h->image;
    if (size) *size = h->size;
  } else if (state == AG_JIT_FAILED && reason) {
    *reason = h->reason ? h->reason : "out of memory";
  }
  return state;
}

int ag__jit_kind(ag_jit_t *h) {
  return ag__jit_poll(h, NULL, NULL, NULL) == AG_JIT_READY ? h->kind : -AG_EBUSY;
}

int ag__jit_load(ag_jit_t *h, CUmodule *module, CUfunction *function, int *cu_err) {
  CUmodule m = NULL;
  CUresult r;
  if (ag__jit_poll(h, NULL, NULL, NULL) != AG_JIT_READY) return -AG_EBUSY;
  if (!ag__real.cuModuleLoadData || !ag__real.cuModuleGetFunction) return -AG_ENOENT;
  if ((r = ag__real.cuModuleLoadData(&m, h->image)) == CUDA_SUCCESS &&
      (r = ag__real.cuModuleGetFunction(function, m, h->name)) != CUDA_SUCCESS &&
      ag__real.cuModuleUnload)
    ag__real.cuModuleUnload(m);
  if (cu_err) *cu_err = (int)r;
  if (r != CUDA_SUCCESS) return -AG_ECUDA;
  *module = m;
  return 0;
}

void ag__jit_release(ag_jit_t *h) {
  if (!h) return;
  pthread_mutex_lock(&mu);
  unref(h);
  pthread_mutex_unlock(&mu);
}
