/* dump.c — AUTOGRAPH_DUMP, the document of detected sequences (see dump.h, docs/dump-and-report.md).
 *
 * What the sequence table does not keep is kept here, from the engine's hooks: the kernel and
 * shape behind each structural hash (copied, since a kernel record is freed when its module is
 * unloaded), why a sequence was demoted, which parameters replays updated once its graph is gone,
 * and one pseudo-sequence per denied kernel and shape. All of it is written under the engine
 * lock and read by the snapshot under the same lock; the snapshot copies what it needs, so that
 * formatting and writing the file happen outside the lock. Shape entries are never freed, so the
 * snapshot may point to them.
 */
#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "config.h"
#include "engine.h"
#include "graph.h"
#include "json.h"
#include "log.h"
#include "real.h"
#include "stats.h"

int ag__dump_armed;

/* ---- what the engine told us (engine lock) ---------------------------------------------- */

typedef struct shape {
  uint64_t h; /* key: structural hash (denied: kernel id and shape) */
  char *name;
  int path;
  int kind; /* ag_kinfo_t.fkind: a kernel, or a held stream operation (AG_OP_…) */
  const char *lib_call;
  unsigned grid[3], block[3], shmem;
  uint32_t nparams;
  uint32_t *sizes;
  UT_hash_handle hh;
} shape_t;

typedef struct denied {
  shape_t sh; /* sh.h is the key */
  int64_t id;
  uint64_t seen;
  int nccl;
  UT_hash_handle hh;
} denied_t;

typedef struct rec {
  const ag_seq_t *s; /* key */
  char reason[96];
  int evicted;
  void *stream; /* the stream its latest replay ran on, when replayed */
  int replayed;
  int nchunks;  /* the chunks of its latest graph, kept for when the graph is gone */
  int *chunks;
  int n;
  uint64_t *varied; /* 2 * n, as ag__graph_varied */
  UT_hash_handle hh;
} rec_t;

static shape_t *shapes;
static denied_t *denieds;
static rec_t *recs;
static int nshapes;

static void fill_shape(shape_t *sh, const ag_kinfo_t *k, const ag_launch_t *l, int path,
                       const char *lib_call) {
  sh->name = strdup(k->name ? k->name : "");
  sh->path = path;
  sh->kind = k->fkind;
  sh->lib_call = lib_call;
  memcpy(sh->grid, l->grid, sizeof sh->grid);
  memcpy(sh->block, l->block, sizeof sh->block);
  sh->shmem = l->shmem;
  sh->nparams = 0;
  sh->sizes = k->nparams ? malloc(k->nparams * sizeof *sh->sizes) : NULL;
  if (sh->sizes) {
    sh->nparams = k->nparams;
    for (uint32_t i = 0; i < k->nparams; i++) sh->sizes[i] = k->params[i].size;
  }
}

void ag__dump_shape(uint64_t h, const ag_kinfo_t *k, const ag_launch_t *l, int path,
                    const char *lib_call) {
  shape_t *sh;
  HASH_FIND(hh, shapes, &h, sizeof h, sh);
  if (sh || nshapes >= AG_DUMP_MAX_SHAPES || !(sh = calloc(1, sizeof *sh))) return;
  sh->h = h;
  fill_shape(sh, k, l, path, lib_call);
  HASH_ADD(hh, shapes, h, sizeof sh->h, sh);
  nshapes++;
}

/* One pseudo-sequence per denied kernel, block and shared memory size: the grid is no more part
 * of it than of a launch's structure (src/engine.c), so a denied kernel whose grid follows the
 * data is one entry, not one per grid; the entry shows the grid of its first launch. */
void ag__dump_denied(const ag_kinfo_t *k, const ag_launch_t *l, int path, const char *lib_call) {
  denied_t *d;
  uint64_t h = ag__shape_hash(k->id ^ 0xd0d0d0d000000000ull, l->block, l->shmem);
  HASH_FIND(hh, denieds, &h, sizeof h, d);
  if (!d) {
    if (nshapes >= AG_DUMP_MAX_SHAPES || !(d = calloc(1, sizeof *d))) return;
    d->sh.h = h;
    fill_shape(&d->sh, k, l, path, lib_call);
    d->id = -(int64_t)(HASH_COUNT(denieds) + 1);
    d->nccl = ag__kinfo_is_nccl(k->name);
    HASH_ADD(hh, denieds, sh.h, sizeof d->sh.h, d);
    nshapes++;
  }
  d->seen++;
}

