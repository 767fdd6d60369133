/* segment.h — cutting the launch stream into sequences, and the table of sequences.
 *
 * The segmenter sees one structural hash per launch (kernel, block, shared memory) and
 * says where a sequence ends: at a content-defined cut point, where a hash over the last
 * AG_SEG_WINDOW structural hashes hits a mask once the sequence is at least `min` long, or at
 * `max`. Each cut (and each ordering call, which the engine turns into ag__seg_reset) starts the
 * window afresh, so where a cut falls depends only on the launches since the previous cut: the
 * same launches cut the same way in every iteration, wherever the iteration starts.
 *
 * The sequence table keeps every distinct sequence (structural hashes, occurrence count, state)
 * by its content hash and length, indexes those that are being or have been graphed by their
 * first structural hash (so a launch at a sequence boundary knows at once whether it may begin
 * one), and keeps graphed ones in least-recently-used order under a count and size budget.
 * Pure data structures: no CUDA, no locking (the engine's lock covers them).
 */
#ifndef AG_SEGMENT_H
#define AG_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "ag.h"

#define AG_SEG_WINDOW 4
#define AG_SEG_MASK 15u /* a cut on average every 16 launches past the minimum */

typedef struct ag_seg {
  int min, max;
  int period; /* the engine ends a sequence at a repeat of its first launch from this length */
  int len;                          /* launches since the last cut */
  uint64_t hash;                    /* content hash of those launches */
  uint64_t ring[AG_SEG_WINDOW];
} ag_seg_t;

void ag__seg_init(ag_seg_t *s, int min, int max);
void ag__seg_reset(ag_seg_t *s);

/* A 64-bit mix (splitmix64's finaliser). */
static inline uint64_t ag__mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint64_t ag__rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* The structural hash of a launch of the kernel whose record number is `id`, with `block` and
 * `shmem`: what the segmenter sees (src/engine.c adds launch attributes to it). Not the grid: a
 * replay updates a node's grid like an argument. */
static inline uint64_t ag__shape_hash(uint64_t id, const unsigned block[3], unsigned shmem) {
  uint64_t h = ag__mix64(id ^ ((uint64_t)shmem << 32));
  h = ag__mix64(h ^ block[0] ^ ((uint64_t)block[1] << 32));
  return ag__mix64(h ^ block[2]);
}

/* Adds one launch; returns 1 when the sequence ends after it (the segmenter is then reset and
 * *done_hash holds the finished sequence's content hash), else 0.
 *
 * Inline because it runs on every launch. The cut test hashes the window afresh (four
 * rotations and a mix) rather than keeping a true rolling sum: the window is tiny and this
 * keeps the cut a pure function of the last AG_SEG_WINDOW launches. Slot j of the ring holds
 * the launch whose 1-based position p has (p - 1) & (AG_SEG_WINDOW - 1) == j; the window term
 * of the launch i places back is rotated by 13 * i + 1. Cut points depend on these exact
 * values: any change here moves every cut. */
_Static_assert((AG_SEG_WINDOW & (AG_SEG_WINDOW - 1)) == 0, "AG_SEG_WINDOW: a power of two");
_Static_assert(AG_SEG_WINDOW == 4, "ag__seg_push unrolls a window of 4");
static inline int ag__seg_push(ag_seg_t *s, uint64_t h, uint64_t *done_hash) {
  unsigned last = (unsigned)s->len; /* slot index of this launch, before the increment */
  int len = s->len + 1;
  s->ring[last & (AG_SEG_WINDOW - 1)] = h;
  s->len = len;
  s->hash = ag__mix64(s->hash ^ h) + (uint64_t)len;
  if (AG_LIKELY(len < s->min)) return 0;
  if (AG_LIKELY(len < s->max)) {
    /* Only the launches since the last cut are in the window (the ring was zeroed). */
    uint64_t w = ag__rotl64(h, 1) ^ ag__rotl64(s->ring[(last - 1) & (AG_SEG_WINDOW - 1)], 14) ^
                 ag__rotl64(s->ring[(last - 2) & (AG_SEG_WINDOW - 1)], 27) ^
                 ag__rotl64(s->ring[(last - 3) & (AG_SEG_WINDOW - 1)], 40);
    if (AG_LIKELY((ag__mix64(w) & AG_SEG_MASK) != 0)) return 0;
  }
  *done_hash = s->hash;
  ag__seg_reset(s);
  return 1;
}

/* ---- chunks -------------------------------------------------------------------------------- */

/* Where a sequence of n entries, held at host times t[0..n-1] (nanoseconds, ascending), is cut
 * into chunks, each a graph launched as soon as its last entry is held, so that the GPU is not
 * kept waiting for the host to issue the whole sequence. A chunk ends before the entry that
 * would put more than its budget of host time between the chunk's first entry and its last:
 * no entry waits longer than that for the GPU to get it. The first chunk's budget is a quarter
 * of `budget`, each later one twice the one before, up to `budget`: the first work of a
 * sequence reaches the GPU soon, and where the host issues its launches quickly the chunks grow
 * and cost few graph launches; a long pause of the host (Python between two launches) always
 * ends a chunk. A last chunk that fits in its budget together with the chunk before is one chunk
 * with it (a short sequence is not split for a few microseconds). budget 0: one chunk. Writes the chunks' first entries to starts (starts[0] = 0)
 * and returns their number, from 1 to n. */
int ag__chunk_plan(const uint64_t *t, int n, uint64_t budget, int *starts);

/* ---- the sequence table ------------------------------------------------------------------ */

enum ag_seq_state {
  AG_SEQ_COUNTING, /* seen fewer than AUTOGRAPH_REPEATS times */
  AG_SEQ_BUILD,    /* to be held and built at its next occurrence */
  AG_SEQ_READY,    /* graph instantiated */
  AG_SEQ_DEMOTED,  /* never held again */
};

