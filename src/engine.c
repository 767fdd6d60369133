/* engine.c — initialisation and the graph engine (see engine.h).
 *
 * Every launch from every entry point arrives in ag__launch. The engine keeps one current
 * sequence (the launches on one stream since the last cut, src/segment.h) and, per launch, one
 * of three things happens under one lock:
 *   - pass through: submitted at once by its own entry point (counted, and its structure fed to
 *     the segmenter so that repeated sequences are learned);
 *   - hold: when the launch may begin or continue a sequence that has repeated
 *     AUTOGRAPH_REPEATS times, its arguments are copied by the kernel's layout and success is
 *     returned (the same structure already launched successfully in pass-through);
 *   - replay: when the held launches complete a known sequence, its graph is built (first time)
 *     or updated, and launched on the stream.
 * Held launches are submitted as ordinary launches, in order, before anything that could
 * observe them: an ordering call on any thread, a launch on another stream or context, a
 * launch that cannot be held, a divergence from the sequence, a capture, exit or fork, a change
 * of what a held launch's submission depends on (attributes, limits, cache configs: see
 * ag__setting_enter), and a bound on time: a helper thread submits what is held once no launch
 * has joined the hold for AUTOGRAPH_HOLD_US (the program may be waiting on the device without
 * calling CUDA at all, issue 11). At most one stream holds launches at a time. Any failure of
 * the graph path demotes the sequence and submits what was held: nothing is lost, duplicated or
 * reordered. A held launch whose submission fails anyway is reported to the thread that made
 * it, by its next call (ag__error_take); a pass-through launch that fails never enters a
 * learned sequence (forget_failed).
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
#include "dump.h"
#include "fuse-dnn.h"
#include "graph.h"
#include "kinfo.h"
#include "launch-attrs.h"
#include "log.h"
#include "real.h"
#include "registry.h"
#include "segment.h"
#include "stats.h"
#include "trace.h"

__thread ag_tls_t ag__tls;
int ag__init_state = AG_INIT_NONE;
int ag__enabled;

/* ---- engine state (under `lock`) ---------------------------------------------------------- */

/* Counters only written under the engine lock: a relaxed load and store, no locked instruction
 * (the exit report reads them with relaxed loads and tolerates a launch in flight). */
