/* simcommon.c — fault injection and modelled costs for the simulated libraries.
 * See simcommon.h for the environment variables it reads. Parsing happens once, under
 * pthread_once; a malformed entry is reported once on stderr and ignored.
 */
#include "simcommon.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIMC_MAX_RULES 64

typedef struct simc_rule {
  char api[96];
  unsigned long nth;   /* 1-based call number that fails */
  int and_later;       /* "+": every call from nth on fails */
  int background;      /* "@bg": only calls from threads other than the process's main thread
                          count (in a single-threaded program: the preloaded library's own) */
  atomic_ulong calls;  /* calls of this api seen so far */
} simc_rule_t;

static simc_rule_t rules[SIMC_MAX_RULES];
static int nrules;
static uint64_t costs[SIMC_NCOSTS];

/* One rule of SIM_KERNEL_NS; a plain number is one rule whose pattern is NULL (every kernel). */
typedef struct simc_krule {
  char *pattern;
  uint64_t ns, per_block_ns;
} simc_krule_t;

static simc_krule_t *krules;
static int nkrules;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static uint64_t parse_ns(const char *var) {
  const char *s = getenv(var);
  if (!s || !*s) return 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0') {
    fprintf(stderr, "sim: ignoring malformed %s=%s\n", var, s);
    return 0;
  }
  return v;
}

static void parse_fail(void) {
  const char *s = getenv("SIM_FAIL");
  if (!s) return;
  char *copy = strdup(s), *save = NULL;
  if (!copy) return;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strrchr(tok, ':');
    char *end = NULL;
    unsigned long n = colon ? strtoul(colon + 1, &end, 10) : 0;
    if (!colon || colon == tok || n == 0 || end == colon + 1 ||
        (*end != '\0' && strcmp(end, "+") != 0) || (size_t)(colon - tok) >= sizeof rules[0].api ||
        nrules == SIMC_MAX_RULES) {
      fprintf(stderr, "sim: ignoring malformed SIM_FAIL entry '%s'\n", tok);
      continue;
    }
    simc_rule_t *r = &rules[nrules++];
    memcpy(r->api, tok, (size_t)(colon - tok));
    r->api[colon - tok] = '\0';
    char *at = strchr(r->api, '@');
    if (at && strcmp(at, "@bg") == 0) {
      *at = '\0';
      r->background = 1;
    } else if (at) {
      fprintf(stderr, "sim: ignoring malformed SIM_FAIL entry '%s' (the only qualifier is @bg)\n",
              tok);
      nrules--;
      continue;
    }
    r->nth = n;
    r->and_later = *end == '+';
  }
  free(copy);
}

/* Parses an unsigned decimal number filling [s, end) exactly; 0 on success. */
static int parse_u64(const char *s, const char *end, uint64_t *out) {
  if (s == end) return -1;
  uint64_t v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return -1;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  *out = v;
  return 0;
}

/* SIM_KERNEL_NS: one number, or `pattern:ns[+per_block_ns]` rules separated by commas. Any
 * malformed rule discards the whole variable (one warning), so that a typo is never half
 * applied. */
static void parse_kernel_ns(void) {
  const char *s = getenv("SIM_KERNEL_NS");
  if (!s || !*s) return;
  uint64_t all;
  if (parse_u64(s, s + strlen(s), &all) == 0) {
    krules = calloc(1, sizeof *krules);
    if (!krules) return;
    krules[0].ns = all;
    nkrules = 1;
    return;
  }
  int n = 1;
  for (const char *p = s; *p; p++) n += *p == ',';
  simc_krule_t *r = calloc((size_t)n, sizeof *r);
  if (!r) return;
  int k = 0;
  const char *bad = NULL;
  for (const char *tok = s; !bad && k < n; k++) {
    const char *end = strchr(tok, ',');
    if (!end) end = tok + strlen(tok);
    const char *colon = NULL;
    for (const char *p = tok; p < end; p++)
      if (*p == ':') colon = p; /* the last colon: a pattern may contain one in brackets */
    const char *plus = colon ? memchr(colon, '+', (size_t)(end - colon)) : NULL;
    if (!colon || colon == tok ||
        parse_u64(colon + 1, plus ? plus : end, &r[k].ns) ||
        (plus && parse_u64(plus + 1, end, &r[k].per_block_ns)) ||
        !(r[k].pattern = strndup(tok, (size_t)(colon - tok)))) {
      bad = tok;
      break;
    }
    tok = *end ? end + 1 : end;
  }
  if (bad) {
    fprintf(stderr, "sim: ignoring malformed SIM_KERNEL_NS=%s (expected a number, or "
            "pattern:ns or pattern:ns+per_block_ns rules separated by commas)\n", s);
    for (int i = 0; i < n; i++) free(r[i].pattern);
    free(r);
    return;
  }
  krules = r;
  nkrules = n;
}

