/* config.c — the options table and its parser (see config.h).
 *
 * Every option is described once in `options`; parsing never fails: a value that does not
 * parse keeps the default and yields one warning that names the variable, the value and the
 * default, so a typo is visible but never changes the program's behaviour.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

ag_config_t ag__config = {.log_level = AG_LOG_WARN, .repeats = 1, .min_seq = 2, .max_seq = 256,
                          .max_graphs = 512, .max_graph_mb = 2048,
                          .dump_max_seq = 1000, .trace_max_events = 1000000,
                          .hold_us = 1000, .chunk_us = 30, .nvtx = 1};

typedef struct ag_option_desc {
  const char *name;
  const char *def;   /* default, as text */
} ag_option_desc_t;

static const ag_option_desc_t options[AG_OPT_COUNT_] = {
    [AG_OPT_DISABLE] = {"AUTOGRAPH_DISABLE", "0"},
    [AG_OPT_LOG] = {"AUTOGRAPH_LOG", "warn"},
    [AG_OPT_STATS] = {"AUTOGRAPH_STATS", ""},
    [AG_OPT_REPEATS] = {"AUTOGRAPH_REPEATS", "1"},
    [AG_OPT_MIN_SEQ] = {"AUTOGRAPH_MIN_SEQ", "2"},
    [AG_OPT_MAX_SEQ] = {"AUTOGRAPH_MAX_SEQ", "256"},
    [AG_OPT_MAX_GRAPHS] = {"AUTOGRAPH_MAX_GRAPHS", "512"},
    [AG_OPT_MAX_GRAPH_MB] = {"AUTOGRAPH_MAX_GRAPH_MB", "2048"},
    [AG_OPT_DENY] = {"AUTOGRAPH_DENY", ""},
    [AG_OPT_DUMP] = {"AUTOGRAPH_DUMP", ""},
    [AG_OPT_DUMP_INTERVAL] = {"AUTOGRAPH_DUMP_INTERVAL", "0"},
    [AG_OPT_DUMP_MAX_SEQ] = {"AUTOGRAPH_DUMP_MAX_SEQ", "1000"},
    [AG_OPT_FUSE] = {"AUTOGRAPH_FUSE", "off"},
    [AG_OPT_TRACE] = {"AUTOGRAPH_TRACE", ""},
    [AG_OPT_TRACE_MAX_EVENTS] = {"AUTOGRAPH_TRACE_MAX_EVENTS", "1000000"},
    [AG_OPT_HOLD_US] = {"AUTOGRAPH_HOLD_US", "1000"},
    [AG_OPT_CHUNK_US] = {"AUTOGRAPH_CHUNK_US", "30"},
    [AG_OPT_NVTX] = {"AUTOGRAPH_NVTX", "1"},
    [AG_OPT_NVRTC] = {"AUTOGRAPH_NVRTC", ""},
    [AG_OPT_CACHE_DIR] = {"AUTOGRAPH_CACHE_DIR", "$XDG_CACHE_HOME/libautograph"},
};

static const char *const fuse_levels[] = {"off", "exact", "all"};

static void bad(void (*warn)(const char *), ag_option_t o, const char *value, const char *want) {
  char msg[256];
  if (!warn) return;
  snprintf(msg, sizeof msg, "%s=\"%.64s\" is not valid (%s); using the default \"%s\"",
           options[o].name, value, want, options[o].def);
  warn(msg);
}

/* ---- output paths ----------------------------------------------------------------------- */

const char *ag__config_path_ok(const char *tmpl) {
  /* strchr finds the terminator too: a lone % at the end is tested for first, so that the
   * loop never steps past the end of the string. */
  for (const char *c = tmpl; *c; c++)
    if (*c == '%' && (!*++c || !strchr("prh%", *c)))
      return *c ? "unknown placeholder (%p, %r, %h and %% are known)" : "a lone % at the end";
  return NULL;
}

int ag__config_path_names_process(const char *tmpl) {
  for (const char *c = tmpl; *c; c++) {
    if (*c != '%') continue;
    if (!*++c) break; /* a lone % at the end */
    if (*c == 'p' || *c == 'r') return 1;
  }
  return 0;
}

