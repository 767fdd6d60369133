/* engine.c — initialisation and the graph engine (see engine.h).
 *
 * Every launch from every entry point arrives in ag__launch. The engine keeps, per stream (a
 * stream record, strm_t), one current sequence (the launches on that stream since its last
 * cut, src/segment.h) and, per launch, one of three things happens under one lock:
 *   - pass through: submitted at once by its own entry point (counted, and its structure fed to
 *     the segmenter so that repeated sequences are learned);
 *   - hold: when the launch may begin or continue a sequence that has repeated
 *     AUTOGRAPH_REPEATS times, its arguments are copied by the kernel's layout and success is
 *     returned (the same structure already launched successfully in pass-through);
 *   - replay: when the held launches complete a known sequence, its graph is built (first time)
 *     or updated, and launched on the stream. A sequence's graph is cut into chunks by the
 *     host's pace (AUTOGRAPH_CHUNK_US, src/segment.h): each chunk is launched as soon as its
 *     last launch is held, so the GPU never waits for the host to issue a whole sequence.
 * Stream operations (memsets, copies, event records and waits) enter sequences the same way,
 * through ag__op, and become graph nodes. Several streams hold at once. A
 * stream's held launches are submitted as ordinary launches, in order, before anything that can
 * observe them (call_rule and cut_stream say what each call observes): a call on
 * that stream or on an implicit-synchronisation partner (the legacy default stream and blocking
 * streams), a call on the device or on every stream, a query of an event recorded in its
 * sequence, a launch that cannot be held, a divergence from the sequence, a capture, exit or
 * fork, a change of what a held launch's submission depends on (attributes, limits, cache
 * configs: see ag__setting_enter), and a bound on time: a helper thread submits what a stream
 * holds once no launch has joined it for a few times the pace the sequence was seen at, at most
 * AUTOGRAPH_HOLD_US (the program may be waiting on the device without calling CUDA at all). Any failure of the graph path demotes the sequence
 * and submits what was held: nothing is lost, duplicated or reordered. A held launch whose
 * submission fails anyway is reported to the thread that made it, by its next call
 * (ag__error_take); a pass-through launch that fails never enters a learned sequence
 * (forget_failed).
 *
 * Initialisation runs once, from the constructor or from the first wrapper that gets there
 * first, under an explicit state (none → running → done) rather than pthread_once: a wrapper
 * re-entered while initialisation runs (options parsing may call into a preloaded allocator
 * that launches kernels) sees "running" and forwards untouched instead of deadlocking.
 */
#include "engine.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fuse-dnn.h"
#include "graph.h"
#include "kinfo.h"
#include "launch-attrs.h"
#include "log.h"
#include "observe.h"
#include "real.h"
#include "registry.h"
#include "segment.h"
#include "validity.h"

__thread ag_tls_t ag__tls;
int ag__init_state = AG_INIT_NONE;
int ag__enabled;
unsigned ag__hooks;

/* ---- engine state (under `lock`) ---------------------------------------------------------- */

/* The engine lock. Every launch takes it, so it is a bare futex lock (0 free, 1 held, 2 held
 * with waiters; Drepper, "Futexes Are Tricky", mutex 2): one locked instruction each way and no
 * call into libc when uncontended, where pthread_mutex_lock/unlock cost some fifty instructions
 * per launch. Under ThreadSanitizer it is a pthread mutex, so that lock-order checking sees it. */
#if defined(__SANITIZE_THREAD__)
#define AG_ENGINE_PTHREAD_LOCK 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AG_ENGINE_PTHREAD_LOCK 1
#endif
#endif

#ifdef AG_ENGINE_PTHREAD_LOCK
static pthread_mutex_t lock_mu = PTHREAD_MUTEX_INITIALIZER;
static inline void engine_lock(void) { pthread_mutex_lock(&lock_mu); }
static inline void engine_unlock(void) { pthread_mutex_unlock(&lock_mu); }
/* In a forked child: atfork_prepare took the lock on the thread that forked, the child's only
 * thread, which releases it (ThreadSanitizer keeps a mutex initialised again as still held). */
static void engine_lock_reinit(void) { pthread_mutex_unlock(&lock_mu); }
#else
static int lock_word;

static long futex(int op, int val) { return syscall(SYS_futex, &lock_word, op, val, NULL, NULL, 0); }

static void __attribute__((noinline)) engine_lock_slow(int c) {
  int saved = errno; /* the futex wait may fail with EAGAIN or EINTR: the program's errno stays */
  if (c != 2) c = __atomic_exchange_n(&lock_word, 2, __ATOMIC_ACQUIRE);
  while (c != 0) {
    futex(FUTEX_WAIT_PRIVATE, 2);
    c = __atomic_exchange_n(&lock_word, 2, __ATOMIC_ACQUIRE);
  }
  errno = saved;
}

static inline void engine_lock(void) {
  int c = 0;
  if (AG_UNLIKELY(!__atomic_compare_exchange_n(&lock_word, &c, 1, 0, __ATOMIC_ACQUIRE,
                                               __ATOMIC_RELAXED)))
    engine_lock_slow(c);
}

static inline void engine_unlock(void) {
  if (AG_UNLIKELY(__atomic_exchange_n(&lock_word, 0, __ATOMIC_RELEASE) == 2)) {
    int saved = errno;
    futex(FUTEX_WAKE_PRIVATE, 1);
    errno = saved;
  }
}

static void engine_lock_reinit(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELAXED); }
#endif

/* One record per stream that launches: the sequence being learned or held on it.
 * Records live in a fixed array, so that the helper thread may read a record's `holding` and
 * `hold_gen` without the lock. A stream beyond AG_STREAMS takes the record least recently used,
 * which is cut first (what it held is submitted, what it was learning is counted). */
#define AG_STREAMS 8
#define AG_REP_PIECES 64
typedef struct strm {
  void *stream, *ctx;     /* the key; stream NULL: a free record */
  int holding;            /* written under the lock, read by the helper (atomic) */
  int blocking;           /* 2: the legacy stream; 1: a stream that synchronises with it; 0: not */
  uint32_t seg_gen;       /* the current sequence's generation (unique across records) */
  ag_seg_t seg;
  uint64_t *hashes;       /* structural hashes of the current sequence, max_seq of them */
  uint32_t *kids;         /* and the ids of their kernels (forgetting a kernel forgets them) */
  ag_seq_t *cand;         /* a sequence the held launches are a prefix of */
  ag_held_t *held;        /* max_seq entries, parallel to hashes */
  uint8_t *arena;
  size_t arena_used, arena_cap;
  /* The last sequence counted (finish), for a pass-through launch that fails after it was
   * counted: the generation of the sequence it ended, and its key. */
  uint32_t fin_gen;
  uint64_t fin_hash;
  int fin_n;
  uint64_t deadline;      /* when the hold ends unless a launch joins it (ag__now_ns), 0 when
                           * nothing held is still to be submitted; written under the lock,
                           * read by the helper without it (atomic) */
  int sent;               /* held entries already submitted (chunks launched, src/graph.h) */
  uint64_t rep_ns;        /* host time of the current run's chunk launches (the guard's) */
  /* The time effect of holding (the guard's): since when the stream has been idle while it
   * held entries not yet submitted (0: it was busy, or nothing is held), and how long its last
   * submission kept the GPU waiting, and from which sequence's graph. */
  uint64_t idle_from, last_wait;
  ag_seq_t *last_seq;
  int hops;               /* stream operations (memsets, event records and waits) among held */
  /* The sequences replayed whole back to back since the stream was last cut, in order
   * (repeat_end learns their repetitions). */
  int rep_np;
  struct ag_seq_piece rep[AG_REP_PIECES];
  int nevs;               /* entries of `evheld` naming it */
  uint64_t used;          /* E.clock at its last launch */
} strm_t;

/* A record no launch matches (its stream is NULL, launches' never are): E.cur when there is no
 * last record, so that the launch path compares without testing for NULL. */
static strm_t none;

static struct {
  /* What every launch reads and writes comes first. */
  int live;               /* set up, with the real driver table: the launch path may run
                           * (written under the lock, atomically: ag__op reads it without) */
  int nhold;              /* records holding */
  strm_t *cur;            /* the record of the last launch, or &none */
  uint32_t gen;           /* the last generation handed out */
  uint64_t clock;         /* counts record lookups that missed `cur` (the LRU's clock) */
  int nblk[3];            /* records per class of `blocking` */
  int mixed;              /* nblk[1] && nblk[2]: launches must check their partners */
  int nev;                /* entries in `evheld` */
  int off;                /* no holding at all (forked child, no driver table, out of memory) */
  int observing;          /* an ordering call is cutting what it observes (the program may wait
                           * for the device in it: see tail) */
  ag_seqtab_t *tab;
  strm_t s[AG_STREAMS];
} E = {.cur = &none};

/* Bounded holds. Each record publishes when its hold ends unless a launch joins it (its
 * deadline, set at every held entry from the pace the sequence has been seen at) and
 * `holding_pub` mirrors E.nhold for the helper thread, which reads them without the lock: the
 * launch path makes no system call for the bound. */
static int holding_pub;
static uint64_t other_deadline; /* the bound of a cuDNN call held for fusion, 0: none */
static int helper_state; /* 0 not started, 1 started, -1 could not start (holding is off) */
int ag__hold_offline;    /* see engine.h */
static int helper_idle;  /* the helper sleeps on helper_cv until a hold begins */
static pthread_mutex_t helper_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t helper_cv = PTHREAD_COND_INITIALIZER;

/* A failed submission of held work waiting to be reported (see ag__error_take). One slot: the
 * first failure not yet reported is kept, as the earliest thing the program needs to know. */
int ag__pending_err; /* CUresult, 0: none; read without the lock on every call */

/* A call that returns `status`: when it succeeded and an earlier held launch of this thread
 * failed at submission, it reports that error instead (one load when none waits). */
static inline int with_pending(int status, int rt) {
  if (AG_UNLIKELY(__atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED)) && status == 0)
    return ag__error_take(rt);
  return status;
}
static pthread_t pending_owner;

/* What holds nothing while it lasts, in one word that the launch path reads once: calls that
 * change what a held launch's submission depends on, in progress (ag__setting_*), in the low
 * 16 bits, and program captures in progress above them (atomic). */
static int unusual;
#define CAPTURE_ONE (1 << 16)

/* Guard: running mean host time of one ordinary launch (ns), measured outside the lock for one
 * launch in 32 (`sampled` counts ordinary launches, under the lock). */
static uint64_t launch_ns, sampled;


static void release_graph(ag_seq_t *s) {
  ag__graph_free(s->graph);
  s->graph = NULL;
}

static void on_evict(ag_seq_t *s) {
  ag__obs_graph_gone(s, 1);
  release_graph(s);
}

/* Allocates the engine's shared buffers once; returns 0 or -AG_ENOMEM (the engine then stays
 * off). Each stream record's buffers are allocated when the record is first used. */
static int engine_setup(void) {
  E.tab = ag__seqtab_new(ag__config.max_graphs, (size_t)ag__config.max_graph_mb << 20, on_evict);
  if (E.tab) ag__obs_table(E.tab);
  /* AUTOGRAPH_HOLD_US=0: no hold can be bounded, so nothing is held (sequences are still
   * learned and reported). */
  if (ag__config.hold_us == 0) __atomic_store_n(&helper_state, -1, __ATOMIC_RELEASE);
  if (!E.tab) {
    E.off = 1;
    return -AG_ENOMEM;
  }
  return 0;
}

/* Gives record S its buffers (once). Returns 0 or -AG_ENOMEM. */
static int strm_alloc(strm_t *S) {
  int max = ag__config.max_seq;
  if (S->hashes) return 0;
  S->hashes = calloc((size_t)max, sizeof *S->hashes);
  S->kids = calloc((size_t)max, sizeof *S->kids);
  S->held = calloc((size_t)max, sizeof *S->held);
  S->arena_cap = 4 << 10;
  S->arena = malloc(S->arena_cap);
  if (!S->hashes || !S->kids || !S->held || !S->arena) {
    free(S->hashes), free(S->kids), free(S->held), free(S->arena);
    S->hashes = NULL, S->kids = NULL, S->held = NULL, S->arena = NULL;
    return -AG_ENOMEM;
  }
  ag__seg_init(&S->seg, ag__config.min_seq, max);
  return 0;
}

/* The thread's current context, cached per thread (it changes only through calls that the
 * engine sees as ordering calls, which clear the cache). */
static void *__attribute__((noinline)) current_ctx_slow(void) {
  CUcontext c = NULL;
  if (ag__real.cuCtxGetCurrent && ag__real.cuCtxGetCurrent(&c) == CUDA_SUCCESS) ag__tls.ctx = c;
  return c;
}

static inline __attribute__((always_inline)) void *current_ctx(void) {
  if (AG_LIKELY(ag__tls.ctx)) return ag__tls.ctx;
  return current_ctx_slow();
}

int ag__ctx_enter(void *ctx) {
  if (current_ctx() == ctx) return 0;
  if (!ag__real.cuCtxPushCurrent || ag__real.cuCtxPushCurrent((CUcontext)ctx)) return -1;
  /* Launches made meanwhile (a cuDNN call's, which are not quiet) must see the pushed one. */
  ag__tls.ctx = ctx;
  return 1;
}

void ag__ctx_leave(int pushed) {
  CUcontext c;
  if (pushed != 1 || !ag__real.cuCtxPopCurrent) return;
  ag__real.cuCtxPopCurrent(&c);
  ag__tls.ctx = NULL; /* asked again at the next launch */
}

