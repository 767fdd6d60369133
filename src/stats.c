/* stats.c — counters and the exit report (see stats.h).
 *
 * Per-name counters live in the entry points' tables; several table entries may carry the same
 * name (one driver function at several ABI versions), so the report merges equal names. The
 * report is built in a fixed buffer first, then written with one open/write/close: an
 * unwritable path costs one warning, never a hang (O_NONBLOCK on open) or a crash.
 */
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "json.h"
#include "log.h"

ag_stats_t ag__stats;

static const char *const family_names[AG_FAM_COUNT_] = {
#define AG_FAMILY_NAME_(id, name) name,
    AG_FAMILY_MAP(AG_FAMILY_NAME_)
#undef AG_FAMILY_NAME_
};

static const char *const fallback_names[AG_FB_COUNT_] = {
#define AG_FALLBACK_NAME_(id, name) name,
    AG_FALLBACK_MAP(AG_FALLBACK_NAME_)
#undef AG_FALLBACK_NAME_
};

static const char *const path_names[AG_PATH_COUNT_] = {"runtime", "driver", "cudnn"};

static struct {
  ag_call_t *calls;
  size_t n;
} tables[16];
static int ntables;

int ag__stats_register(ag_call_t *calls, size_t n) {
  int i = __atomic_fetch_add(&ntables, 1, __ATOMIC_RELAXED);
  if (i >= (int)AG_ARRAY_SIZE(tables)) return -AG_ENOMEM;
  tables[i].calls = calls;
  tables[i].n = n;
  return 0;
}

/* Fused-pattern counters: a slot is claimed once by storing its name (compare-and-swap), so
 * counting needs no lock; names are compared by content since each owner passes a literal. */
static struct {
  const char *name;
  uint64_t count;
} patterns[AG_STATS_PATTERNS];