int ag__config_path(const char *tmpl, char *buf, size_t size) {
  size_t n = 0;
  for (const char *c = tmpl; *c; c++) {
    char v[256];
    const char *add = v;
    v[0] = *c, v[1] = 0;
    if (*c == '%' && c[1]) {
      switch (*++c) {
      case 'p': snprintf(v, sizeof v, "%ld", (long)getpid()); break;
      case 'r':
        if (!(add = getenv("RANK")) || !*add) add = getenv("LOCAL_RANK");
        if (!add || !*add) add = "0";
        break;
      case 'h':
        if (gethostname(v, sizeof v) != 0) strcpy(v, "localhost");
        v[sizeof v - 1] = 0;
        v[strcspn(v, ".")] = 0;
        break;
      default: v[0] = *c; break; /* %% */
      }
    }
    size_t k = strlen(add);
    if (n + k >= size) return -AG_EINVAL;
    memcpy(buf + n, add, k), n += k;
  }
  if (n >= size) return -AG_EINVAL;
  buf[n] = 0;
  return 0;
}

int ag__report_path(const char *tmpl, int launched, char *buf, size_t size) {
  if (!launched && ag__config_path_names_process(tmpl)) return 0;
  if (ag__config_path(tmpl, buf, size) != 0) {
    ag__log(AG_LOG_WARN, "the output path %s is too long once its placeholders are replaced",
            tmpl);
    return -1;
  }
  return launched || access(buf, F_OK) != 0;
}

/* An output path option: `why` is a reason it is not valid, else it is copied into dst. */
static void path_option(void (*warn)(const char *), ag_option_t o, const char *v, char *dst,
                        size_t cap, int *nbad) {
  const char *why = strlen(v) + sizeof ".tmp" > cap ? "path too long" : ag__config_path_ok(v);
  if (why) {
    bad(warn, o, v, why), (*nbad)++;
    return;
  }
  strcpy(dst, v);
}

/* Parses a decimal integer in [lo, hi]; returns 0 or -AG_EINVAL. */
static int parse_int(const char *v, long lo, long hi, int *out) {
  char *end;
  long x;
  if (*v < '0' || *v > '9') return -AG_EINVAL;
  errno = 0;
  x = strtol(v, &end, 10);
  if (errno || *end || x < lo || x > hi) return -AG_EINVAL;
  *out = (int)x;
  return 0;
}

static void int_option(const char *(*getenv_fn)(const char *), void (*warn)(const char *),
                       ag_option_t o, long lo, long hi, int *out, int *nbad) {
  const char *v = getenv_fn(options[o].name);
  char want[96];
  *out = atoi(options[o].def);
  if (!v || !*v || parse_int(v, lo, hi, out) == 0) return;
  *out = atoi(options[o].def);
  snprintf(want, sizeof want, "expected an integer from %ld to %ld", lo, hi);
  bad(warn, o, v, want), (*nbad)++;
}

/* AUTOGRAPH_CACHE_DIR: set and empty or "off" means no cache, which an unset variable does not:
 * then $XDG_CACHE_HOME/libautograph (when that is an absolute path, as the XDG specification
 * requires), else $HOME/.cache/libautograph, else none. */
