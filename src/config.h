/* config.h — the library's options, read once from the environment.
 *
 * One table of options {name, default, value}. ag__config_load() parses the environment once
 * (it is idempotent and cheap to call again); a malformed value produces one warning naming the
 * variable and the default is kept. The parser functions are exposed so tests can drive them
 * without touching the process environment.
 */
#ifndef AG_CONFIG_H
#define AG_CONFIG_H

#include "ag.h"

enum ag_log_level { AG_LOG_ERROR = 0, AG_LOG_WARN = 1, AG_LOG_INFO = 2, AG_LOG_DEBUG = 3 };

typedef enum ag_option {
  AG_OPT_DISABLE, /* AUTOGRAPH_DISABLE: 0/1 */
  AG_OPT_LOG,     /* AUTOGRAPH_LOG: error|warn|info|debug */
  AG_OPT_STATS,   /* AUTOGRAPH_STATS: unset, 1 (summary on stderr) or a path (JSON) */
  AG_OPT_COUNT_
} ag_option_t;

typedef struct ag_config {
  int disable;             /* nonzero: pure pass-through, no work, no output */
  int log_level;           /* enum ag_log_level */
  int stats_summary;       /* AUTOGRAPH_STATS=1 */
  char stats_path[4096];   /* AUTOGRAPH_STATS=<path>, else empty */
} ag_config_t;

/* The process-wide configuration; valid after ag__config_load(). */
extern ag_config_t ag__config;

/* Fills `cfg` from `getenv_fn` (getenv in the library; a stub in tests). Each malformed value
 * is reported once through `warn` (may be NULL) and replaced by its default. Returns the number
 * of malformed values. */
int ag__config_parse(ag_config_t *cfg, const char *(*getenv_fn)(const char *name),
                     void (*warn)(const char *msg));

/* Loads ag__config from the process environment, once. */
void ag__config_load(void);

#endif
