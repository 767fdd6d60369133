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
 * launch that cannot be held, a divergence from the sequence, a capture, exit or fork. At most
 * one stream holds launches at a time. Any failure of the graph path demotes the sequence and
 * submits what was held: nothing is lost, duplicated or reordered.
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
  ag_seg_t seg;
  void *stream, *ctx;     /* of the current sequence */
  uint64_t *hashes;       /* structural hashes of the current sequence, max_seq of them */
  ag_seq_t *cand;         /* a sequence the held launches are a prefix of */
  int off;                /* no holding at all (forked child, no driver table, out of memory) */
  ag_seqtab_t *tab;
  pthread_t thread;       /* the thread that began it */
  /* Holding. */
  ag_held_t *held;        /* max_seq entries, parallel to hashes */
  uint8_t *arena;
  size_t arena_used, arena_cap;
} E;

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
  E.held = calloc((size_t)max, sizeof *E.held);
  E.arena_cap = 64 << 10;
  E.arena = malloc(E.arena_cap);
  ag__seg_init(&E.seg, ag__config.min_seq, max);
  if (!E.tab || !E.hashes || !E.held || !E.arena) {
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

/* Submits everything held as ordinary launches, counted under `reason`. */
static void submit_held(int n, int reason) {
  int pushed, r;
  if (!n) return;
  uint64_t trace_t0 = AG_UNLIKELY(ag__trace_armed) ? ag__now_ns() : 0;
  pushed = ag__ctx_enter(E.ctx);
  ag__tls.quiet++;
  r = ag__held_submit(E.held, n, E.arena, E.stream);
  ag__tls.quiet--;
  ag__ctx_leave(pushed);
  if (r) ag__log(AG_LOG_WARN, "submitting %d held launches failed (CUDA error %d)", n, r);
  STAT_INC(ag__stats.passthrough, (uint64_t)n);
  STAT_INC(ag__stats.fallbacks[reason], (uint64_t)n);
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_flush(E.stream, n, reason, trace_t0, r, E.cand);
}

static void stop_holding(void) {
  E.holding = 0;
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
 * hash); otherwise an ordering call or a change of stream ended it. */
static void finish(int content, uint64_t hash) {
  int n = E.seg.len;
  if (!n) goto out;
  if (E.holding) {
    ag_seq_t *s = find_prefix(n, n);
    if (s)
      replay(s);
    else
      submit_held(n, content ? AG_FB_MISMATCH : AG_FB_FLUSHED);
    stop_holding();
    goto out;
  }
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_pass(n, content);
  if (n >= ag__config.min_seq) {
    int added;
    /* An external cut finds the segmenter as it was: its hash covers exactly these launches. */
    uint64_t h = content ? hash : E.seg.hash;
    ag_seq_t *s = ag__seqtab_find(E.tab, h, E.hashes, n, &added);
    if (s) {
      if (added) STAT_INC(ag__stats.sequences, 1);
      if (s->state == AG_SEQ_DEMOTED) STAT_INC(ag__stats.fallbacks[AG_FB_DEMOTED], (uint64_t)n);
      if (++s->count >= (uint64_t)ag__config.repeats && s->state == AG_SEQ_COUNTING)
        ag__seqtab_to_build(E.tab, s);
    }
  }
out:
  ag__seg_reset(&E.seg);
}

/* An external cut: ordering call, another stream, a launch that cannot be held. */
static void cut(void) {
  if (E.seg.len) finish(0, 0);
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
    return k->shape_hash;
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
  return h;
}

/* Why this launch cannot be held (enum ag_fallback + 1), or 0. */
static inline int attr_reason(const ag_launch_t *l) {
  if (AG_UNLIKELY(l->coop)) return AG_FB_COOPERATIVE + 1;
  if (AG_UNLIKELY(l->extra || !l->args)) return AG_FB_ATTRIBUTES + 1;
  if (AG_LIKELY(!l->nattrs)) return 0;
  for (unsigned i = 0; i < l->nattrs; i++) {
    const CUlaunchAttribute *a = (const CUlaunchAttribute *)l->attrs + i;
    if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
      if (a->value.cooperative) return AG_FB_COOPERATIVE + 1;
      continue;
    }
    if (a->id == CU_LAUNCH_ATTRIBUTE_IGNORE) continue;
    return AG_FB_ATTRIBUTES + 1;
  }
  return 0;
}

