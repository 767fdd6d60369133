/* drv-getproc-facts.c — the simulated driver's getter against what NVIDIA's runtimes ask it.
 *
 * tests/sim/facts/cudart{12,13}_cuGetProcAddress_requests.txt are every cuGetProcAddress request
 * of the real libcudart.so.12 (12.9) and libcudart.so.13 (13.0), in order, recorded with
 * tests/sim/facts/record-requests. Checked here:
 *   - every request gets a well-formed answer: a function whose exported name is the requested
 *     one or a versioned flavour of it (_v2, _ptsz, …; the per-thread flavour only for flags 2),
 *     or CUDA_ERROR_NOT_FOUND with no function and a "not found" status; never anything else;
 *   - every (name, version, flags) the simulated runtime asks for (RT_DRIVER_FUNCS, the table of
 *     both libcudart.so.12 and libcudart.so.13) is a question the real runtime of each version
 *     asks, and the driver answers it.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>

#include "drv-common.h"

#include "runtime/rt.h"

typedef struct {
  char sym[128];
  int ver;
  unsigned long long flags;
} req_t;

static int load(const char *file, req_t **out) {
  const char *root = getenv("AG_ROOT");
  char path[4096], line[512];
  snprintf(path, sizeof path, "%s/tests/sim/facts/%s", root ? root : ".", file);
  FILE *f = fopen(path, "r");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  int n = 0, cap = 0;
  req_t *r = NULL;
  while (fgets(line, sizeof line, f)) {
    if (n == cap) {
      cap = cap ? 2 * cap : 512;
      r = realloc(r, (size_t)cap * sizeof *r);
      CHECK(r != NULL);
    }
    char *comma = strstr(line, ", ver=");
    CHECK(comma != NULL && (size_t)(comma - line) < sizeof r[n].sym);
    memcpy(r[n].sym, line, (size_t)(comma - line));
    r[n].sym[comma - line] = 0;
    CHECK(sscanf(comma, ", ver=%d, flags=%llu", &r[n].ver, &r[n].flags) == 2);
    n++;
  }
  fclose(f);
  *out = r;
  return n;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* Checks the driver's answer to one request; returns 1 when it found a function. */
static int check_answer(const req_t *q) {
  void *fn = (void *)1;
  CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
  CUresult r = cuGetProcAddress_v2(q->sym, &fn, q->ver, q->flags, &st);
  if (r == CUDA_ERROR_NOT_FOUND) {
    CHECK_PTR(fn, ==, NULL);
    CHECK(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ||
          st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    return 0;
  }
  if (r != CUDA_SUCCESS) CHECK_FAIL_("%s ver=%d flags=%llu: error %d", q->sym, q->ver, q->flags, r);
  CHECK_INT(st, ==, CU_GET_PROC_ADDRESS_SUCCESS);
  Dl_info info;
  CHECK(fn != NULL && dladdr(fn, &info) && info.dli_sname);
  const char *name = info.dli_sname;
  if (strncmp(name, q->sym, strlen(q->sym)) != 0)
    CHECK_FAIL_("%s ver=%d: answered with %s", q->sym, q->ver, name);
  const char *rest = name + strlen(q->sym);
  if (*rest && strncmp(rest, "_v", 2) && strcmp(rest, "_ptsz") && strcmp(rest, "_ptds"))
    CHECK_FAIL_("%s ver=%d: answered with %s", q->sym, q->ver, name);
  if (q->flags == 0 && (ends_with(name, "_ptsz") || ends_with(name, "_ptds")))
    CHECK_FAIL_("%s ver=%d flags=0: per-thread %s", q->sym, q->ver, name);
  return 1;
}

static int asked(const req_t *r, int n, const char *sym, int ver, unsigned long long flags) {
  for (int i = 0; i < n; i++)
    if (r[i].ver == ver && r[i].flags == flags && !strcmp(r[i].sym, sym)) return 1;
  return 0;
}

int main(void) {
  static const char *const files[2] = {"cudart12_cuGetProcAddress_requests.txt",
                                       "cudart13_cuGetProcAddress_requests.txt"};
  req_t *reqs[2];
  int nreq[2];
  CHECK_CU(cuInit(0));
  for (int v = 0; v < 2; v++) {
    nreq[v] = load(files[v], &reqs[v]);
    CHECK_INT(nreq[v], >, 400); /* the whole table, not a run cut short */
    int found = 0;
    for (int i = 0; i < nreq[v]; i++) found += check_answer(&reqs[v][i]);
    printf("%s: %d requests, %d answered with a function, %d not found\n", files[v], nreq[v],
           found, nreq[v] - found);
  }
  int n = 0;
#define ASKED(name, ver, ptver)                                                             \
  for (int v = 0; v < 2; v++) {                                                             \
    req_t q0 = {#name, ver, 0}, q2 = {#name, ptver, 2};                                     \
    if (!asked(reqs[v], nreq[v], #name, ver, 0))                                            \
      CHECK_FAIL_("%s at %d: not asked by the real runtime (%s)", #name, ver, files[v]);    \
    CHECK(check_answer(&q0));                                                               \
    if (ptver) {                                                                            \
      if (!asked(reqs[v], nreq[v], #name, ptver, 2))                                        \
        CHECK_FAIL_("%s at %d, per-thread: not asked (%s)", #name, ptver, files[v]);        \
      CHECK(check_answer(&q2));                                                             \
    }                                                                                       \
  }                                                                                         \
  n++;
  RT_DRIVER_FUNCS(ASKED)
#undef ASKED
  printf("the simulated runtime's %d driver functions: asked by both real runtimes, answered\n", n);
  free(reqs[0]);
  free(reqs[1]);
  printf("drv-getproc-facts: ok\n");
  return 0;
}
