/* fchain.c — generated kernels for elementwise chains in graphs (see fchain.h). */
#define _GNU_SOURCE
#include "fchain.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ag.h"
#include "buildid.h"
#include "config.h"
#include "jit.h"
#include "json.h"
#include "log.h"
#include "real.h"
#include "registry.h"

/* ---- the calibration table, read on a thread of its own ----------------------------------- */

enum { TABLE_UNREAD, TABLE_READING, TABLE_DONE };

static ag_fg_table_t table;        /* written by the reader before TABLE_DONE, then read-only */
static ag_buildid_obj_t table_obj; /* the loaded object the table describes */
static char table_tag[2 * AG_BUILDID_MAX + 1]; /* its build ID: part of every compile's key */
static int table_state;            /* TABLE_…, atomic */
static uint32_t generation;        /* atomic: see ag__fchain_generation */

/* The largest table file read (the pinned wheel's is about 300 KB). */
#define TABLE_MAX_BYTES (64u << 20)

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long size;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && (unsigned long)size <= TABLE_MAX_BYTES &&
      fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1))) {
    if (fread(buf, 1, (size_t)size, f) == (size_t)size) {
      buf[size] = 0;
      *len = (size_t)size;
    } else {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

/* The table at `path`, when the library it describes is loaded: 1 when it was taken. */
static int try_table(const char *path) {
  size_t len = 0;
  char *s = read_file(path, &len), hex[2 * AG_BUILDID_MAX + 1] = "";
  ag_jtok_t *tok = NULL;
  int taken = 0, ntok;
  uint8_t id[AG_BUILDID_MAX];
  if (!s) {
    ag__log(AG_LOG_WARN, "calibration table %s cannot be read", path);
    return 0;
  }
  if ((ntok = ag__json_parse(s, len, NULL, 0)) > 0 && (tok = malloc((size_t)ntok * sizeof *tok))) {
    ag__json_parse(s, len, tok, ntok);
    int lib = ag__json_get(s, tok, 0, "library");
    int bid = lib >= 0 ? ag__json_get(s, tok, lib, "build_id") : -1;
    if (bid >= 0 && tok[bid].type == AG_JSON_STR && tok[bid].end - tok[bid].start < sizeof hex)
      memcpy(hex, s + tok[bid].start, tok[bid].end - tok[bid].start), hex[tok[bid].end - tok[bid].start] = 0;
  }
  int idlen = ag__buildid_parse(hex, id);
  if (idlen <= 0) {
    ag__log(AG_LOG_WARN, "calibration table %s names no library build (library.build_id): not used", path);
  } else if (ag__buildid_find(id, (size_t)idlen, &table_obj) != 0) {
    ag__log(AG_LOG_DEBUG, "calibration table %s: its library (build %s) is not loaded", path, hex);
  } else if (ag__fg_table_load(&table, s, len) != 0) {
    ag__log(AG_LOG_WARN, "calibration table %s is not a calibration table: not used", path);
  } else {
    strcpy(table_tag, hex);
    ag__log(AG_LOG_INFO, "calibration table %s: %d kernels of the loaded library (build %s)", path,
            table.n, hex);
    taken = 1;
  }
  free(tok);
  free(s);
  return taken;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every *.json of `dir`, in name order, until one is taken. */
static void try_folder(const char *dir) {
  DIR *d = opendir(dir);
  char **names = NULL, path[4096];
  size_t n = 0, cap = 0;
  struct dirent *e;
  if (!d) return;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".json")) continue;
    if (n == cap) {
      char **grown = realloc(names, (cap = cap ? 2 * cap : 8) * sizeof *names);
      if (!grown) break;
      names = grown;
    }
    if (!(names[n] = strdup(e->d_name))) break;
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    if (!table.n && snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path) try_table(path);
    free(names[i]);
  }
  free(names);
}

/* What a missing table costs, by AUTOGRAPH_FUSE: at `chains` every chain (a warning); at
 * `exact` the kernel patterns' shapes of the table's builds (src/pattern.h), a note only, since
 * the patterns then keep their own rule. */
static int no_table_level(void) { return ag__config.fuse >= AG_FUSE_CHAINS ? AG_LOG_WARN : AG_LOG_INFO; }