#define STAT_INC(field, n) \
  __atomic_store_n(&(field), __atomic_load_n(&(field), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)

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
static void engine_lock_reinit(void) { pthread_mutex_init(&lock_mu, NULL); }
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

static struct {
  /* What every launch reads and writes comes first, so that it fits one or two cache lines. */
  int live;               /* set up, with the real driver table: the launch path may run */
  int holding;
  uint32_t seg_gen;       /* bumped at every end of the current sequence (finish) */
  ag_seg_t seg;
  void *stream, *ctx;     /* of the current sequence */
  uint64_t *hashes;       /* structural hashes of the current sequence, max_seq of them */
  uint32_t *kids;         /* and the ids of their kernels (forgetting a kernel forgets them) */
  ag_seq_t *cand;         /* a sequence the held launches are a prefix of */
  int off;                /* no holding at all (forked child, no driver table, out of memory) */
  ag_seqtab_t *tab;
  pthread_t thread;       /* the thread that began it */
  /* Holding. */
  ag_held_t *held;        /* max_seq entries, parallel to hashes */
  uint8_t *arena;
  size_t arena_used, arena_cap;
  /* The last sequence counted (finish), for a pass-through launch that fails after it was
   * counted: the generation of the sequence it ended, and its key. */
  uint32_t fin_gen;
  uint64_t fin_hash;
  int fin_n;
} E;

/* Bounded holds (issue 11). `hold_gen` is bumped (a plain store, under the lock) at every held
 * launch and `holding_pub` mirrors E.holding for the helper thread, which reads both without the
 * lock: the launch path makes no system call for the bound. */
static uint64_t hold_gen;
static int holding_pub;
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

/* Calls that change what a held launch's submission depends on, in progress (ag__setting_*):
 * nothing is held meanwhile. */
static int changing;

/* Guard: running mean host time of one ordinary launch (ns), measured outside the lock for one
 * launch in 32 (`sampled` counts ordinary launches, under the lock). */
static uint64_t launch_ns, sampled;

static int captures; /* program captures in progress (atomic) */

static void release_graph(ag_seq_t *s) {
  ag__graph_free(s->graph);
  s->graph = NULL;
}

static void on_evict(ag_seq_t *s) {
  STAT_INC(ag__stats.evictions, 1);
  if (ag__dump_armed) ag__dump_graph_gone(s, 1);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_evict(s);
  release_graph(s);
}

/* Allocates the engine's buffers once; returns 0 or -AG_ENOMEM (the engine then stays off). */
static int engine_setup(void) {
  int max = ag__config.max_seq;
  E.tab = ag__seqtab_new(ag__config.max_graphs, (size_t)ag__config.max_graph_mb << 20, on_evict);
  E.hashes = calloc((size_t)max, sizeof *E.hashes);
  E.kids = calloc((size_t)max, sizeof *E.kids);
  if (E.tab && ag__dump_armed) ag__seqtab_on_free(E.tab, ag__dump_seq_freed);
  E.held = calloc((size_t)max, sizeof *E.held);
  E.arena_cap = 64 << 10;
  E.arena = malloc(E.arena_cap);
  ag__seg_init(&E.seg, ag__config.min_seq, max);
  /* AUTOGRAPH_HOLD_US=0: no hold can be bounded, so nothing is held (sequences are still
   * learned and reported). */
  if (ag__config.hold_us == 0) __atomic_store_n(&helper_state, -1, __ATOMIC_RELEASE);
  if (!E.tab || !E.hashes || !E.kids || !E.held || !E.arena) {
    E.off = 1;
    return -AG_ENOMEM;
  }
  return 0;
}

/* The thread's current context, cached per thread (it changes only through calls that the
 * engine sees as ordering calls, which clear the cache). */
static void *current_ctx(void) {
  CUcontext c = NULL;
  if (AG_LIKELY(ag__tls.ctx)) return ag__tls.ctx;
  if (ag__real.cuCtxGetCurrent && ag__real.cuCtxGetCurrent(&c) == CUDA_SUCCESS) ag__tls.ctx = c;
  return c;
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

/* Submits everything held as ordinary launches, counted under `reason`. A failure is kept for
 * the thread that made the failed launch (it was told success when the launch was held). */
static void submit_held(int n, int reason) {
  int pushed, r, first = -1, nfailed = 0;
  if (!n) return;
  uint64_t trace_t0 = AG_UNLIKELY(ag__trace_armed) ? ag__now_ns() : 0;
  pushed = ag__ctx_enter(E.ctx);
  ag__tls.quiet++;
  if (pushed < 0) {
    r = CUDA_ERROR_INVALID_CONTEXT, first = 0, nfailed = n;
  } else {
    r = ag__held_submit(E.held, n, E.arena, E.stream, &first, &nfailed);
  }
  ag__tls.quiet--;
  ag__ctx_leave(pushed);
  if (r) {
    ag__log(AG_LOG_WARN, "%d of %d held launches failed at submission (CUDA error %d): "
            "reported to the thread that made them", nfailed, n, r);
    STAT_INC(ag__stats.failed_submissions, (uint64_t)nfailed);
    if (first >= 0 && !__atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED)) {
      pending_owner = E.held[first].owner;
      __atomic_store_n(&ag__pending_err, r, __ATOMIC_RELEASE);
    }
  }
  STAT_INC(ag__stats.passthrough, (uint64_t)n);
  STAT_INC(ag__stats.fallbacks[reason], (uint64_t)n);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_flush(E.stream, n, reason, trace_t0, r, E.cand);
}

static void stop_holding(void) {
  E.holding = 0;
  __atomic_store_n(&holding_pub, 0, __ATOMIC_RELAXED);
  E.cand = NULL;
  E.arena_used = 0;
}

static void demote(ag_seq_t *s, const char *why) {
  ag__log(AG_LOG_INFO, "sequence %016llx (%d launches) demoted: %s",
          (unsigned long long)s->key.hash, s->n, why);
  ag__seqtab_demote(E.tab, s);
  if (ag__dump_armed) ag__dump_demoted(s, why), ag__dump_graph_gone(s, 0);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_demote(s, why);
  release_graph(s);
  STAT_INC(ag__stats.demotions, 1);
}

/* The held launches form the complete sequence s: build its graph if needed, update, launch. */
static void replay(ag_seq_t *s) {
  int n = E.seg.len, pushed, r = 0;
  uint64_t t0, t1, updates = 0;

  pushed = ag__ctx_enter(E.ctx);
  if (pushed < 0) {
    submit_held(n, AG_FB_GRAPH_ERROR);
    return;
  }
  ag__tls.quiet++;
  if (s->state == AG_SEQ_BUILD) {
    ag_graph_t *g;
    uint64_t trace_tb = AG_UNLIKELY(ag__trace_armed) ? ag__now_ns() : 0;
    r = ag__graph_build(&g, E.held, n, E.arena);
    if (r == 0) {
      s->graph = g;
      ag__seqtab_ready(E.tab, s, ag__graph_cost(n));
      STAT_INC(ag__stats.graphs, 1);
      ag__log(AG_LOG_DEBUG, "sequence %016llx: graph of %d launches built",
              (unsigned long long)s->key.hash, n);
    }
    if (AG_UNLIKELY(ag__trace_armed)) ag__trace_build(E.stream, s, n, trace_tb, r);
  }
  t0 = ag__now_ns();
  if (r == 0) r = ag__graph_replay(s->graph, E.held, E.arena, E.stream, &updates);
  t1 = ag__now_ns();
  ag__tls.quiet--;
  ag__ctx_leave(pushed);
  STAT_INC(ag__stats.updates, updates);
  if (r) {
    char why[64];
    snprintf(why, sizeof why, "graph path failed (CUDA error %d)", r);
    demote(s, why);
    submit_held(n, AG_FB_GRAPH_ERROR);
    return;
  }
  STAT_INC(ag__stats.replayed, (uint64_t)n);
  STAT_INC(ag__stats.graph_launches, 1);
  ag__seqtab_touch(E.tab, s);
  s->replays++;
  s->updates += updates;
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_replay(E.stream, s, n, t0, t1, updates);
  s->replay_ns += ((double)(t1 - t0) - s->replay_ns) / (double)(s->replays < 16 ? s->replays : 16);
  /* The guard: after a few replays, a sequence whose replay (graph launch plus node updates)
   * costs clearly more host time than launching its kernels one by one is not worth holding.
   * To confirm on a GPU: both costs here are modelled by the simulator. */
  if (s->replays >= 16 && sampled >= 16 * 32 &&
      s->replay_ns > 1.25 * (double)__atomic_load_n(&launch_ns, __ATOMIC_RELAXED) * s->n)
    demote(s, "replay does not pay");
}

/* Finds a BUILD/READY sequence whose first m structural hashes are hashes[0..m-1] and whose
 * length is `exact` (when > 0) or more than m (when 0). */
static ag_seq_t *find_prefix(int m, int exact) {
  for (ag_seq_t *s = ag__seqtab_first(E.tab, E.hashes[0]); s; s = s->next_first) {
    if (exact ? s->n != exact : s->n <= m) continue;
    if (!memcmp(s->hashes, E.hashes, (size_t)m * sizeof *E.hashes)) return s;
  }
  return NULL;
}

/* Ends the current sequence. `content` says the segmenter cut it (then `hash` is its content
 * hash); otherwise an ordering call, a change of stream or the bound on holds (`reason`, the
 * fallback that an incomplete held sequence is counted under) ended it. */
static void finish(int content, uint64_t hash, int reason) {
  int n = E.seg.len;
  if (!n) goto out;
  if (E.holding) {
    ag_seq_t *s = find_prefix(n, n);
    if (s)
      replay(s);
    else
      submit_held(n, content ? AG_FB_MISMATCH : reason);
    stop_holding();
    goto out;
  }
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_pass(n, content);
  if (n >= ag__config.min_seq) {
    int added;
    /* An external cut finds the segmenter as it was: its hash covers exactly these launches. */
    uint64_t h = content ? hash : E.seg.hash;
    ag_seq_t *s = ag__seqtab_find(E.tab, h, E.hashes, E.kids, n, &added);
    if (s) {
      E.fin_gen = E.seg_gen, E.fin_hash = h, E.fin_n = n;
      if (added) STAT_INC(ag__stats.sequences, 1);
      if (s->state == AG_SEQ_DEMOTED) STAT_INC(ag__stats.fallbacks[AG_FB_DEMOTED], (uint64_t)n);
      if (++s->count >= (uint64_t)ag__config.repeats && s->state == AG_SEQ_COUNTING)
        ag__seqtab_to_build(E.tab, s);
    }
  }
out:
  ag__seg_reset(&E.seg);
  E.seg_gen++;
}

/* An external cut: ordering call, another stream, a launch that cannot be held. */
static void cut(void) {
  if (E.seg.len) finish(0, 0, AG_FB_FLUSHED);
}

/* ---- launches ----------------------------------------------------------------------------- */

/* The shape (grid, block, shared memory) is compared as one block of seven unsigneds. */
_Static_assert(offsetof(ag_launch_t, block) == offsetof(ag_launch_t, grid) + 3 * sizeof(unsigned) &&
                   offsetof(ag_launch_t, shmem) == offsetof(ag_launch_t, grid) + 6 * sizeof(unsigned),
               "ag_launch_t: grid, block and shmem must be contiguous");
_Static_assert(sizeof(((ag_kinfo_t *)0)->shape) == 7 * sizeof(unsigned), "ag_kinfo_t: shape");

static inline uint64_t struct_hash(ag_kinfo_t *k, const ag_launch_t *l) {
  uint64_t h;
  /* A kernel is mostly launched with one shape: the last one's hash is kept with the kernel.
   * The comparison reads the struct's bytes from grid on, not the grid array, which the seven
   * unsigneds run past. */
  if (AG_LIKELY(k->shape_known &&
                !memcmp(k->shape, (const char *)l + offsetof(ag_launch_t, grid), sizeof k->shape)))
    return AG_UNLIKELY(ag__lattr_any(l)) ? ag__lattr_hash(k->shape_hash, l) : k->shape_hash;
  h = ag__mix64(k->id ^ ((uint64_t)l->shmem << 32));
  h = ag__mix64(h ^ l->grid[0] ^ ((uint64_t)l->grid[1] << 32));
  h = ag__mix64(h ^ l->grid[2] ^ ((uint64_t)l->block[0] << 32));
  h = ag__mix64(h ^ l->block[1] ^ ((uint64_t)l->block[2] << 32));
  k->shape[0] = l->grid[0], k->shape[1] = l->grid[1], k->shape[2] = l->grid[2];
  k->shape[3] = l->block[0], k->shape[4] = l->block[1], k->shape[5] = l->block[2];
  k->shape[6] = l->shmem;
  k->shape_hash = h, k->shape_known = 1;
  if (AG_UNLIKELY(ag__dump_armed))
    ag__dump_shape(h, k, l, ag__tls.lib ? AG_PATH_CUDNN : l->path,
                    ag__tls.lib ? ag__tls.lib_call : NULL);
  /* Launch attributes (src/launch-attrs.h): a launch with others is another entry. */
  return AG_UNLIKELY(ag__lattr_any(l)) ? ag__lattr_hash(h, l) : h;
}

/* Why this launch cannot be held (enum ag_fallback + 1), or 0. A kernel without parameters
 * may be launched without an argument array. Attributes, cooperative entry points and `extra`
 * buffers are src/launch-attrs.h's. */
static inline int attr_reason(const ag_launch_t *l, const ag_kinfo_t *k) {
  if (AG_UNLIKELY(ag__lattr_any(l))) return ag__lattr_reason(l, k);
  if (AG_UNLIKELY(!l->args && k->nparams)) return AG_FB_ATTRIBUTES + 1;
  return 0;
}

/* Copies the launch into the held list at position i. Returns 0 or -AG_ENOMEM. */
static int hold(int i, ag_kinfo_t *k, const ag_launch_t *l) {
  ag_held_t *h = &E.held[i];
  size_t at = 0, need = E.arena_used + k->param_bytes;
  if (AG_UNLIKELY(ag__lattr_any(l))) at = AG_LATTR_ALIGN(need), need = at + ag__lattr_bytes(l);
  if (need > E.arena_cap) {
    size_t cap = E.arena_cap * 2 > need ? E.arena_cap * 2 : need;
    uint8_t *a = realloc(E.arena, cap);
    if (!a) return -AG_ENOMEM;
    E.arena = a, E.arena_cap = cap;
  }
  h->k = k;
  h->owner = pthread_self();
  memcpy(h->grid, l->grid, sizeof h->grid);
  memcpy(h->block, l->block, sizeof h->block);
  h->shmem = l->shmem;
  h->off = (uint32_t)E.arena_used;
  h->nattrs = 0;
  if (AG_UNLIKELY(ag__lattr_any(l))) {
    /* Attributes, and the arguments of an `extra` buffer (src/launch-attrs.h). */
    if (!l->extra)
      for (uint32_t j = 0; j < k->nparams; j++)
        memcpy(E.arena + E.arena_used + k->params[j].offset, l->args[j], k->params[j].size);
    ag__lattr_hold(h, l, k, E.arena + E.arena_used, E.arena, at);
  } else {
    for (uint32_t j = 0; j < k->nparams; j++)
      memcpy(E.arena + E.arena_used + k->params[j].offset, l->args[j], k->params[j].size);
  }
  E.arena_used = need;
  __atomic_store_n(&hold_gen, __atomic_load_n(&hold_gen, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
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

/* Wakes the helper thread if it sleeps (a hold begins; called under the lock). The helper sets
 * helper_idle before it reads holding_pub, and this reads helper_idle after setting
 * holding_pub, both sequentially consistent: one of the two sees the other. */
static void hold_begins(void) {
  __atomic_store_n(&holding_pub, 1, __ATOMIC_SEQ_CST);
  if (AG_UNLIKELY(__atomic_load_n(&helper_idle, __ATOMIC_SEQ_CST))) {
    pthread_mutex_lock(&helper_mu);
    __atomic_store_n(&helper_idle, 0, __ATOMIC_SEQ_CST);
    pthread_cond_signal(&helper_cv);
    pthread_mutex_unlock(&helper_mu);
  }
}

/* Handles a launch that may be held; returns 1 when it was held (or replayed), 2 when the
 * caller must submit it and its structure was recorded in the current sequence (*gen is that
 * sequence's generation), 0 when the caller must submit it and nothing was recorded. Called
 * under the lock. */
static inline __attribute__((always_inline)) int step(const ag_launch_t *l, void *stream, void *ctx, ag_kinfo_t *k,
                                                      uint32_t *gen) {
  int reason, i;
  uint64_t h, done;

  if (AG_UNLIKELY(!k)) {
    if (AG_UNLIKELY(ag__trace_armed) && E.holding)
      ag__trace_cause("launch not holdable (kernel not identified)");
    cut();
    return 0;
  }
  reason = AG_UNLIKELY(k->reason) ? k->reason : attr_reason(l, k);
  if (AG_UNLIKELY(!reason && __atomic_load_n(&captures, __ATOMIC_ACQUIRE) > 0)) {
    /* The program is capturing somewhere: nothing is held meanwhile, and a launch on a
     * capturing stream (or one joined to a capture by an event wait) is its own business. */
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = ag__real.cuStreamIsCapturing ? ag__real.cuStreamIsCapturing((CUstream)stream, &st)
                                              : CUDA_ERROR_NOT_FOUND;
    if (AG_UNLIKELY(ag__trace_armed) && E.holding) ag__trace_cause("capture in progress");
    cut();
    if (r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE)
      STAT_INC(ag__stats.fallbacks[AG_FB_CAPTURING], 1);
    return 0;
  }
  if (AG_UNLIKELY(!reason && __atomic_load_n(&changing, __ATOMIC_ACQUIRE) > 0)) {
    /* A call that changes what a launch's submission depends on is in progress on another
     * thread: this launch runs now, under whatever value is in force, as it would without us. */
    if (AG_UNLIKELY(ag__trace_armed) && E.holding) ag__trace_cause("attribute or limit change");
    cut();
    return 0;
  }
  if (AG_UNLIKELY(reason)) {
    if (AG_UNLIKELY(ag__trace_armed) && E.holding) ag__trace_cause_fallback(reason - 1);
    cut();
    STAT_INC(ag__stats.fallbacks[reason - 1], 1);
    if (AG_UNLIKELY(ag__dump_armed) && reason == AG_FB_DENIED + 1)
      ag__dump_denied(k, l, ag__tls.lib ? AG_PATH_CUDNN : l->path,
                    ag__tls.lib ? ag__tls.lib_call : NULL);
    return 0;
  }
  if (E.seg.len && AG_UNLIKELY(stream != E.stream || ctx != E.ctx)) cut();
  i = E.seg.len;
  h = struct_hash(k, l);
  E.kids[i] = k->id;
  if (AG_UNLIKELY(i == 0)) {
    E.stream = stream, E.ctx = ctx, E.thread = pthread_self();
    E.hashes[0] = h;
    /* A sequence boundary: hold if a known sequence may begin here (and holds can be bounded:
     * AUTOGRAPH_HOLD_US is not 0 and the helper thread could be started). */
    if (ctx && AG_LIKELY(__atomic_load_n(&helper_state, __ATOMIC_RELAXED) >= 0) &&
        (E.cand = find_prefix(1, 0)) != NULL) {
      E.holding = 1;
      hold_begins();
    }
    if (AG_UNLIKELY(ag__trace_armed) && E.holding) ag__trace_hold(stream);
  } else {
    E.hashes[i] = h;
    if (E.holding && !(E.cand->n > i && E.cand->hashes[i] == h) &&
        !(E.cand = find_prefix(i + 1, 0))) {
      /* Diverged from every known sequence: what was held runs now, this launch after it. */
      submit_held(i, AG_FB_MISMATCH);
      stop_holding();
    }
  }
  int held = 0;
  if (AG_UNLIKELY(E.holding)) {
    if (hold(i, k, l) == 0) {
      held = 1;
    } else {
      if (AG_UNLIKELY(ag__trace_armed) && i) ag__trace_cause("out of memory");
      submit_held(i, AG_FB_FLUSHED);
      stop_holding();
    }
  }
  *gen = E.seg_gen;
  if (AG_UNLIKELY(ag__seg_push(&E.seg, h, &done))) {
    E.seg.len = i + 1; /* the segmenter reset itself; finish() needs the length */
    finish(1, done, AG_FB_MISMATCH);
  }
  return held ? 1 : 2;
}

/* A pass-through launch recorded in the sequence of generation `gen` failed: it must never
 * enter a learned sequence (issue 11; a structure is held only if that very structure
 * succeeded before). If its sequence is still the current one, it is dropped uncounted; if it
 * was counted when it ended at this launch, the count is taken back, and a sequence already
 * being graphed is demoted. (A sequence ended by another thread's cut in the moment between
 * the launch and its failure, and counted then, is not found: a window of one driver call.) */
static void forget_failed(uint32_t gen) {
  engine_lock();
  if (E.seg_gen == gen && E.seg.len) {
    if (E.holding) {
      cut(); /* never the case (holding begins only at a sequence's first launch); kept safe */
    } else {
      ag__seg_reset(&E.seg);
      E.seg_gen++;
    }
  } else if (E.fin_gen == gen && E.tab) {
    ag_seq_t *s = ag__seqtab_get(E.tab, E.fin_hash, E.fin_n);
    if (s && s->state == AG_SEQ_COUNTING) {
      if (s->count) s->count--;
    } else if (s && s->state != AG_SEQ_DEMOTED) {
      demote(s, "one of its launches failed");
    }
  }
  engine_unlock();
}

/* ---- the bound on holds (issue 11) -------------------------------------------------------- */

/* The helper found the hold unchanged for a whole period: submit it (a replay if it happens to
 * be a complete known sequence). The guard counts it against the candidate sequence: holding
 * a sequence whose holds keep reaching the bound only delays its launches (the GPU does not
 * run held launches), so once that has happened four times and more often than it replayed,
 * the sequence is demoted. Called under the lock. */
static void hold_timeout(void) {
  ag_seq_t *s = E.cand;
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause("hold bound (AUTOGRAPH_HOLD_US)");
  STAT_INC(ag__stats.hold_timeouts, 1);
  finish(0, 0, AG_FB_HOLD_TIMEOUT);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause(NULL);
  if (s && s->state != AG_SEQ_DEMOTED && ++s->timeouts >= 4 && s->timeouts > s->replays)
    demote(s, "holds reach the bound (the program waits on the device without calling CUDA)");
}

/* The helper thread: every half bound it looks at the hold; when no launch has joined it since
 * the previous look, it submits it. So a hold ends between one half and one whole bound after
 * its last launch, whatever the program does (spins on device-written memory, sleeps, waits on
 * another process). Without a hold for about 100 ms it sleeps until the next hold begins. */
static void *helper_main(void *arg) {
  long half_ns = (long)ag__config.hold_us * 500L;
  uint64_t seen = 0;
  int armed = 0, idle = 0, idle_max;
  (void)arg;
  if (half_ns < 20000) half_ns = 20000;
  idle_max = (int)(100000000L / half_ns) + 1;
  struct timespec ts = {half_ns / 1000000000L, half_ns % 1000000000L};
  for (;;) {
    nanosleep(&ts, NULL);
    if (!__atomic_load_n(&holding_pub, __ATOMIC_SEQ_CST)) {
      armed = 0;
      if (++idle < idle_max) continue;
      idle = 0;
      pthread_mutex_lock(&helper_mu);
      __atomic_store_n(&helper_idle, 1, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&helper_idle, __ATOMIC_SEQ_CST) &&
             !__atomic_load_n(&holding_pub, __ATOMIC_SEQ_CST))
        pthread_cond_wait(&helper_cv, &helper_mu);
      __atomic_store_n(&helper_idle, 0, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&helper_mu);
      continue;
    }
    idle = 0;
    uint64_t g = __atomic_load_n(&hold_gen, __ATOMIC_RELAXED);
    if (!armed || g != seen) {
      seen = g, armed = 1;
      continue;
    }
    armed = 0;
    engine_lock();
    if (E.holding && __atomic_load_n(&hold_gen, __ATOMIC_RELAXED) == seen) hold_timeout();
    engine_unlock();
  }
  return NULL;
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
  int sample, path, st = 0, r;
  uint32_t gen = 0;
  if (ag__tls.quiet) return l->submit(l); /* nested: the outer launch was recorded */
  /* A cuDNN call held for fusion (src/fuse-dnn.h) runs before any later launch. */
  if (AG_UNLIKELY(__atomic_load_n(&ag__fdnn_pending, __ATOMIC_ACQUIRE))) ag__fdnn_flush();
  if (AG_UNLIKELY(ag__dump_armed)) ag__dump_poll(0);

  stream = l->stream;
  if (!stream) stream = l->per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  engine_lock();
  /* Every counter of the launch path is written here, under the lock: no atomics per launch. */
  STAT_INC(ag__stats.launches, 1);
  path = AG_UNLIKELY(ag__tls.lib) ? AG_PATH_CUDNN : l->path;
  STAT_INC(ag__stats.by_path[path], 1);
  if (l->call) STAT_INC(l->call->count, 1);
  STAT_INC(ag__stats.families[AG_FAM_LAUNCH], 1);
  if (AG_UNLIKELY(!E.live)) {
    if (E.off || !ag__real_ready() || (!E.tab && engine_setup() != 0)) goto pass;
    E.live = 1;
  }
  ctx = current_ctx();
  if (AG_UNLIKELY(stream == CU_STREAM_PER_THREAD)) {
    /* Never held: only the owning thread can submit to its per-thread stream, and a flush may
     * have to happen on another thread. */
    if (AG_UNLIKELY(ag__trace_armed) && E.holding)
      ag__trace_cause("launch on the per-thread default stream");
    cut();
    goto pass;
  }
  if (AG_UNLIKELY(!ctx)) {
    /* The thread's first CUDA call: the runtime binds its context only now, inside the call
     * (nvcc 12's <<<>>> reaches cudaLaunchKernel with nothing before it on a new thread). Not
     * held, so that no record is keyed by a context the launch will not run in. */
    if (AG_UNLIKELY(ag__trace_armed) && E.holding)
      ag__trace_cause("launch before the thread has a context");
    cut();
    goto pass;
  }
  k = ag__kinfo_find(l->func, ctx);
  if (AG_UNLIKELY(!k)) {
    /* First sight: learning calls the driver and the runtime, which take locks of their own
     * and call back into the wrappers, so it runs outside the engine lock, quietly. */
    engine_unlock();
    ag__tls.quiet++;
    k = ag__kinfo_learn(l->func, l->fkind, ctx);
    ag__tls.quiet--;
    engine_lock();
    if (k) k = ag__kinfo_add(k);
    if (k) STAT_INC(ag__stats.kernels, 1);
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
  STAT_INC(ag__stats.passthrough, 1);
  sample = (sampled++ & 31) == 0;
  engine_unlock();
  r = pass(l, sample);
  if (AG_UNLIKELY(r) && st == 2) forget_failed(gen);
out:
  /* An earlier held launch of this thread failed at submission: this call reports it, as CUDA
   * reports errors of earlier asynchronous work from later calls. */
  return with_pending(r, l->path != AG_PATH_DRIVER);
}

void ag__engine_snapshot(void (*fn)(ag_seqtab_t *t, double launch_ns, void *arg), void *arg) {
  engine_lock();
  fn(E.tab, (double)__atomic_load_n(&launch_ns, __ATOMIC_RELAXED), arg);
  engine_unlock();
}

void ag__flush_all(void) {
  if (!ag__enabled) return;
  if (AG_UNLIKELY(__atomic_load_n(&ag__fdnn_pending, __ATOMIC_ACQUIRE))) ag__fdnn_flush();
  engine_lock();
  cut();
  engine_unlock();
}

/* ---- ordering and library calls ------------------------------------------------------------ */

static inline void count_call(ag_call_t *call, int family) {
  if (call) AG_STAT_ADD(call->count, 1);
  AG_STAT_ADD(ag__stats.families[family], 1);
}

void ag__order_enter(ag_call_t *call, void *stream) {
  (void)stream; /* every ordering call flushes: held work may be what the call waits for */
  if (call && call->family == AG_FAM_DEVICE) ag__tls.ctx = NULL;
  if (!ag__tls.quiet) {
    if (!ag__tls.lib) {
      AG_STAT_ADD(ag__stats.ordering, 1);
      count_call(call, call ? call->family : AG_FAM_UNCLASSIFIED);
    }
    if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause(call ? call->name : "unclassified call");
    ag__flush_all();
    if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause(NULL);
    if (AG_UNLIKELY(ag__dump_armed)) ag__dump_poll(1);
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
  if (call && call->family == AG_FAM_CAPTURE) {
    if (strstr(call->name, "BeginCapture")) {
      if (status == 0) __atomic_fetch_add(&captures, 1, __ATOMIC_ACQ_REL);
    } else if (strstr(call->name, "EndCapture") && capture_ended(stream, status)) {
      /* A failed end that still ended the capture counts too, or nothing is held again. */
      int c = __atomic_load_n(&captures, __ATOMIC_ACQUIRE);
      while (c > 0 && !__atomic_compare_exchange_n(&captures, &c, c - 1, 0, __ATOMIC_ACQ_REL,
                                                   __ATOMIC_ACQUIRE)) {
      }
    }
  }
  return with_pending(status, rt);
}

/* ---- failed submissions (issue 11) ---------------------------------------------------------- */

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
  if (AG_UNLIKELY(__atomic_load_n(&ag__fdnn_pending, __ATOMIC_ACQUIRE))) ag__fdnn_flush();
  __atomic_fetch_add(&changing, 1, __ATOMIC_ACQ_REL);
  engine_lock();
  e = setting_slot(obj, what, 0);
  same = e && e->known && e->value == value;
  if (!same) {
    /* Held launches were valid under the value in force: they run before it changes. */
    if (AG_UNLIKELY(ag__trace_armed) && E.holding) ag__trace_cause(call ? call->name : "setting");
    cut();
    if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause(NULL);
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
  if (e) e->value = value, e->known = status == 0; /* a failed one: the next one flushes */
  engine_unlock();
  __atomic_fetch_sub(&changing, 1, __ATOMIC_ACQ_REL);
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

/* ---- forgetting: the ends of modules, fatbins and contexts (issue 11) ------------------------ */

static void seq_gone(ag_seq_t *s, void *arg) {
  (void)arg;
  if (!s->graph) return;
  STAT_INC(ag__stats.forgot_graphs, 1);
  if (ag__dump_armed) ag__dump_graph_gone(s, 0);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_evict(s);
  release_graph(s);
}

/* Under the lock, after the kernel records went (ids: theirs, sorted; lost: unknown): forgets
 * every sequence and graph naming one of them. Frees ids. */
static void forget_sequences(size_t n, uint32_t *ids, int lost, const char *why) {
  size_t m = 0;
  if (n && E.tab) m = ag__seqtab_forget(E.tab, ids, lost ? 0 : n, lost, seq_gone, NULL);
  free(ids);
  STAT_INC(ag__stats.forgot_kernels, (uint64_t)n);
  STAT_INC(ag__stats.forgot_sequences, (uint64_t)m);
  if (n) ag__log(AG_LOG_DEBUG, "%s: %zu kernels and %zu sequences forgotten", why, n, m);
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
  if (AG_UNLIKELY(ag__trace_armed) && E.holding) ag__trace_cause(why);
  cut();
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
  forget_sequences(n, ids, lost, why);
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
  errno = saved;
}

void ag__device_ending(int dev) {
  int saved = errno;
  ag_kforget_t what = {.dev = dev};
  ag__tls.ctx = NULL;
  if (dev < 0 && dev != AG_DEV_CURRENT) what.all = 1;
  if (ag__enabled) forget(2, &what, "device reset");
  errno = saved;
}

/* ---- process life -------------------------------------------------------------------------- */

static void at_exit(void) {
  /* Held launches run before the report, so that replayed + passthrough == launches. Nothing is
   * held after this: the helper thread must not call the driver while the process tears down,
   * and launches made by later exit handlers go straight through. */
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause("exit");
  ag__flush_all();
  if (ag__enabled) {
    engine_lock();
    cut();
    E.off = 1, E.live = 0;
    engine_unlock();
    if (__atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED))
      ag__log(AG_LOG_WARN, "a failed submission (CUDA error %d) was never reported: the thread "
              "that made the launch made no CUDA call after it",
              __atomic_load_n(&ag__pending_err, __ATOMIC_RELAXED));
  }
  if (ag__enabled) ag__stats_report();
  if (ag__enabled && ag__dump_armed) ag__dump_write(AG_DUMP_EXIT);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_write();
}

static void atfork_prepare(void) {
  /* The child must not inherit held work it cannot submit; take the lock so that no thread is
   * in the middle of changing the engine's state when the process is copied. */
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause("fork");
  ag__flush_all();
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause(NULL);
  engine_lock();
}

static void atfork_parent(void) { engine_unlock(); }

static void atfork_child(void) {
  /* The child starts with one thread: per-thread nesting of other threads is gone, and the
   * counters describe the parent's work. CUDA is unusable in a forked child, so the engine
   * passes everything through there. */
  engine_lock_reinit();
  ag__tls = (ag_tls_t){0};
  E.off = 1;
  E.live = 0;
  E.holding = 0;
  /* The helper thread is not copied; the child never holds (E.off), so it is not restarted. */
  __atomic_store_n(&helper_state, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&helper_idle, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&holding_pub, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&ag__pending_err, 0, __ATOMIC_RELAXED);
  pthread_mutex_init(&helper_mu, NULL);
  pthread_cond_init(&helper_cv, NULL);
  E.seg.len = 0;
  ag__kinfo_reset();
  ag__stats_reset();
  ag__registry_atfork_child();
  ag__trace_atfork_child();
}

void ag__init(void) {
  int expected = AG_INIT_NONE;
  int saved = errno;
  if (!__atomic_compare_exchange_n(&ag__init_state, &expected, AG_INIT_RUNNING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return; /* done, or running on some thread: the caller forwards untouched meanwhile */
  ag__config_load();
  if (!ag__config.disable) {
    ag__dump_init();
    ag__trace_init();
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
