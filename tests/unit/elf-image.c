/* elf-image.c — the fatbin/cubin parser (src/elf.c) against real nvcc output.
 *
 * Reads $BUILD/tests/kernels/elf-kernels.{cubin,fatbin,z.fatbin,lz4.fatbin} and the host
 * executable $BUILD/tests/unit/elf-hostprog, and checks every kernel's parameter layout against
 * the layout the C compiler gives the same parameter types (tests/kernels/elf-kernels.cu,
 * included here for its types): a kernel's parameter block is laid out like a struct of its
 * parameters, and its size ends at the last parameter (no tail padding). Also: wrappers, size 0
 * (extent from the headers), back-to-back containers, ag__image_size, the callback's stop value,
 * zstd and LZ4 entries and broken ones, inputs that are no image, a host ELF without device
 * code, read-only images (the parser never writes) and concurrent walks.
 */
#include "elf.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define ELF_KERNELS_TYPES_ONLY
#include "../kernels/elf-kernels.cu"

/* ---- expected layouts, from the C types ----------------------------------------------------- */

struct mixed_args { char a; double b; short c; int *p; char d; int e; double f; unsigned char g; };
struct structs_args { struct elf_small s; char c; struct elf_mid m; struct elf_odd o; int n; };
struct big_args { struct elf_big b; int *out; };
struct big_mid_args { char a; struct elf_big b; short c; double *out; };
struct huge_args { struct elf_huge h; int tail; };
struct cpp_args { float *x; int n; float a; };
struct tmpl_f_args { float *x; float v; char flag; };
struct tmpl_d_args { double *x; double v; char flag; };
struct tmpl_c_args { char *x; char v; char flag; };

typedef struct want {
  const char *name;
  uint32_t nparams;
  uint32_t bytes;
  ag_kparam_t p[8];
} want_t;

#define F(S, m) {offsetof(struct S, m), sizeof(((struct S *)0)->m)}
#define END(S, m) (offsetof(struct S, m) + sizeof(((struct S *)0)->m))

static const want_t wants[] = {
    {"elf_none", 0, 0, {{0, 0}}},
    {"elf_mixed", 8, END(mixed_args, g),
     {F(mixed_args, a), F(mixed_args, b), F(mixed_args, c), F(mixed_args, p), F(mixed_args, d),
      F(mixed_args, e), F(mixed_args, f), F(mixed_args, g)}},
    {"elf_structs", 5, END(structs_args, n),
     {F(structs_args, s), F(structs_args, c), F(structs_args, m), F(structs_args, o),
      F(structs_args, n)}},
    {"elf_big", 2, END(big_args, out), {F(big_args, b), F(big_args, out)}},
    {"elf_big_mid", 4, END(big_mid_args, out),
     {F(big_mid_args, a), F(big_mid_args, b), F(big_mid_args, c), F(big_mid_args, out)}},
    {"elf_huge", 2, END(huge_args, tail), {F(huge_args, h), F(huge_args, tail)}},
    {"_Z7elf_cppPfif", 3, END(cpp_args, a), {F(cpp_args, x), F(cpp_args, n), F(cpp_args, a)}},
    {"_Z8elf_tmplIfLi4EEvPT_S0_c", 3, END(tmpl_f_args, flag),
     {F(tmpl_f_args, x), F(tmpl_f_args, v), F(tmpl_f_args, flag)}},
    {"_Z8elf_tmplIdLi8EEvPT_S0_c", 3, END(tmpl_d_args, flag),
     {F(tmpl_d_args, x), F(tmpl_d_args, v), F(tmpl_d_args, flag)}},
    {"_Z8elf_tmplIcLi2EEvPT_S0_c", 3, END(tmpl_c_args, flag),
     {F(tmpl_c_args, x), F(tmpl_c_args, v), F(tmpl_c_args, flag)}},
};
#define NWANT AG_ARRAY_SIZE(wants)

/* ---- collecting kernels --------------------------------------------------------------------- */

typedef struct seen {
  int arch[4];        /* the archs expected, 0-terminated */
  int count[NWANT][4]; /* kernel × arch → times seen */
  int total;
  int stop_after;     /* when nonzero, return 7 from the stop_after-th call */
} seen_t;

