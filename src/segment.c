/* segment.c — the segmenter and the sequence table (see segment.h).
 *
 * The segmenter's per-launch step, ag__seg_push, is inline in segment.h. The table is a uthash
 * map keyed by (content hash, length), and lookups confirm the match on the full list of
 * structural hashes, so a collision of content hashes can never replay the wrong graph.
 */
#include "segment.h"

#include <stdlib.h>
#include <string.h>

/* Sequences kept at most; past it new ones are not learned (a program that never repeats). */
#define AG_SEQ_LIMIT 65536

void ag__seg_init(ag_seg_t *s, int min, int max) {
  s->min = min < 1 ? 1 : min;
  s->max = max < s->min ? s->min : max;
  s->period = s->max / 2 > s->min ? s->max / 2 : s->min;
  ag__seg_reset(s);
}

void ag__seg_reset(ag_seg_t *s) {
  s->len = 0;
  s->hash = 0x243f6a8885a308d3ull;
  memset(s->ring, 0, sizeof s->ring);
}

/* ---- the table --------------------------------------------------------------------------- */

typedef struct first {
  uint64_t h; /* key */
  ag_seq_t *head;
  UT_hash_handle hh;
} first_t;

struct ag_seqtab {
  ag_seq_t *seqs;
  first_t *firsts;
  ag_seq_t *lru_head, *lru_tail;
  int ngraphs, max_graphs;
  uint32_t next_id;
  size_t bytes, max_bytes;
  void (*evict)(ag_seq_t *seq);
  /* Forgotten sequences (ag__seqtab_forget), chained by next_first, and what to call before
   * one is freed. */
  ag_seq_t *dead;
  size_t ndead;
  void (*freed)(const ag_seq_t *seq);
};

/* Forgotten sequences kept at most; past it they are freed. */
#define AG_SEQ_DEAD_LIMIT 4096

ag_seqtab_t *ag__seqtab_new(int max_graphs, size_t max_bytes, void (*evict)(ag_seq_t *seq)) {
  ag_seqtab_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->max_graphs = max_graphs, t->max_bytes = max_bytes, t->evict = evict;
  return t;
}

ag_seq_t *ag__seqtab_find(ag_seqtab_t *t, uint64_t hash, const uint64_t *hashes,
                          const uint32_t *kids, int n, int *added) {
  ag_seq_t *s, probe;
  *added = 0;
  memset(&probe.key, 0, sizeof probe.key);
  probe.key.hash = hash, probe.key.n = n;
  HASH_FIND(hh, t->seqs, &probe.key, sizeof probe.key, s);
  if (s) return memcmp(s->hashes, hashes, (size_t)n * sizeof *hashes) ? NULL : s;
  if (HASH_COUNT(t->seqs) >= AG_SEQ_LIMIT) return NULL;
  if (!(s = calloc(1, sizeof *s))) return NULL;
  if (!(s->hashes = malloc((size_t)n * sizeof *hashes))) {
    free(s);
    return NULL;
  }
  memcpy(s->hashes, hashes, (size_t)n * sizeof *hashes);
  if (kids && (s->kids = malloc((size_t)n * sizeof *kids)) != NULL)
    memcpy(s->kids, kids, (size_t)n * sizeof *kids);
  s->key = probe.key;
  s->n = n;
  s->id = ++t->next_id;
  HASH_ADD(hh, t->seqs, key, sizeof s->key, s);
  *added = 1;
  return s;
}

ag_seq_t *ag__seqtab_get(ag_seqtab_t *t, uint64_t hash, int n) {
  ag_seq_t *s, probe;
  memset(&probe.key, 0, sizeof probe.key);
  probe.key.hash = hash, probe.key.n = n;
  HASH_FIND(hh, t->seqs, &probe.key, sizeof probe.key, s);
  return s;
}

ag_seq_t *ag__seqtab_first(ag_seqtab_t *t, uint64_t h) {
  first_t *f;
  HASH_FIND(hh, t->firsts, &h, sizeof h, f);
  return f ? f->head : NULL;
}

