/* trace.c — AUTOGRAPH_TRACE, the Chrome trace of the engine's decisions (see trace.h,
 * docs-trace.md).
 *
 * Recording: one array of fixed-size events reserved at start-up with mmap(MAP_NORESERVE), so a
 * large cap costs address space, not memory, until events arrive. Hooks run under the engine
 * lock, which serialises them; an event is a slot taken from the array and filled with numbers
 * and pointers to strings of static storage (API names from the entry points' tables, literals,
 * or demotion reasons interned here). Nothing is formatted until the file is written.
 *
 * Writing happens once, at exit: recording is closed under the engine lock, the events are
 * sorted by start time (a parent slice before the slices it contains) and formatted through a
 * fixed buffer straight into path.tmp, which is then renamed to path. Every string goes through
 * the JSON writer's escaping, with bytes outside ASCII replaced, so the file is valid JSON
 * whatever names it carries.
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "trace.h"

#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dump.h"
#include "json.h"
#include "log.h"
#include "nvtx.h"
#include "stats.h"

int ag__trace_armed;

/* Kinds, in the order that breaks ties between slices with the same start and length: the held
 * run encloses what happened during it. */
enum ev_kind { EV_HELD, EV_BUILD, EV_REPLAY, EV_FLUSH, EV_DEMOTE, EV_EVICT };

#define FB_REPLAYED 0xff /* a held run that ended in a replay (ev.fb of EV_HELD) */

typedef struct ev {
  uint64_t ts, dur;   /* ns since T.start */
  uint64_t hash;      /* the sequence's content hash */
  const char *str;    /* cause or reason: static storage */
  uint32_t seq, n;    /* sequence id, launches */
  uint32_t u;         /* replay: node updates; build, flush: CUDA status */
  uint16_t tid;
  uint8_t kind, fb;   /* enum ev_kind; flush and held: enum ag_fallback or FB_REPLAYED */
} ev_t;
_Static_assert(sizeof(ev_t) == 48, "ev_t: 48 bytes (docs-trace.md states the cost per event)");

/* Track 0 is the engine's; streams get 1, 2, … in order of first use, and the last track is
 * shared by streams beyond that (a program with more streams than this is rare, and the events
 * stay correct, only less separated). */
#define TRACKS 64
#define OTHER_TRACK (TRACKS - 1)

/* Distinct demotion reasons kept (they are few: a handful of literals and "CUDA error N"). */
#define REASONS 32
#define REASON_LEN 80

static struct {
  ev_t *ev;
  size_t cap, len, map_bytes;
  uint64_t dropped, drop_ts;
  uint64_t start;
  int closed, child;
  void *streams[TRACKS]; /* streams[i]: track i (1 … OTHER_TRACK - 1) */
  int nstreams, other_used;
  unsigned char holding[TRACKS]; /* per track: a held run is open, begun at hold_t0 */
  uint64_t hold_t0[TRACKS];
  char reasons[REASONS][REASON_LEN];
  int nreasons;
} T;

static __thread const char *cause;

static const char *const fallback_names[AG_FB_COUNT_] = {
#define AG_TRACE_FB_NAME_(id, name) name,
    AG_FALLBACK_MAP(AG_TRACE_FB_NAME_)
#undef AG_TRACE_FB_NAME_
};

static const char *const not_holdable[AG_FB_COUNT_] = {
#define AG_TRACE_FB_CAUSE_(id, name) "launch not holdable (" name ")",
    AG_FALLBACK_MAP(AG_TRACE_FB_CAUSE_)
#undef AG_TRACE_FB_CAUSE_
};

static uint64_t rel(uint64_t t) { return t > T.start ? t - T.start : 0; }

int ag__trace_open(int max_events) {
  size_t cap = max_events > 0 ? (size_t)max_events : 1, bytes = cap * sizeof(ev_t);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return -AG_ENOMEM;
  if (T.ev) munmap(T.ev, T.map_bytes);
  memset(&T, 0, sizeof T);
  T.ev = p, T.cap = cap, T.map_bytes = bytes;
  T.start = ag__now_ns();
  __atomic_store_n(&ag__trace_armed, 1, __ATOMIC_RELEASE);
  return 0;
}