static int on_kernel(const ag_kernel_desc_t *k, void *ctx) {
  seen_t *s = ctx;
  s->total++;
  if (s->stop_after && s->total == s->stop_after) return 7;
  size_t w = 0;
  while (w < NWANT && strcmp(wants[w].name, k->name) != 0) w++;
  if (w == NWANT) CHECK_FAIL_("unexpected kernel %s", k->name);
  int a = 0;
  while (s->arch[a] && s->arch[a] != k->arch) a++;
  if (!s->arch[a]) CHECK_FAIL_("kernel %s: unexpected arch %d", k->name, k->arch);
  s->count[w][a]++;
  const want_t *x = &wants[w];
  if (k->nparams != x->nparams || k->param_bytes != x->bytes)
    CHECK_FAIL_("kernel %s sm_%d: %u params in %u bytes, expected %u in %u", k->name, k->arch,
                k->nparams, k->param_bytes, x->nparams, x->bytes);
  for (uint32_t i = 0; i < x->nparams; i++)
    if (k->params[i].offset != x->p[i].offset || k->params[i].size != x->p[i].size)
      CHECK_FAIL_("kernel %s sm_%d param %u: %u+%u, expected %u+%u", k->name, k->arch, i,
                  k->params[i].offset, k->params[i].size, x->p[i].offset, x->p[i].size);
  return 0;
}

/* Every expected kernel was seen `times` times for each expected arch. */
static void check_all_seen(const seen_t *s, int times) {
  for (size_t w = 0; w < NWANT; w++)
    for (int a = 0; s->arch[a]; a++)
      if (s->count[w][a] != times)
        CHECK_FAIL_("kernel %s sm_%d seen %d times, expected %d", wants[w].name, s->arch[a],
                    s->count[w][a], times);
}

static seen_t walk(const void *p, size_t n, int arch1, int arch2, int *rc) {
  seen_t s = {.arch = {arch1, arch2, 0}};
  ag_image_err_t err = {0};
  *rc = ag__image_kernels(p, n, on_kernel, &s, &err);
  if (*rc < 0) printf("  error %d at 0x%zx: %s\n", *rc, err.offset, err.msg);
  return s;
}