static void cache_dir_option(const char *(*getenv_fn)(const char *), void (*warn)(const char *),
                             ag_config_t *cfg, int *nbad) {
  const char *v = getenv_fn(options[AG_OPT_CACHE_DIR].name), *base;
  /* Room for a file name in the folder: a 32-digit key, a suffix and a temporary's tail. */
  size_t cap = sizeof cfg->cache_dir - 96;
  int n;
  cfg->cache_dir[0] = 0;
  if (v) {
    if (!*v || !strcmp(v, "off")) return;
    if (strlen(v) >= cap) {
      bad(warn, AG_OPT_CACHE_DIR, v, "path too long"), (*nbad)++;
      v = NULL; /* the default, as for any malformed value */
    } else {
      strcpy(cfg->cache_dir, v);
      return;
    }
  }
  if ((base = getenv_fn("XDG_CACHE_HOME")) && base[0] == '/')
    n = snprintf(cfg->cache_dir, cap, "%s/libautograph", base);
  else if ((base = getenv_fn("HOME")) && base[0] == '/')
    n = snprintf(cfg->cache_dir, cap, "%s/.cache/libautograph", base);
  else
    return;
  if (n < 0 || (size_t)n >= cap) cfg->cache_dir[0] = 0; /* no room: no cache */
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
    else
      path_option(warn, AG_OPT_STATS, v, cfg->stats_path, sizeof cfg->stats_path, &nbad);
  }

  int_option(getenv_fn, warn, AG_OPT_REPEATS, 1, 1000000, &cfg->repeats, &nbad);
  int_option(getenv_fn, warn, AG_OPT_MIN_SEQ, 1, AG_MAX_SEQ_LIMIT, &cfg->min_seq, &nbad);
  int_option(getenv_fn, warn, AG_OPT_MAX_SEQ, 1, AG_MAX_SEQ_LIMIT, &cfg->max_seq, &nbad);
  if (cfg->min_seq > cfg->max_seq) {
    /* Each bound is valid alone; together they contradict, so both keep their defaults. */
    char msg[256];
    snprintf(msg, sizeof msg, "%s=%d is above %s=%d; using the defaults %s and %s",
             options[AG_OPT_MIN_SEQ].name, cfg->min_seq, options[AG_OPT_MAX_SEQ].name,
             cfg->max_seq, options[AG_OPT_MIN_SEQ].def, options[AG_OPT_MAX_SEQ].def);
    if (warn) warn(msg);
    nbad++;
    cfg->min_seq = atoi(options[AG_OPT_MIN_SEQ].def);
    cfg->max_seq = atoi(options[AG_OPT_MAX_SEQ].def);
  }
  int_option(getenv_fn, warn, AG_OPT_MAX_GRAPHS, 1, 1000000, &cfg->max_graphs, &nbad);
  int_option(getenv_fn, warn, AG_OPT_MAX_GRAPH_MB, 1, 1 << 24, &cfg->max_graph_mb, &nbad);

  v = getenv_fn(options[AG_OPT_DENY].name);
  if (v && *v) {
    if (strlen(v) >= sizeof cfg->deny)
      bad(warn, AG_OPT_DENY, v, "list too long"), nbad++;
    else
      strcpy(cfg->deny, v);
  }

  v = getenv_fn(options[AG_OPT_DUMP].name);
  if (v && *v) {
    path_option(warn, AG_OPT_DUMP, v, cfg->dump_path, sizeof cfg->dump_path, &nbad);
  }
  int_option(getenv_fn, warn, AG_OPT_DUMP_INTERVAL, 0, 1000000, &cfg->dump_interval, &nbad);
  int_option(getenv_fn, warn, AG_OPT_DUMP_MAX_SEQ, 0, 1000000, &cfg->dump_max_seq, &nbad);

  v = getenv_fn(options[AG_OPT_FUSE].name);
  if (v && *v) {
    int found = -1;
    for (size_t i = 0; i < AG_ARRAY_SIZE(fuse_levels); i++)
      if (!strcmp(v, fuse_levels[i])) found = (int)i;
    if (found >= 0)
      cfg->fuse = found;
    else
      bad(warn, AG_OPT_FUSE, v, "expected off, exact or all"), nbad++;
  }

  v = getenv_fn(options[AG_OPT_TRACE].name);
  if (v && *v) {
    path_option(warn, AG_OPT_TRACE, v, cfg->trace_path, sizeof cfg->trace_path, &nbad);
  }
  int_option(getenv_fn, warn, AG_OPT_TRACE_MAX_EVENTS, 1, 100000000, &cfg->trace_max_events,
             &nbad);
  /* The bound of a hold: a second at most, so that a mistaken value cannot stall a
   * program that waits on the device without calling CUDA for long. */
  int_option(getenv_fn, warn, AG_OPT_HOLD_US, 0, 1000000, &cfg->hold_us, &nbad);
  /* How long a held launch may wait for its chunk (src/segment.h, ag__chunk_plan). */
  int_option(getenv_fn, warn, AG_OPT_CHUNK_US, 0, 1000000, &cfg->chunk_us, &nbad);
  /* NVTX ranges and marks (src/nvtx.h): on unless turned off, so that a profiler shows what
   * the library did without being asked; they cost nothing when no tool listens. */
  int_option(getenv_fn, warn, AG_OPT_NVTX, 0, 1, &cfg->nvtx, &nbad);

  /* The NVRTC of the run-time compiler (src/jit.h): a path given is the only one tried. */
  v = getenv_fn(options[AG_OPT_NVRTC].name);
  if (v && *v) {
    if (strlen(v) >= sizeof cfg->nvrtc)
      bad(warn, AG_OPT_NVRTC, v, "path too long"), nbad++;
    else
      strcpy(cfg->nvrtc, v);
  }
  cache_dir_option(getenv_fn, warn, cfg, &nbad);
  return nbad;
}