/* Events recorded or waited on in a stream's current sequence: a call that
 * observes such an event (a query, a synchronisation, a destroy, another record of it, a wait
 * on it from another stream) ends that sequence first, submitting it when it is held (the
 * record or wait may be a held graph node). Sequences are cut there whether held or not, so
 * that learning sees the cuts holding will make. Entries go when their sequence ends. */
#define AG_EVHELD 64
static struct evheld {
  void *ev;
  strm_t *S;
} evheld[AG_EVHELD];

static strm_t *evheld_stream(void *ev) {
  for (int i = 0; i < E.nev; i++)
    if (evheld[i].ev == ev) return evheld[i].S;
  return NULL;
}

static void evheld_drop(strm_t *S) {
  for (int i = 0; i < E.nev;)
    if (evheld[i].S == S) evheld[i] = evheld[--E.nev]; else i++;
  S->nevs = 0;
}

static void cut(strm_t *S);

/* Cuts every stream holding an event's record or wait. */
static void cut_events(void) {
  for (int guard = AG_EVHELD; E.nev && guard > 0; guard--) cut(evheld[0].S);
  E.nev = 0; /* (never left: each cut ends its stream's hold, which drops its entries) */
}

/* Of held entries [a, b) of S, how many are kernel launches. */
static int held_launches(const strm_t *S, int a, int b) {
  if (AG_LIKELY(!S->hops)) return b - a;
  int m = 0;
  for (int i = a; i < b; i++) m += S->held[i].k->fkind < AG_OP_MEMSET;
  return m;
}

/* S submitted what it held at t (from s's graph, or as ordinary launches for candidate s): how
 * long that kept the GPU waiting, when the stream was idle since an entry was held. */
static void submitted(strm_t *S, ag_seq_t *s, uint64_t t) {
  S->last_wait = S->idle_from && t > S->idle_from ? t - S->idle_from : 0;
  S->last_seq = s;
  S->idle_from = 0;
}

/* Submits what S holds up to entry n and has not submitted yet (entries [S->sent, n): those
 * before went in chunks) as ordinary launches, counted under `reason`. A failure is kept for
 * the thread that made the failed launch (it was told success when the launch was held).
 * Returns the first failure, or 0. */
static int submit_held(strm_t *S, int n, int reason) {
  int pushed, r, first = -1, nfailed = 0, a = S->sent;
  if (n <= a) return 0;
  uint64_t t0 = ag__obs_clock(), ts = S->idle_from ? ag__now_ns() : 0;
  pushed = ag__ctx_enter(S->ctx);
  ag__tls.quiet++;
  if (pushed < 0) {
    r = CUDA_ERROR_INVALID_CONTEXT, first = 0, nfailed = n - a;
  } else {
    r = ag__held_submit(S->held + a, n - a, S->arena, S->stream, &first, &nfailed);
  }
  ag__tls.quiet--;
  ag__ctx_leave(pushed);
  ag__valid_status(r, S->ctx); /* the helper thread submits with no context of its own */
  if (r && first >= 0 && !__atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED)) {
    pending_owner = S->held[a + first].owner;
    __atomic_store_n(&ag__pending_err, r, __ATOMIC_RELEASE);
  }
  S->sent = n;
  submitted(S, S->cand, ts);
  ag__obs_submitted(S->stream, n - a, held_launches(S, a, n), reason, t0, r, nfailed, S->cand);
  return r;
}

static void stop_holding(strm_t *S) {
  if (S->holding) {
    ag__obs_unhold(S->stream);
    __atomic_store_n(&S->holding, 0, __ATOMIC_RELAXED);
    E.nhold--;
    __atomic_store_n(&holding_pub, E.nhold, __ATOMIC_RELAXED);
  }
  S->cand = NULL;
  S->arena_used = 0;
  S->hops = 0;
  S->sent = 0;
  S->rep_ns = 0;
  S->idle_from = 0;
  __atomic_store_n(&S->deadline, 0, __ATOMIC_RELAXED);
}

static void demote(ag_seq_t *s, const char *why) {
  ag__seqtab_demote(E.tab, s);
  ag__obs_demoted(s, why);
  release_graph(s);
}

/* The chunk of graph g holding entry i (src/graph.h), and its first entry in *first. */
static int chunk_at(const ag_graph_t *g, int i, int *first) {
  const int *st;
  int lo = 0, hi = ag__graph_chunks(g, &st);
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (st[mid] <= i) lo = mid; else hi = mid;
  }
  *first = st[lo];
  return lo;
}

/* Launches the held entries [S->sent, to) of S's run, all inside chunk j of s's graph, in
 * place of those entries, and counts it; s's first entry is the run's entry `off`. Under the
 * lock, with S's context current and quiet. Returns 0, AG_GRAPH_NO_PREFIX (nothing launched:
 * that part of the chunk cannot run alone) or the CUDA error of the graph path. */
static int run_chunk(strm_t *S, ag_seq_t *s, int off, int j, int to, int more) {
  const int *st;
  uint64_t updates = 0;
  int from = S->sent;
  ag__graph_chunks(s->graph, &st);
  int launches = held_launches(S, from, to);
  uint64_t t0 = ag__now_ns();
  int r = ag__graph_prepare_chunk(s->graph, j, S->held + off, from - off - st[j],
                                  to - off - st[j], S->arena, &updates);
  if (r == 0) {
    ag__obs_replay_begin(s, launches, to - from - launches, updates);
    r = ag__graph_launch_chunk(s->graph, j, S->stream);
    ag__obs_replay_end();
  }
  uint64_t t1 = ag__now_ns();
  ag__obs_updates(updates);
  s->updates += updates;
  if (r) return r;
  s->replayed += (uint64_t)launches;
  ag__obs_replayed(S->stream, s, launches, to - from - launches,
                   from - off == st[j] && to - off == st[j + 1], more, t0, t1, updates);
  S->sent = to;
  S->rep_ns += t1 - t0;
  submitted(S, s, t0);
  return 0;
}

/* Launches, from s's graph, the held entries of S's run from the first not submitted yet
 * (S->sent) to entry `to`, chunk by chunk (the first and last possibly in part), s's first
 * entry being the run's entry `off` (run_to: 0); `end`: the run ends there. Checks first that a part can run alone, so that AG_GRAPH_NO_PREFIX means
 * nothing was launched. Under the lock, with S's context current and quiet. Returns 0,
 * AG_GRAPH_NO_PREFIX or a CUDA error. */
static int run_at(strm_t *S, ag_seq_t *s, int off, int to, int end) {
  const int *st;
  int sent = S->sent - off, n = to - off;
  if (sent >= n) return 0;
  int a, b, j = chunk_at(s->graph, sent, &a), last = chunk_at(s->graph, n - 1, &b), r = 0;
  ag__graph_chunks(s->graph, &st);
  if ((sent > a && !ag__graph_can_run(s->graph, j, sent - a, (j == last ? n : st[j + 1]) - a)) ||
      (n < st[last + 1] && !ag__graph_can_run(s->graph, last, j == last ? sent - b : 0, n - b)))
    return AG_GRAPH_NO_PREFIX;
  for (; r == 0 && j <= last; j++)
    r = run_chunk(S, s, off, j, off + (j == last ? n : st[j + 1]), j < last || !end);
  return r;
}

static int run_to(strm_t *S, ag_seq_t *s, int to, int end) { return run_at(S, s, 0, to, end); }

/* The pace of the host through s, from S's whole run of it: per position, how long after
 * entry i entry i + 1 came, as a maximum that forgets an eighth of itself per run (a slow
 * step raises it at once, then it comes down over a few steps). Kept in microseconds' worth of
 * nanoseconds, capped at 4 s. */
static void learn_pace(const strm_t *S, ag_seq_t *s, int n) {
  if (!s->pace && !(s->pace = calloc((size_t)n, sizeof *s->pace))) return;
  for (int i = 0; i + 1 < n; i++) {
    uint64_t g = S->held[i + 1].t > S->held[i].t ? S->held[i + 1].t - S->held[i].t : 0;
    uint32_t p = s->pace[i] - s->pace[i] / 8;
    if (g > UINT32_MAX) g = UINT32_MAX;
    s->pace[i] = (uint32_t)g > p ? (uint32_t)g : p;
  }
}

/* What to do when the graph path of s failed with CUDA error r: s is demoted, and what S holds
 * and has not submitted runs as ordinary launches. */
static void graph_failed(strm_t *S, ag_seq_t *s, int n, int r) {
  char why[64];
  snprintf(why, sizeof why, "graph path failed (CUDA error %d)", r);
  ag__valid_status(r, S->ctx);
  demote(s, why);
  submit_held(S, n, AG_FB_GRAPH_ERROR);
}

/* Plans s's chunks from the host times of S's run of it (n == s->n entries): the plan's
 * starts in starts (n of room), their number returned; 0 when out of memory. */
static int plan_chunks(const strm_t *S, int n, int *starts) {
  uint64_t *t = calloc((size_t)n, sizeof *t);
  if (!t) return 0;
  for (int i = 0; i < n; i++) t[i] = S->held[i].t;
  int nc = ag__chunk_plan(t, n, (uint64_t)ag__config.chunk_us * 1000u, starts);
  free(t);
  return nc;
}

/* The replay at which a sequence's chunks are planned again, from the pace of that run. The
 * first plan follows the run the graph was built from, whose pace one-time costs may have
 * slowed (the first hold starting the helper thread, the first launches of a kernel): a pause
 * seen once there would cut every later replay into one more graph launch. */
#define AG_REPLAN_AT 4

/* Plans s's chunks again from S's run of it and, when the plan differs, builds its graphs anew
 * from this run (the old ones are freed: launches of them in flight complete first, as CUDA
 * documents); returns 1 when it did. A failure keeps the old graphs. Under the lock, S's context
 * current, quiet. */
static int replan(strm_t *S, ag_seq_t *s, int n) {
  const int *old;
  int *starts = calloc((size_t)n, sizeof *starts), nc, same, built = 0;
  ag_graph_t *g;
  if (!starts || !(nc = plan_chunks(S, n, starts))) goto out;
  same = ag__graph_chunks(s->graph, &old) == nc && !memcmp(old, starts, (size_t)nc * sizeof *old);
  if (!same && ag__graph_build(&g, S->held, n, S->arena, starts, nc, 1) == 0) {
    ag__log(AG_LOG_DEBUG, "a sequence of %d: %d chunks instead of %d, by the pace of its replays",
            n, ag__graph_chunks(g, &old), ag__graph_chunks(s->graph, &old));
    ag__graph_free(s->graph);
    s->graph = g;
    built = 1;
  }
out:
  free(starts);
  return built;
}

/* s's graphs were built while generated kernels of its chains were not ready, and one has
 * become ready or failed since, or before s was steady, so that its chains' kernels were not
 * requested (src/fchain.h): builds them again from S's run of it, with the same chunks, so that
 * what is ready is substituted from the next replay on, and what was not requested is. Until
 * then the chains' kernels ran as they are: the program never waits for a compiler. `request`:
 * s is steady (see ag__graph_build). A failure keeps the old graphs, which then wait for the
 * next change. Under the lock, S's context current, quiet. */
static void refresh(strm_t *S, ag_seq_t *s, int n, int request) {
  const int *old;
  int nc = ag__graph_chunks(s->graph, &old), *starts = malloc((size_t)nc * sizeof *starts);
  ag_graph_t *g;
  if (starts) memcpy(starts, old, (size_t)nc * sizeof *starts);
  if (starts && ag__graph_build(&g, S->held, n, S->arena, starts, nc, request) == 0) {
    ag__log(AG_LOG_DEBUG, "a sequence of %d: graphs built again with the generated kernels now %s", n,
            ag__graph_later(s->graph) && request ? "requested or ready" : "ready");
    ag__graph_free(s->graph);
    s->graph = g;
  } else {
    ag__graph_waited(s->graph);
  }
  free(starts);
}

static ag_seq_t *find_prefix(const strm_t *S, int m, int exact);
static ag_seq_t *piece_seq(const struct ag_seq_piece *k);

/* The n launches S holds form the complete sequence s (n == s->n): build its graphs if needed
 * (cut into chunks by the pace at which they were held), update, launch what was not launched
 * yet. Or they are a proper prefix of s, whose graph is built (n < s->n, s READY): the chunks
 * the prefix covers run, the last in part (src/graph.h); returns AG_GRAPH_NO_PREFIX when that
 * cannot be done, having launched nothing more (the caller submits the rest). Else 0: the
 * launches ran, from the graphs or, when the graph path failed (s is then demoted), one by one.
 * What was launched while the run was held (chunks, or a shorter sequence it began with) is
 * not run again. */