static rec_t *rec_of(const ag_seq_t *s) {
  rec_t *r;
  HASH_FIND(hh, recs, &s, sizeof s, r);
  if (r || !(r = calloc(1, sizeof *r))) return r;
  r->s = s;
  HASH_ADD(hh, recs, s, sizeof r->s, r);
  return r;
}

void ag__dump_demoted(const ag_seq_t *s, const char *why) {
  rec_t *r = rec_of(s);
  if (r) snprintf(r->reason, sizeof r->reason, "%s", why ? why : "");
}

/* Keeps the chunk starts of s's graph in r (unchanged ones are not copied again). */
static void keep_chunks(rec_t *r, const ag_seq_t *s) {
  const int *st;
  int nc = s->graph ? ag__graph_chunks(s->graph, &st) : 0;
  if (nc <= 0 || (nc == r->nchunks && !memcmp(r->chunks, st, (size_t)nc * sizeof *st))) return;
  int *c = realloc(r->chunks, (size_t)nc * sizeof *c);
  if (!c) return; /* out of memory: the dump keeps the chunks it had */
  memcpy(c, st, (size_t)nc * sizeof *c);
  r->chunks = c, r->nchunks = nc;
}

void ag__dump_replayed(const ag_seq_t *s, void *stream) {
  rec_t *r = rec_of(s);
  if (!r) return;
  r->stream = stream, r->replayed = 1;
  keep_chunks(r, s);
}

void ag__dump_graph_gone(const ag_seq_t *s, int evicted) {
  rec_t *r = rec_of(s);
  if (!r) return;
  if (evicted) r->evicted = 1;
  if (!s->graph) return;
  keep_chunks(r, s);
  if (!r->varied) {
    /* Out of memory: the dump does without this sequence's varied arguments. */
    if (!(r->varied = calloc(2 * (size_t)s->n, sizeof *r->varied))) return;
    r->n = s->n;
  }
  for (int i = 0; i < r->n; i++) {
    uint64_t c, v;
    ag__graph_varied(s->graph, i, &c, &v);
    r->varied[2 * i] |= c, r->varied[2 * i + 1] |= v;
  }
}

void ag__dump_seq_freed(const ag_seq_t *s) {
  rec_t *r;
  HASH_FIND(hh, recs, &s, sizeof s, r);
  if (!r) return;
  HASH_DEL(recs, r);
  free(r->varied), free(r->chunks), free(r);
}

/* ---- the snapshot (engine lock) --------------------------------------------------------- */

typedef struct snap_seq {
  int64_t id;
  uint64_t hash, seen, replays, replayed;
  int n;
  const char *state;
  char reason[128]; /* empty: null */
  double launch_mean, replay_mean, saved; /* NAN: null */
  int nk, omitted;
  int cycle, pieces; /* a run of repetitions of a cycle (ag_seq_t.unit): its length, pieces */
  void *stream;      /* of its latest replay */
  int has_stream;
  int nchunks;       /* the first node of each chunk of its graph; 0: no graph */
  int *chunks;
  const shape_t **k;
  const shape_t *one; /* the kernel of a denied pseudo-sequence */
  uint64_t *varied;   /* 2 * nk */
} snap_seq_t;

typedef struct snap {
  int why;
  char *totals; /* the AUTOGRAPH_STATS JSON */
  int driver_version;
  int (*runtime_version)(int *);
  size_t total;
  snap_seq_t *seqs;
  size_t nseqs;
  double launch_ns;
  int oom;
  ag_run_t *runs; /* the last AG_DUMP_RUNS runs, oldest first */
  size_t nruns;
  uint64_t runs_total;
} snap_t;

typedef struct light {
  const ag_seq_t *s; /* or NULL: */
  const denied_t *d;
  double saved;
  int64_t id;
} light_t;

static double saved_of(const ag_seq_t *s, double launch_ns) {
  if (!s->replays || launch_ns <= 0) return 0;
  return (double)s->replays * (launch_ns * s->n - s->replay_ns);
}

/* Where the next light_t goes, and the end of the array counted for them: the listing never
 * writes past what was counted, and only what it wrote is read. */
typedef struct cursor {
  light_t *at, *end;
} cursor_t;

static void count_one(ag_seq_t *s, void *arg) {
  cursor_t *c = arg;
  if (c->at == c->end) return;
  c->at->s = s, c->at->d = NULL, c->at->id = s->id;
  c->at++;
}

