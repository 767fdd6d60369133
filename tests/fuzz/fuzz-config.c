/* fuzz-config.c — fuzz target for the environment options (src/config.c): ag__config_parse,
 * through a stub environment, and ag__config_denied, the AUTOGRAPH_DENY pattern matcher.
 *
 * Input format (so that a seed is readable text): lines `NAME=value`; a line without `=` is the
 * kernel name matched against the parsed deny list. Each option name may be given more than
 * once (the last wins). After parsing, the configuration must satisfy its documented
 * invariants whatever the input: every integer in range, strings NUL-terminated.
 */
#include <string.h>

#include "config.h"
#include "fuzz.h"

enum { MAX_VARS = 32 };

static struct {
  char *name[MAX_VARS], *value[MAX_VARS];
  int n;
} env;

static const char *stub_getenv(const char *name) {
  const char *v = NULL;
  for (int i = 0; i < env.n; i++)
    if (strcmp(env.name[i], name) == 0) v = env.value[i];
  return v;
}

static void count_warning(const char *msg) { FUZZ_ASSERT(msg != NULL && strlen(msg) < 65536); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1), *kernel = NULL;
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  env.n = 0;
  for (char *line = text, *next; line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    char *eq = strchr(line, '=');
    if (!eq) {
      if (!kernel) kernel = line;
      continue;
    }
    *eq = '\0';
    if (env.n < MAX_VARS) {
      env.name[env.n] = line;
      env.value[env.n] = eq + 1;
      env.n++;
    }
  }
  ag_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  int bad = ag__config_parse(&cfg, stub_getenv, count_warning);
  FUZZ_ASSERT(bad >= 0 && bad <= AG_OPT_COUNT_);
  FUZZ_ASSERT(cfg.log_level >= AG_LOG_ERROR && cfg.log_level <= AG_LOG_DEBUG);
  FUZZ_ASSERT(cfg.repeats >= 1);
  FUZZ_ASSERT(cfg.min_seq >= 1 && cfg.min_seq <= cfg.max_seq && cfg.max_seq <= AG_MAX_SEQ_LIMIT);
  FUZZ_ASSERT(cfg.max_graphs >= 1 && cfg.max_graph_mb >= 1);
  FUZZ_ASSERT(memchr(cfg.stats_path, '\0', sizeof cfg.stats_path) != NULL);
  FUZZ_ASSERT(memchr(cfg.deny, '\0', sizeof cfg.deny) != NULL);
  int d = ag__config_denied(cfg.deny, kernel ? kernel : "k");
  FUZZ_ASSERT(d == 0 || d == 1);
  /* The parser must be idempotent: a second pass over the same environment agrees. */
  ag_config_t again;
  memset(&again, 0, sizeof again);
  FUZZ_ASSERT(ag__config_parse(&again, stub_getenv, NULL) == bad);
  FUZZ_ASSERT(memcmp(&cfg, &again, sizeof cfg) == 0);
  free(text);
  return 0;
}