static void init(void) {
  parse_fail();
  costs[SIMC_LAUNCH_NS] = parse_ns("SIM_LAUNCH_NS");
  costs[SIMC_GRAPH_LAUNCH_NS] = parse_ns("SIM_GRAPH_LAUNCH_NS");
  costs[SIMC_GRAPH_NODE_NS] = parse_ns("SIM_GRAPH_NODE_NS");
  costs[SIMC_NODE_UPDATE_NS] = parse_ns("SIM_NODE_UPDATE_NS");
}

/* The modelled device times are read on first use, which only the driver makes: the runtime
 * and cuDNN link their own copy of this file, and must not warn about them a second time. */
static pthread_once_t device_once = PTHREAD_ONCE_INIT;

static void init_device(void) {
  costs[SIMC_LAUNCH_LATENCY_NS] = parse_ns("SIM_LAUNCH_LATENCY_NS");
  costs[SIMC_MEMOP_NS] = parse_ns("SIM_MEMOP_NS");
  costs[SIMC_GRAPH_NODE_GAP_NS] = parse_ns("SIM_GRAPH_NODE_GAP_NS");
  parse_kernel_ns();
}

/* SIM_FAIL_LOG: one line `<api> <n>` appended for each call that an injected fault made fail,
 * so that a test can tell a fault that fired from one its run never reached (a program whose
 * number of calls depends on timing). One write(2) per line on an O_APPEND descriptor: lines of
 * several threads and of the three libraries' copies of this file never interleave. */
static void log_fired(const char *api, unsigned long n) {
  const char *path = getenv("SIM_FAIL_LOG");
  if (!path || !*path) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[128];
  int len = snprintf(line, sizeof line, "%s %lu\n", api, n);
  if (len > 0 && (size_t)len < sizeof line && write(fd, line, (size_t)len) != len)
    fprintf(stderr, "sim: could not write SIM_FAIL_LOG %s\n", path);
  close(fd);
}

int simc_should_fail(const char *api) {
  pthread_once(&once, init);
  int fail = 0, main_thread = -1;
  for (int i = 0; i < nrules; i++) {
    simc_rule_t *r = &rules[i];
    if (strcmp(r->api, api) != 0) continue;
    if (r->background) {
      if (main_thread < 0) main_thread = syscall(SYS_gettid) == getpid();
      if (main_thread) continue;
    }
    unsigned long n = atomic_fetch_add(&r->calls, 1) + 1;
    if (n == r->nth || (r->and_later && n > r->nth)) {
      fail = 1;
      log_fired(api, n);
    }
  }
  return fail;
}

uint64_t simc_cost(enum simc_cost which) {
  if (which >= SIMC_LAUNCH_LATENCY_NS) pthread_once(&device_once, init_device);
  else pthread_once(&once, init);
  return costs[which];
}

uint64_t simc_kernel_ns(const char *name, uint64_t blocks) {
  pthread_once(&device_once, init_device);
  for (int i = 0; i < nkrules; i++) {
    const simc_krule_t *r = &krules[i];
    if (!r->pattern || fnmatch(r->pattern, name ? name : "", 0) == 0)
      return r->ns + r->per_block_ns * blocks;
  }
  return 0;
}

void simc_spin_ns(uint64_t ns) {
  if (ns == 0) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t.tv_nsec - t0.tv_nsec) < ns);
}
