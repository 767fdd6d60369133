/* ag-segment — the segmenter cuts a repeating launch stream at the same places in every
 * iteration, whatever comes before; the sequence table finds, indexes and evicts (LRU). */
#include <string.h>

#include "check.h"
#include "segment.h"

static int evicted[8], nevicted;
static ag_seq_t *seen[8];

static void on_evict(ag_seq_t *s) {
  for (int i = 0; i < 8; i++)
    if (seen[i] == s) evicted[nevicted++] = i;
}

/* Positions (mod `period`) of the cuts a stream repeating with period `period` gets, when it
 * starts at phase `phase`; only cuts after the first `warm` launches count. Returns a bitmap. */
static void cuts(int phase, int period, int n, int warm, unsigned char *bits) {
  ag_seg_t s;
  uint64_t done;
  memset(bits, 0, (size_t)period);
  ag__seg_init(&s, 2, 64);
  for (int i = 0; i < n; i++) {
    int p = (i + phase) % period;
    if (ag__seg_push(&s, ag__mix64((uint64_t)p + 1), &done) && i >= warm) bits[p] = 1;
  }
}

int main(void) {
  /* Cut recurrence: wherever the stream starts, the cuts fall in step after a few cuts. */
  unsigned char a[100], b[100];
  int na = 0;
  cuts(0, 100, 3000, 1000, a);
  cuts(37, 100, 3000, 1000, b);
  for (int i = 0; i < 100; i++) na += a[i];
  CHECK_INT(na, >, 2);
  CHECK(memcmp(a, b, sizeof a) == 0);

  /* Max length: a run of identical launches is cut at max. */
  {
    ag_seg_t s;
    uint64_t done, h1 = 0, h2 = 0;
    int first = -1, second = -1;
    ag__seg_init(&s, 3, 10);
    for (int i = 0; i < 25; i++) {
      int c = ag__seg_push(&s, 42, &done);
      if (c && first < 0) first = i, h1 = done;
      else if (c && second < 0) second = i, h2 = done;
    }
    CHECK_INT(first, <=, 9);
    CHECK_INT(second - first, ==, first + 1);
    CHECK(h1 == h2);
  }

  /* The table: find/add, chain by first hash, LRU eviction by count. */
  ag_seqtab_t *t = ag__seqtab_new(2, 1 << 30, on_evict);
  CHECK(t != NULL);
  uint64_t hs[8][3];
  for (int i = 0; i < 8; i++) {
    int added;
    hs[i][0] = 7, hs[i][1] = (uint64_t)i + 100, hs[i][2] = 5;
    seen[i] = ag__seqtab_find(t, 1000 + (uint64_t)i, hs[i], NULL, 3, &added);
    CHECK(seen[i] && added);
  }
  {
    int added;
    CHECK(ag__seqtab_find(t, 1003, hs[3], NULL, 3, &added) == seen[3] && !added);
    uint64_t other[3] = {7, 1, 1};
    CHECK(ag__seqtab_find(t, 1003, other, NULL, 3, &added) == NULL); /* same hash, other content */
  }
  CHECK_INT(ag__seqtab_count(t), ==, 8);
  CHECK(ag__seqtab_first(t, 7) == NULL);
  for (int i = 0; i < 3; i++) ag__seqtab_to_build(t, seen[i]);
  CHECK(ag__seqtab_first(t, 7) != NULL);
  ag__seqtab_ready(t, seen[0], 100);
  ag__seqtab_ready(t, seen[1], 100);
  ag__seqtab_touch(t, seen[0]); /* 1 is now the least recently used */
  ag__seqtab_ready(t, seen[2], 100);
  CHECK_INT(nevicted, ==, 1);
  CHECK_INT(evicted[0], ==, 1);
  CHECK_INT(seen[1]->state, ==, AG_SEQ_COUNTING);
  CHECK_INT(ag__seqtab_graphs(t, NULL), ==, 2);
  ag__seqtab_demote(t, seen[0]);
  CHECK_INT(ag__seqtab_graphs(t, NULL), ==, 1);
  for (ag_seq_t *s = ag__seqtab_first(t, 7); s; s = s->next_first) CHECK(s == seen[2]);

  /* Eviction by size. */
  ag_seqtab_t *u = ag__seqtab_new(100, 250, on_evict);
  nevicted = 0;
  for (int i = 0; i < 3; i++) {
    int added;
    seen[i] = ag__seqtab_find(u, 1 + (uint64_t)i, hs[i], NULL, 3, &added);
    ag__seqtab_to_build(u, seen[i]);
    ag__seqtab_ready(u, seen[i], 100);
  }
  CHECK_INT(nevicted, ==, 1);
  CHECK_INT(evicted[0], ==, 0);
  size_t bytes;
  CHECK_INT(ag__seqtab_graphs(u, &bytes), ==, 2);
  CHECK_INT(bytes, ==, 200);
  ag__seqtab_free(u);
  ag__seqtab_free(t);

  /* Forgetting by kernel id (a module unloaded): exactly the sequences naming one of the ids
   * go, graphed or not, and leave the chain and the LRU; the others stay findable. */
  {
    ag_seqtab_t *f = ag__seqtab_new(100, 1 << 30, on_evict);
    uint32_t kids[4][3] = {{1, 2, 3}, {4, 5, 6}, {7, 2, 8}, {9, 9, 9}};
    uint64_t fh[4][3];
    ag_seq_t *fs[4];
    for (int i = 0; i < 4; i++) {
      int added;
      fh[i][0] = 11, fh[i][1] = (uint64_t)i, fh[i][2] = 3;
      fs[i] = ag__seqtab_find(f, 50 + (uint64_t)i, fh[i], kids[i], 3, &added);
      CHECK(fs[i] && added && fs[i]->kids && fs[i]->kids[2] == kids[i][2]);
      ag__seqtab_to_build(f, fs[i]);
      if (i < 2) ag__seqtab_ready(f, fs[i], 10);
    }
    uint32_t gone[] = {2, 5};
    CHECK_INT(ag__seqtab_forget(f, gone, 2, 0, NULL, NULL), ==, 3);
    CHECK_INT(ag__seqtab_count(f), ==, 4); /* kept for the dump */
    CHECK_INT(ag__seqtab_graphs(f, NULL), ==, 0);
    CHECK(ag__seqtab_first(f, 11) == fs[3] && fs[3]->next_first == NULL);
    CHECK_INT(ag__seqtab_forget(f, gone, 2, 0, NULL, NULL), ==, 0);
    {
      int added;
      CHECK(ag__seqtab_find(f, 50, fh[0], kids[0], 3, &added) != NULL && added);
    }
    CHECK_INT(ag__seqtab_forget(f, NULL, 0, 1, NULL, NULL), ==, 2);
    CHECK(ag__seqtab_first(f, 11) == NULL);
    ag__seqtab_free(f);
  }

  /* Chunks (ag__chunk_plan): a budget of 40 us gives the first chunk 10 us, then 20, then 40
   * for every later one. Entries 3 us apart: 0..9 us (4 entries), 12..30 (7), 33..72 (14),
   * 75..114 (14), 117..156 (14), 159..177 (the last 7): no entry waits longer than its
   * chunk's budget. A pause of the host longer than a budget always ends a chunk; budget 0 is
   * one chunk. */
  {
    uint64_t t[60];
    int st[60], n;
    for (int i = 0; i < 60; i++) t[i] = 3000u * (uint64_t)i;
    n = ag__chunk_plan(t, 60, 40000, st);
    CHECK_INT(n, ==, 6);
    CHECK(st[0] == 0 && st[1] == 4 && st[2] == 11 && st[3] == 25 && st[4] == 39 && st[5] == 53);
    for (int i = 30; i < 60; i++) t[i] += 500000; /* a pause of 0.5 ms after entry 29 */
    n = ag__chunk_plan(t, 60, 40000, st);
    CHECK_INT(n, ==, 7);
    CHECK(st[3] == 25 && st[4] == 30 && st[5] == 44 && st[6] == 58);
    CHECK_INT(ag__chunk_plan(t, 60, 0, st), ==, 1);
    CHECK_INT(st[0], ==, 0);
    CHECK_INT(ag__chunk_plan(t, 1, 40000, st), ==, 1);
    /* Three entries 4 us apart, budget 30 us: the first chunk's 7.5 us holds two, and the
     * third, whose own budget is 15 us, fits with them (8 us): one chunk, not two. Four entries
     * 5 us apart: 0..5, then 10..15, which together span 15 us, within the second budget. */
    for (int i = 0; i < 4; i++) t[i] = 4000u * (uint64_t)i;
    CHECK_INT(ag__chunk_plan(t, 3, 30000, st), ==, 1);
    for (int i = 0; i < 4; i++) t[i] = 5000u * (uint64_t)i;
    CHECK_INT(ag__chunk_plan(t, 4, 30000, st), ==, 1);
    for (int i = 0; i < 4; i++) t[i] = 6000u * (uint64_t)i; /* 0..6, 12..18: 18 us > 15 us */
    CHECK_INT(ag__chunk_plan(t, 4, 30000, st), ==, 2);
    CHECK_INT(st[1], ==, 2);
    /* Every entry its own chunk when they come further apart than any budget. */
    for (int i = 0; i < 60; i++) t[i] = 100000u * (uint64_t)i;
    CHECK_INT(ag__chunk_plan(t, 60, 40000, st), ==, 60);
  }
  return 0;
}