static int by_saved(const void *a, const void *b) {
  const light_t *x = a, *y = b;
  if (x->saved != y->saved) return x->saved < y->saved ? 1 : -1;
  /* Then sequences before denied kernels, each in the order first seen. */
  if ((x->id < 0) != (y->id < 0)) return x->id < 0 ? 1 : -1;
  if (x->id < 0) return x->id < y->id ? 1 : x->id > y->id ? -1 : 0;
  return x->id < y->id ? -1 : x->id > y->id ? 1 : 0;
}

static const char *state_of(const ag_seq_t *s, const rec_t *r) {
  switch (s->state) {
  case AG_SEQ_READY: return "graphed";
  case AG_SEQ_DEMOTED: return "demoted";
  case AG_SEQ_COUNTING: if (r && r->evicted) return "evicted"; /* fall through */
  default: return "learning";
  }
}

static void fill_seq(snap_seq_t *o, const ag_seq_t *s, double launch_ns) {
  rec_t *r;
  HASH_FIND(hh, recs, &s, sizeof s, r);
  o->id = s->id, o->hash = s->key.hash, o->n = s->n;
  o->seen = s->count, o->replays = s->replays, o->replayed = s->replayed;
  o->cycle = s->unit, o->pieces = s->npieces;
  o->state = state_of(s, r);
  if (r && r->replayed) o->stream = r->stream, o->has_stream = 1;
  /* The graph's chunks; those of its latest graph when it is gone (released at exit, say). */
  const int *st = NULL;
  int nc = s->graph ? ag__graph_chunks(s->graph, &st) : 0;
  if (nc <= 0 && r) st = r->chunks, nc = r->nchunks;
  if (nc > 0 && (o->chunks = malloc((size_t)nc * sizeof *o->chunks)) != NULL) {
    memcpy(o->chunks, st, (size_t)nc * sizeof *o->chunks);
    o->nchunks = nc;
  }
  if (s->state == AG_SEQ_DEMOTED && r && r->reason[0])
    snprintf(o->reason, sizeof o->reason, "%s", r->reason);
  else if (!strcmp(o->state, "evicted"))
    snprintf(o->reason, sizeof o->reason,
             "graph cache full (AUTOGRAPH_MAX_GRAPHS / AUTOGRAPH_MAX_GRAPH_MB)");
  o->launch_mean = launch_ns > 0 ? launch_ns * s->n : NAN;
  o->replay_mean = s->replays ? s->replay_ns : NAN;
  o->saved = saved_of(s, launch_ns);
  o->nk = s->n < AG_DUMP_MAX_KERNELS ? s->n : AG_DUMP_MAX_KERNELS;
  o->omitted = s->n - o->nk;
  o->k = calloc((size_t)o->nk, sizeof *o->k);
  o->varied = calloc(2 * (size_t)o->nk, sizeof *o->varied);
  if (!o->k || !o->varied) {
    free(o->k), free(o->varied);
    o->k = NULL, o->varied = NULL, o->omitted = s->n, o->nk = 0;
    return;
  }
  for (int i = 0; i < o->nk; i++) {
    shape_t *sh;
    uint64_t c, v;
    HASH_FIND(hh, shapes, &s->hashes[i], sizeof s->hashes[i], sh);
    o->k[i] = sh;
    ag__graph_varied(s->graph, i, &c, &v);
    if (r && r->varied && i < r->n) c |= r->varied[2 * i], v |= r->varied[2 * i + 1];
    o->varied[2 * i] = c, o->varied[2 * i + 1] = v;
  }
}

static void fill_denied(snap_seq_t *o, const denied_t *d) {
  o->id = d->id, o->hash = d->sh.h, o->n = 1;
  o->seen = d->seen, o->replays = 0, o->replayed = 0;
  o->state = "denied";
  snprintf(o->reason, sizeof o->reason, "%s",
           d->nccl ? "NCCL kernel: its progress depends on other ranks"
                   : "matches AUTOGRAPH_DENY");
  o->launch_mean = o->replay_mean = NAN;
  o->saved = 0;
  o->one = &d->sh;
  o->nk = 1;
}