typedef struct ag_seq ag_seq_t;
struct ag_seq {
  struct {
    uint64_t hash;      /* content hash … */
    int64_t n;          /* … and length: the key */
  } key;
  int n;
  uint32_t id;          /* 1, 2, … in the order sequences were first seen (the dump's id) */
  uint64_t *hashes;     /* n structural hashes */
  uint32_t *kids;       /* the n launches' kernel ids (ag_kinfo_t.id), or NULL: what forgetting
                         * a kernel forgets with it */
  uint64_t count;       /* occurrences seen */
  int state;            /* enum ag_seq_state */
  ag_seq_t *next_first; /* chain of BUILD/READY sequences with the same first hash */
  ag_seq_t *lru_prev, *lru_next; /* READY sequences, most recent first */
  size_t cost;          /* estimated device memory of its graph (bytes) */
  void *graph;          /* the engine's graph data (graph.c), or NULL */
  /* Guard: host cost of replays and how many updates they needed. */
  uint64_t replays, updates;
  uint64_t replayed;    /* launches its graph ran in place of (whole replays, chunks and parts) */
  double replay_ns;     /* running mean host time of a replay */
  uint64_t timeouts;    /* holds of it ended by the bound (AUTOGRAPH_HOLD_US) */
  uint64_t wait_ns;     /* GPU time its replays' last submissions kept the GPU waiting before
                         * the program synchronised (the guard's, src/engine.c) */
  /* A sequence learned as back-to-back repetitions of a cycle of shorter ones (a network's
   * identical blocks, each cut by the segmenter into the same pieces): the entries of one
   * cycle, and the keys of its pieces in order; unit 0: not such a sequence. */
  int unit, npieces;
  struct ag_seq_piece {
    uint64_t hash;
    int64_t n;
  } *pieces;
  uint32_t *pace;       /* n: how long after entry i the host held entry i + 1 (ns), as learned
                         * from its replays (src/engine.c), or NULL */
  UT_hash_handle hh;
};

typedef struct ag_seqtab ag_seqtab_t;

/* Creates a table; `evict` is called for a READY sequence pushed out of the budget (it must
 * release seq->graph), after which the sequence counts again from zero. Returns NULL on OOM. */
ag_seqtab_t *ag__seqtab_new(int max_graphs, size_t max_bytes, void (*evict)(ag_seq_t *seq));

/* Finds the sequence (hash, hashes[0..n-1]); when absent adds it (copying hashes, and the
 * kernel ids kids[0..n-1] when kids is not NULL) and sets *added. Returns NULL only on OOM or
 * when the table is full. */
ag_seq_t *ag__seqtab_find(ag_seqtab_t *t, uint64_t hash, const uint64_t *hashes,
                          const uint32_t *kids, int n, int *added);

/* The sequence with key (hash, n), or NULL; never adds. */
ag_seq_t *ag__seqtab_get(ag_seqtab_t *t, uint64_t hash, int n);

/* Head of the chain of BUILD/READY sequences that begin with structural hash h, or NULL. */
ag_seq_t *ag__seqtab_first(ag_seqtab_t *t, uint64_t h);

/* State changes. to_build: COUNTING → BUILD (joins the chain). ready: BUILD → READY with a
 * graph of `cost` bytes (joins the LRU, evicting others as needed). demote: any → DEMOTED
 * (leaves chain and LRU; the caller releases the graph). touch: a READY sequence was used. */
void ag__seqtab_to_build(ag_seqtab_t *t, ag_seq_t *s);
void ag__seqtab_ready(ag_seqtab_t *t, ag_seq_t *s, size_t cost);
void ag__seqtab_demote(ag_seqtab_t *t, ag_seq_t *s);
void ag__seqtab_touch(ag_seqtab_t *t, ag_seq_t *s);

/* Number of READY sequences and their total cost. */
int ag__seqtab_graphs(const ag_seqtab_t *t, size_t *bytes);
/* Number of sequences known (forgotten ones still kept included). */
size_t ag__seqtab_count(const ag_seqtab_t *t);

/* Calls fn on every READY sequence (at exit, to release graphs). */
void ag__seqtab_each_ready(ag_seqtab_t *t, void (*fn)(ag_seq_t *seq));

/* Calls fn(seq, arg) on every sequence known, forgotten ones still kept included, in no
 * particular order (the dump's snapshot). */
void ag__seqtab_each(ag_seqtab_t *t, void (*fn)(ag_seq_t *seq, void *arg), void *arg);

/* Forgets every sequence that names one of the kernel ids ids[0..nids-1] (sorted ascending),
 * or one whose kernels are unknown (kids NULL), or every sequence when `all`: it leaves the
 * table, the chains and the LRU, so that it is never found, held or replayed again; `gone` is
 * called on each (it must release seq->graph). Forgotten sequences stay visible to
 * ag__seqtab_each and ag__seqtab_count (the dump) until more than a few thousand have been
 * forgotten; they are then freed, after the callback set by ag__seqtab_on_free. Returns the
 * number forgotten. */
size_t ag__seqtab_forget(ag_seqtab_t *t, const uint32_t *ids, size_t nids, int all,
                         void (*gone)(ag_seq_t *seq, void *arg), void *arg);

/* Sets what is called before a forgotten sequence is freed (the dump drops its notes). */
void ag__seqtab_on_free(ag_seqtab_t *t, void (*freed)(const ag_seq_t *seq));

/* Frees the table and every sequence in it (NULL is allowed). Graphs are the caller's: release
 * them first (ag__seqtab_each_ready). */
void ag__seqtab_free(ag_seqtab_t *t);

#endif