static int replay(strm_t *S, ag_seq_t *s, int n) {
  int whole = n == s->n, pushed, r = 0;

  pushed = ag__ctx_enter(S->ctx);
  if (pushed < 0) {
    if (!whole) return AG_GRAPH_NO_PREFIX;
    submit_held(S, n, AG_FB_GRAPH_ERROR);
    return 0;
  }
  ag__tls.quiet++;
  if (s->state == AG_SEQ_BUILD) {
    ag_graph_t *g;
    uint64_t tb = ag__obs_clock();
    int *starts = calloc((size_t)n, sizeof *starts), nc;
    r = CUDA_ERROR_OUT_OF_MEMORY;
    /* Built from the run that completed it the second time: its chains' kernels are requested
     * once it has proved steady (AG_REPLAN_AT), below. */
    if (starts && (nc = plan_chunks(S, n, starts)))
      r = ag__graph_build(&g, S->held, n, S->arena, starts, nc, 0);
    free(starts);
    if (r == 0) {
      s->graph = g;
      ag__seqtab_ready(E.tab, s, ag__graph_cost(n));
    }
    ag__obs_built(S->stream, s, n, tb, r);
  }
  if (r == 0) r = run_to(S, s, n, 1);
  if (r == 0 && whole) {
    /* At AG_REPLAN_AT replays the sequence is steady: its chunks are planned again and its
     * chains' kernels requested (from a build anew, or the same chunks built again). */
    int steady = s->replays + 1 >= AG_REPLAN_AT, now = s->replays + 1 == AG_REPLAN_AT;
    int rebuilt = now && ag__config.chunk_us && replan(S, s, n);
    if (!rebuilt && ((now && ag__graph_later(s->graph)) || ag__graph_waits(s->graph, steady)))
      refresh(S, s, n, steady);
  }
  ag__tls.quiet--;
  ag__ctx_leave(pushed);
  if (r == AG_GRAPH_NO_PREFIX) {
    if (!whole) return r;
    /* A whole sequence whose first entries went in another's graph, in a part of a chunk that
     * cannot run alone: the rest runs as ordinary launches. */
    submit_held(S, n, AG_FB_MISMATCH);
    return 0;
  }
  if (r) {
    graph_failed(S, s, n, r);
    return 0;
  }
  ag__seqtab_touch(E.tab, s);
  if (!whole) return 0;
  learn_pace(S, s, n);
  s->replays++;
  s->replay_ns += ((double)S->rep_ns - s->replay_ns) / (double)(s->replays < 16 ? s->replays : 16);
  /* The guard: after a few replays, a sequence whose replay (its chunks' graph launches and
   * node updates) costs clearly more host time than launching its kernels one by one is not
   * worth holding. Prefix replays do not enter it: their cost is that of the whole graph's
   * launch. To confirm on a GPU: both costs here are modelled by the simulator. */
  double ln = (double)__atomic_load_n(&launch_ns, __ATOMIC_RELAXED);
  if (s->replays >= 16 && sampled >= 16 * 32 && s->replay_ns > 1.25 * ln * s->n)
    demote(s, "replay does not pay");
  /* And the time effect: a sequence whose replays keep the GPU waiting before the program
   * synchronises (its last launches held while the device had nothing to do) longer than they
   * save host time makes the program slower, whatever its replays cost. */
  else if (s->replays >= 16 && sampled >= 16 * 32 && s->wait_ns &&
           (double)s->wait_ns / (double)s->replays > ln * s->n - s->replay_ns)
    demote(s, "replays keep the GPU waiting longer than they save");
  /* A run of back-to-back occurrences of a shorter sequence learned as one saves graph
   * launches, and node updates where each occurrence has arguments of its own (the layers of
   * a network); where the arguments move from step to step instead, its replays update more
   * nodes than the shorter one's. Whichever costs less host time stays. */
  else if (s->unit && s->replays >= 16) {
    int times = s->n / s->unit; /* whole cycles */
    double pieces = 0;
    for (int q = 0; q < s->npieces; q++) {
      const ag_seq_t *p = piece_seq(&s->pieces[q]);
      pieces += p && p->replays ? p->replay_ns : 1e300;
    }
    if (s->replay_ns > times * pieces)
      demote(s, "replays of its pieces one by one cost less");
  }
  return 0;
}

/* A READY sequence of which S's first m entries are a proper prefix at least two thirds of its
 * length, or NULL. The bound keeps what a prefix replay costs beyond the launches it saves
 * (toggling the later nodes off, and on again at the next whole replay: at most a third of the
 * nodes each way) below what it saves. To confirm on a GPU: the cost of cuGraphNodeSetEnabled
 * against a launch's (the simulator charges it as a node update). */
static ag_seq_t *find_ready_prefix(const strm_t *S, int m) {
  for (ag_seq_t *s = ag__seqtab_first(E.tab, S->hashes[0]); s; s = s->next_first) {
    int a;
    /* A prefix that ends where a chunk does toggles nothing: it is served at any length. */
    if (s->state == AG_SEQ_READY && s->n > m && s->graph &&
        (3 * m >= 2 * s->n || (chunk_at(s->graph, m, &a), a == m)) &&
        !memcmp(s->hashes, S->hashes, (size_t)m * sizeof *S->hashes))
      return s;
  }
  return NULL;
}

/* Finds a BUILD/READY sequence whose first m structural hashes are S's first m and whose length
 * is `exact` (when > 0) or at least m (when 0: the held run may continue it, or end here as a
 * whole sequence). */
static ag_seq_t *find_prefix(const strm_t *S, int m, int exact) {
  for (ag_seq_t *s = ag__seqtab_first(E.tab, S->hashes[0]); s; s = s->next_first) {
    if (exact ? s->n != exact : s->n < m) continue;
    if (!memcmp(s->hashes, S->hashes, (size_t)m * sizeof *S->hashes)) return s;
  }
  return NULL;
}

/* A sequence learned as back-to-back occurrences of a shorter one (ag_seq_t.unit) that
 * continues S's held run past its first m entries, or NULL. */
static ag_seq_t *run_continues(const strm_t *S, int m) {
  for (ag_seq_t *u = ag__seqtab_first(E.tab, S->hashes[0]); u; u = u->next_first)
    if (u->unit && u->n > m && !memcmp(u->hashes, S->hashes, (size_t)m * sizeof *S->hashes))
      return u;
  return NULL;
}

/* The READY sequence with key k, its graph built, or NULL. */
static ag_seq_t *piece_seq(const struct ag_seq_piece *k) {
  ag_seq_t *s = ag__seqtab_get(E.tab, k->hash, (int)k->n);
  return s && s->state == AG_SEQ_READY && s->graph ? s : NULL;
}

/* Learns, from S's whole replays back to back since the stream was last cut (S->rep), the
 * longest run of two or more repetitions of one cycle of them, as one sequence of those
 * repetitions (at most AUTOGRAPH_MAX_SEQ entries): counted like any other, held as one run, its
 * chunks following the host's pace. A network's identical blocks, each cut into the same
 * pieces, then cost a few graph launches a step rather than a few a block, and no node updates
 * where each block has arguments of its own (its layer's tensors). Should a later step repeat
 * the cycle fewer times, the held run goes out as replays of its pieces (run_units). Forgets
 * S->rep. Under the lock. */
static void repeat_end(strm_t *S) {
  const struct ag_seq_piece *r = S->rep;
  int np = S->rep_np, best = 0, bi = 0, bc = 0, bk = 0;
  S->rep_np = 0;
  for (int c = 1; 2 * c <= np; c++) {
    for (int i = 0; i + 2 * c <= np; i++) {
      int len = 0, k = 1;
      for (int q = 0; q < c; q++) len += (int)r[i + q].n;
      while (i + (k + 1) * c <= np && !memcmp(r + i, r + i + k * c, (size_t)c * sizeof *r)) k++;
      if (k > ag__config.max_seq / len) k = ag__config.max_seq / len;
      if (k >= 2 && k * len > best) best = k * len, bi = i, bc = c, bk = k;
    }
  }
  if (!best) return;
  uint64_t *hs = malloc((size_t)best * sizeof *hs);
  uint32_t *ks = malloc((size_t)best * sizeof *ks);
  struct ag_seq_piece *pc = malloc((size_t)bc * sizeof *pc);
  uint64_t key = (uint64_t)bk;
  int m = 0, added;
  if (!hs || !ks || !pc) goto out;
  for (int q = 0; q < bc; q++) {
    const ag_seq_t *s = piece_seq(&r[bi + q]);
    if (!s || !s->kids || s->unit) goto out;
    memcpy(hs + m, s->hashes, (size_t)s->n * sizeof *hs);
    memcpy(ks + m, s->kids, (size_t)s->n * sizeof *ks);
    m += s->n;
    pc[q] = r[bi + q];
    key = ag__mix64(key ^ s->key.hash) + (uint64_t)s->n;
  }
  for (int j = 1; j < bk; j++) {
    memcpy(hs + j * m, hs, (size_t)m * sizeof *hs);
    memcpy(ks + j * m, ks, (size_t)m * sizeof *ks);
  }
  ag_seq_t *u = ag__seqtab_find(E.tab, key, hs, ks, best, &added);
  if (!u) goto out;
  if (added) {
    u->unit = m, u->npieces = bc, u->pieces = pc, pc = NULL;
    ag__obs_counted(u, best, added);
  }
  if (u->unit && ++u->count >= (uint64_t)ag__config.repeats && u->state == AG_SEQ_COUNTING)
    ag__seqtab_to_build(E.tab, u);
out:
  free(hs), free(ks), free(pc);
}

static void repeat_push(strm_t *S, struct ag_seq_piece k) {
  if (S->rep_np == AG_REP_PIECES) repeat_end(S);
  S->rep[S->rep_np++] = k;
}

/* S's held run was s, whole, replayed: its pieces join S->rep (a sequence learned as
 * repetitions, its cycle's pieces as many times as it repeats them). */
static void repeat_note(strm_t *S, const ag_seq_t *s) {
  if (!s->unit) {
    repeat_push(S, (struct ag_seq_piece){s->key.hash, s->n});
    return;
  }
  for (int t = 0; t < s->n / s->unit; t++)
    for (int q = 0; q < s->npieces; q++) repeat_push(S, s->pieces[q]);
}

/* S's held run [S->sent, n) was held as u, repetitions of a cycle of sequences (u->pieces), and
 * ends or diverges before u does: its whole pieces not submitted yet run from their own
 * graphs, one after the other (the first possibly in part); what is left is the caller's to
 * submit. Under the lock. */
static void run_units(strm_t *S, const ag_seq_t *u, int n) {
  int r = 0, pushed = ag__ctx_enter(S->ctx);
  if (pushed < 0) return;
  ag__tls.quiet++;
  for (int off = 0, q = 0; r == 0 && off + u->pieces[q].n <= n; off += (int)u->pieces[q].n, q = (q + 1) % u->npieces) {
    if (off + u->pieces[q].n <= S->sent) continue;
    ag_seq_t *s = piece_seq(&u->pieces[q]);
    if (!s) break;
    r = run_at(S, s, off, off + (int)u->pieces[q].n, 0);
    if (r && r != AG_GRAPH_NO_PREFIX) graph_failed(S, s, n, r);
  }
  /* The whole pieces held, back to back: more repetitions than u's are learned from them. */
  for (int off = 0, q = 0; off + u->pieces[q].n <= S->sent; off += (int)u->pieces[q].n, q = (q + 1) % u->npieces)
    repeat_push(S, u->pieces[q]);
  ag__tls.quiet--;
  ag__ctx_leave(pushed);
}

static void seg_restart(strm_t *S) {
  ag__seg_reset(&S->seg);
  S->seg_gen = ++E.gen;
  if (AG_UNLIKELY(S->nevs)) evheld_drop(S);
}

/* Ends S's current sequence. `content` says the segmenter cut it (then `hash` is its content
 * hash); otherwise a call that observes the stream, or the bound on holds (`reason`, the
 * fallback that an incomplete held sequence is counted under) ended it.
 * A held run that is a complete known sequence is replayed. One that ended early, at a call, as
 * a proper prefix of at least two thirds of a sequence whose graph is built, is replayed from
 * that graph with the later nodes disabled (a step cut short by a synchronisation, the last
 * step before a report). Any other is submitted, and then counted as an occurrence of its own
 * sequence like any run that was not held: a step that always ends at the same call
 * becomes a sequence of its own, graphed after AUTOGRAPH_REPEATS. A run ended by the bound on
 * holds is not counted (see below). */
static void finish(strm_t *S, int content, uint64_t hash, int reason) {
  int n = S->seg.len;
  if (!n) goto out;
  if (S->holding) {
    ag_seq_t *s = find_prefix(S, n, n), *was = S->cand;
    int r = 0, ops = S->hops;
    if (s) {
      replay(S, s, n);
    } else if (content || !(s = find_ready_prefix(S, n)) || replay(S, s, n)) {
      if (was && was->unit) run_units(S, was, n);
      s = NULL, r = submit_held(S, n, content ? AG_FB_MISMATCH : reason);
    }
    int whole = s && !ops && s->n == n && s->state == AG_SEQ_READY;
    if (whole) repeat_note(S, s);
    if (!whole || !content) repeat_end(S); /* a call ends the repetitions */
    stop_holding(S);
    /* A run that failed at submission is never learned; nor is one ended by the
     * bound on holds: the program waits on the device there, and graphing the run would only
     * make every later occurrence wait for the bound. */
    if (s || r || (!content && reason == AG_FB_HOLD_TIMEOUT)) goto out;
  } else {
    repeat_end(S);
    ag__obs_run_passed(n, content);
  }
  if (n >= ag__config.min_seq) {
    int added;
    /* An external cut finds the segmenter as it was: its hash covers exactly these launches. */
    uint64_t h = content ? hash : S->seg.hash;
    ag_seq_t *s = ag__seqtab_find(E.tab, h, S->hashes, S->kids, n, &added);
    if (s) {
      S->fin_gen = S->seg_gen, S->fin_hash = h, S->fin_n = n;
      ag__obs_counted(s, n, added);
      if (++s->count >= (uint64_t)ag__config.repeats && s->state == AG_SEQ_COUNTING)
        ag__seqtab_to_build(E.tab, s);
    }
  }
out:
  seg_restart(S);
}

static int stream_idle(const strm_t *S);

/* A call observes S's work with nothing launched on S since its last submission. If that
 * submission kept the GPU waiting (the stream was idle while its launches were held) and the
 * work is not done yet (the call may wait for it), the program may wait that much longer than
 * without the library: charged to the sequence whose launches they were. */
static void tail(strm_t *S) {
  if (E.observing && S->last_wait && S->last_seq && S->last_seq->state != AG_SEQ_DEMOTED) {
    int pushed = ag__ctx_enter(S->ctx);
    if (pushed >= 0 && !stream_idle(S)) S->last_seq->wait_ns += S->last_wait;
    ag__ctx_leave(pushed);
  }
  S->last_wait = 0;
  S->last_seq = NULL;
}

