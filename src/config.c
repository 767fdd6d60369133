/* config.c — the options table and its parser (see config.h).
 *
 * Every option is described once in `options`; parsing never fails: a value that does not
 * parse keeps the default and yields one warning that names the variable, the value and the
 * default, so a typo is visible but never changes the program's behaviour.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

ag_config_t ag__config = {.log_level = AG_LOG_WARN};

typedef struct ag_option_desc {
  const char *name;
  const char *def;   /* default, as text */
} ag_option_desc_t;

static const ag_option_desc_t options[AG_OPT_COUNT_] = {
    [AG_OPT_DISABLE] = {"AUTOGRAPH_DISABLE", "0"},
    [AG_OPT_LOG] = {"AUTOGRAPH_LOG", "warn"},
    [AG_OPT_STATS] = {"AUTOGRAPH_STATS", ""},
};

static void bad(void (*warn)(const char *), ag_option_t o, const char *value, const char *want) {
  char msg[256];
  if (!warn) return;
  snprintf(msg, sizeof msg, "%s=\"%.64s\" is not valid (%s); using the default \"%s\"",
           options[o].name, value, want, options[o].def);
  warn(msg);
}

int ag__config_parse(ag_config_t *cfg, const char *(*getenv_fn)(const char *name),
                     void (*warn)(const char *msg)) {
  const char *v;
  int nbad = 0;

  memset(cfg, 0, sizeof *cfg);
  cfg->log_level = AG_LOG_WARN;

  v = getenv_fn(options[AG_OPT_DISABLE].name);
  if (v && *v) {
    if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true"))
      cfg->disable = 1;
    else if (strcmp(v, "0") && strcmp(v, "no") && strcmp(v, "false"))
      bad(warn, AG_OPT_DISABLE, v, "expected 0 or 1"), nbad++;
  }

  v = getenv_fn(options[AG_OPT_LOG].name);
  if (v && *v) {
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    int found = -1;
    for (size_t i = 0; i < AG_ARRAY_SIZE(levels); i++)
      if (!strcmp(v, levels[i])) found = (int)i;
    if (found >= 0)
      cfg->log_level = found;
    else
      bad(warn, AG_OPT_LOG, v, "expected error, warn, info or debug"), nbad++;
  }

  v = getenv_fn(options[AG_OPT_STATS].name);
  if (v && *v) {
    if (!strcmp(v, "1"))
      cfg->stats_summary = 1;
    else if (!strcmp(v, "0"))
      ; /* explicitly off */
    else if (strlen(v) >= sizeof cfg->stats_path)
      bad(warn, AG_OPT_STATS, v, "path too long"), nbad++;
    else
      strcpy(cfg->stats_path, v);
  }
  return nbad;
}

static const char *env(const char *name) { return getenv(name); }

static void warn_env(const char *msg) { ag__log(AG_LOG_WARN, "%s", msg); }

void ag__config_load(void) {
  /* The level must be known before the warnings are emitted, so parse twice: the first pass
   * only learns the level, the second reports problems at that level. */
  ag__config_parse(&ag__config, env, NULL);
  if (ag__config.disable) return; /* a disabled library says nothing at all */
  ag__config_parse(&ag__config, env, warn_env);
}