static void take(ag_seqtab_t *t, double launch_ns, void *arg) {
  snap_t *sn = arg;
  size_t nseq = t ? ag__seqtab_count(t) : 0, n = nseq + HASH_COUNT(denieds), cap;
  light_t *all = NULL;
  cursor_t c;
  size_t need = 1 << 16;

  sn->launch_ns = launch_ns;
  sn->driver_version = ag__real.driver_version;
  sn->runtime_version = ag__real.cudaRuntimeGetVersion;
  /* The totals come from the same moment as the sequences: replayed equals their sum. */
  for (int tries = 0; tries < 2; tries++) {
    free(sn->totals);
    if (!(sn->totals = malloc(need))) break;
    size_t len = ag__stats_json(sn->totals, need);
    if (len < need) break;
    need = len + 1;
  }
  if ((sn->runs = malloc(AG_DUMP_RUNS * sizeof *sn->runs)) != NULL)
    sn->nruns = ag__stats_runs(sn->runs, AG_DUMP_RUNS, &sn->runs_total);
  if (!n) return; /* nothing to list (sn->total and sn->nseqs stay 0) */
  if (!(all = malloc(n * sizeof *all))) {
    sn->oom = 1;
    return;
  }
  c.at = all, c.end = all + n;
  if (t) ag__seqtab_each(t, count_one, &c);
  for (denied_t *d = denieds; d && c.at < c.end; d = d->hh.next)
    c.at->s = NULL, c.at->d = d, c.at->id = d->id, c.at++;
  n = (size_t)(c.at - all);
  for (size_t i = 0; i < n; i++) all[i].saved = all[i].s ? saved_of(all[i].s, launch_ns) : 0;
  qsort(all, n, sizeof *all, by_saved);
  sn->total = n;
  cap = n < (size_t)ag__config.dump_max_seq ? n : (size_t)ag__config.dump_max_seq;
  if (cap && !(sn->seqs = calloc(cap, sizeof *sn->seqs))) {
    sn->oom = 1;
    free(all);
    return;
  }
  for (size_t i = 0; i < cap; i++) {
    if (all[i].s)
      fill_seq(&sn->seqs[i], all[i].s, launch_ns);
    else
      fill_denied(&sn->seqs[i], all[i].d);
  }
  sn->nseqs = cap;
  free(all);
}

static void snap_free(snap_t *sn) {
  for (size_t i = 0; i < sn->nseqs; i++)
    free(sn->seqs[i].k), free(sn->seqs[i].varied), free(sn->seqs[i].chunks);
  free(sn->seqs);
  free(sn->totals);
  free(sn->runs);
}

/* ---- formatting (no lock) --------------------------------------------------------------- */

static void num(ag_json_t *j, double v) {
  char tmp[40];
  if (isnan(v) || isinf(v))
    ag__json_raw(j, "null");
  else
    snprintf(tmp, sizeof tmp, "%.1f", v), ag__json_raw(j, tmp);
}

static void i64(ag_json_t *j, int64_t v) {
  char tmp[24];
  snprintf(tmp, sizeof tmp, "%lld", (long long)v);
  ag__json_raw(j, tmp);
}

static void triple(ag_json_t *j, const unsigned *v) {
  ag__json_begin(j, '[');
  for (int i = 0; i < 3; i++) ag__json_u64(j, v[i]);
  ag__json_end(j, ']');
}

static const char *const path_names[AG_PATH_COUNT_] = {"runtime", "driver", "cudnn"};

/* What a node of the graph is: a kernel, or the stream operation it holds. */
static const char *node_kind(const shape_t *sh) {
  switch (sh ? sh->kind : 0) {
  case AG_OP_MEMSET: return "memset";
  case AG_OP_MEMCPY: return "memcpy";
  case AG_OP_EVENT_RECORD: return "event_record";
  case AG_OP_EVENT_WAIT: return "event_wait";
  default: return "kernel";
  }
}