const char *ag__config_name(ag_option_t o) {
  return (unsigned)o < AG_OPT_COUNT_ ? options[o].name : NULL;
}

size_t ag__config_value(const ag_config_t *cfg, ag_option_t o, char *buf, size_t size) {
  static const char *const levels[] = {"error", "warn", "info", "debug"};
  int n = 0;
  switch (o) {
  case AG_OPT_DISABLE: n = snprintf(buf, size, "%d", cfg->disable); break;
  case AG_OPT_LOG:
    n = snprintf(buf, size, "%s",
                 (unsigned)cfg->log_level < AG_ARRAY_SIZE(levels) ? levels[cfg->log_level] : "");
    break;
  case AG_OPT_STATS: n = snprintf(buf, size, "%s", cfg->stats_summary ? "1" : cfg->stats_path); break;
  case AG_OPT_REPEATS: n = snprintf(buf, size, "%d", cfg->repeats); break;
  case AG_OPT_MIN_SEQ: n = snprintf(buf, size, "%d", cfg->min_seq); break;
  case AG_OPT_MAX_SEQ: n = snprintf(buf, size, "%d", cfg->max_seq); break;
  case AG_OPT_MAX_GRAPHS: n = snprintf(buf, size, "%d", cfg->max_graphs); break;
  case AG_OPT_MAX_GRAPH_MB: n = snprintf(buf, size, "%d", cfg->max_graph_mb); break;
  case AG_OPT_DENY: n = snprintf(buf, size, "%s", cfg->deny); break;
  case AG_OPT_DUMP: n = snprintf(buf, size, "%s", cfg->dump_path); break;
  case AG_OPT_DUMP_INTERVAL: n = snprintf(buf, size, "%d", cfg->dump_interval); break;
  case AG_OPT_DUMP_MAX_SEQ: n = snprintf(buf, size, "%d", cfg->dump_max_seq); break;
  case AG_OPT_FUSE:
    n = snprintf(buf, size, "%s",
                 (unsigned)cfg->fuse < AG_ARRAY_SIZE(fuse_levels) ? fuse_levels[cfg->fuse] : "");
    break;
  case AG_OPT_TRACE: n = snprintf(buf, size, "%s", cfg->trace_path); break;
  case AG_OPT_TRACE_MAX_EVENTS: n = snprintf(buf, size, "%d", cfg->trace_max_events); break;
  case AG_OPT_HOLD_US: n = snprintf(buf, size, "%d", cfg->hold_us); break;
  case AG_OPT_CHUNK_US: n = snprintf(buf, size, "%d", cfg->chunk_us); break;
  case AG_OPT_NVTX: n = snprintf(buf, size, "%d", cfg->nvtx); break;
  case AG_OPT_NVRTC: n = snprintf(buf, size, "%s", cfg->nvrtc); break;
  case AG_OPT_CACHE_DIR: n = snprintf(buf, size, "%s", cfg->cache_dir[0] ? cfg->cache_dir : "off"); break;
  default: n = snprintf(buf, size, "%s", ""); break;
  }
  return n < 0 ? 0 : (size_t)n;
}

int ag__config_denied(const char *deny, const char *name) {
  char pat[256];
  const char *p = deny, *comma;
  if (!name || !deny) return 0;
  while (*p) {
    size_t n;
    comma = strchr(p, ',');
    n = comma ? (size_t)(comma - p) : strlen(p);
    while (n && *p == ' ') p++, n--;
    while (n && p[n - 1] == ' ') n--;
    if (n && n < sizeof pat) {
      memcpy(pat, p, n);
      pat[n] = 0;
      if (fnmatch(pat, name, 0) == 0) return 1;
    }
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
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