static void chain_add(ag_seqtab_t *t, ag_seq_t *s) {
  first_t *f;
  uint64_t h = s->hashes[0];
  HASH_FIND(hh, t->firsts, &h, sizeof h, f);
  if (!f) {
    if (!(f = calloc(1, sizeof *f))) return; /* not indexed: never held, still correct */
    f->h = h;
    HASH_ADD(hh, t->firsts, h, sizeof f->h, f);
  }
  s->next_first = f->head;
  f->head = s;
}

static void chain_remove(ag_seqtab_t *t, ag_seq_t *s) {
  first_t *f;
  uint64_t h = s->hashes[0];
  HASH_FIND(hh, t->firsts, &h, sizeof h, f);
  if (!f) return;
  for (ag_seq_t **pp = &f->head; *pp; pp = &(*pp)->next_first)
    if (*pp == s) {
      *pp = s->next_first;
      break;
    }
  s->next_first = NULL;
}

static void lru_unlink(ag_seqtab_t *t, ag_seq_t *s) {
  if (s->lru_prev) s->lru_prev->lru_next = s->lru_next; else t->lru_head = s->lru_next;
  if (s->lru_next) s->lru_next->lru_prev = s->lru_prev; else t->lru_tail = s->lru_prev;
  s->lru_prev = s->lru_next = NULL;
}

static void lru_push(ag_seqtab_t *t, ag_seq_t *s) {
  s->lru_prev = NULL;
  s->lru_next = t->lru_head;
  if (t->lru_head) t->lru_head->lru_prev = s; else t->lru_tail = s;
  t->lru_head = s;
}

void ag__seqtab_to_build(ag_seqtab_t *t, ag_seq_t *s) {
  if (s->state != AG_SEQ_COUNTING) return;
  s->state = AG_SEQ_BUILD;
  chain_add(t, s);
}

static void leave_ready(ag_seqtab_t *t, ag_seq_t *s) {
  lru_unlink(t, s);
  t->ngraphs--;
  t->bytes -= s->cost;
  s->cost = 0;
}

void ag__seqtab_ready(ag_seqtab_t *t, ag_seq_t *s, size_t cost) {
  if (s->state != AG_SEQ_BUILD) return;
  s->state = AG_SEQ_READY;
  s->cost = cost;
  lru_push(t, s);
  t->ngraphs++;
  t->bytes += cost;
  /* Evict from the cold end, never the sequence just made ready. */
  while ((t->ngraphs > t->max_graphs || t->bytes > t->max_bytes) && t->lru_tail != s) {
    ag_seq_t *v = t->lru_tail;
    leave_ready(t, v);
    chain_remove(t, v);
    if (t->evict) t->evict(v);
    v->state = AG_SEQ_COUNTING;
    v->count = 0;
  }
}

void ag__seqtab_demote(ag_seqtab_t *t, ag_seq_t *s) {
  if (s->state == AG_SEQ_READY) leave_ready(t, s);
  if (s->state == AG_SEQ_READY || s->state == AG_SEQ_BUILD) chain_remove(t, s);
  s->state = AG_SEQ_DEMOTED;
}

void ag__seqtab_touch(ag_seqtab_t *t, ag_seq_t *s) {
  if (s->state != AG_SEQ_READY || t->lru_head == s) return;
  lru_unlink(t, s);
  lru_push(t, s);
}

int ag__seqtab_graphs(const ag_seqtab_t *t, size_t *bytes) {
  if (bytes) *bytes = t->bytes;
  return t->ngraphs;
}

size_t ag__seqtab_count(const ag_seqtab_t *t) { return HASH_COUNT(t->seqs) + t->ndead; }

void ag__seqtab_on_free(ag_seqtab_t *t, void (*freed)(const ag_seq_t *seq)) { t->freed = freed; }

void ag__seqtab_each_ready(ag_seqtab_t *t, void (*fn)(ag_seq_t *seq)) {
  for (ag_seq_t *s = t->lru_head; s; s = s->lru_next) fn(s);
}

void ag__seqtab_each(ag_seqtab_t *t, void (*fn)(ag_seq_t *seq, void *arg), void *arg) {
  for (ag_seq_t *s = t->seqs; s; s = s->hh.next) fn(s, arg);
  for (ag_seq_t *s = t->dead; s; s = s->next_first) fn(s, arg);
}

