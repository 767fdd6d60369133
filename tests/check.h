/* check.h — assertions for tests, usable from C and CUDA C.
 *
 * Every check prints what it compared (both values) with file and line, and is never compiled
 * out. A failed check exits the test process with status 1; the runner (tests/run-tests) shows
 * the output. CHECK_CUDA / CHECK_CU / CHECK_DNN check a runtime, driver or cuDNN status.
 */
#ifndef AG_TESTS_CHECK_H
#define AG_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_FAIL_(...)                                                                  \
  do {                                                                                    \
    fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__);                         \
    fprintf(stderr, __VA_ARGS__);                                                          \
    fputc('\n', stderr);                                                                   \
    exit(1);                                                                               \
  } while (0)

#define CHECK(expr)                                                                       \
  do {                                                                                    \
    if (!(expr)) CHECK_FAIL_("%s", #expr);                                                \
  } while (0)

/* Integer comparison: CHECK_INT(a, ==, b). */
#define CHECK_INT(a, op, b)                                                               \
  do {                                                                                    \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                        \
    if (!(check_a_ op check_b_))                                                          \
      CHECK_FAIL_("%s %s %s (%lld %s %lld)", #a, #op, #b, check_a_, #op, check_b_);       \
  } while (0)

#define CHECK_PTR(a, op, b)                                                               \
  do {                                                                                    \
    const void *check_a_ = (const void *)(a), *check_b_ = (const void *)(b);              \
    if (!(check_a_ op check_b_))                                                          \
      CHECK_FAIL_("%s %s %s (%p %s %p)", #a, #op, #b, check_a_, #op, check_b_);           \
  } while (0)

#define CHECK_STR(a, b)                                                                   \
  do {                                                                                    \
    const char *check_a_ = (a), *check_b_ = (b);                                          \
    if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0)                        \
      CHECK_FAIL_("%s == %s (\"%s\" vs \"%s\")", #a, #b, check_a_ ? check_a_ : "(null)",   \
                  check_b_ ? check_b_ : "(null)");                                        \
  } while (0)

/* Status checks; the expected value comes first for the _EQ forms. */
#define CHECK_CUDA(call) CHECK_STATUS_EQ_(0, (int)(call), #call)
#define CHECK_CU(call) CHECK_STATUS_EQ_(0, (int)(call), #call)
#define CHECK_DNN(call) CHECK_STATUS_EQ_(0, (int)(call), #call)
#define CHECK_STATUS_EQ(want, call) CHECK_STATUS_EQ_((int)(want), (int)(call), #call)
#define CHECK_STATUS_EQ_(want, got, text)                                                 \
  do {                                                                                    \
    int check_w_ = (want), check_g_ = (got);                                              \
    if (check_w_ != check_g_)                                                             \
      CHECK_FAIL_("%s returned %d, expected %d", text, check_g_, check_w_);                \
  } while (0)

/* Reads the whole file `path` into a malloc'd buffer (the caller frees it); fails the test when
 * it cannot be read or holds fewer than `min` bytes. */
static inline unsigned char *check_read_file(const char *path, size_t min, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  CHECK(n >= 0 && (size_t)n >= min);
  rewind(f);
  unsigned char *buf = (unsigned char *)malloc(n ? (size_t)n : 1);
  CHECK(buf);
  CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* check_read_file of `rel` under the build folder ($BUILD, default "build"). */
static inline unsigned char *check_read_build(const char *rel, size_t *len) {
  const char *build = getenv("BUILD");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", build ? build : "build", rel);
  return check_read_file(path, 1, len);
}

#endif