/* An external cut of S: a call that observes its work, a launch that cannot be held. */
static void cut(strm_t *S) {
  if (S->seg.len) finish(S, 0, 0, AG_FB_FLUSHED);
  else if (AG_UNLIKELY(S->rep_np)) repeat_end(S);
  if (AG_UNLIKELY(S->last_seq)) tail(S);
}

/* Cuts every record (a call that may observe any stream, exit, fork). */
static void cut_all(void) {
  for (int i = 0; i < AG_STREAMS; i++)
    if (E.s[i].stream) cut(&E.s[i]);
}

/* ---- which streams a call observes ----------------------------------------------------------- */

/* CUDA's implicit synchronisation: work on the legacy default stream waits for all earlier work
 * on blocking streams of its context and vice versa; non-blocking streams (cudaStreamNonBlocking,
 * CU_STREAM_NON_BLOCKING) and the per-thread default stream's relation to other streams is only
 * with the legacy stream (the per-thread stream is blocking). So, when work is submitted to (or a
 * call observes) stream X:
 *   X legacy:   held launches on X and on every blocking stream must be submitted first;
 *   X blocking (or the per-thread stream): held launches on X and on the legacy stream;
 *   X non-blocking: held launches on X only.
 * Contexts are not told apart here (the legacy stream of every context is flushed): a superset.
 * Whether a stream is blocking is asked once per record (cuStreamGetFlags), and for an ordering
 * call's stream only while the legacy stream holds; a stream the driver cannot describe is taken
 * as blocking. */
static int stream_blocking(void *stream) {
  unsigned flags = 0;
  if (stream == CU_STREAM_LEGACY) return 2;
  if (stream == CU_STREAM_PER_THREAD) return 1;
  if (!ag__real.cuStreamGetFlags) return 1;
  ag__tls.quiet++;
  CUresult r = ag__real.cuStreamGetFlags((CUstream)stream, &flags);
  ag__tls.quiet--;
  if (r != CUDA_SUCCESS) return 1;
  return (flags & CU_STREAM_NON_BLOCKING) ? 0 : 1;
}

/* Cuts the records that work on `stream` (of implicit synchronisation class `blocking`) would be
 * ordered after, except `except`. Under the lock. */
static void cut_partners(void *stream, int blocking, const strm_t *except) {
  if (!blocking) return;
  for (int i = 0; i < AG_STREAMS; i++) {
    strm_t *P = &E.s[i];
    if (P == except || !P->stream || P->stream == stream) continue;
    if (blocking == 2 ? P->blocking == 1 : P->blocking == 2) cut(P);
  }
}

/* Cuts S, naming `why` as the cause (the trace, the statistics' runs). */
static void cut_because(strm_t *S, const char *why) {
  ag__obs_cause(why);
  cut(S);
  ag__obs_cause(NULL);
}

/* Work submitted to S (a launch, a stream operation) is ordered after work on its
 * implicit-synchronisation partners (the legacy stream and blocking streams): what they hold
 * must be submitted first, and what they are learning ends here too, as it will whenever they
 * hold. */
static inline void partners_first(strm_t *S) {
  if (AG_LIKELY(!E.mixed) || !S->blocking) return;
  ag__obs_cause("legacy default stream (implicit synchronisation)");
  cut_partners(S->stream, S->blocking, S);
  ag__obs_cause(NULL);
}

/* Cuts what a call observing `stream` observes: its own record and its partners' (above). NULL
 * (a call on the default stream, legacy or per-thread) is taken as the legacy stream. */
static void cut_stream(void *stream) {
  int any_legacy = 0, b = -1;
  if (!stream) stream = CU_STREAM_LEGACY;
  for (int i = 0; i < AG_STREAMS; i++) {
    strm_t *P = &E.s[i];
    if (!P->stream) continue;
    if (P->stream == stream) cut(P), b = P->blocking;
    if (P->blocking == 2 && P->seg.len) any_legacy = 1;
  }
  if (stream == CU_STREAM_LEGACY) {
    cut_partners(stream, 2, NULL);
  } else if (any_legacy) {
    /* Its record (when it has one) knows whether it is blocking; otherwise ask. */
    if (b < 0) b = stream_blocking(stream);
    cut_partners(stream, b, NULL);
  }
}

/* What an ordering call observes: see call_rule(). */
enum { RULE_UNKNOWN, RULE_NONE, RULE_STREAM, RULE_STREAM_END, RULE_ALL };

/* Calls that observe no held launch, whatever they name, and why:
 *   event query, synchronize and destroy: an event covers only the work before its last record,
 *     and a record on a stream submits what that stream holds first (the record is a stream
 *     call) — so no held launch is ever behind an event, unless the record itself is held (a
 *     graph node, below): then the call submits the stream that holds it (the runtime's forms
 *     name the event; the driver's, which do not, submit every stream holding an event);
 *   allocation (not the stream-ordered kind) and host allocation or registration: their result
 *     does not depend on queued work (frees, which synchronise, still flush);
 *   setting the current device or context: held launches keep the context they were made in
 *     (they are submitted in it, from whatever thread).
 * Stream calls (a stream argument: copies, memsets, records, waits, stream queries and
 * synchronisation, host functions, stream-ordered allocation, graph launches) observe that
 * stream and its implicit-synchronisation partners (cut_stream). Everything else (device
 * synchronisation, synchronous copies, frees, captures, unknown calls) observes everything. */
static const char *const rule_none[] = {
    "cudaEventQuery", "cudaEventSynchronize", "cudaEventDestroy",
    "cudaMalloc", "cudaMallocHost", "cudaHostAlloc", "cudaHostRegister", "cudaMallocManaged",
    "cudaMallocPitch", "cudaMalloc3D", "cudaMallocArray", "cudaMalloc3DArray",
    "cudaMallocMipmappedArray", "cudaSetDevice",
    "cuEventQuery", "cuEventSynchronize", "cuEventDestroy", "cuEventDestroy_v2", "cuMemAlloc", "cuMemAlloc_v2",
    "cuMemAllocPitch", "cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemAllocHost",
    "cuMemAllocHost_v2", "cuMemHostAlloc", "cuMemHostRegister", "cuMemHostRegister_v2",
    "cuCtxSetCurrent", "cuCtxPushCurrent", "cuCtxPushCurrent_v2", "cuCtxPopCurrent",
    "cuCtxPopCurrent_v2", NULL};

static int call_rule(ag_call_t *call) {
  int r;
  if (!call) return RULE_ALL;
  r = __atomic_load_n(&call->rule, __ATOMIC_RELAXED);
  if (AG_LIKELY(r)) return r;
  r = RULE_ALL;
  for (const char *const *p = rule_none; *p; p++) {
    size_t n = strlen(*p);
    /* The per-thread forms (_ptsz, _ptds) follow the same rule. */
    if (!strncmp(call->name, *p, n) && (!call->name[n] || call->name[n] == '_')) r = RULE_NONE;
  }
  /* The table's NULL reaches here as written or macro-expanded ("((void *)0)"); a stream
   * expression is an identifier or a member access. */
  int named = call->stream_arg && strcmp(call->stream_arg, "NULL") &&
              !strstr(call->stream_arg, "void");
  if (r == RULE_ALL && named && call->family != AG_FAM_CAPTURE &&
      call->family != AG_FAM_DEVICE)
    r = call->family == AG_FAM_STREAM && strstr(call->name, "StreamDestroy") ? RULE_STREAM_END
                                                                            : RULE_STREAM;
  __atomic_store_n(&call->rule, r, __ATOMIC_RELAXED);
  return r;
}

/* ---- launches ----------------------------------------------------------------------------- */

/* The block and shared memory are compared as one block of four unsigneds. */
_Static_assert(offsetof(ag_launch_t, shmem) == offsetof(ag_launch_t, block) + 3 * sizeof(unsigned),
               "ag_launch_t: block and shmem must be contiguous");
_Static_assert(sizeof(((ag_kinfo_t *)0)->shape) == 4 * sizeof(unsigned), "ag_kinfo_t: shape");

static inline uint64_t struct_hash(ag_kinfo_t *k, const ag_launch_t *l, int any) {
  uint64_t h;
  /* A kernel is mostly launched with one block: the last one's hash is kept with the kernel,
   * whatever the grid (a kernel whose grid follows the data hits it too). The comparison reads
   * the struct's bytes from block on, not the block array, which the four unsigneds run past. */
  if (AG_LIKELY(k->shape_known &&
                !memcmp(k->shape, (const char *)l + offsetof(ag_launch_t, block), sizeof k->shape)))
    return AG_UNLIKELY(any) ? ag__lattr_hash(k->shape_hash, l) : k->shape_hash;
  /* Kernel, block and shared memory; not the grid. A kernel whose grid follows the data (the
   * number of elements, of unique indices) is the same entry of its sequence with any grid, and
   * a replay updates its node's grid like an argument (src/graph.c): with the grid in the hash,
   * every sequence around such a kernel changed whenever the data did, and never repeated. */
  h = ag__shape_hash(k->id, l->block, l->shmem);
  k->shape[0] = l->block[0], k->shape[1] = l->block[1], k->shape[2] = l->block[2];
  k->shape[3] = l->shmem;
  k->shape_hash = h, k->shape_known = 1;
  ag__obs_shape(h, k, l);
  /* Launch attributes (src/launch-attrs.h): a launch with others is another entry. */
  return AG_UNLIKELY(any) ? ag__lattr_hash(h, l) : h;
}

/* Why this launch cannot be held (enum ag_fallback + 1), or 0. A kernel without parameters
 * may be launched without an argument array. Attributes, cooperative entry points and `extra`
 * buffers are src/launch-attrs.h's. */
static inline int attr_reason(const ag_launch_t *l, const ag_kinfo_t *k) {
  if (AG_UNLIKELY(ag__lattr_any(l))) return ag__lattr_reason(l, k);
  if (AG_UNLIKELY(!l->args && k->nparams)) return AG_FB_ATTRIBUTES + 1;
  return 0;
}

/* Copies the launch l (or, when l is NULL, the operation's `bytes`, k->param_bytes of them)
 * into S's held list at position i. Returns 0 or -AG_ENOMEM. */
static int hold(strm_t *S, int i, ag_kinfo_t *k, const ag_launch_t *l, const void *bytes) {
  ag_held_t *h = &S->held[i];
  size_t at = 0, need = S->arena_used + k->param_bytes;
  if (AG_UNLIKELY(l && ag__lattr_any(l))) at = AG_LATTR_ALIGN(need), need = at + ag__lattr_bytes(l);
  if (need > S->arena_cap) {
    size_t cap = S->arena_cap * 2 > need ? S->arena_cap * 2 : need;
    uint8_t *a = realloc(S->arena, cap);
    if (!a) return -AG_ENOMEM;
    S->arena = a, S->arena_cap = cap;
  }
  h->k = k;
  h->t = ag__now_ns();
  h->owner = pthread_self();
  h->off = (uint32_t)S->arena_used;
  h->nattrs = 0;
  if (AG_UNLIKELY(!l)) {
    memset(h->grid, 0, sizeof h->grid), memset(h->block, 0, sizeof h->block), h->shmem = 0;
    memcpy(S->arena + S->arena_used, bytes, k->param_bytes);
    S->hops++;
  } else {
    memcpy(h->grid, l->grid, sizeof h->grid);
    memcpy(h->block, l->block, sizeof h->block);
    h->shmem = l->shmem;
    if (AG_UNLIKELY(ag__lattr_any(l))) {
      /* Attributes, and the arguments of an `extra` buffer (src/launch-attrs.h). */
      if (!l->extra)
        for (uint32_t j = 0; j < k->nparams; j++)
          memcpy(S->arena + S->arena_used + k->params[j].offset, l->args[j], k->params[j].size);
      ag__lattr_hold(h, l, k, S->arena + S->arena_used, S->arena, at);
    } else {
      for (uint32_t j = 0; j < k->nparams; j++)
        memcpy(S->arena + S->arena_used + k->params[j].offset, l->args[j], k->params[j].size);
    }
  }
  S->arena_used = need;
  return 0;
}

/* Submits a launch the engine did not hold (outside the lock). `sample`: measure its host cost
 * for the guard. */
static int pass(const ag_launch_t *l, int sample) {
  int r;
  ag__tls.quiet++;
  if (AG_UNLIKELY(sample)) {
    uint64_t t0 = ag__now_ns();
    r = l->submit(l);
    int64_t ns = (int64_t)(ag__now_ns() - t0), old = (int64_t)__atomic_load_n(&launch_ns, __ATOMIC_RELAXED);
    /* A racy running mean is fine: it only steers the guard. */
    __atomic_store_n(&launch_ns, (uint64_t)(old ? old + (ns - old) / 16 : ns), __ATOMIC_RELAXED);
  } else {
    r = l->submit(l);
  }
  ag__tls.quiet--;
  return r;
}

/* Wakes the helper thread if it sleeps (a hold begins on S; called under the lock). The helper
 * sets helper_idle before it reads holding_pub, and this reads helper_idle after setting
 * holding_pub, both sequentially consistent: one of the two sees the other. */
static void wake_helper(void) {
  if (AG_UNLIKELY(__atomic_load_n(&helper_idle, __ATOMIC_SEQ_CST))) {
    pthread_mutex_lock(&helper_mu);
    __atomic_store_n(&helper_idle, 0, __ATOMIC_SEQ_CST);
    pthread_cond_signal(&helper_cv);
    pthread_mutex_unlock(&helper_mu);
  }
}

static void hold_begins(strm_t *S) {
  __atomic_store_n(&S->holding, 1, __ATOMIC_RELAXED);
  E.nhold++;
  __atomic_store_n(&holding_pub, E.nhold, __ATOMIC_SEQ_CST);
  wake_helper();
}

