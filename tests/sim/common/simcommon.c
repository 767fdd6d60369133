/* simcommon.c — fault injection and modelled costs for the simulated libraries.
 * See simcommon.h for the environment variables it reads. Parsing happens once, under
 * pthread_once; a malformed entry is reported once on stderr and ignored.
 */
#include "simcommon.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIMC_MAX_RULES 64

typedef struct simc_rule {
  char api[96];
  unsigned long nth;   /* 1-based call number that fails */
  int and_later;       /* "+": every call from nth on fails */
  atomic_ulong calls;  /* calls of this api seen so far */
} simc_rule_t;

static simc_rule_t rules[SIMC_MAX_RULES];
static int nrules;
static uint64_t costs[4];
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
    r->nth = n;
    r->and_later = *end == '+';
  }
  free(copy);
}

static void init(void) {
  parse_fail();
  costs[SIMC_LAUNCH_NS] = parse_ns("SIM_LAUNCH_NS");
  costs[SIMC_GRAPH_LAUNCH_NS] = parse_ns("SIM_GRAPH_LAUNCH_NS");
  costs[SIMC_GRAPH_NODE_NS] = parse_ns("SIM_GRAPH_NODE_NS");
  costs[SIMC_NODE_UPDATE_NS] = parse_ns("SIM_NODE_UPDATE_NS");
}

int simc_should_fail(const char *api) {
  pthread_once(&once, init);
  int fail = 0;
  for (int i = 0; i < nrules; i++) {
    simc_rule_t *r = &rules[i];
    if (strcmp(r->api, api) != 0) continue;
    unsigned long n = atomic_fetch_add(&r->calls, 1) + 1;
    if (n == r->nth || (r->and_later && n > r->nth)) fail = 1;
  }
  return fail;
}

uint64_t simc_cost(enum simc_cost which) {
  pthread_once(&once, init);
  return costs[which];
}

void simc_spin_ns(uint64_t ns) {
  if (ns == 0) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t.tv_nsec - t0.tv_nsec) < ns);
}