/* The NOLINTs on HASH_DEL in this file: inside HASH_ITER, uthash's deletion-safe loop, the Clang
 * analyser loses the hash list's invariants and reports a use after free (a false positive). */
static int names_one(const ag_seq_t *s, const uint32_t *ids, size_t nids) {
  if (!s->kids) return 1; /* its kernels are not known: it may name one */
  for (int i = 0; i < s->n; i++) {
    size_t lo = 0, hi = nids;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (ids[mid] < s->kids[i]) lo = mid + 1;
      else hi = mid;
    }
    if (lo < nids && ids[lo] == s->kids[i]) return 1;
  }
  return 0;
}

/* Frees the forgotten sequences kept for the dump (see ag__seqtab_forget). */
static void free_dead(ag_seqtab_t *t) {
  while (t->dead) {
    ag_seq_t *s = t->dead;
    t->dead = s->next_first;
    if (t->freed) t->freed(s);
    free(s->hashes), free(s->kids), free(s->pace), free(s->pieces), free(s);
  }
  t->ndead = 0;
}

size_t ag__seqtab_forget(ag_seqtab_t *t, const uint32_t *ids, size_t nids, int all,
                         void (*gone)(ag_seq_t *seq, void *arg), void *arg) {
  ag_seq_t *doomed = NULL;
  size_t n = 0;
  if (!t || (!all && !nids)) return 0;
  if (t->ndead >= AG_SEQ_DEAD_LIMIT) free_dead(t);
  /* First out of the chains and the LRU (chain_remove clears next_first, which then links the
   * doomed), then out of the table. */
  for (ag_seq_t *s = t->seqs; s; s = s->hh.next) {
    if (!all && !names_one(s, ids, nids)) continue;
    if (s->state == AG_SEQ_READY) leave_ready(t, s);
    if (s->state == AG_SEQ_READY || s->state == AG_SEQ_BUILD) chain_remove(t, s);
    if (gone) gone(s, arg);
    s->next_first = doomed;
    doomed = s;
  }
  while (doomed) {
    ag_seq_t *s = doomed;
    doomed = s->next_first;
    HASH_DEL(t->seqs, s); // NOLINT(clang-analyzer-unix.Malloc,clang-analyzer-core.NullDereference)
    /* Kept, unreachable, for the dump: the fatbins of a program are unregistered at exit,
     * before the exit dump is written. */
    s->next_first = t->dead;
    t->dead = s;
    t->ndead++;
    n++;
  }
  return n;
}

void ag__seqtab_free(ag_seqtab_t *t) {
  if (!t) return;
  ag_seq_t *s, *stmp;
  free_dead(t);
  HASH_ITER(hh, t->seqs, s, stmp) {
    HASH_DEL(t->seqs, s); // NOLINT(clang-analyzer-unix.Malloc)
    free(s->hashes);
    free(s->kids);
    free(s->pace);
    free(s->pieces);
    free(s);
  }
  first_t *f, *ftmp;
  HASH_ITER(hh, t->firsts, f, ftmp) {
    HASH_DEL(t->firsts, f); // NOLINT(clang-analyzer-unix.Malloc)
    free(f);
  }
  free(t);
}

int ag__chunk_plan(const uint64_t *t, int n, uint64_t budget, int *starts) {
  int nchunks = 1;
  uint64_t b = budget / 4 ? budget / 4 : budget;
  starts[0] = 0;
  if (!budget) return n > 0 ? 1 : 0;
  for (int i = 1, first = 0; i < n; i++) {
    if (t[i] <= t[first] || t[i] - t[first] <= b) continue;
    starts[nchunks++] = first = i;
    b = b * 2 < budget ? b * 2 : budget;
  }
  /* A last chunk that fits, with the one before, in its own budget joins it: one graph launch
   * less, and no entry waits longer than the last chunk's budget. */
  if (nchunks > 1 && t[n - 1] - t[starts[nchunks - 2]] <= b) nchunks--;
  return nchunks;
}
