/* elf-fuzz.c — the parser (src/elf.c) on truncated and corrupted images.
 *
 * Every prefix of the small cubin and fatbins built from tests/kernels/elf-tiny.cu must be
 * refused with -AG_ETRUNC (never 0, never a crash), and random byte flips (fixed seed) in them
 * and in the larger elf-kernels images may produce anything but a crash, an out-of-bounds read
 * or a kernel description that points outside itself. The same holds for ag__elf_fatbins on
 * prefixes (every 61st length) and flips of a host executable (tests/unit/elf-hostprog).
 * Each input is copied into a buffer of exactly its length so that a sanitizer or valgrind sees
 * any read past the end; run it under one of them after changing the parser (e.g. valgrind
 * --error-exitcode=1).
 */
#include "elf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

typedef struct tally {
  long kernels;
  uint64_t sum; /* touches every byte of every description so bad pointers show */
} tally_t;

static int on_kernel(const ag_kernel_desc_t *k, void *ctx) {
  tally_t *t = ctx;
  t->kernels++;
  t->sum += strlen(k->name);
  CHECK(k->nparams == 0 || k->params);
  for (uint32_t i = 0; i < k->nparams; i++) t->sum += k->params[i].offset + k->params[i].size;
  return 0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { /* xorshift64*: fixed seed, same flips on every run */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1Dull;
}

typedef int (*walk_fn)(const void *, size_t, ag_kernel_cb, void *, ag_image_err_t *);
static walk_fn walker = ag__image_kernels;

/* Parses p[0, n) from an exact-size copy with `walker`. Returns the parser's status. */
static int parse_exact(const uint8_t *p, size_t n, tally_t *t) {
  uint8_t *copy = malloc(n ? n : 1);
  CHECK(copy);
  memcpy(copy, p, n);
  ag_image_err_t err = {.offset = (size_t)-1};
  int rc = walker(copy, n, on_kernel, t, &err);
  if (rc < 0) {
    CHECK(err.msg[0]);
    CHECK(err.offset != (size_t)-1);
  }
  (void)ag__image_size(copy, n);
  free(copy);
  return rc;
}

static void prefixes(const char *rel, size_t stride) {
  size_t n;
  uint8_t *p = check_read_build(rel, &n);
  tally_t t = {0};
  int counts[16] = {0};
  CHECK_INT(parse_exact(p, n, &t), ==, 0);
  CHECK(t.kernels >= 2);
  for (size_t len = 1; len < n; len += stride) {
    int rc = parse_exact(p, len, &t);
    if (rc != -AG_ETRUNC)
      CHECK_FAIL_("%s: prefix of %zu of %zu bytes: %d, not -AG_ETRUNC", rel, len, n, rc);
    counts[-rc < 16 ? -rc : 15]++;
  }
  int total = (int)((n - 2) / stride + 1);
  printf("%s: %d prefixes refused (ETRUNC %d, ECORRUPT %d, other %d)\n", rel, total,
         counts[AG_ETRUNC], counts[AG_ECORRUPT], total - counts[AG_ETRUNC] - counts[AG_ECORRUPT]);
  free(p);
}

static void flips(const char *rel, int rounds) {
  size_t n;
  uint8_t *p = check_read_build(rel, &n);
  uint8_t *q = malloc(n);
  CHECK(q);
  int ok = 0, bad = 0;
  for (int r = 0; r < rounds; r++) {
    memcpy(q, p, n);
    int nflips = 1 + (int)(next() % 4);
    for (int i = 0; i < nflips; i++) {
      /* Favour the headers, which decide the most: ELF and fatbin headers lead, section
       * header tables usually end an ELF file. */
      size_t where = next() % 3, at = next();
      at = where == 0 ? at % (n < 256 ? n : 256)
         : where == 1 ? n - 1 - at % (n < 2048 ? n : 2048) : at % n;
      q[at] ^= (uint8_t)(1u << (next() % 8));
    }
    tally_t t = {0};
    int rc = parse_exact(q, n, &t);
    rc < 0 ? bad++ : ok++;
  }
  printf("%s: %d flipped images, %d accepted, %d refused\n", rel, rounds, ok, bad);
  free(q);
  free(p);
}

int main(void) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  prefixes("tests/kernels/elf-tiny.cubin", 1);
  prefixes("tests/kernels/elf-tiny.fatbin", 1);
  prefixes("tests/kernels/elf-tiny.z.fatbin", 1);
  flips("tests/kernels/elf-tiny.cubin", 20000);
  flips("tests/kernels/elf-tiny.fatbin", 20000);
  flips("tests/kernels/elf-tiny.z.fatbin", 20000);
  flips("tests/kernels/elf-kernels.cubin", 1000);
  flips("tests/kernels/elf-kernels.z.fatbin", 1000);
  walker = ag__elf_fatbins;
  prefixes("tests/unit/elf-hostprog", 61);
  flips("tests/unit/elf-hostprog", 2000);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.2f s\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
  return 0;
}