/* Empties record S (cut first): its stream ended, or the record is reused. */
static void strm_drop(strm_t *S) {
  cut(S);
  E.nblk[S->blocking]--;
  E.mixed = E.nblk[1] && E.nblk[2];
  S->stream = NULL, S->ctx = NULL;
  if (E.cur == S) E.cur = &none;
}

/* The record of (stream, ctx), made when missing: a free record, or else the least recently used
 * one, cut and emptied (what it held is submitted, what it learned so far is counted). NULL when
 * out of memory. Under the lock. */
static strm_t *__attribute__((noinline)) strm_lookup(void *stream, void *ctx) {
  strm_t *S = NULL, *free_s = NULL, *old = NULL;
  for (int i = 0; i < AG_STREAMS; i++) {
    strm_t *P = &E.s[i];
    if (P->stream == stream && P->ctx == ctx) {
      S = P;
      break;
    }
    if (!P->stream) {
      if (!free_s) free_s = P;
    } else if (!old || P->used < old->used) {
      old = P;
    }
  }
  if (!S) {
    S = free_s ? free_s : old;
    if (S->stream) {
      if (S->holding) ag__obs_cause("more streams than the engine follows at once");
      strm_drop(S); /* cut first */
      ag__obs_cause(NULL);
    }
    if (strm_alloc(S) != 0) return NULL;
    S->stream = stream, S->ctx = ctx;
    S->blocking = stream_blocking(stream);
    E.nblk[S->blocking]++;
    E.mixed = E.nblk[1] && E.nblk[2];
    seg_restart(S);
  }
  S->used = ++E.clock;
  E.cur = S;
  return S;
}

static inline strm_t *strm_of(void *stream, void *ctx) {
  strm_t *S = E.cur; /* never NULL: `none` when there is no last record */
  if (AG_LIKELY(S->stream == stream && S->ctx == ctx)) return S;
  return strm_lookup(stream, ctx);
}

static void chunk_done(strm_t *S, int e);

/* Whether S's stream has no work left on the device (cuStreamQuery). */
static int stream_idle(const strm_t *S) {
  if (!ag__real.cuStreamQuery) return 0;
  ag__tls.quiet++;
  CUresult r = ag__real.cuStreamQuery((CUstream)S->stream);
  ag__tls.quiet--;
  return r == CUDA_SUCCESS;
}

/* The bound of a hold whose last entry is entry i of S's run. Where the candidate sequence has
 * been held before, the pace of its host (how long after entry i its next entry came) sets it:
 * four times that, at least AG_HOLD_FLOOR_US; never more than AUTOGRAPH_HOLD_US. So a step's
 * usual pace never reaches the bound, and a program that stops calling CUDA there (it waits on
 * the device, on another process, on a lock) gets its launches a few of its own gaps later, not
 * a whole bound later. Nothing left to submit (every entry went in a chunk): no bound. */
#define AG_HOLD_FLOOR_US 100
static void set_deadline(strm_t *S, int i) {
  uint64_t wait = (uint64_t)ag__config.hold_us * 1000u, d = 0;
  const ag_seq_t *s = S->cand;
  if (S->sent <= i) {
    if (s && s->pace && i + 1 < s->n) {
      uint64_t p = 4 * (uint64_t)s->pace[i], floor = AG_HOLD_FLOOR_US * 1000u;
      if (p < floor) p = floor;
      if (p < wait) wait = p;
    }
    d = S->held[i].t + wait;
  }
  __atomic_store_n(&S->deadline, d, __ATOMIC_RELAXED);
}

/* Whether a known sequence other than s, longer than e, begins with S's first e entries: the
 * held run may yet turn out to be that one. */
static int continued(const strm_t *S, const ag_seq_t *s, int e) {
  for (ag_seq_t *o = ag__seqtab_first(E.tab, S->hashes[0]); o; o = o->next_first)
    if (o != s && o->n > e && !memcmp(o->hashes, S->hashes, (size_t)e * sizeof *S->hashes)) return 1;
  return 0;
}

/* Whether launch l of k may be held on S: the driver would accept it now (src/validity.h) and
 * S's context has not reported a device fault. Otherwise the reason is the trace's cause (and
 * the dump's: what cut the sequence). */
static int __attribute__((noinline)) launch_holdable(strm_t *S, ag_kinfo_t *k, const ag_launch_t *l) {
  if (ag__hold_offline) return 1; /* a recorded trace: every launch in it succeeded */
  const char *why = ag__valid_faulted(S->ctx) ? "device fault reported (sticky error)"
                                              : ag__valid_launch(k, l);
  if (!why) return 1;
  ag__obs_cause(why);
  return 0;
}

/* Adds one entry (structural hash h, kernel or operation k) to S's current sequence: begins
 * holding when a known sequence may begin here, checks a hold against its candidate, holds the
 * entry (a launch's arguments from l, or an operation's bytes), and ends the sequence when the
 * segmenter says so. Returns 1 when the entry was held (or replayed), 0 when the caller must
 * perform it; *gen is the generation of the sequence it was recorded in. Under the lock. */
static inline __attribute__((always_inline)) int advance(strm_t *S, ag_kinfo_t *k, uint64_t h,
                                                         const ag_launch_t *l, const void *bytes,
                                                         uint32_t *gen) {
  int i = S->seg.len, held = 0;
  uint64_t done;
  /* More work after the last submission: whoever waits now waits for that too. */
  if (AG_UNLIKELY(S->last_seq)) S->last_wait = 0, S->last_seq = NULL;
  if (AG_UNLIKELY(h == S->hashes[0]) && i >= S->seg.period &&
      !(S->holding && S->cand->unit && S->cand->n > i && S->cand->hashes[i] == h)) {
    /* The sequence's first launch again, half of AUTOGRAPH_MAX_SEQ or more launches later, with
     * no cut point of the segmenter's between: a period closes, so the sequence ends before this
     * launch, which begins the next. Without this, a loop body that repeats with no call
     * between iterations and contains no cut point would be cut only at AUTOGRAPH_MAX_SEQ, a
     * length its period need not divide: consecutive sequences would start at different
     * phases of the body and be learned only after the phases come round again, if ever. With
     * it, a period p up to AUTOGRAPH_MAX_SEQ is cut at the first multiple of p from half the
     * maximum on (at most the maximum), the same way in every iteration. Sequences shorter than
     * half the maximum, what the window cuts, are not touched. Still content-defined: where
     * the cut falls depends only on the launches since the previous one. */
    finish(S, 1, S->seg.hash, AG_FB_MISMATCH);
    i = 0;
  }
  S->kids[i] = k->id;
  if (AG_UNLIKELY(i == 0)) {
    S->hashes[0] = h;
    /* A sequence boundary: hold if a known sequence may begin here (and holds can be bounded:
     * AUTOGRAPH_HOLD_US is not 0 and the helper thread could be started). */
    if (AG_LIKELY(__atomic_load_n(&helper_state, __ATOMIC_RELAXED) >= 0) &&
        (S->cand = find_prefix(S, 1, 0)) != NULL) {
      hold_begins(S);
      ag__obs_hold(S->stream);
    }
  } else {
    S->hashes[i] = h;
    ag_seq_t *was = S->cand;
    if (S->holding && !(was->n > i && was->hashes[i] == h) && !(S->cand = find_prefix(S, i + 1, 0))) {
      /* Diverged from every known sequence: what was held runs now, this entry after it. */
      if (was->unit) run_units(S, was, i);
      submit_held(S, i, AG_FB_MISMATCH);
      stop_holding(S);
    }
  }
  if (AG_UNLIKELY(S->holding)) {
    if (l && AG_UNLIKELY(!ag__valid_plain(k, l)) && !launch_holdable(S, k, l)) {
      /* The driver would refuse this launch: it passes through and fails as it would without
       * us, what is held running first. */
      if (S->cand && S->cand->unit) run_units(S, S->cand, i);
      submit_held(S, i, AG_FB_FLUSHED);
      stop_holding(S);
    } else if (hold(S, i, k, l, bytes) == 0) {
      held = 1;
      /* A held entry always has a candidate: the sequence it is held for. Once that one is
       * built, chunks go as they complete. */
      int chunked = S->cand && S->cand->state == AG_SEQ_READY && ag__config.chunk_us;
      /* The first entry not submitted yet: is the GPU idle meanwhile (the guard's)? */
      if (chunked && i == S->sent) S->idle_from = stream_idle(S) ? S->held[i].t : 0;
      if (chunked) chunk_done(S, i + 1);
      if (S->holding) set_deadline(S, i);
    } else {
      if (i) ag__obs_cause("out of memory");
      submit_held(S, i, AG_FB_FLUSHED);
      stop_holding(S);
    }
  }
  *gen = S->seg_gen;
  if (AG_UNLIKELY(ag__seg_push(&S->seg, h, &done))) {
    S->seg.len = i + 1; /* the segmenter reset itself; finish() needs the length */
    ag_seq_t *u = S->holding && S->seg.len < ag__config.max_seq ? run_continues(S, i + 1) : NULL;
    if (u) {
      /* A cut inside a run of back-to-back occurrences of a sequence learned as one: the run
       * goes on as that one, and the segmenter as if it had not cut. */
      S->cand = u;
      S->seg.hash = done;
      for (int q = i >= AG_SEG_WINDOW ? i - AG_SEG_WINDOW + 1 : 0; q <= i; q++)
        S->seg.ring[q & (AG_SEG_WINDOW - 1)] = S->hashes[q];
    } else {
      finish(S, 1, done, AG_FB_MISMATCH);
    }
  } else if (AG_UNLIKELY(!l) && k->fkind != AG_OP_EVENT_WAIT) {
    /* A memset or an event record ends its sequence, as the last node of its graph (a wait
     * begins one: ag__op). Programs put these calls at the same points of every step (a record
     * where another stream takes over, a memset of an accumulator), so sequences that end there
     * are short ones that repeat within a step and are learned within a few steps. Measured on
     * the real traces (docs/benchmarks.md), this replays more than letting sequences run
     * through them (ns_resolution 99.8% against 94.0%, nccl_data 88.9% against 57.7%) or than
     * making memsets begin sequences too. */
    finish(S, 1, S->seg.hash, AG_FB_MISMATCH);
  } else if (AG_UNLIKELY(S->holding) && S->seg.len == S->cand->n && !continued(S, S->cand, S->seg.len)) {
    /* The held launches are all of a known sequence that no other continues: it ends here and
     * runs now. One learned where a call ended it would otherwise wait for that call, and the
     * GPU with it, through whatever the host does before it (the rest of a step's Python). */
    finish(S, 1, S->seg.hash, AG_FB_MISMATCH);
  }
  return held;
}

/* Runs S's held entries [S->sent, to) from s's graph now, S's run going on. A failure of the
 * graph path demotes s and ends the hold (what is held runs as ordinary launches); entries that
 * cannot run alone from the graph stay held (AG_GRAPH_NO_PREFIX, returned). Under the lock. */
static int send_now(strm_t *S, ag_seq_t *s, int to) {
  int pushed = ag__ctx_enter(S->ctx), r;
  if (pushed < 0) return CUDA_ERROR_INVALID_CONTEXT;
  ag__tls.quiet++;
  r = run_to(S, s, to, 0);
  ag__tls.quiet--;
  ag__ctx_leave(pushed);
  if (r && r != AG_GRAPH_NO_PREFIX) {
    graph_failed(S, s, to, r);
    stop_holding(S);
  }
  return r;
}

/* S holds e entries of its candidate, whose graph is built. When they complete one of its
 * chunks, what is held and not submitted yet runs now, before the rest of the sequence is
 * held (src/segment.h, ag__chunk_plan). When they are all of another known sequence whose graph
 * is built (the run may still go on as the longer candidate), they run now from that one's
 * graph: a run that ends there does not keep the GPU waiting for whatever ends it, and one
 * that goes on runs the rest from its own graph, without these entries. Under the lock. */
static void chunk_done(strm_t *S, int e) {
  ag_seq_t *s = S->cand;
  int a;
  if (e <= S->sent) return;
  chunk_at(s->graph, e, &a);
  if (a != e && e != s->n) {
    /* (Only when another sequence begins with the same launch.) */
    if (!ag__seqtab_first(E.tab, S->hashes[0])->next_first) return;
    s = find_prefix(S, e, e);
    if (!s || s->state != AG_SEQ_READY || !s->graph) return;
  }
  send_now(S, s, e);
}

/* A launch while the program is capturing somewhere: nothing is held meanwhile (what is held
 * is cut; `holding` says whether that ends a hold the launch's stream had), and a launch on a
 * capturing stream (or one joined to a capture by an event wait) is its own business. */
static void capture_pass(void *stream, int holding) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = ag__real.cuStreamIsCapturing ? ag__real.cuStreamIsCapturing((CUstream)stream, &st)
                                            : CUDA_ERROR_NOT_FOUND;
  if (holding) ag__obs_cause("capture in progress");
  cut_all();
  ag__obs_capture_pass(r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE);
}

/* The unusual cases of step(), out of the launch path's way: a launch that cannot be held (its
 * kernel, attributes, argument array), a capture in progress anywhere, a call changing what a
 * launch's submission depends on. Returns 1 when the launch must be submitted as it is (what
 * it had to cut was cut), 0 when it may be held after all (attributes a node carries). */