void ag__trace_init(void) {
  if (!ag__config.trace_path[0]) {
    /* The runs and cuts of the statistics file and the dump come from the same hooks: arm
     * them without an event buffer (nothing is recorded here, no trace is written). */
    if (ag__config.stats_path[0] || ag__config.dump_path[0] || ag__nvtx_on) {
      T.start = ag__now_ns();
      __atomic_store_n(&ag__trace_armed, 1, __ATOMIC_RELEASE);
    }
    return;
  }
  if (ag__trace_open(ag__config.trace_max_events) != 0)
    ag__log(AG_LOG_WARN, "trace disabled: cannot reserve %d events for %s",
            ag__config.trace_max_events, ag__config.trace_path);
}

/* A free slot, or NULL when recording is closed or the buffer is full (counted). */
static ev_t *add(int kind, int tid, uint64_t t0, uint64_t t1) {
  ev_t *e;
  if (!T.ev || T.closed) return NULL;
  if (T.len == T.cap) {
    if (!T.dropped++) T.drop_ts = rel(t1);
    return NULL;
  }
  e = &T.ev[T.len++];
  memset(e, 0, sizeof *e);
  e->kind = (uint8_t)kind, e->tid = (uint16_t)tid;
  e->ts = rel(t0);
  e->dur = t1 > t0 ? t1 - t0 : 0;
  return e;
}

static int track(void *stream) {
  if (T.closed) return 0; /* the writer reads the table outside the lock */
  for (int i = 1; i <= T.nstreams; i++)
    if (T.streams[i] == stream) return i;
  if (T.nstreams < OTHER_TRACK - 1) {
    T.streams[++T.nstreams] = stream;
    return T.nstreams;
  }
  T.other_used = 1;
  return OTHER_TRACK;
}

/* Interns a reason that may live on the caller's stack. */
static const char *intern(const char *s) {
  for (int i = 0; i < T.nreasons; i++)
    if (!strncmp(T.reasons[i], s, REASON_LEN - 1)) return T.reasons[i];
  if (T.nreasons == REASONS) return "(reason not kept: too many distinct reasons)";
  snprintf(T.reasons[T.nreasons], REASON_LEN, "%s", s);
  return T.reasons[T.nreasons++];
}

/* ---- hooks ---------------------------------------------------------------------------------- */

void ag__trace_cause(const char *why) {
  cause = why;
  if (why) ag__stats_run_call(why);
}

void ag__trace_cause_fallback(int fb) {
  cause = fb >= 0 && fb < AG_FB_COUNT_ ? not_holdable[fb] : "launch not holdable";
}

void ag__trace_hold(void *stream) {
  cause = NULL; /* anything set before the run began is not why it ends */
  if (T.closed) return;
  int tid = track(stream);
  T.holding[tid] = 1;
  T.hold_t0[tid] = ag__now_ns();
}

/* The held run on track tid ends at t1 with n launches: replayed (fb == FB_REPLAYED) or
 * flushed. */
static void held_end(int tid, int n, uint64_t t1, int fb, const char *why) {
  ev_t *e;
  if (!T.holding[tid]) return;
  T.holding[tid] = 0;
  if (!(e = add(EV_HELD, tid, T.hold_t0[tid], t1))) return;
  e->n = (uint32_t)n, e->fb = (uint8_t)fb, e->str = why;
}

static void seq_args(ev_t *e, const ag_seq_t *s) {
  e->seq = s->id, e->hash = s->key.hash, e->n = (uint32_t)s->n;
}

const char *ag__trace_flush_cause(int fb) {
  if (cause) return cause;
  switch (fb) {
  case AG_FB_MISMATCH: return "mismatch";
  case AG_FB_GRAPH_ERROR: return "graph error";
  /* Every other cut names its cause (an API call, the legacy stream's implicit
   * synchronisation, more streams than the engine follows, …). */
  case AG_FB_FLUSHED: return "flushed";
  default: return ag__trace_fallback_name(fb);
  }
}