static void kernel(ag_json_t *j, int position, const shape_t *sh, uint64_t changed,
                   uint64_t value) {
  static const unsigned zero[3];
  ag__json_begin(j, '{');
  ag__json_key(j, "position"), ag__json_u64(j, (uint64_t)position);
  ag__json_key(j, "node"), ag__json_str(j, node_kind(sh));
  ag__json_key(j, "name"), ag__json_str(j, sh ? sh->name : "");
  /* Demangling needs the C++ runtime, which the preload library does not link: the report
   * tool demangles. */
  ag__json_key(j, "demangled"), ag__json_str(j, sh ? sh->name : "");
  ag__json_key(j, "path"), ag__json_str(j, sh ? path_names[sh->path] : "runtime");
  ag__json_key(j, "cudnn_call");
  if (sh && sh->lib_call)
    ag__json_str(j, sh->lib_call);
  else
    ag__json_raw(j, "null");
  ag__json_key(j, "grid"), triple(j, sh ? sh->grid : zero);
  ag__json_key(j, "block"), triple(j, sh ? sh->block : zero);
  ag__json_key(j, "shmem"), ag__json_u64(j, sh ? sh->shmem : 0);
  ag__json_key(j, "param_sizes");
  ag__json_begin(j, '[');
  for (uint32_t i = 0; sh && i < sh->nparams; i++) ag__json_u64(j, sh->sizes[i]);
  ag__json_end(j, ']');
  ag__json_key(j, "varied");
  ag__json_begin(j, '[');
  for (int i = 0; i < 64; i++) {
    if (!(changed >> i & 1)) continue;
    ag__json_begin(j, '{');
    ag__json_key(j, "index"), ag__json_u64(j, (uint64_t)i);
    ag__json_key(j, "kind"), ag__json_str(j, value >> i & 1 ? "value" : "pointer");
    ag__json_end(j, '}');
  }
  ag__json_end(j, ']');
  ag__json_end(j, '}');
}

/* argv from /proc/self/cmdline (empty when unreadable). */
static void argv_of(ag_json_t *j) {
  char buf[8192];
  ssize_t n = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
  }
  ag__json_begin(j, '[');
  if (n > 0) {
    buf[n] = 0;
    for (char *a = buf; a < buf + n; a += strlen(a) + 1) ag__json_str(j, a);
  }
  ag__json_end(j, ']');
}

static void u64_or_null(ag_json_t *j, int known, uint64_t v) {
  if (known)
    ag__json_u64(j, v);
  else
    ag__json_raw(j, "null");
}

/* "runs_total" and "runs": the last runs of launches between two cuts, oldest first. */
static void runs_json(ag_json_t *j, const snap_t *sn) {
  static const char *const outcomes[] = {"replayed", "cut", "passed"};
  ag__json_key(j, "runs_total"), ag__json_u64(j, sn->runs_total);
  ag__json_key(j, "runs");
  ag__json_begin(j, '[');
  for (size_t i = 0; i < sn->nruns; i++) {
    const ag_run_t *r = &sn->runs[i];
    ag__json_begin(j, '{');
    ag__json_key(j, "sequence"), u64_or_null(j, r->seq, r->seq);
    ag__json_key(j, "length"), u64_or_null(j, r->seq, r->len);
    ag__json_key(j, "launches"), ag__json_u64(j, r->n);
    ag__json_key(j, "outcome"), ag__json_str(j, outcomes[r->outcome < 3 ? r->outcome : 2]);
    ag__json_key(j, "calls");
    ag__json_begin(j, '[');
    for (int k = 0; k < r->nnames; k++) ag__json_str(j, r->names[k]);
    ag__json_end(j, ']');
    ag__json_end(j, '}');
  }
  ag__json_end(j, ']');
}