static int __attribute__((noinline)) step_unusual(const ag_launch_t *l, void *stream, strm_t *S,
                                                  ag_kinfo_t *k) {
  int reason = k->reason ? k->reason : attr_reason(l, k);
  if (!reason) {
    int u = __atomic_load_n(&unusual, __ATOMIC_ACQUIRE);
    if (u >= CAPTURE_ONE) {
      capture_pass(stream, S->holding);
      return 1;
    }
    if (u) {
      /* A call that changes what a launch's submission depends on is in progress on another
       * thread: this launch runs now, under whatever value is in force, as it would without
       * us. */
      if (S->holding) ag__obs_cause("attribute or limit change");
      cut_all();
      return 1;
    }
    return 0;
  }
  if (S->holding) ag__obs_cause_fallback(reason - 1);
  cut(S);
  ag__obs_fallback(reason - 1, k, l);
  return 1;
}

/* Handles a launch that may be held; returns 1 when it was held (or replayed), 2 when the
 * caller must submit it and its structure was recorded in its stream's current sequence (*gen
 * is that sequence's generation), 0 when the caller must submit it and nothing was recorded.
 * Called under the lock. */
static inline __attribute__((always_inline)) int step(const ag_launch_t *l, void *stream, void *ctx, ag_kinfo_t *k,
                                                      uint32_t *gen) {
  int any;
  uint64_t h;
  strm_t *S = strm_of(stream, ctx);

  if (AG_UNLIKELY(!S)) {
    cut_stream(stream);
    return 0;
  }
  partners_first(S);
  if (AG_UNLIKELY(!k)) {
    if (S->holding) ag__obs_cause("launch not holdable (kernel not identified)");
    cut(S);
    return 0;
  }
  /* Everything unusual in one test: a kernel that is never held, attributes, an `extra` buffer
   * or a cooperative entry point, a missing argument array, a capture or setting in progress. */
  any = ag__lattr_any(l);
  if (AG_UNLIKELY(k->reason | any | (!l->args & (k->nparams != 0)) |
                  __atomic_load_n(&unusual, __ATOMIC_ACQUIRE)) &&
      step_unusual(l, stream, S, k))
    return 0;
  h = struct_hash(k, l, any);
  return advance(S, k, h, l, NULL, gen) ? 1 : 2;
}

/* A pass-through launch recorded in the sequence of generation `gen` failed: it must never
 * enter a learned sequence (a structure is held only if that very structure
 * succeeded before). If its sequence is still current, it is dropped uncounted; if it was
 * counted when it ended at this launch, the count is taken back, and a sequence already being
 * graphed is demoted. (A sequence ended by another thread's cut in the moment between the
 * launch and its failure, and counted then, is not found: a window of one driver call.) */
static void forget_failed(uint32_t gen) {
  engine_lock();
  for (int i = 0; i < AG_STREAMS; i++) {
    strm_t *S = &E.s[i];
    if (!S->stream) continue;
    if (S->seg_gen == gen && S->seg.len) {
      if (S->holding)
        cut(S); /* never the case (holding begins only at a sequence's first launch); kept safe */
      else
        seg_restart(S);
      break;
    }
    if (S->fin_gen == gen && E.tab) {
      ag_seq_t *s = ag__seqtab_get(E.tab, S->fin_hash, S->fin_n);
      if (s && s->state == AG_SEQ_COUNTING) {
        if (s->count) s->count--;
      } else if (s && s->state != AG_SEQ_DEMOTED) {
        demote(s, "one of its launches failed");
      }
      break;
    }
  }
  engine_unlock();
}

/* ---- the bound on holds ------------------------------------------------------------------- */

/* S's hold reached its bound: what it holds and has not submitted runs now, from the
 * candidate's graph where it is built (its chunks, or part of one), else as ordinary launches,
 * and the run goes on: the rest of the sequence is still held and replayed, and a sequence
 * being built for the first time gets a chunk boundary where its host paused (the pace of its
 * held entries cuts its chunks). The guard counts it against the candidate sequence: a sequence
 * whose holds keep reaching the bound only delays its launches (the GPU does not run held
 * launches), so once that has happened four times and more often than it replayed, the sequence
 * is demoted and the run ends. Called under the lock. */
static void hold_timeout(strm_t *S) {
  ag_seq_t *s = S->cand;
  int n = S->seg.len;
  ag__obs_hold_timeout();
  if (s && s->state == AG_SEQ_READY && s->graph) send_now(S, s, n);
  if (S->holding && S->sent < n) {
    submit_held(S, n, AG_FB_HOLD_TIMEOUT);
    ag__obs_hold(S->stream); /* the run goes on, held again from here */
  }
  __atomic_store_n(&S->deadline, 0, __ATOMIC_RELAXED);
  if (s && s->state != AG_SEQ_DEMOTED && ++s->timeouts >= 4 && s->timeouts > s->replays) {
    demote(s, "holds reach the bound (the program waits on the device without calling CUDA)");
    if (S->holding) finish(S, 0, 0, AG_FB_HOLD_TIMEOUT);
  }
  ag__obs_cause(NULL);
}

int ag__hold_expire(uint64_t now) {
  int n = 0;
  engine_lock();
  for (int i = 0; i < AG_STREAMS; i++) {
    uint64_t d = __atomic_load_n(&E.s[i].deadline, __ATOMIC_RELAXED);
    if (E.s[i].holding && d && d <= now) hold_timeout(&E.s[i]), n++;
  }
  engine_unlock();
  return n;
}

uint64_t ag__hold_next(void) {
  uint64_t next = __atomic_load_n(&other_deadline, __ATOMIC_ACQUIRE);
  for (int i = 0; i < AG_STREAMS; i++) {
    uint64_t d = __atomic_load_n(&E.s[i].deadline, __ATOMIC_RELAXED);
    if (d && (!next || d < next)) next = d;
  }
  return next;
}

/* The helper thread: it sleeps until the earliest deadline of the holds (at least 20 us, at most
 * half of AUTOGRAPH_HOLD_US at a time), then submits every hold whose deadline has passed. So a
 * hold ends soon after its bound, whatever the program does (spins on device-written memory,
 * sleeps, waits on another process, keeps launching on another stream). Without any hold for
 * about 100 ms it sleeps until the next hold begins. */
static void *helper_main(void *arg) {
  long half_ns = (long)ag__config.hold_us * 500L, sleep_ns = half_ns;
  int idle = 0, idle_max;
  (void)arg;
  if (half_ns < 20000) half_ns = 20000;
  idle_max = (int)(100000000L / half_ns) + 1;
  for (;;) {
    struct timespec ts = {sleep_ns / 1000000000L, sleep_ns % 1000000000L};
    nanosleep(&ts, NULL);
    sleep_ns = half_ns;
    if (!__atomic_load_n(&holding_pub, __ATOMIC_SEQ_CST) &&
        !__atomic_load_n(&other_deadline, __ATOMIC_SEQ_CST)) {
      if (++idle < idle_max) continue;
      idle = 0;
      pthread_mutex_lock(&helper_mu);
      __atomic_store_n(&helper_idle, 1, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&helper_idle, __ATOMIC_SEQ_CST) &&
             !__atomic_load_n(&holding_pub, __ATOMIC_SEQ_CST) &&
             !__atomic_load_n(&other_deadline, __ATOMIC_SEQ_CST))
        pthread_cond_wait(&helper_cv, &helper_mu);
      __atomic_store_n(&helper_idle, 0, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&helper_mu);
      continue;
    }
    idle = 0;
    uint64_t now = ag__now_ns(), next = ag__hold_next();
    if (next && next <= now) {
      uint64_t od = __atomic_load_n(&other_deadline, __ATOMIC_ACQUIRE);
      if (od && od <= now && __atomic_compare_exchange_n(&other_deadline, &od, 0, 0,
                                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* A cuDNN call held for fusion: submitted as made (outside the engine lock, as every
         * submission of held cuDNN calls is). */
        engine_lock();
        ag__obs_hold_timeout();
        ag__obs_cause(NULL);
        engine_unlock();
        ag__fdnn_flush();
      }
      ag__hold_expire(now);
      next = ag__hold_next();
    }
    if (next > now && (long)(next - now) < sleep_ns)
      sleep_ns = (long)(next - now) < 20000 ? 20000 : (long)(next - now);
  }
  return NULL;
}
static void start_helper(void);

int ag__hold_other_ready(void) {
  if (ag__hold_offline || !ag__config.hold_us) return 0;
  if (AG_UNLIKELY(__atomic_load_n(&helper_state, __ATOMIC_ACQUIRE) == 0)) start_helper();
  return __atomic_load_n(&helper_state, __ATOMIC_ACQUIRE) > 0;
}

void ag__hold_other(int on) {
  if (!on) {
    __atomic_store_n(&other_deadline, 0, __ATOMIC_RELEASE);
    return;
  }
  __atomic_store_n(&other_deadline, ag__now_ns() + (uint64_t)ag__config.hold_us * 1000u,
                   __ATOMIC_SEQ_CST);
  wake_helper();
}

/* Starts the helper once, at the first hold, outside the lock. If it cannot be started, holds
 * cannot be bounded: what is held is submitted and nothing is held again. */