const char *ag__trace_fallback_name(int fb) {
  return fb >= 0 && fb < AG_FB_COUNT_ ? fallback_names[fb] : "unknown";
}

void ag__trace_flush(void *stream, int n, int fb, uint64_t t0, int status, const ag_seq_t *cand) {
  uint64_t t1 = ag__now_ns();
  const char *why = ag__trace_flush_cause(fb);
  ev_t *e;
  cause = NULL;
  if ((e = add(EV_FLUSH, track(stream), t0, t1)) != NULL)
    e->n = (uint32_t)n, e->fb = (uint8_t)fb, e->str = why, e->u = (uint32_t)status;
  held_end(track(stream), n, t1, fb, why);
  /* A failed graph path is not a cut: the sequence was complete. */
  ag__stats_run(fb == AG_FB_GRAPH_ERROR ? AG_RUN_PASSED : AG_RUN_CUT, cand ? cand->id : 0,
                cand ? (uint32_t)cand->n : 0, (uint32_t)n, why);
}

void ag__trace_build(void *stream, const ag_seq_t *s, int n, uint64_t t0, int status) {
  ev_t *e = add(EV_BUILD, track(stream), t0, ag__now_ns());
  if (!e) return;
  seq_args(e, s);
  e->n = (uint32_t)n, e->u = (uint32_t)status;
}

void ag__trace_replay(void *stream, const ag_seq_t *s, int n, uint64_t t0, uint64_t t1,
                      uint64_t updates, int more) {
  const char *why = cause ? cause : more ? "chunk complete" : "sequence complete";
  ev_t *e;
  int tid = track(stream);
  cause = NULL;
  if ((e = add(EV_REPLAY, tid, t0, t1)) != NULL) {
    seq_args(e, s);
    e->n = (uint32_t)n, e->u = updates > UINT32_MAX ? UINT32_MAX : (uint32_t)updates;
  }
  held_end(tid, n, t1, FB_REPLAYED, why);
  ag__stats_run(AG_RUN_REPLAYED, s->id, (uint32_t)s->n, (uint32_t)n, why);
  /* A chunk: the run goes on, held again from here. */
  if (more && !T.closed) T.holding[tid] = 1, T.hold_t0[tid] = t1;
}

void ag__trace_unhold(void *stream) {
  /* What was held since the last chunk went in it: nothing is left to show. */
  if (!T.closed) T.holding[track(stream)] = 0;
}

void ag__trace_pass(int n, int content) {
  /* Not holding, so the cause is an ordering call's, or one the engine named. */
  const char *why = content ? "content-defined cut" : cause ? cause : "flushed";
  if (n > 0) ag__stats_run(AG_RUN_PASSED, 0, 0, (uint32_t)n, why);
}

void ag__trace_demote(const ag_seq_t *s, const char *why) {
  uint64_t t = ag__now_ns();
  ev_t *e = add(EV_DEMOTE, 0, t, t);
  if (!e) return;
  seq_args(e, s);
  e->str = intern(why ? why : "");
}

void ag__trace_evict(const ag_seq_t *s) {
  uint64_t t = ag__now_ns();
  ev_t *e = add(EV_EVICT, 0, t, t);
  if (e) seq_args(e, s);
}

void ag__trace_atfork_child(void) {
  /* The parent writes its own trace; the child's buffer is a copy it must not publish. */
  __atomic_store_n(&ag__trace_armed, 0, __ATOMIC_RELAXED);
  T.child = 1;
  T.len = 0, T.dropped = 0;
  memset(T.holding, 0, sizeof T.holding);
  cause = NULL;
}