/* ---- files ---------------------------------------------------------------------------------- */

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_cubin(void) {
  size_t n;
  uint8_t *p = check_read_build("tests/kernels/elf-kernels.cubin", &n);
  int rc;
  seen_t s = walk(p, n, 80, 0, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  CHECK_INT(ag__image_size(p, n), ==, n);
  CHECK_INT(ag__image_size(p, 0), ==, n);
  CHECK_INT(ag__image_size(p, n - 1), ==, 0);
  s = walk(p, 0, 80, 0, &rc); /* extent from the headers */
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  free(p);
  printf("cubin: ok\n");
}

static void test_fatbin(const char *rel) {
  size_t n;
  uint8_t *p = check_read_build(rel, &n);
  int rc;
  seen_t s = walk(p, n, 75, 80, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  CHECK_INT(ag__image_size(p, n), ==, n);
  CHECK_INT(ag__image_size(p, 0), ==, n);
  s = walk(p, 0, 75, 80, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);

  /* The wrapper handed to __cudaRegisterFatBinary points at the container. */
  struct { uint32_t magic, version; const void *data; void *filename_or_fatbins; } wrap = {
      0x466243B1u, 1, p, NULL};
  s = walk(&wrap, sizeof(wrap), 75, 80, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  s = walk(&wrap, 0, 75, 80, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  CHECK_INT(ag__image_size(&wrap, 0), ==, n);
  wrap.version = 3;
  s = walk(&wrap, sizeof(wrap), 75, 80, &rc);
  CHECK_INT(rc, ==, -AG_EUNSUP);
  wrap.version = 2;
  wrap.data = NULL;
  s = walk(&wrap, sizeof(wrap), 75, 80, &rc);
  CHECK_INT(rc, ==, -AG_ECORRUPT);
  s = walk(&wrap, sizeof(wrap) - 1, 75, 80, &rc);
  CHECK_INT(rc, ==, -AG_ETRUNC);

  /* Two containers back to back with zero padding between them, as in a .nv_fatbin section;
   * with size 0 only the first is known to exist. */
  size_t pad = 8 + (8 - n % 8) % 8;
  uint8_t *two = calloc(1, 2 * n + pad);
  CHECK(two);
  memcpy(two, p, n);
  memcpy(two + n + pad, p, n);
  s = walk(two, 2 * n + pad, 75, 80, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 2);
  s = walk(two, 0, 75, 80, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  /* Garbage instead of padding is an error, not a silent stop. */
  two[n + 3] = 0x55;
  s = walk(two, 2 * n + pad, 75, 80, &rc);
  CHECK_INT(rc, ==, -AG_ECORRUPT);
  free(two);

  /* The callback's nonzero value stops the walk and is returned. */
  s = (seen_t){.arch = {75, 80, 0}, .stop_after = 3};
  rc = ag__image_kernels(p, n, on_kernel, &s, NULL);
  CHECK_INT(rc, ==, 7);
  CHECK_INT(s.total, ==, 3);
  free(p);
  printf("%s: ok\n", rel);
}

/* First cubin entry of a container: the offset of its header. */
static size_t first_cubin_entry(const uint8_t *p) {
  size_t e = 16;
  uint32_t hs;
  uint64_t size;
  while (p[e] != 2) {
    memcpy(&hs, p + e + 4, 4);
    memcpy(&size, p + e + 8, 8);
    e += hs + size;
  }
  return e;
}

/* The flags of the cubin entry at e. */
static uint64_t entry_flags(const uint8_t *p, size_t e) {
  uint64_t flags;
  memcpy(&flags, p + e + 40, 8);
  return flags;
}

static void test_compression_flags(void) {
  size_t n;
  uint8_t *p = check_read_build("tests/kernels/elf-kernels.z.fatbin", &n);
  size_t e = first_cubin_entry(p);
  uint64_t flags = entry_flags(p, e);
  CHECK(flags & 0x8000);
  /* A zstd payload flagged LZ4 is not an LZ4 block: an error at the entry, never a crash. */
  uint64_t lz4 = (flags & ~(uint64_t)0x8000) | 0x2000;
  memcpy(p + e + 40, &lz4, 8);
  ag_image_err_t err = {0};
  seen_t s = {.arch = {75, 80, 0}};
  int rc = ag__image_kernels(p, n, on_kernel, &s, &err);
  CHECK(rc == -AG_ECORRUPT || rc == -AG_ETRUNC);
  CHECK_INT(err.offset, ==, e);
  printf("zstd payload flagged LZ4: %s at 0x%zx\n", err.msg, err.offset);
  /* A wrong decompressed size is corruption. */
  memcpy(p + e + 40, &flags, 8);
  uint64_t dsz;
  memcpy(&dsz, p + e + 56, 8);
  dsz += 8;
  memcpy(p + e + 56, &dsz, 8);
  rc = ag__image_kernels(p, n, on_kernel, &s, &err);
  CHECK_INT(rc, ==, -AG_ECORRUPT);
  free(p);
}

/* LZ4 entries (nvcc -compress-mode=speed): the cubins really are LZ4 blocks, and a block that
 * promises more than it holds, or whose first match points before the output, is an error. */
static void test_lz4(void) {
  size_t n;
  uint8_t *p = check_read_build("tests/kernels/elf-kernels.lz4.fatbin", &n);
  size_t e = first_cubin_entry(p);
  uint64_t flags = entry_flags(p, e), dsz, size;
  CHECK(flags & 0x2000);
  CHECK(!(flags & 0x8000));
  memcpy(&dsz, p + e + 56, 8);
  memcpy(&size, p + e + 8, 8);
  CHECK(size < dsz); /* compressed */
  ag_image_err_t err = {0};
  seen_t s = {.arch = {75, 80, 0}};
  /* More output promised than the block makes: it ends early. */
  uint64_t more = dsz + 64;
  memcpy(p + e + 56, &more, 8);
  int rc = ag__image_kernels(p, n, on_kernel, &s, &err);
  CHECK(rc == -AG_ECORRUPT || rc == -AG_ETRUNC);
  CHECK_INT(err.offset, ==, e);
  printf("LZ4 block shorter than its size: %s\n", err.msg);
  memcpy(p + e + 56, &dsz, 8);
  /* The first sequence's match offset pointing before the start of the output. */
  uint32_t hs;
  memcpy(&hs, p + e + 4, 4);
  uint8_t *b = p + e + hs;
  size_t lit = b[0] >> 4, at = 1;
  CHECK(lit < 15); /* the ELF header's first literals, no length extension */
  at += lit;
  uint16_t off = (uint16_t)(lit + 1);
  memcpy(b + at, &off, 2);
  rc = ag__image_kernels(p, n, on_kernel, &s, &err);
  CHECK_INT(rc, ==, -AG_ECORRUPT);
  CHECK(strstr(err.msg, "offset") != NULL);
  printf("LZ4 match before the output: %s\n", err.msg);
  free(p);
  printf("lz4: ok\n");
}

static void test_not_images(void) {
  static const char text[] = "hello, not an image";
  ag_image_err_t err = {0};
  seen_t s = {0};
  CHECK_INT(ag__image_kernels(text, sizeof(text), on_kernel, &s, &err), ==, -AG_EINVAL);
  CHECK(err.msg[0]);
  CHECK_INT(ag__image_kernels(text, 3, on_kernel, &s, &err), ==, -AG_ETRUNC);
  CHECK_INT(ag__image_kernels(NULL, 8, on_kernel, &s, &err), ==, -AG_EINVAL);
  CHECK_INT(ag__image_size(text, sizeof(text)), ==, 0);
  CHECK_INT(s.total, ==, 0);
}

/* Maps a build output read-only: a registered fatbin lives in read-only memory. */
static const uint8_t *map_build(const char *rel, size_t *len) {
  const char *build = getenv("BUILD");
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", build ? build : "build", rel);
  int fd = open(path, O_RDONLY);
  if (fd < 0) CHECK_FAIL_("cannot open %s", path);
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  CHECK(p != MAP_FAILED);
  close(fd);
  *len = (size_t)st.st_size;
  return p;
}

/* The .nv_fatbin section of a host executable built by nvcc (default target: sm_75). */
static void test_host_elf(void) {
  size_t n;
  const uint8_t *m = map_build("tests/unit/elf-hostprog", &n);
  seen_t s = {.arch = {75, 0}};
  ag_image_err_t err = {0};
  int rc = ag__elf_fatbins(m, n, on_kernel, &s, &err);
  if (rc) printf("  error %d at 0x%zx: %s\n", rc, err.offset, err.msg);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  munmap((void *)m, n);

  /* This test's own executable has no device code. */
  uint8_t *p = check_read_file("/proc/self/exe", 1, &n);
  rc = ag__elf_fatbins(p, n, on_kernel, &s, &err);
  CHECK_INT(rc, ==, -AG_ENOENT);
  CHECK_INT(ag__elf_fatbins(p, 0, on_kernel, &s, &err), ==, -AG_EINVAL);
  free(p);
  printf("host ELF: ok\n");
}

/* Uncompressed cubins are parsed in place: a read-only mapping must do. */
static void test_read_only(void) {
  size_t n;
  const uint8_t *m = map_build("tests/kernels/elf-kernels.fatbin", &n);
  int rc;
  seen_t s = walk(m, n, 75, 80, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  munmap((void *)m, n);
  m = map_build("tests/kernels/elf-kernels.cubin", &n);
  s = walk(m, 0, 80, 0, &rc);
  CHECK_INT(rc, ==, 0);
  check_all_seen(&s, 1);
  munmap((void *)m, n);
  printf("read-only images: ok\n");
}

typedef struct job {
  const uint8_t *p;
  size_t n;
  int rc;
  seen_t s;
} job_t;

static void *walk_many(void *arg) {
  job_t *j = arg;
  for (int i = 0; i < 20 && !j->rc; i++) {
    j->s = (seen_t){.arch = {75, 80, 0}};
    j->rc = ag__image_kernels(j->p, j->n, on_kernel, &j->s, NULL);
  }
  return NULL;
}

/* Walks share nothing: several threads parse the same images at once. */
static void test_threads(void) {
  size_t n1, n2;
  uint8_t *a = check_read_build("tests/kernels/elf-kernels.z.fatbin", &n1);
  uint8_t *b = check_read_build("tests/kernels/elf-kernels.fatbin", &n2);
  job_t jobs[6];
  pthread_t th[6];
  for (int i = 0; i < 6; i++) {
    jobs[i] = (job_t){.p = i % 2 ? a : b, .n = i % 2 ? n1 : n2};
    CHECK_INT(pthread_create(&th[i], NULL, walk_many, &jobs[i]), ==, 0);
  }
  for (int i = 0; i < 6; i++) {
    CHECK_INT(pthread_join(th[i], NULL), ==, 0);
    CHECK_INT(jobs[i].rc, ==, 0);
    check_all_seen(&jobs[i].s, 1);
  }
  free(a);
  free(b);
  printf("threads: ok\n");
}

int main(void) {
  test_cubin();
  test_fatbin("tests/kernels/elf-kernels.fatbin");
  test_fatbin("tests/kernels/elf-kernels.z.fatbin");
  test_fatbin("tests/kernels/elf-kernels.lz4.fatbin");
  test_compression_flags();
  test_lz4();
  test_not_images();
  test_host_elf();
  test_read_only();
  test_threads();
  return 0;
}