static void start_helper(void) {
  int expected = 0, r;
  pthread_t t;
  pthread_attr_t a;
  sigset_t all, old;
  if (!__atomic_compare_exchange_n(&helper_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  /* Signals are the program's: the helper takes none of them. */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  r = pthread_attr_init(&a);
  if (!r) {
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    r = pthread_create(&t, &a, helper_main, NULL);
    pthread_attr_destroy(&a);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r) {
    ag__log(AG_LOG_WARN, "cannot start the thread that bounds holds (error %d): nothing is held", r);
    __atomic_store_n(&helper_state, -1, __ATOMIC_RELEASE);
    ag__flush_all();
  }
}

int ag__launch(const ag_launch_t *l) {
  void *stream, *ctx;
  ag_kinfo_t *k;
  int sample, st = 0, r;
  uint32_t gen = 0;
  if (ag__tls.quiet) return l->submit(l); /* nested: the outer launch was recorded */
  /* A cuDNN call held for fusion (src/fuse-dnn.h) runs before any later launch. */
  unsigned hooks = __atomic_load_n(&ag__hooks, __ATOMIC_ACQUIRE);
  if (AG_UNLIKELY(hooks)) {
    if (hooks & AG_HOOK_FDNN) ag__fdnn_flush();
    if (hooks & AG_HOOK_DUMP) ag__obs_poll(0);
  }

  stream = l->stream;
  if (!stream) stream = l->per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  engine_lock();
  /* Every counter of the launch path is written under the lock: no atomics per launch. */
  ag__obs_launch(l);
  if (AG_UNLIKELY(!E.live)) {
    if (E.off || !ag__real_ready() || (!E.tab && engine_setup() != 0)) goto pass;
    __atomic_store_n(&E.live, 1, __ATOMIC_RELEASE); /* after the driver table: see ag__op */
  }
  ctx = current_ctx();
  if (AG_UNLIKELY(stream == CU_STREAM_PER_THREAD)) {
    /* Never held: only the owning thread can submit to its per-thread stream, and a flush may
     * have to happen on another thread. */
    if (E.nhold) ag__obs_cause("launch on the per-thread default stream");
    cut_stream(stream);
    goto pass;
  }
  if (AG_UNLIKELY(!ctx)) {
    /* The thread's first CUDA call: the runtime binds its context only now, inside the call
     * (nvcc 12's <<<>>> reaches cudaLaunchKernel with nothing before it on a new thread). Not
     * held, so that no record is keyed by a context the launch will not run in. */
    if (E.nhold) ag__obs_cause("launch before the thread has a context");
    cut_all();
    goto pass;
  }
  k = ag__kinfo_find(l->func, ctx);
  if (AG_UNLIKELY(!k)) {
    /* First sight, while the program captures somewhere: learning queries the driver and the
     * runtime about the kernel, and on a GPU (H200, CUDA 13.0) the first launch of a kernel
     * inside a global-mode capture then failed with cudaErrorStreamCaptureInvalidated: the
     * launch goes as it is, and the kernel is learned at a launch outside any capture. */
    if (__atomic_load_n(&unusual, __ATOMIC_ACQUIRE) >= CAPTURE_ONE) {
      capture_pass(stream, E.nhold != 0);
      goto pass;
    }
    /* Learning calls the driver and the runtime, which take locks of their own and call back
     * into the wrappers, so it runs outside the engine lock, quietly, and in relaxed capture
     * mode: a capture another thread begins meanwhile is not invalidated by the queries. */
    engine_unlock();
    ag__tls.quiet++;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    int relaxed = ag__real.cuThreadExchangeStreamCaptureMode &&
                  ag__real.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
    k = ag__kinfo_learn(l->func, l->fkind, ctx);
    if (relaxed) (void)ag__real.cuThreadExchangeStreamCaptureMode(&mode);
    ag__tls.quiet--;
    engine_lock();
    if (k) k = ag__kinfo_add(k);
    if (k) ag__obs_kernel_learned();
  }
  st = step(l, stream, ctx, k, &gen);
  if (st == 1) {
    engine_unlock();
    if (AG_UNLIKELY(__atomic_load_n(&helper_state, __ATOMIC_ACQUIRE) == 0) && !ag__hold_offline)
      start_helper();
    r = 0;
    goto out;
  }
pass:
  ag__obs_passed_one();
  sample = (sampled++ & 31) == 0;
  engine_unlock();
  r = pass(l, sample);
  if (AG_UNLIKELY(r)) {
    ag__valid_status(r, NULL);
    if (st == 2) forget_failed(gen);
  }
out:
  /* An earlier held launch of this thread failed at submission: this call reports it, as CUDA
   * reports errors of earlier asynchronous work from later calls. */
  return with_pending(r, l->path != AG_PATH_DRIVER);
}

/* ---- stream operations held as graph nodes ------------------------------------------------ */

static inline void count_call(ag_call_t *call, int family);

/* The pseudo-kernels naming held operations (src/graph.h): their layouts describe the bytes of
 * ag_op_memset_t and ag_op_event_t; their ids are out of the range kernel records use, so that
 * forgetting kernels never forgets them. */
static ag_kparam_t op_memset_params[] = {{0, 8}, {8, 8}, {16, 4}, {20, 4}};
static ag_kparam_t op_event_params[] = {{0, 8}, {8, 4}};
static ag_kparam_t op_memcpy_params[] = {{0, 8}, {8, 8}, {16, 8}, {24, 4}, {28, 4}};
static ag_kinfo_t op_kinfo[4] = {
    {.fkind = AG_OP_MEMSET, .id = 0xfffffff0u, .nparams = 4, .param_bytes = sizeof(ag_op_memset_t),
     .params = op_memset_params, .name = (char *)"cudaMemsetAsync", .dev = -1},
    {.fkind = AG_OP_EVENT_RECORD, .id = 0xfffffff1u, .nparams = 2,
     .param_bytes = sizeof(ag_op_event_t), .params = op_event_params,
     .name = (char *)"cudaEventRecord", .dev = -1},
    {.fkind = AG_OP_EVENT_WAIT, .id = 0xfffffff2u, .nparams = 2,
     .param_bytes = sizeof(ag_op_event_t), .params = op_event_params,
     .name = (char *)"cudaStreamWaitEvent", .dev = -1},
    {.fkind = AG_OP_MEMCPY, .id = 0xfffffff3u, .nparams = 5, .param_bytes = sizeof(ag_op_memcpy_t),
     .params = op_memcpy_params, .name = (char *)"cudaMemcpyAsync", .dev = -1},
};

/* Whether the driver offers what holding operations of this kind needs. */
static int op_supported(int kind) {
  switch (kind) {
  case AG_OP_MEMSET:
    return ag__real.cuMemsetD8Async && ag__real.cuGraphAddMemsetNode &&
           ag__real.cuGraphExecMemsetNodeSetParams;
  case AG_OP_EVENT_RECORD:
    return ag__real.cuEventRecord && ag__real.cuGraphAddEventRecordNode &&
           ag__real.cuGraphExecEventRecordNodeSetEvent;
  case AG_OP_EVENT_WAIT:
    return ag__real.cuStreamWaitEvent && ag__real.cuGraphAddEventWaitNode &&
           ag__real.cuGraphExecEventWaitNodeSetEvent;
  case AG_OP_MEMCPY:
    return ag__real.cuMemcpyAsync && ag__real.cuGraphAddMemcpyNode &&
           ag__real.cuGraphExecMemcpyNodeSetParams && ag__real.cuPointerGetAttribute;
  }
  return 0;
}

/* The memory type of one side of a copy a memcpy node can reproduce: device memory, or host
 * memory the driver knows (pinned or registered), never managed memory, and all `bytes` of it
 * inside one allocation (else the copy fails, and must fail at the call); 0 for anything else
 * (pageable host memory: an asynchronous copy from it is staged at the call, a node would read
 * it later). */
static unsigned copy_side(const void *p, size_t bytes) {
  unsigned type = 0;
  int managed = 0;
  if (!ag__valid_range(p, bytes, &type, &managed) || managed) return 0;
  return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_HOST ? type : 0;
}

/* Whether a copy of direction `dir` (cudaMemcpyKind: 1 host to device, 2 device to host,
 * 3 device to device, 4 default) between these memory types is one a node reproduces. */
static int copy_holdable(int dir, unsigned dt, unsigned st) {
  if (!dt || !st || (dt == CU_MEMORYTYPE_HOST && st == CU_MEMORYTYPE_HOST)) return 0;
  switch (dir) {
  case 1: return st == CU_MEMORYTYPE_HOST && dt == CU_MEMORYTYPE_DEVICE;
  case 2: return st == CU_MEMORYTYPE_DEVICE && dt == CU_MEMORYTYPE_HOST;
  case 3: return st == CU_MEMORYTYPE_DEVICE && dt == CU_MEMORYTYPE_DEVICE;
  case 4: return 1;
  }
  return 0;
}

int ag__op(ag_op_t *op) {
  void *stream, *ctx;
  int r = AG_OP_ORDER;
  union {
    ag_op_memset_t m;
    ag_op_event_t e;
    ag_op_memcpy_t c;
  } bytes;
  if (ag__tls.quiet || ag__tls.lib) return AG_OP_ORDER;
  if (AG_UNLIKELY(ag__fdnn_pending())) ag__fdnn_flush();
  stream = op->stream;
  if (!stream) stream = op->per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  /* A memset of nothing, a wait with flags a node cannot express: not held. */
  if ((op->kind == AG_OP_MEMSET && !op->bytes) || (op->kind == AG_OP_EVENT_WAIT && op->flags) ||
      (op->kind == AG_OP_MEMCPY && !op->bytes))
    return AG_OP_ORDER;
  memset(&bytes, 0, sizeof bytes);
  if (op->kind == AG_OP_MEMCPY) {
    /* The memory types are asked of the driver outside the lock. The driver table is filled
     * under it, by the first launch, before `live` is set (release): seeing it set, the table
     * is complete (a copy before any launch is an ordering call). */
    if (!__atomic_load_n(&E.live, __ATOMIC_ACQUIRE) || !op_supported(op->kind))
      return AG_OP_ORDER;
    unsigned dt = copy_side(op->dst, op->bytes), st = copy_side(op->src, op->bytes);
    if (!copy_holdable(op->dir, dt, st)) return AG_OP_ORDER;
    bytes.c.dst = (uint64_t)(uintptr_t)op->dst, bytes.c.src = (uint64_t)(uintptr_t)op->src;
    bytes.c.bytes = op->bytes, bytes.c.dtype = dt, bytes.c.stype = st;
  } else if (op->kind == AG_OP_MEMSET) {
    /* A destination the driver does not know, or a size past its allocation: the memset
     * fails, and must fail at the call (the destination is not part of its structure). */
    if (!__atomic_load_n(&E.live, __ATOMIC_ACQUIRE) || !ag__valid_range(op->dst, op->bytes, NULL, NULL))
      return AG_OP_ORDER;
    bytes.m.dst = (uint64_t)(uintptr_t)op->dst, bytes.m.bytes = op->bytes;
    bytes.m.value = (uint32_t)(unsigned char)op->value, bytes.m.elem = 1;
  } else {
    bytes.e.ev = (uint64_t)(uintptr_t)op->event, bytes.e.flags = op->flags;
  }
  ag_kinfo_t *k = &op_kinfo[op->kind - AG_OP_MEMSET];
  uint64_t h = ag__mix64(0x6f70000000000000ull ^ (uint64_t)op->kind);
  if (op->kind == AG_OP_MEMSET) h = ag__mix64(h ^ op->bytes);
  if (op->kind == AG_OP_MEMCPY)
    h = ag__mix64(h ^ op->bytes ^ ((uint64_t)bytes.c.dtype << 56) ^ ((uint64_t)bytes.c.stype << 48));
  engine_lock();
  if (AG_UNLIKELY(!E.live) || stream == CU_STREAM_PER_THREAD || !op_supported(op->kind) ||
      __atomic_load_n(&unusual, __ATOMIC_ACQUIRE))
    goto out;
  ctx = current_ctx();
  if (!ctx || ag__valid_faulted(ctx)) goto out;
  strm_t *S = strm_of(stream, ctx);
  if (!S) goto out;
  if (op->kind == AG_OP_EVENT_RECORD || op->kind == AG_OP_EVENT_WAIT) {
    /* The event's last record must come before this record or wait, wherever it is held. */
    strm_t *P = E.nev ? evheld_stream(op->event) : NULL;
    if (P && P != S) cut_because(P, op->call ? op->call->name : "event");
    if (E.nev == AG_EVHELD) goto out;
  }
  partners_first(S);
  /* A wait begins a sequence, as the first node of its graph (a stream waits before the work
   * that needs the other's); a memset or a record ends one (below, in advance). */
  if (op->kind == AG_OP_EVENT_WAIT && S->seg.len)
    cut_because(S, op->call ? op->call->name : "event wait");
  if (op->kind == AG_OP_EVENT_RECORD || op->kind == AG_OP_EVENT_WAIT) {
    /* After that cut, before the entry joins the sequence: if the segmenter ends the sequence
     * at it, the entry goes with it. */
    evheld[E.nev].ev = op->event, evheld[E.nev].S = S;
    E.nev++, S->nevs++;
  }
  r = advance(S, k, h, NULL, &bytes, &op->gen) ? AG_OP_HELD : AG_OP_PASS;
out:
  engine_unlock();
  if (op->call && !ag__tls.lib && r != AG_OP_ORDER) {
    ag__obs_call(op->call, op->call->family, 1);
  }
  if (r == AG_OP_HELD && AG_UNLIKELY(__atomic_load_n(&helper_state, __ATOMIC_ACQUIRE) == 0) &&
      !ag__hold_offline)
    start_helper();
  return r;
}

int ag__op_done(const ag_op_t *op, int status, int rt) {
  if (AG_UNLIKELY(status)) ag__valid_status(status, NULL), forget_failed(op->gen);
  return with_pending(status, rt);
}

int ag__op_status(int status, int rt) { return with_pending(status, rt); }

void ag__engine_snapshot(void (*fn)(ag_seqtab_t *t, double launch_ns, void *arg), void *arg) {
  engine_lock();
  fn(E.tab, (double)__atomic_load_n(&launch_ns, __ATOMIC_RELAXED), arg);
  engine_unlock();
}

void ag__flush_all(void) {
  if (!ag__enabled) return;
  if (AG_UNLIKELY(ag__fdnn_pending())) ag__fdnn_flush();
  engine_lock();
  cut_all();
  engine_unlock();
}

/* ---- ordering and library calls ------------------------------------------------------------ */

static inline void count_call(ag_call_t *call, int family) { ag__obs_call(call, family, 0); }

/* Submits what an ordering call on `stream` can observe (call_rule), and when the call ends a
 * stream, forgets that stream's record (its handle may come back as another stream). */
static void order_cut(ag_call_t *call, void *stream) {
  int rule = call_rule(call);
  if (rule == RULE_NONE && !(call && call->family == AG_FAM_EVENT)) return;
  if (AG_UNLIKELY(ag__fdnn_pending())) ag__fdnn_flush();
  engine_lock();
  if (AG_UNLIKELY(E.nev) && call && call->family == AG_FAM_EVENT) {
    /* An event whose record or wait is held: the stream holding it goes first. The runtime's
     * queries name the event (passed as `stream`); other event calls may name any event. */
    strm_t *S = rule == RULE_NONE && stream ? evheld_stream(stream) : NULL;
    if (S) {
      cut(S);
    } else if (!(rule == RULE_NONE && stream)) {
      cut_events();
    }
  }
  if (rule == RULE_NONE) {
    engine_unlock();
    return;
  }
  E.observing = 1;
  if (rule == RULE_ALL) {
    cut_all();
  } else {
    cut_stream(stream);
    if (rule == RULE_STREAM_END) {
      for (int i = 0; i < AG_STREAMS; i++)
        if (E.s[i].stream == stream && stream) strm_drop(&E.s[i]);
    }
  }
  E.observing = 0;
  engine_unlock();
}

void ag__order_enter(ag_call_t *call, void *stream) {
  if (call && call->family == AG_FAM_DEVICE) ag__tls.ctx = NULL;
  if (!ag__tls.quiet) {
    if (!ag__tls.lib) {
      ag__obs_call(call, call ? call->family : AG_FAM_UNCLASSIFIED, 1);
    }
    if (ag__enabled) {
      ag__obs_cause(call ? call->name : "unclassified call");
      order_cut(call, stream);
      ag__obs_cause(NULL);
    }
    ag__obs_poll(1);
  }
  ag__tls.quiet++;
}

void ag__order_leave(void) { ag__tls.quiet--; }

/* Whether an end of capture on `stream` that returned `status` ended the capture. A successful
 * one did; a failed one did if the stream no longer captures (an invalidated capture ends with
 * an error and no graph), unless the stream never captured (cudaErrorIllegalState, 401, the same
 * value as CUDA_ERROR_ILLEGAL_STATE). */
static int capture_ended(void *stream, int status) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (status == 0) return 1;
  if (status == CUDA_ERROR_ILLEGAL_STATE) return 0;
  if (!ag__real.cuStreamIsCapturing) return status == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (ag__real.cuStreamIsCapturing((CUstream)stream, &st) != CUDA_SUCCESS) return 0;
  return st == CU_STREAM_CAPTURE_STATUS_NONE;
}

int ag__order_leave_status(ag_call_t *call, void *stream, int status, int rt) {
  ag__tls.quiet--;
  if (call && call->family == AG_FAM_DEVICE) ag__tls.ctx = NULL;
  if (ag__tls.quiet) return status;
  ag__valid_status(status, NULL);
  if (call && call->family == AG_FAM_CAPTURE) {
    if (strstr(call->name, "BeginCapture")) {
      if (status == 0) __atomic_fetch_add(&unusual, CAPTURE_ONE, __ATOMIC_ACQ_REL);
    } else if (strstr(call->name, "EndCapture") && capture_ended(stream, status)) {
      /* A failed end that still ended the capture counts too, or nothing is held again. */
      int c = __atomic_load_n(&unusual, __ATOMIC_ACQUIRE);
      while (c >= CAPTURE_ONE &&
             !__atomic_compare_exchange_n(&unusual, &c, c - CAPTURE_ONE, 0, __ATOMIC_ACQ_REL,
                                                   __ATOMIC_ACQUIRE)) {
      }
    }
  }
  return with_pending(status, rt);
}

/* ---- failed submissions --------------------------------------------------------------------- */

/* The status a runtime call reports for a failed launch: the driver calls an impossible launch
 * an invalid value, the runtime an invalid configuration; other codes share their values. */
static int rt_status(int e) { return e == CUDA_ERROR_INVALID_VALUE ? 9 /* cudaErrorInvalidConfiguration */ : e; }

int ag__error_take(int rt) {
  int e = 0;
  if (ag__tls.quiet || ag__tls.lib) return 0;
  engine_lock();
  if (__atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED) &&
      pthread_equal(pending_owner, pthread_self())) {
    e = __atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED);
    __atomic_store_n(&ag__pending_err, 0, __ATOMIC_RELAXED);
  }
  engine_unlock();
  if (e && rt) e = ag__tls.last_err = rt_status(e);
  return e;
}