static size_t format(const snap_t *sn, char *buf, size_t size) {
  static const char *const whys[] = {"exit", "signal", "interval"};
  ag_json_t j;
  char tmp[64];
  int rv = 0;

  ag__json_init(&j, buf, size);
  ag__json_begin(&j, '{');
  ag__json_key(&j, "schema"), ag__json_str(&j, "autograph-dump");
  ag__json_key(&j, "version"), ag__json_u64(&j, 3);
  ag__json_key(&j, "written_at"), ag__json_str(&j, whys[sn->why]);
  ag__json_key(&j, "process");
  ag__json_begin(&j, '{');
  ag__json_key(&j, "pid"), i64(&j, getpid());
  ag__json_key(&j, "argv"), argv_of(&j);
  ag__json_key(&j, "runtime_version");
  if (sn->runtime_version && sn->runtime_version(&rv) == 0 && rv > 0)
    i64(&j, rv);
  else
    ag__json_raw(&j, "null");
  ag__json_key(&j, "driver_version");
  if (sn->driver_version > 0)
    i64(&j, sn->driver_version);
  else
    ag__json_raw(&j, "null");
  ag__json_key(&j, "options");
  ag__json_begin(&j, '{');
  for (int o = 0; o < AG_OPT_COUNT_; o++) {
    char val[4200];
    ag__config_value(&ag__config, (ag_option_t)o, val, sizeof val);
    ag__json_key(&j, ag__config_name((ag_option_t)o)), ag__json_str(&j, val);
  }
  ag__json_end(&j, '}');
  ag__json_end(&j, '}');
  ag__json_key(&j, "totals"), ag__json_raw(&j, sn->totals && sn->totals[0] ? sn->totals : "{}");
  ag__json_key(&j, "truncated"), ag__json_raw(&j, sn->total > sn->nseqs ? "true" : "false");
  ag__json_key(&j, "sequences_omitted"), ag__json_u64(&j, sn->total - sn->nseqs);
  ag__json_key(&j, "sequences");
  ag__json_begin(&j, '[');
  for (size_t i = 0; i < sn->nseqs; i++) {
    const snap_seq_t *q = &sn->seqs[i];
    ag__json_begin(&j, '{');
    ag__json_key(&j, "id"), i64(&j, q->id);
    snprintf(tmp, sizeof tmp, "%016llx", (unsigned long long)q->hash);
    ag__json_key(&j, "hash"), ag__json_str(&j, tmp);
    ag__json_key(&j, "length"), ag__json_u64(&j, (uint64_t)q->n);
    ag__json_key(&j, "seen"), ag__json_u64(&j, q->seen);
    ag__json_key(&j, "replays"), ag__json_u64(&j, q->replays);
    ag__json_key(&j, "launches_replayed"), ag__json_u64(&j, q->replayed);
    ag__json_key(&j, "state"), ag__json_str(&j, q->state);
    ag__json_key(&j, "reason");
    if (q->reason[0])
      ag__json_str(&j, q->reason);
    else
      ag__json_raw(&j, "null");
    ag__json_key(&j, "host_ns");
    ag__json_begin(&j, '{');
    ag__json_key(&j, "launch_mean"), num(&j, q->launch_mean);
    ag__json_key(&j, "replay_mean"), num(&j, q->replay_mean);
    ag__json_end(&j, '}');
    ag__json_key(&j, "saved_ns_est"), num(&j, q->saved);
    ag__json_key(&j, "repeats");
    if (q->cycle) {
      ag__json_begin(&j, '{');
      ag__json_key(&j, "cycle_length"), ag__json_u64(&j, (uint64_t)q->cycle);
      ag__json_key(&j, "pieces"), ag__json_u64(&j, (uint64_t)q->pieces);
      ag__json_key(&j, "times"), ag__json_u64(&j, (uint64_t)(q->n / q->cycle));
      ag__json_end(&j, '}');
    } else {
      ag__json_raw(&j, "null");
    }
    ag__json_key(&j, "stream");
    if (q->has_stream)
      snprintf(tmp, sizeof tmp, "0x%llx", (unsigned long long)(uintptr_t)q->stream),
          ag__json_str(&j, tmp);
    else
      ag__json_raw(&j, "null");
    ag__json_key(&j, "chunks");
    if (q->nchunks) {
      ag__json_begin(&j, '[');
      for (int c = 0; c < q->nchunks; c++) ag__json_u64(&j, (uint64_t)q->chunks[c]);
      ag__json_end(&j, ']');
    } else {
      ag__json_raw(&j, "null");
    }
    ag__json_key(&j, "kernels_omitted"), ag__json_u64(&j, (uint64_t)q->omitted);
    ag__json_key(&j, "kernels");
    ag__json_begin(&j, '[');
    if (q->one)
      kernel(&j, 0, q->one, 0, 0);
    else
      for (int k = 0; k < q->nk; k++)
        kernel(&j, k, q->k[k], q->varied[2 * k], q->varied[2 * k + 1]);
    ag__json_end(&j, ']');
    ag__json_end(&j, '}');
  }
  ag__json_end(&j, ']');
  runs_json(&j, sn);
  ag__json_end(&j, '}');
  return ag__json_finish(&j);
}

static size_t render(const snap_t *sn, char **out) {
  size_t cap = 1 << 16, n = 0;
  char *buf = NULL;
  *out = NULL;
  for (int tries = 0; tries < 2; tries++) {
    free(buf);
    if (!(buf = malloc(cap))) return 0;
    n = format(sn, buf, cap);
    if (n < cap) break;
    cap = n + 1;
  }
  *out = buf;
  return n;
}