static const char *no_table_means(void) {
  return ag__config.fuse >= AG_FUSE_CHAINS ? "elementwise chains are not fused"
                                           : "kernel patterns accept only the launch shape every PyTorch version shares";
}

/* Where the tables are: AUTOGRAPH_FUSE_TABLES, else the folder `calibration` next to this
 * library (the build tree's layout); "" when neither can be named. */
static const char *table_path(char *buf, size_t size) {
  Dl_info di;
  const char *slash;
  if (*ag__config.fuse_tables) return ag__config.fuse_tables;
  buf[0] = 0;
  if (dladdr((const void *)ag__fchain_get, &di) && di.dli_fname && (slash = strrchr(di.dli_fname, '/')))
    snprintf(buf, size, "%.*s/calibration", (int)(slash - di.dli_fname), di.dli_fname);
  return buf;
}

/* The table is read: no more waiting for it. */
static void table_done(void) {
  __atomic_store_n(&table_state, TABLE_DONE, __ATOMIC_RELEASE);
  __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
}

static void *table_main(void *arg) {
  char dflt[4096];
  const char *p = table_path(dflt, sizeof dflt);
  struct stat st;
  (void)arg;
  if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
    try_folder(p);
  else
    try_table(p);
  if (!table.n)
    ag__log(no_table_level(), "no calibration table in %s describes a loaded library: %s", p,
            no_table_means());
  table_done();
  return NULL;
}

/* The table when read and usable; else NULL, with *pending set while it is being read (the
 * first call starts the reader). */