uint64_t ag__trace_count(uint64_t *dropped) {
  if (dropped) *dropped = T.dropped;
  return T.len;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* Closes recording; under the engine lock, so no hook is half-way through an event. */
static void close_cb(ag_seqtab_t *t, double launch_ns, void *arg) {
  (void)t, (void)launch_ns, (void)arg;
  T.closed = 1;
}

static int cmp_ev(const void *a, const void *b) {
  const ev_t *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1; /* the enclosing slice first */
  return (int)x->kind - (int)y->kind;
}

typedef struct out {
  int fd, err;
  size_t len;
  char buf[1 << 16];
} out_t;

static void out_flush(out_t *o) {
  if (!o->err && o->len && ag__write_all(o->fd, o->buf, o->len) < 0) o->err = errno ? errno : EIO;
  o->len = 0;
}

static void out_put(out_t *o, const char *s, size_t n) {
  if (o->len + n > sizeof o->buf) out_flush(o);
  if (n > sizeof o->buf) {
    if (!o->err && ag__write_all(o->fd, s, n) < 0) o->err = errno ? errno : EIO;
    return;
  }
  memcpy(o->buf + o->len, s, n);
  o->len += n;
}

static void out_str(out_t *o, const char *s) { out_put(o, s, strlen(s)); }

/* A string with every byte outside printable ASCII and the JSON escapes replaced by '?', so that
 * the document is valid UTF-8 whatever the program is called or a driver reports. */
static void json_ascii(ag_json_t *j, const char *s) {
  char tmp[256];
  size_t i = 0;
  for (; s && s[i] && i < sizeof tmp - 1; i++)
    tmp[i] = (unsigned char)s[i] >= 0x80 ? '?' : s[i];
  tmp[i] = 0;
  ag__json_str(j, tmp);
}

static void json_us(ag_json_t *j, const char *key, uint64_t ns) {
  char tmp[32];
  snprintf(tmp, sizeof tmp, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
  ag__json_key(j, key), ag__json_raw(j, tmp);
}

static void json_hash(ag_json_t *j, uint64_t h) {
  char tmp[24];
  snprintf(tmp, sizeof tmp, "%016llx", (unsigned long long)h);
  ag__json_key(j, "hash"), ag__json_str(j, tmp);
}

/* One event object (without the separating comma) into j. */
static void render_ev(ag_json_t *j, const ev_t *e, unsigned pid) {
  static const char *const names[] = {"held", "build", "replay", "flush", "demote", "evict"};
  ag__json_begin(j, '{');
  ag__json_key(j, "name"), ag__json_str(j, names[e->kind]);
  ag__json_key(j, "cat"), ag__json_str(j, "autograph");
  if (e->kind == EV_DEMOTE || e->kind == EV_EVICT) {
    ag__json_key(j, "ph"), ag__json_str(j, "i");
    ag__json_key(j, "s"), ag__json_str(j, "t");
    json_us(j, "ts", e->ts);
  } else {
    ag__json_key(j, "ph"), ag__json_str(j, "X");
    json_us(j, "ts", e->ts);
    json_us(j, "dur", e->dur);
  }
  ag__json_key(j, "pid"), ag__json_u64(j, pid);
  ag__json_key(j, "tid"), ag__json_u64(j, e->tid);
  ag__json_key(j, "args"), ag__json_begin(j, '{');
  switch (e->kind) {
  case EV_HELD:
    ag__json_key(j, "launches"), ag__json_u64(j, e->n);
    ag__json_key(j, "outcome"), ag__json_str(j, e->fb == FB_REPLAYED ? "replay" : "flush");
    ag__json_key(j, "cause"), json_ascii(j, e->str);
    break;
  case EV_FLUSH:
    ag__json_key(j, "launches"), ag__json_u64(j, e->n);
    ag__json_key(j, "cause"), json_ascii(j, e->str);
    ag__json_key(j, "fallback"), ag__json_str(j, e->fb < AG_FB_COUNT_ ? fallback_names[e->fb] : "");
    if (e->u) ag__json_key(j, "cuda_error"), ag__json_u64(j, e->u);
    break;
  case EV_BUILD:
    ag__json_key(j, "seq"), ag__json_u64(j, e->seq);
    json_hash(j, e->hash);
    ag__json_key(j, "launches"), ag__json_u64(j, e->n);
    ag__json_key(j, "ok"), ag__json_raw(j, e->u ? "false" : "true");
    if (e->u) ag__json_key(j, "cuda_error"), ag__json_u64(j, e->u);
    break;
  case EV_REPLAY:
    ag__json_key(j, "seq"), ag__json_u64(j, e->seq);
    json_hash(j, e->hash);
    ag__json_key(j, "launches"), ag__json_u64(j, e->n);
    ag__json_key(j, "updates"), ag__json_u64(j, e->u);
    break;
  case EV_DEMOTE:
    ag__json_key(j, "seq"), ag__json_u64(j, e->seq);
    json_hash(j, e->hash);
    ag__json_key(j, "launches"), ag__json_u64(j, e->n);
    ag__json_key(j, "reason"), json_ascii(j, e->str);
    break;
  case EV_EVICT:
    ag__json_key(j, "seq"), ag__json_u64(j, e->seq);
    json_hash(j, e->hash);
    ag__json_key(j, "launches"), ag__json_u64(j, e->n);
    break;
  }
  ag__json_end(j, '}');
  ag__json_end(j, '}');
}

/* Appends one complete JSON value built in `tmp` (a small buffer: every event fits, its strings
 * being bounded), preceded by a comma unless it is the first of its list. */
static void put_value(out_t *o, ag_json_t *j, int *first) {
  size_t n = ag__json_finish(j);
  if (n >= j->size) return; /* cannot happen (bounded strings); never write half a value */
  if (!*first) out_put(o, ",\n", 2);
  else out_put(o, "\n", 1);
  *first = 0;
  out_put(o, j->buf, n);
}

static void meta(out_t *o, int *first, unsigned pid, int tid, const char *what, const char *name,
                 int sort) {
  char buf[512];
  ag_json_t j;
  ag__json_init(&j, buf, sizeof buf);
  ag__json_begin(&j, '{');
  ag__json_key(&j, "name"), ag__json_str(&j, what);
  ag__json_key(&j, "ph"), ag__json_str(&j, "M");
  ag__json_key(&j, "pid"), ag__json_u64(&j, pid);
  ag__json_key(&j, "tid"), ag__json_u64(&j, (uint64_t)tid);
  ag__json_key(&j, "args"), ag__json_begin(&j, '{');
  if (name) ag__json_key(&j, "name"), json_ascii(&j, name);
  else ag__json_key(&j, "sort_index"), ag__json_u64(&j, (uint64_t)sort);
  ag__json_end(&j, '}');
  ag__json_end(&j, '}');
  put_value(o, &j, first);
}

static void track_meta(out_t *o, int *first, unsigned pid, int tid, const char *name) {
  meta(o, first, pid, tid, "thread_name", name, 0);
  meta(o, first, pid, tid, "thread_sort_index", NULL, tid);
}

int ag__trace_write_fd(int fd) {
  out_t *o;
  unsigned pid = (unsigned)getpid();
  char buf[1024], name[300];
  ag_json_t j;
  int first = 1;

  if (!T.ev) return -AG_EINVAL;
  ag__engine_snapshot(close_cb, NULL);
  if (!(o = malloc(sizeof *o))) return -AG_ENOMEM;
  o->fd = fd, o->err = 0, o->len = 0;
  qsort(T.ev, T.len, sizeof *T.ev, cmp_ev);

  out_str(o, "{\"traceEvents\":[");
  snprintf(name, sizeof name, "autograph: %s", program_invocation_short_name);
  meta(o, &first, pid, 0, "process_name", name, 0);
  track_meta(o, &first, pid, 0, "autograph engine");
  for (int i = 1; i <= T.nstreams; i++) {
    uintptr_t s = (uintptr_t)T.streams[i];
    snprintf(name, sizeof name, "stream 0x%llx%s", (unsigned long long)s,
             s == (uintptr_t)CU_STREAM_LEGACY ? " (legacy default stream)" : "");
    track_meta(o, &first, pid, i, name);
  }
  if (T.other_used) track_meta(o, &first, pid, OTHER_TRACK, "stream (other streams)");
  for (size_t i = 0; i < T.len; i++) {
    ag__json_init(&j, buf, sizeof buf);
    render_ev(&j, &T.ev[i], pid);
    put_value(o, &j, &first);
  }
  if (T.dropped) {
    ag__json_init(&j, buf, sizeof buf);
    ag__json_begin(&j, '{');
    ag__json_key(&j, "name"), ag__json_str(&j, "trace truncated");
    ag__json_key(&j, "cat"), ag__json_str(&j, "autograph");
    ag__json_key(&j, "ph"), ag__json_str(&j, "i");
    ag__json_key(&j, "s"), ag__json_str(&j, "g");
    json_us(&j, "ts", T.drop_ts);
    ag__json_key(&j, "pid"), ag__json_u64(&j, pid);
    ag__json_key(&j, "tid"), ag__json_u64(&j, 0);
    ag__json_key(&j, "args"), ag__json_begin(&j, '{');
    ag__json_key(&j, "dropped"), ag__json_u64(&j, T.dropped);
    ag__json_key(&j, "max_events"), ag__json_u64(&j, T.cap);
    ag__json_end(&j, '}');
    ag__json_end(&j, '}');
    put_value(o, &j, &first);
  }
  out_str(o, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":");
  ag__json_init(&j, buf, sizeof buf);
  ag__json_begin(&j, '{');
  ag__json_key(&j, "producer"), ag__json_str(&j, "libautograph");
  ag__json_key(&j, "clock"), ag__json_str(&j, "CLOCK_MONOTONIC since library start");
  ag__json_key(&j, "max_events"), ag__json_u64(&j, T.cap);
  ag__json_key(&j, "recorded_events"), ag__json_u64(&j, T.len);
  ag__json_key(&j, "dropped_events"), ag__json_u64(&j, T.dropped);
  const struct {
    const char *name;
    const uint64_t *v;
  } totals[] = {{"launches", &ag__stats.launches},
                {"replayed", &ag__stats.replayed},
                {"graphs", &ag__stats.graphs},
                {"graph_launches", &ag__stats.graph_launches}};
  for (size_t i = 0; i < AG_ARRAY_SIZE(totals); i++) {
    ag__json_key(&j, totals[i].name);
    ag__json_u64(&j, __atomic_load_n(totals[i].v, __ATOMIC_RELAXED));
  }
  ag__json_end(&j, '}');
  first = 1;
  put_value(o, &j, &first);
  out_str(o, "}\n");
  out_flush(o);
  int err = o->err;
  free(o);
  if (err) {
    errno = err;
    return -AG_EBUSY;
  }
  return 0;
}

static void warn_once(const char *path, const char *what) {
  static int warned;
  if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  ag__log(AG_LOG_WARN, "cannot write the trace to %s: %s", path, what);
}

void ag__trace_write(void) {
  static int written;
  int saved = errno, fd, r, touched;
  char path[sizeof ag__config.trace_path + 256], tmp[sizeof path + 8];

  if (!__atomic_load_n(&ag__trace_armed, __ATOMIC_ACQUIRE) || T.child || !T.ev) return;
  if (__atomic_exchange_n(&written, 1, __ATOMIC_ACQ_REL)) return;
  /* A process that launched no kernel (a shell or launcher run preloaded) does not replace a
   * real trace, as for AUTOGRAPH_STATS (ag__report_path). */
  touched = __atomic_load_n(&ag__stats.launches, __ATOMIC_RELAXED) != 0;
  if (ag__report_path(ag__config.trace_path, touched, path, sizeof path) <= 0) goto out;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    warn_once(path, strerror(errno));
    goto out;
  }
  r = ag__trace_write_fd(fd);
  if (r) {
    warn_once(path, r == -AG_ENOMEM ? "out of memory" : strerror(errno));
    close(fd);
    unlink(tmp);
  } else if (close(fd) < 0 || rename(tmp, path) < 0) {
    warn_once(path, strerror(errno));
    unlink(tmp);
  }
out:
  errno = saved;
}