static int pattern_slot(const char *pattern, int claim) {
  for (int i = 0; i < AG_STATS_PATTERNS; i++) {
    const char *have = __atomic_load_n(&patterns[i].name, __ATOMIC_ACQUIRE);
    if (!have) {
      if (!claim) return -1;
      if (__atomic_compare_exchange_n(&patterns[i].name, &have, pattern, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return i;
      /* Lost the race: `have` is now the winner's name. */
    }
    if (have == pattern || !strcmp(have, pattern)) return i;
  }
  return -1;
}

void ag__stats_fused(const char *pattern, uint64_t n) {
  AG_STAT_ADD(ag__stats.fused, n);
  int i = pattern ? pattern_slot(pattern, 1) : -1;
  if (i >= 0) AG_STAT_ADD(patterns[i].count, n);
}

uint64_t ag__stats_fused_count(const char *pattern) {
  int i = pattern_slot(pattern, 0);
  return i < 0 ? 0 : __atomic_load_n(&patterns[i].count, __ATOMIC_RELAXED);
}

static uint64_t load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* Launches by path: the launch path counts only the driver's and cuDNN's (src/engine.c); the
 * runtime's are the rest. */
static uint64_t by_path(int i) {
  uint64_t other = load(&ag__stats.by_path[AG_PATH_DRIVER]) + load(&ag__stats.by_path[AG_PATH_CUDNN]);
  uint64_t n = load(&ag__stats.launches);
  if (i != AG_PATH_RUNTIME) return load(&ag__stats.by_path[i]);
  return n > other ? n - other : 0;
}

/* ---- runs and cuts ---------------------------------------------------------------------- */

/* A leaf lock: taken under the engine lock (ag__stats_run, the dump's snapshot) and without it
 * (ag__stats_run_call, from ordering calls), never around anything else. */
static pthread_mutex_t runs_mu = PTHREAD_MUTEX_INITIALIZER;
static ag_run_t runs[AG_RUNS];
static uint64_t nruns;
/* The last run's calls may still grow until the next launch; a cut is counted when it closes. */
static int open_run;
static uint64_t open_launches; /* ag__stats.launches when it ended */

typedef struct cut {
  ag_run_t key; /* outcome AG_RUN_CUT; n: launches held when it came */
  uint64_t count;
} cut_t;
static cut_t cuts[AG_CUTS];
static int ncuts;
static uint64_t cuts_omitted; /* cut runs whose key did not fit */

static int same_cut(const ag_run_t *a, const ag_run_t *b) {
  if (a->seq != b->seq || a->len != b->len || a->n != b->n || a->nnames != b->nnames) return 0;
  for (int i = 0; i < a->nnames; i++)
    if (a->names[i] != b->names[i] && strcmp(a->names[i], b->names[i])) return 0;
  return 1;
}

/* Counts run r in the cut table (runs_mu held). */
static void count_cut(cut_t *table, int *n, uint64_t *omitted, const ag_run_t *r) {
  for (int i = 0; i < *n; i++)
    if (same_cut(&table[i].key, r)) {
      table[i].count++;
      return;
    }
  if (*n == AG_CUTS) {
    ++*omitted;
    return;
  }
  table[*n].key = *r, table[*n].count = 1;
  ++*n;
}

static void close_run(void) {
  if (open_run && nruns && runs[(nruns - 1) % AG_RUNS].outcome == AG_RUN_CUT)
    count_cut(cuts, &ncuts, &cuts_omitted, &runs[(nruns - 1) % AG_RUNS]);
  open_run = 0;
}

void ag__stats_run(int outcome, uint32_t seq, uint32_t len, uint32_t n, const char *why) {
  pthread_mutex_lock(&runs_mu);
  close_run();
  ag_run_t *r = &runs[nruns++ % AG_RUNS];
  *r = (ag_run_t){.seq = seq, .len = len, .n = n, .outcome = (uint8_t)outcome};
  if (why) r->names[r->nnames++] = why;
  open_run = 1;
  open_launches = load(&ag__stats.launches);
  pthread_mutex_unlock(&runs_mu);
}

void ag__stats_run_call(const char *name) {
  /* Only API calls (cuda…, cu…, cudnn…) join: the engine's own causes (exit, fork) do not. */
  if (!name || strncmp(name, "cu", 2)) return;
  pthread_mutex_lock(&runs_mu);
  if (open_run && load(&ag__stats.launches) != open_launches) close_run();
  if (open_run) {
    ag_run_t *r = &runs[(nruns - 1) % AG_RUNS];
    if (r->nnames < AG_RUN_NAMES && (!r->nnames || strcmp(r->names[r->nnames - 1], name)))
      r->names[r->nnames++] = name;
  }
  pthread_mutex_unlock(&runs_mu);
}

size_t ag__stats_runs(ag_run_t *out, size_t max, uint64_t *total) {
  pthread_mutex_lock(&runs_mu);
  uint64_t have = nruns < AG_RUNS ? nruns : AG_RUNS;
  size_t k = have < max ? (size_t)have : max;
  for (size_t i = 0; i < k; i++) out[i] = runs[(nruns - k + i) % AG_RUNS];
  if (total) *total = nruns;
  pthread_mutex_unlock(&runs_mu);
  return k;
}

static int by_launches(const void *a, const void *b) {
  const cut_t *x = a, *y = b;
  uint64_t lx = x->count * x->key.n, ly = y->count * y->key.n;
  if (lx != ly) return lx < ly ? 1 : -1;
  return x->key.seq < y->key.seq ? -1 : x->key.seq > y->key.seq;
}

static void u64_or_null(ag_json_t *j, int known, uint64_t v) {
  if (known)
    ag__json_u64(j, v);
  else
    ag__json_raw(j, "null");
}

/* "cuts": the counted cuts and the one still open, most launches passed through first. */
static void cuts_json(ag_json_t *j) {
  static cut_t v[AG_CUTS]; /* the report runs once at a time: under runs_mu */
  int n;
  uint64_t omitted;
  pthread_mutex_lock(&runs_mu);
  memcpy(v, cuts, (size_t)ncuts * sizeof *v);
  n = ncuts, omitted = cuts_omitted;
  if (open_run && nruns && runs[(nruns - 1) % AG_RUNS].outcome == AG_RUN_CUT)
    count_cut(v, &n, &omitted, &runs[(nruns - 1) % AG_RUNS]);
  qsort(v, (size_t)n, sizeof *v, by_launches);
  ag__json_key(j, "cuts");
  ag__json_begin(j, '[');
  for (int i = 0; i < n; i++) {
    const ag_run_t *r = &v[i].key;
    ag__json_begin(j, '{');
    ag__json_key(j, "sequence"), u64_or_null(j, r->seq, r->seq);
    ag__json_key(j, "length"), u64_or_null(j, r->seq, r->len);
    ag__json_key(j, "after"), ag__json_u64(j, r->n);
    ag__json_key(j, "calls");
    ag__json_begin(j, '[');
    for (int k = 0; k < r->nnames; k++) ag__json_str(j, r->names[k]);
    ag__json_end(j, ']');
    ag__json_key(j, "count"), ag__json_u64(j, v[i].count);
    ag__json_key(j, "launches"), ag__json_u64(j, v[i].count * r->n);
    ag__json_end(j, '}');
  }
  ag__json_end(j, ']');
  ag__json_key(j, "cuts_omitted"), ag__json_u64(j, omitted);
  pthread_mutex_unlock(&runs_mu);
}

typedef struct named {
  const char *name;
  uint64_t count;
} named_t;

static int by_name(const void *a, const void *b) {
  return strcmp(((const named_t *)a)->name, ((const named_t *)b)->name);
}

/* Collects nonzero per-name counts, sorted and merged by name. Returns the number of entries
 * (0 when allocation fails: the report then simply has no "calls" detail). */
static size_t collect(named_t **out) {
  size_t total = 0, k = 0;
  int nt = ntables < (int)AG_ARRAY_SIZE(tables) ? ntables : (int)AG_ARRAY_SIZE(tables);
  named_t *v;

  for (int t = 0; t < nt; t++) total += tables[t].n;
  *out = NULL;
  if (!total || !(v = malloc(total * sizeof *v))) return 0;
  for (int t = 0; t < nt; t++)
    for (size_t i = 0; i < tables[t].n; i++) {
      uint64_t c = load(&tables[t].calls[i].count);
      if (c) v[k++] = (named_t){tables[t].calls[i].name, c};
    }
  qsort(v, k, sizeof *v, by_name);
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    if (m && !strcmp(v[m - 1].name, v[i].name))
      v[m - 1].count += v[i].count;
    else
      v[m++] = v[i];
  }
  *out = v;
  return m;
}

size_t ag__stats_json(char *buf, size_t size) {
  ag_json_t j;
  named_t *calls;
  size_t ncalls = collect(&calls);

  ag__json_init(&j, buf, size);
  ag__json_begin(&j, '{');
  ag__json_key(&j, "version"), ag__json_u64(&j, 1);
  ag__json_key(&j, "launches"), ag__json_u64(&j, load(&ag__stats.launches));
  ag__json_key(&j, "replayed"), ag__json_u64(&j, load(&ag__stats.replayed));
  ag__json_key(&j, "graphs"), ag__json_u64(&j, load(&ag__stats.graphs));
  ag__json_key(&j, "graph_launches"), ag__json_u64(&j, load(&ag__stats.graph_launches));
  ag__json_key(&j, "updates"), ag__json_u64(&j, load(&ag__stats.updates));
  ag__json_key(&j, "passthrough"), ag__json_u64(&j, load(&ag__stats.passthrough));
  ag__json_key(&j, "ordering"), ag__json_u64(&j, load(&ag__stats.ordering));
  ag__json_key(&j, "fallbacks");
  ag__json_begin(&j, '{');
  for (int i = 0; i < AG_FB_COUNT_; i++)
    if (load(&ag__stats.fallbacks[i]))
      ag__json_key(&j, fallback_names[i]), ag__json_u64(&j, load(&ag__stats.fallbacks[i]));
  ag__json_end(&j, '}');
  cuts_json(&j);
  ag__json_key(&j, "sequences"), ag__json_u64(&j, load(&ag__stats.sequences));
  ag__json_key(&j, "demotions"), ag__json_u64(&j, load(&ag__stats.demotions));
  ag__json_key(&j, "evictions"), ag__json_u64(&j, load(&ag__stats.evictions));
  ag__json_key(&j, "kernels"), ag__json_u64(&j, load(&ag__stats.kernels));
  ag__json_key(&j, "forgotten");
  ag__json_begin(&j, '{');
  ag__json_key(&j, "kernels"), ag__json_u64(&j, load(&ag__stats.forgot_kernels));
  ag__json_key(&j, "sequences"), ag__json_u64(&j, load(&ag__stats.forgot_sequences));
  ag__json_key(&j, "graphs"), ag__json_u64(&j, load(&ag__stats.forgot_graphs));
  ag__json_end(&j, '}');
  ag__json_key(&j, "fused"), ag__json_u64(&j, load(&ag__stats.fused));
  ag__json_key(&j, "fused_by_pattern");
  ag__json_begin(&j, '{');
  for (int i = 0; i < AG_STATS_PATTERNS; i++) {
    const char *name = __atomic_load_n(&patterns[i].name, __ATOMIC_ACQUIRE);
    if (name && load(&patterns[i].count))
      ag__json_key(&j, name), ag__json_u64(&j, load(&patterns[i].count));
  }
  ag__json_end(&j, '}');
  ag__json_key(&j, "hold_timeouts"), ag__json_u64(&j, load(&ag__stats.hold_timeouts));
  ag__json_key(&j, "ops_replayed"), ag__json_u64(&j, load(&ag__stats.ops_replayed));
  ag__json_key(&j, "failed_submissions"), ag__json_u64(&j, load(&ag__stats.failed_submissions));
  ag__json_key(&j, "prefix_replays"), ag__json_u64(&j, load(&ag__stats.prefix_replays));
  ag__json_key(&j, "elementwise"), ag__json_u64(&j, load(&ag__stats.elementwise));
  ag__json_key(&j, "chained"), ag__json_u64(&j, load(&ag__stats.chained));
  ag__json_key(&j, "chained_fused"), ag__json_u64(&j, load(&ag__stats.chained_fused));
  ag__json_key(&j, "fills_fused"), ag__json_u64(&j, load(&ag__stats.fills_fused));
  ag__json_key(&j, "jit");
  ag__json_begin(&j, '{');
  ag__json_key(&j, "compiles"), ag__json_u64(&j, load(&ag__stats.jit_compiles));
  ag__json_key(&j, "cache_hits"), ag__json_u64(&j, load(&ag__stats.jit_cache_hits));
  ag__json_key(&j, "cache_rejected"), ag__json_u64(&j, load(&ag__stats.jit_cache_rejected));
  ag__json_key(&j, "failures"), ag__json_u64(&j, load(&ag__stats.jit_failures));
  ag__json_end(&j, '}');
  ag__json_key(&j, "by_path");
  ag__json_begin(&j, '{');
  for (int i = 0; i < AG_PATH_COUNT_; i++)
    ag__json_key(&j, path_names[i]), ag__json_u64(&j, by_path(i));
  ag__json_end(&j, '}');
  ag__json_key(&j, "families");
  ag__json_begin(&j, '{');
  /* Every launch is of family "launch": the launch path counts it once, as `launches`. */
  for (int i = 0; i < AG_FAM_COUNT_; i++)
    ag__json_key(&j, family_names[i]),
        ag__json_u64(&j, load(i == AG_FAM_LAUNCH ? &ag__stats.launches : &ag__stats.families[i]));
  ag__json_end(&j, '}');
  ag__json_key(&j, "calls");
  ag__json_begin(&j, '{');
  for (size_t i = 0; i < ncalls; i++) ag__json_key(&j, calls[i].name), ag__json_u64(&j, calls[i].count);
  ag__json_end(&j, '}');
  ag__json_end(&j, '}');
  free(calls);
  return ag__json_finish(&j);
}

size_t ag__stats_summary(char *buf, size_t size) {
  uint64_t n = load(&ag__stats.launches), r = load(&ag__stats.replayed);
  char top[160] = "", fused[48] = "";
  int used = 0, shown = 0;
  uint64_t done = 0; /* bit i: reason i already listed */

  /* The three largest fallback reasons, largest first. */
  while (shown < 3) {
    int best = -1;
    for (int i = 0; i < AG_FB_COUNT_; i++)
      if (!(done >> i & 1) && load(&ag__stats.fallbacks[i]) &&
          (best < 0 || load(&ag__stats.fallbacks[i]) > load(&ag__stats.fallbacks[best])))
        best = i;
    if (best < 0) break;
    done |= 1ull << best;
    used += snprintf(top + used, sizeof top - (size_t)used, "%s %s %llu", shown ? "," : "; fallbacks:",
                     fallback_names[best], (unsigned long long)load(&ag__stats.fallbacks[best]));
    if (used >= (int)sizeof top) break;
    shown++;
  }
  if (load(&ag__stats.fused))
    snprintf(fused, sizeof fused, ", %llu fused", (unsigned long long)load(&ag__stats.fused));
  int len = snprintf(buf, size,
                     "autograph: %llu launches (runtime %llu, driver %llu, cudnn %llu), "
                     "%llu replayed (%.1f%%), %llu graphs, %llu updates%s; %llu ordering calls%s\n",
                     (unsigned long long)n,
                     (unsigned long long)by_path(AG_PATH_RUNTIME),
                     (unsigned long long)by_path(AG_PATH_DRIVER),
                     (unsigned long long)by_path(AG_PATH_CUDNN),
                     (unsigned long long)r, n ? 100.0 * (double)r / (double)n : 0.0,
                     (unsigned long long)load(&ag__stats.graphs),
                     (unsigned long long)load(&ag__stats.updates), fused,
                     (unsigned long long)load(&ag__stats.ordering), top);
  return len < 0 ? 0 : (size_t)len;
}

void ag__stats_report(void) {
  int saved = errno;
  if (ag__config.stats_summary) {
    /* A process with nothing to report prints nothing: the launcher sets the summary for the
     * program and every process it starts, and the helpers a program runs (shells, ldconfig,
     * compilers) would each add a line of zeros. */
    if (!load(&ag__stats.launches) && !load(&ag__stats.ordering)) {
      errno = saved;
      return;
    }
    char line[512];
    size_t n = ag__stats_summary(line, sizeof line);
    if (n >= sizeof line) n = sizeof line - 1;
    (void)ag__write_all(2, line, n);
  } else if (ag__config.stats_path[0]) {
    size_t cap = 1 << 16, n;
    char *buf = NULL;
    for (int tries = 0; tries < 2; tries++) {
      free(buf);
      if (!(buf = malloc(cap))) break;
      n = ag__stats_json(buf, cap);
      if (n < cap) break;
      cap = n + 1;
    }
    char path[sizeof ag__config.stats_path + 256];
    int touched = load(&ag__stats.launches) != 0, fd = -1;
    if (ag__report_path(ag__config.stats_path, touched, path, sizeof path) <= 0) {
      free(buf);
      errno = saved;
      return;
    }
    int flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (touched ? O_TRUNC : O_EXCL);
    if (buf) fd = open(path, flags, 0644);
    if (fd < 0 && !touched && errno == EEXIST) {
      free(buf);
      errno = saved;
      return;
    }
    if (fd < 0 || ag__write_all(fd, buf, strlen(buf)) < 0 || ag__write_all(fd, "\n", 1) < 0)
      ag__log(AG_LOG_WARN, "cannot write stats to %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    free(buf);
  }
  errno = saved;
}

void ag__stats_reset(void) {
  memset(&ag__stats, 0, sizeof ag__stats);
  /* In a forked child: another thread may have held the lock when the process was copied. */
  pthread_mutex_init(&runs_mu, NULL);
  nruns = 0, open_run = 0, ncuts = 0, cuts_omitted = 0;
  for (int i = 0; i < AG_STATS_PATTERNS; i++) __atomic_store_n(&patterns[i].count, 0, __ATOMIC_RELAXED);
  int nt = ntables < (int)AG_ARRAY_SIZE(tables) ? ntables : (int)AG_ARRAY_SIZE(tables);
  for (int t = 0; t < nt; t++)
    for (size_t i = 0; i < tables[t].n; i++) tables[t].calls[i].count = 0;
}