static const ag_fg_table_t *get_table(int *pending) {
  int st = __atomic_load_n(&table_state, __ATOMIC_ACQUIRE), unread = TABLE_UNREAD;
  if (st == TABLE_DONE) return table.n ? &table : NULL;
  *pending = 1;
  if (st == TABLE_UNREAD &&
      __atomic_compare_exchange_n(&table_state, &unread, TABLE_READING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    /* Nothing there to read: known at once, with no thread (so that a program without a table
     * never runs a graph unfused while waiting for one). */
    char dflt[4096];
    const char *p = table_path(dflt, sizeof dflt);
    struct stat sb;
    if (!*p || stat(p, &sb) != 0) {
      ag__log(no_table_level(), "no calibration table at %s (AUTOGRAPH_FUSE_TABLES): %s", *p ? p : "(unknown)",
              no_table_means());
      table_done();
      *pending = 0;
      return NULL;
    }
    pthread_t t;
    pthread_attr_t a;
    int r = pthread_attr_init(&a);
    if (!r) {
      pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
      r = pthread_create(&t, &a, table_main, NULL);
      pthread_attr_destroy(&a);
    }
    if (r) {
      ag__log(AG_LOG_WARN, "the calibration table cannot be read (no thread): elementwise chains are not fused");
      __atomic_store_n(&table_state, TABLE_DONE, __ATOMIC_RELEASE);
      *pending = 0;
    }
  }
  return NULL;
}

/* ---- the kernels, per shape and context (engine lock) -------------------------------------- */

enum { FK_COMPILING, FK_COMPILED, FK_READY, FK_FAILED };

typedef struct fk {
  uint64_t key;
  void *ctx;
  int state;
  ag_jit_t *h;  /* until loaded or failed */
  CUfunction fn;
} fk_t;

/* Distinct chain shapes kept per process; a chain met when the list is full stays unfused. */
#define AG_FCHAIN_KERNELS 256
static fk_t fks[AG_FCHAIN_KERNELS];
static int nfks;

/* A compilation ended: FK_COMPILED or FK_FAILED. */
static void poll_one(fk_t *f) {
  const char *why = NULL;
  int st = ag__jit_poll(f->h, NULL, NULL, &why);
  if (st == AG_JIT_PENDING) return;
  if (st == AG_JIT_READY) {
    f->state = FK_COMPILED;
  } else {
    ag__log(AG_LOG_WARN, "the kernel of an elementwise chain did not compile: %s", why ? why : "unknown");
    ag__jit_release(f->h);
    f->h = NULL;
    f->state = FK_FAILED;
  }
  __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
}

uint32_t ag__fchain_generation(void) {
  for (int i = 0; i < nfks; i++)
    if (fks[i].state == FK_COMPILING) poll_one(&fks[i]);
  return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

/* Nonzero when kernel k was registered from the table's library: its fatbin (the one its host
 * stub was registered with, else the one that registered its name: a cudaKernel_t or CUfunction
 * handle says nothing of where it came from) lies inside that object. */
static int kernel_from_table_library(const ag_kinfo_t *k) {
  const void *fatbin = k->fatbin;
  if (!fatbin && (!k->name || ag__registry_fatbin_of(k->name, &fatbin))) return 0;
  return (uintptr_t)fatbin >= table_obj.lo && (uintptr_t)fatbin < table_obj.hi;
}

static int from_table_library(const ag_chain_launch_t *l, int n) {
  for (int i = 0; i < n; i++)
    if (!kernel_from_table_library(l[i].k)) return 0;
  return 1;
}

int ag__fchain_block_work(const ag_kinfo_t *k, unsigned *threads) {
  int pending = 0;
  const ag_fg_table_t *t = get_table(&pending);
  const ag_fg_calkernel_t *ck;
  if (!t) return pending ? -1 : 0;
  if (!k->name || !(ck = ag__fg_table_find(t, k->name)) || !ck->block_work || ck->strided ||
      !kernel_from_table_library(k))
    return 0;
  *threads = ck->threads;
  return (int)ck->block_work;
}

void ag__fchain_view(ag_chain_launch_t *l) {
  int pending = 0;
  const ag_fg_table_t *t;
  const ag_fg_calkernel_t *ck;
  l->sdata = 0, l->snt = 0;
  if (!l->args || !ag__chain_strided(l->k) || !(t = get_table(&pending)) ||
      !(ck = ag__fg_table_find(t, l->k->name)) || !ck->strided || !kernel_from_table_library(l->k))
    return;
  l->sdata = ck->data_off, l->snt = ck->tensors;
  if (!ag__chain_member(l)) l->sdata = 0, l->snt = 0; /* the table's place is not in its parameters */
}

static int describe(const ag_fg_table_t *t, const ag_chain_launch_t *l, int n, ag_fg_chain_t *c,
                    int *bad) {
  int r;
  *bad = -1;
  if (!from_table_library(l, n)) {
    ag__log(AG_LOG_DEBUG, "a chain of %d elementwise launches: not all kernels are the calibrated "
            "library's", n);
    return -1;
  }
  if ((r = ag__fg_build(t, l, n, c, bad)) != AG_FG_OK) {
    ag__log(AG_LOG_DEBUG, "a chain of %d elementwise launches is not fused: %s (launch %d, %s)", n,
            ag__fg_reason_name(r), *bad, *bad >= 0 && l[*bad].k->name ? l[*bad].k->name : "-");
    return -1;
  }
  return 0;
}

static CUcontext current_ctx(void) {
  CUcontext c = NULL;
  if (ag__real.cuCtxGetCurrent) ag__real.cuCtxGetCurrent(&c);
  return c;
}

/* Requests the kernel of c's shape for the current context. */
static int submit(fk_t *f, const ag_fg_chain_t *c) {
  char name[32];
  size_t need = ag__fg_emit(c, NULL, 0, name);
  char *src = malloc(need + 1);
  if (!src) return -1;
  ag__fg_emit(c, src, need + 1, name);
  f->h = ag__jit_submit(src, name, NULL, table_tag);
  free(src);
  if (!f->h) return -1;
  f->state = FK_COMPILING;
  ag__log(AG_LOG_DEBUG, "a chain of %d elementwise launches (%d tensors, %d scalars): kernel %s requested",
          c->nops, c->nptrs, c->nscal, name);
  return 0;
}

int ag__fchain_get(const ag_chain_launch_t *l, int n, ag_fg_chain_t *c, CUfunction *fn, int *bad,
                   int request) {
  int pending = 0;
  const ag_fg_table_t *t = get_table(&pending);
  *bad = -1;
  if (!t) return pending ? AG_FCHAIN_PENDING : AG_FCHAIN_NO;
  if (n < 2 || describe(t, l, n, c, bad)) return AG_FCHAIN_NO;
  uint64_t key = ag__fg_key(c);
  void *ctx = current_ctx();
  fk_t *f = NULL;
  for (int i = 0; i < nfks && !f; i++)
    if (fks[i].key == key && fks[i].ctx == ctx) f = &fks[i];
  if (!f) {
    if (!ctx || nfks == AG_FCHAIN_KERNELS) return AG_FCHAIN_NO;
    /* Not yet steady; or the compiler's queue is full (a chain requested later, once a
     * compilation has ended, rather than failed for good). */
    if (!request || ag__jit_full()) return AG_FCHAIN_LATER;
    f = &fks[nfks];
    memset(f, 0, sizeof *f);
    f->key = key, f->ctx = ctx;
    if (submit(f, c)) return AG_FCHAIN_NO;
    nfks++;
  }
  if (f->state == FK_COMPILING) poll_one(f);
  if (f->state == FK_COMPILED) {
    CUmodule mod;
    int err = 0;
    if (ag__jit_load(f->h, &mod, &f->fn, &err) == 0) {
      f->state = FK_READY;
      ag__log(AG_LOG_DEBUG, "a chain of %d elementwise launches: its generated kernel is ready", n);
    } else {
      ag__log(AG_LOG_WARN, "the kernel of an elementwise chain did not load (CUDA error %d)", err);
      f->state = FK_FAILED;
    }
    ag__jit_release(f->h);
    f->h = NULL;
  }
  if (f->state == FK_COMPILING) return AG_FCHAIN_PENDING;
  if (f->state != FK_READY) return AG_FCHAIN_NO;
  *fn = f->fn;
  return AG_FCHAIN_READY;
}

int ag__fchain_redescribe(const ag_chain_launch_t *l, int n, const ag_fg_chain_t *was,
                          ag_fg_chain_t *c) {
  int pending = 0, bad;
  const ag_fg_table_t *t = get_table(&pending);
  if (!t || describe(t, l, n, c, &bad)) return -1;
  /* The same kernel computes it when the operations (kinds, types, operands, which tensor each
   * writes and which scalar each takes) and the tensors' roles are the same: every byte of
   * those records is a field (no padding), and build zeroes the description first. */
  if (c->fills != was->fills || c->nops != was->nops || c->nptrs != was->nptrs || c->nscal != was->nscal ||
      memcmp(c->op, was->op, (size_t)c->nops * sizeof c->op[0]) ||
      memcmp(c->ptr_dt, was->ptr_dt, (size_t)c->nptrs) ||
      memcmp(c->ptr_loaded, was->ptr_loaded, (size_t)c->nptrs) ||
      memcmp(c->ptr_written, was->ptr_written, (size_t)c->nptrs) ||
      memcmp(c->ptr_acc, was->ptr_acc, (size_t)c->nptrs) || c->nacc != was->nacc || c->ng != was->ng)
    return -1;
  /* The walks' dimensions and bases shape the source; their sizes and strides are parameters. */
  for (int k = 0; k < c->nacc; k++)
    if (c->acc[k].dims != was->acc[k].dims || c->acc[k].base != was->acc[k].base) return -1;
  return 0;
}

void ag__fchain_params(const ag_fg_chain_t *c, uint8_t *buf, size_t *n_off, size_t *a_off) {
  memset(buf, 0, AG_FCHAIN_PARAM_BYTES);
  memcpy(buf, &c->n, 4);
  memcpy(buf + 8, c->ptr, 8 * (size_t)c->nptrs);
  memcpy(buf + 8 + 8 * (size_t)c->nptrs, c->scal, 4 * (size_t)c->nscal);
  memcpy(buf + 8 + 8 * (size_t)c->nptrs + 4 * (size_t)c->nscal, c->g, 4 * (size_t)c->ng);
  *n_off = 0, *a_off = 8;
}

void ag__fchain_shape(const ag_fg_chain_t *c, unsigned grid[3], unsigned block[3]) {
  unsigned blocks = c->n > 0 ? (unsigned)(((int64_t)c->n + 255) / 256) : 1;
  grid[0] = blocks < 65535 ? blocks : 65535, grid[1] = c->fills ? (unsigned)c->nops : 1, grid[2] = 1;
  block[0] = 256, block[1] = block[2] = 1;
}

void ag__fchain_ctx_gone(void *ctx) {
  for (int i = 0; i < nfks;) {
    if (ctx && fks[i].ctx != ctx) {
      i++;
      continue;
    }
    if (fks[i].h) ag__jit_release(fks[i].h);
    fks[i] = fks[--nfks];
  }
}