/* Copies the launch into the held list at position i. Returns 0 or -AG_ENOMEM. */
static int hold(int i, ag_kinfo_t *k, const ag_launch_t *l) {
  ag_held_t *h = &E.held[i];
  size_t need = E.arena_used + k->param_bytes;
  if (need > E.arena_cap) {
    size_t cap = E.arena_cap * 2 > need ? E.arena_cap * 2 : need;
    uint8_t *a = realloc(E.arena, cap);
    if (!a) return -AG_ENOMEM;
    E.arena = a, E.arena_cap = cap;
  }
  h->k = k;
  memcpy(h->grid, l->grid, sizeof h->grid);
  memcpy(h->block, l->block, sizeof h->block);
  h->shmem = l->shmem;
  h->off = (uint32_t)E.arena_used;
  for (uint32_t j = 0; j < k->nparams; j++)
    memcpy(E.arena + E.arena_used + k->params[j].offset, l->args[j], k->params[j].size);
  E.arena_used = need;
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

/* Handles a launch that may be held; returns 1 when it was held (or replayed), 0 when the
 * caller must submit it. Called under the lock. */
static inline __attribute__((always_inline)) int step(const ag_launch_t *l, void *stream, void *ctx, ag_kinfo_t *k) {
  int reason, i;
  uint64_t h, done;

  if (AG_UNLIKELY(!k)) {
    if (AG_UNLIKELY(ag__trace_armed) && E.holding)
      ag__trace_cause("launch not holdable (kernel not identified)");
    cut();
    return 0;
  }
  reason = AG_UNLIKELY(k->reason) ? k->reason : attr_reason(l);
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
  if (AG_UNLIKELY(i == 0)) {
    E.stream = stream, E.ctx = ctx, E.thread = pthread_self();
    E.hashes[0] = h;
    /* A sequence boundary: hold if a known sequence may begin here. */
    if (ctx && (E.cand = find_prefix(1, 0)) != NULL) E.holding = 1;
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
  if (AG_UNLIKELY(ag__seg_push(&E.seg, h, &done))) {
    E.seg.len = i + 1; /* the segmenter reset itself; finish() needs the length */
    finish(1, done);
  }
  return held;
}

int ag__launch(const ag_launch_t *l) {
  void *stream, *ctx;
  ag_kinfo_t *k;
  int sample, path;
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
  }
  if (step(l, stream, ctx, k)) {
    engine_unlock();
    return 0;
  }
pass:
  STAT_INC(ag__stats.passthrough, 1);
  sample = (sampled++ & 31) == 0;
  engine_unlock();
  return pass(l, sample);
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

void ag__order_leave_status(ag_call_t *call, int ok) {
  ag__tls.quiet--;
  if (call && call->family == AG_FAM_DEVICE) ag__tls.ctx = NULL;
  if (ag__tls.quiet || !ok || !call || call->family != AG_FAM_CAPTURE) return;
  if (strstr(call->name, "BeginCapture")) {
    __atomic_fetch_add(&captures, 1, __ATOMIC_ACQ_REL);
  } else if (strstr(call->name, "EndCapture")) {
    int c = __atomic_load_n(&captures, __ATOMIC_ACQUIRE);
    while (c > 0 && !__atomic_compare_exchange_n(&captures, &c, c - 1, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
    }
  }
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

void ag__image_unloaded(const void *mod) {
  int saved = errno, n;
  engine_lock();
  /* The unload was an ordering call, but another thread may have begun holding since: nothing
   * held may refer to a kernel about to be forgotten. */
  if (AG_UNLIKELY(ag__trace_armed) && E.holding) ag__trace_cause("module unload");
  cut();
  n = ag__kinfo_unload(mod);
  engine_unlock();
  if (n) ag__log(AG_LOG_DEBUG, "module %p unloaded: %d kernels forgotten", mod, n);
  errno = saved;
}

/* ---- process life -------------------------------------------------------------------------- */

static void at_exit(void) {
  /* Held launches run before the report, so that replayed + passthrough == launches. */
  if (AG_UNLIKELY(ag__trace_armed)) ag__trace_cause("exit");
  ag__flush_all();
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