int ag__error_last(int status, int clear) {
  int e;
  if (ag__tls.quiet || ag__tls.lib) return status;
  if (AG_UNLIKELY(__atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED))) (void)ag__error_take(1);
  if (status) return status; /* the runtime's own error first; ours is kept for the next query */
  e = ag__tls.last_err;
  if (clear) ag__tls.last_err = 0;
  return e;
}

/* ---- calls that change what a held launch's submission depends on ------------------------- */

/* The last value each (object, setting) was given, so that setting the value already in force
 * does not flush (FlashAttention sets the same shared-memory limit before every launch). An
 * open-addressing table under the engine lock; when it is full a setting is simply not
 * remembered, and its next change flushes as an unknown one. A handle may be reused once its
 * module or context is gone, with another value in force: the table is emptied whenever code
 * is unloaded or a context destroyed, reset or released (forget(), below). */
#define SETTINGS_CAP 4096
static struct setting {
  const void *obj;
  uint64_t what; /* (call, attribute, device), 0: free slot */
  uint64_t value;
  int known;     /* value is the one in force (a failed setting leaves it unknown) */
} settings[SETTINGS_CAP];

static struct setting *setting_slot(const void *obj, uint64_t what, int add) {
  uint64_t h = ag__mix64((uint64_t)(uintptr_t)obj ^ ag__mix64(what));
  for (unsigned i = 0; i < 16; i++) {
    struct setting *e = &settings[(h + i) & (SETTINGS_CAP - 1)];
    if (e->what == what && e->obj == obj) return e;
    if (!e->what) {
      if (!add) return NULL;
      e->obj = obj, e->what = what;
      return e;
    }
  }
  return NULL;
}

int ag__setting_enter(ag_call_t *call, const void *obj, uint64_t what, uint64_t value) {
  struct setting *e;
  int same;
  if (ag__tls.quiet) {
    ag__tls.quiet++;
    return 0;
  }
  if (!ag__tls.lib) count_call(call, call ? call->family : AG_FAM_DEVICE);
  what |= 1; /* never 0 */
  if (AG_UNLIKELY(ag__fdnn_pending())) ag__fdnn_flush();
  __atomic_fetch_add(&unusual, 1, __ATOMIC_ACQ_REL);
  engine_lock();
  e = setting_slot(obj, what, 0);
  same = e && e->known && e->value == value;
  if (!same) {
    /* Held launches were valid under the value in force: they run before it changes. */
    if (E.nhold) ag__obs_cause(call ? call->name : "setting");
    cut_all();
    ag__obs_cause(NULL);
  }
  engine_unlock();
  ag__tls.quiet++;
  return 1;
}

int ag__setting_leave(int entered, const void *obj, uint64_t what, uint64_t value, int status,
                      int rt) {
  ag__tls.quiet--;
  if (!entered) return status;
  what |= 1;
  engine_lock();
  struct setting *e = setting_slot(obj, what, status == 0);
  /* A new value in force: limits read for holding are read again (src/validity.h). */
  if (status == 0 && !(e && e->known && e->value == value)) ag__valid_settings_changed();
  if (e) e->value = value, e->known = status == 0; /* a failed one: the next one flushes */
  engine_unlock();
  __atomic_fetch_sub(&unusual, 1, __ATOMIC_ACQ_REL);
  ag__valid_status(status, NULL);
  return with_pending(status, rt);
}

void ag__lib_enter(ag_call_t *call) {
  if (!ag__tls.lib) ag__tls.lib_call = call ? call->name : NULL;
  if (!ag__tls.quiet && !ag__tls.lib)
    count_call(call, call ? call->family : AG_FAM_UNCLASSIFIED);
  ag__tls.lib++;
}

void ag__lib_leave(void) { ag__tls.lib--; }

void ag__note(ag_call_t *call) {
  if (!ag__tls.quiet && !ag__tls.lib) count_call(call, call->family);
}

/* The image bookkeeping has its own leaf lock (kinfo.c): these are called from driver wrappers
 * that may run inside the runtime, or inside the engine's own calls into it. */
void ag__image_loaded(const void *mod, const void *image) {
  int saved = errno;
  (void)ag__kinfo_image(mod, image, 0);
  errno = saved;
}

void ag__image_file_loaded(const void *mod, const char *path) {
  int saved = errno;
  (void)ag__kinfo_image_file(mod, path);
  errno = saved;
}

void ag__image_alias(const void *alias, const void *mod) {
  int saved = errno;
  ag__kinfo_image_alias(alias, mod);
  errno = saved;
}

void ag__func_named(const void *func, int is_kernel, const void *mod, const char *name) {
  int saved = errno;
  ag__kinfo_name(func, is_kernel, mod, name);
  errno = saved;
}

void ag__func_of_kernel(const void *func, const void *kernel) {
  int saved = errno;
  ag__kinfo_func_of(func, kernel);
  errno = saved;
}

/* ---- forgetting: the ends of modules, fatbins and contexts ----------------------------------- */

static void seq_gone(ag_seq_t *s, void *arg) {
  (void)arg;
  if (!s->graph) return;
  ag__obs_graph_gone(s, 0);
  release_graph(s);
}

/* Under the lock, after the kernel records went (ids: theirs, sorted; lost: unknown): forgets
 * every sequence and graph naming one of them. Frees ids. */
static void forget_sequences(size_t n, size_t kernels, uint32_t *ids, int lost, const char *why) {
  size_t m = 0;
  if ((n || lost) && E.tab) m = ag__seqtab_forget(E.tab, ids, lost ? 0 : n, lost, seq_gone, NULL);
  free(ids);
  ag__obs_forgot(kernels, m, why);
}

/* Forgets what an ending module (kind 0: `arg` is its handle), fatbin (1: the registered
 * pointer) or context or device (2: `arg` is an ag_kforget_t) leaves behind: the kernel
 * records, then every sequence and graph naming one. Nothing may be held meanwhile: what is held
 * is submitted first (the call that ends them is an ordering call, but another thread may have
 * begun holding since). Takes the engine lock. */
static void forget(int kind, const void *arg, const char *why) {
  ag_kforget_t cur;
  uint32_t *ids = NULL;
  int lost = 0;
  size_t n;
  engine_lock();
  if (E.nhold) ag__obs_cause(why);
  cut_all();
  if (kind == 2 && ((const ag_kforget_t *)arg)->dev == AG_DEV_CURRENT) {
    /* The runtime's current device is that of the thread's current context; without one (or
     * before the driver table is resolved, which happens under this lock), every device. */
    CUdevice d;
    CUcontext c = NULL;
    cur = *(const ag_kforget_t *)arg;
    cur.dev = -1, cur.all = 1;
    if (ag__real_ready() && ag__real.cuCtxGetCurrent && ag__real.cuCtxGetCurrent(&c) == CUDA_SUCCESS &&
        c && ag__real.cuCtxGetDevice && ag__real.cuCtxGetDevice(&d) == CUDA_SUCCESS)
      cur.dev = (int)d, cur.all = 0;
    arg = &cur;
  }
  n = kind == 0   ? ag__kinfo_unload(arg, &ids, &lost)
      : kind == 1 ? ag__kinfo_fatbin_gone(arg, &ids, &lost)
                  : ag__kinfo_forget(arg, &ids, &lost);
  size_t kernels = n;
  if (kind == 2 && !lost) {
    /* Sequences of stream operations only (memsets, copies, event records and waits) name no
     * kernel of the context, but their graphs are its objects all the same: every sequence with
     * an operation goes too (more than needed; relearning is cheap). Their ids are the largest,
     * so the list stays sorted. */
    uint32_t *more = realloc(ids, (n + AG_ARRAY_SIZE(op_kinfo)) * sizeof *more);
    if (more) {
      ids = more;
      for (size_t i = 0; i < AG_ARRAY_SIZE(op_kinfo); i++) ids[n++] = op_kinfo[i].id;
    } else {
      lost = 1;
    }
  }
  forget_sequences(n, kernels, ids, lost, why);
  if (kind == 2) ag__graph_ctx_gone(((const ag_kforget_t *)arg)->ctx);
  /* Its handles may be reused with other values in force. */
  memset(settings, 0, sizeof settings);
  engine_unlock();
}

void ag__image_unloaded(const void *mod) {
  int saved = errno;
  forget(0, mod, "module unloaded");
  errno = saved;
}

void ag__fatbin_unregistered(void **handle) {
  int saved = errno;
  const void *fatbin = ag__registry_unregister(handle);
  if (fatbin) forget(1, fatbin, "fatbin unregistered");
  errno = saved;
}

void ag__ctx_ending(void *ctx) {
  int saved = errno;
  ag_kforget_t what = {.ctx = ctx, .dev = -1, .all = ctx == NULL};
  ag__tls.ctx = NULL;
  if (ag__enabled) forget(2, &what, "context destroyed");
  ag__valid_ctx_gone(ctx); /* after what it held was submitted (and failed, if it faulted) */
  errno = saved;
}

void ag__device_ending(int dev) {
  int saved = errno;
  ag_kforget_t what = {.dev = dev};
  ag__tls.ctx = NULL;
  if (dev < 0 && dev != AG_DEV_CURRENT) what.all = 1;
  if (ag__enabled) forget(2, &what, "device reset");
  ag__valid_dev_gone(what.all ? -1 : dev);
  errno = saved;
}

/* ---- process life -------------------------------------------------------------------------- */

static void at_exit(void) {
  /* Held launches run before the report, so that replayed + passthrough == launches. Nothing is
   * held after this: the helper thread must not call the driver while the process tears down,
   * and launches made by later exit handlers go straight through. */
  ag__obs_cause("exit");
  ag__flush_all();
  if (ag__enabled) {
    engine_lock();
    cut_all();
    E.off = 1;
    __atomic_store_n(&E.live, 0, __ATOMIC_RELEASE);
    engine_unlock();
    if (__atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED))
      ag__log(AG_LOG_WARN, "a failed submission (CUDA error %d) was never reported: the thread "
              "that made the launch made no CUDA call after it",
              __atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED));
  }
  ag__obs_exit(ag__enabled);
}

static void atfork_prepare(void) {
  /* The child must not inherit held work it cannot submit; take the lock so that no thread is
   * in the middle of changing the engine's state when the process is copied. */
  ag__obs_cause("fork");
  ag__flush_all();
  ag__obs_cause(NULL);
  engine_lock();
}

static void atfork_parent(void) { engine_unlock(); }

static void atfork_child(void) {
  /* The child starts with one thread: per-thread nesting of other threads is gone, and the
   * counters describe the parent's work. CUDA is unusable in a child of a process that used
   * it, so the engine passes everything through there. A parent that never reached the GPU (no
   * launch, no call but the registrations its libraries make as they load: a launcher, a pool
   * of workers forked before any CUDA use) leaves a child that may use CUDA itself, as CUDA
   * allows, and the engine stays on there; it holds nothing of the parent's (no launch, so no
   * record, sequence or graph). */
  int parent_used = __atomic_load_n(&ag__stats.launches, __ATOMIC_RELAXED) != 0;
  for (int f = 0; f < AG_FAM_COUNT_; f++)
    if (f != AG_FAM_REGISTER && __atomic_load_n(&ag__stats.families[f], __ATOMIC_RELAXED))
      parent_used = 1;
  engine_lock_reinit();
  ag__tls = (ag_tls_t){0};
  E.off = E.off || parent_used;
  __atomic_store_n(&E.live, 0, __ATOMIC_RELEASE);
  E.nhold = 0;
  E.cur = &none;
  memset(E.nblk, 0, sizeof E.nblk);
  E.mixed = 0;
  /* The helper thread is not copied: a child that holds starts its own at its first hold. */
  __atomic_store_n(&helper_state, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&helper_idle, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&holding_pub, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&ag__pending_err, 0, __ATOMIC_RELAXED);
  pthread_mutex_init(&helper_mu, NULL);
  pthread_cond_init(&helper_cv, NULL);
  for (int i = 0; i < AG_STREAMS; i++) {
    E.s[i].stream = NULL, E.s[i].ctx = NULL, E.s[i].holding = 0;
    E.s[i].seg.len = 0, E.s[i].arena_used = 0, E.s[i].cand = NULL;
  }
  ag__kinfo_reset();
  ag__registry_atfork_child();
  ag__obs_atfork_child();
}

void ag__init(void) {
  int expected = AG_INIT_NONE;
  int saved = errno;
  if (!__atomic_compare_exchange_n(&ag__init_state, &expected, AG_INIT_RUNNING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return; /* done, or running on some thread: the caller forwards untouched meanwhile */
  ag__config_load();
  if (!ag__config.disable) {
    ag__obs_init();
    atexit(at_exit);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    ag__log(AG_LOG_DEBUG, "initialised (stats %s, repeats %d, sequences %d..%d)",
            ag__config.stats_summary ? "summary" : ag__config.stats_path[0] ? "json" : "off",
            ag__config.repeats, ag__config.min_seq, ag__config.max_seq);
    __atomic_store_n(&ag__enabled, 1, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&ag__init_state, AG_INIT_DONE, __ATOMIC_RELEASE);
  errno = saved;
}

__attribute__((constructor)) static void ag_constructor(void) { ag__init(); }