size_t ag__dump_render(ag_seqtab_t *t, double launch_ns, int why, char **out) {
  snap_t sn = {.why = why};
  size_t n = 0;
  take(t, launch_ns, &sn);
  if (!sn.oom) n = render(&sn, out);
  else *out = NULL;
  snap_free(&sn);
  return n;
}

/* ---- writing ------------------------------------------------------------------------------ */

static pthread_mutex_t writing = PTHREAD_MUTEX_INITIALIZER;
static int warned;

static void warn_once(const char *path, const char *what) {
  if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  ag__log(AG_LOG_WARN, "cannot write the dump to %s: %s", path, what);
}

void ag__dump_write(int why) {
  int saved = errno;
  snap_t sn = {.why = why};
  char path[sizeof ag__config.dump_path + 256], tmp[sizeof path + 8], *doc = NULL;
  size_t n;
  int touched;

  if (!ag__dump_armed) return;
  /* One writer at a time; a periodic or signalled dump that finds one running is not needed.
   * The exit dump waits for a running one, but not forever: a child forked while another
   * thread was writing inherits the mutex locked. */
  if (why == AG_DUMP_EXIT) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    if (pthread_mutex_timedlock(&writing, &until)) goto out;
  } else if (pthread_mutex_trylock(&writing)) {
    goto out;
  }
  /* A process that launched no kernel (a shell or launcher run preloaded, a forked child)
   * does not replace a real dump, as for AUTOGRAPH_STATS (ag__report_path). */
  touched = __atomic_load_n(&ag__stats.launches, __ATOMIC_RELAXED) != 0;
  if (ag__report_path(ag__config.dump_path, touched, path, sizeof path) <= 0) goto unlock;
  ag__engine_snapshot(take, &sn);
  n = sn.oom ? 0 : render(&sn, &doc);
  snap_free(&sn);
  if (!doc) {
    warn_once(path, "out of memory");
    goto unlock;
  }
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0 || ag__write_all(fd, doc, n) < 0 || ag__write_all(fd, "\n", 1) < 0) {
    warn_once(path, strerror(errno));
    if (fd >= 0) close(fd), unlink(tmp);
  } else if (close(fd) < 0 || rename(tmp, path) < 0) {
    warn_once(path, strerror(errno));
    unlink(tmp);
  }
  free(doc);
unlock:
  pthread_mutex_unlock(&writing);
out:
  errno = saved;
}

/* ---- triggers ----------------------------------------------------------------------------- */

static int signalled; /* atomic: set by the handler, taken by one poller */
static uint64_t next_due; /* CLOCK_MONOTONIC ns of the next periodic dump, 0: none */

static void on_usr1(int sig) {
  (void)sig;
  /* Only this (a lock-free store is async-signal-safe): the next intercepted call writes. */
  __atomic_store_n(&signalled, 1, __ATOMIC_RELAXED);
}

void ag__dump_init(void) {
  struct sigaction old, sa;
  if (!ag__config.dump_path[0]) return;
  /* Only when the program has no handler of its own; a handler it installs later wins. */
  if (sigaction(SIGUSR1, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
      old.sa_handler == SIG_DFL) {
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
      ag__log(AG_LOG_DEBUG, "dump: no SIGUSR1 handler (%s)", strerror(errno));
  }
  if (ag__config.dump_interval > 0)
    next_due = ag__now_ns() + (uint64_t)ag__config.dump_interval * 1000000000ull;
  __atomic_store_n(&ag__dump_armed, 1, __ATOMIC_RELEASE);
  __atomic_fetch_or(&ag__hooks, AG_HOOK_DUMP, __ATOMIC_RELEASE);
}

void ag__dump_poll(int ordering) {
  static __thread unsigned tick;
  int saved;
  if (__atomic_load_n(&signalled, __ATOMIC_RELAXED)) {
    if (!__atomic_exchange_n(&signalled, 0, __ATOMIC_RELAXED)) return;
    saved = errno;
    ag__dump_write(AG_DUMP_SIGNAL);
    errno = saved;
    return;
  }
  uint64_t due = __atomic_load_n(&next_due, __ATOMIC_RELAXED);
  if (!due || (!ordering && (++tick & 63))) return;
  saved = errno;
  uint64_t now = ag__now_ns();
  if (now >= due &&
      __atomic_compare_exchange_n(&next_due, &due,
                                  now + (uint64_t)ag__config.dump_interval * 1000000000ull, 0,
                                  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ag__dump_write(AG_DUMP_INTERVAL);
  errno = saved;
}
