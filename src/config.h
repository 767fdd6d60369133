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
  AG_OPT_REPEATS, /* AUTOGRAPH_REPEATS: occurrences of a sequence before it is graphed */
  AG_OPT_MIN_SEQ, /* AUTOGRAPH_MIN_SEQ: shortest sequence graphed, and shortest content cut */
  AG_OPT_MAX_SEQ, /* AUTOGRAPH_MAX_SEQ: longest sequence (a run is cut there) */
  AG_OPT_MAX_GRAPHS,   /* AUTOGRAPH_MAX_GRAPHS: instantiated graphs kept */
  AG_OPT_MAX_GRAPH_MB, /* AUTOGRAPH_MAX_GRAPH_MB: estimated device memory of kept graphs */
  AG_OPT_DENY,    /* AUTOGRAPH_DENY: comma-separated fnmatch patterns of kernels never held */
  AG_OPT_DUMP,    /* AUTOGRAPH_DUMP: path of the sequence dump (src/dump.h), else unset */
  AG_OPT_DUMP_INTERVAL, /* AUTOGRAPH_DUMP_INTERVAL: seconds between periodic dumps, 0: none */
  AG_OPT_DUMP_MAX_SEQ,  /* AUTOGRAPH_DUMP_MAX_SEQ: sequences written per dump at most */
  AG_OPT_FUSE,    /* AUTOGRAPH_FUSE: off|exact|all, which fused replacements may run */
  AG_OPT_TRACE,   /* AUTOGRAPH_TRACE: path of the Chrome trace (src/trace.h), else unset */
  AG_OPT_TRACE_MAX_EVENTS, /* AUTOGRAPH_TRACE_MAX_EVENTS: events recorded at most */
  AG_OPT_HOLD_US, /* AUTOGRAPH_HOLD_US: longest a hold outlives its thread's last call, 0: never hold */
  AG_OPT_CHUNK_US, /* AUTOGRAPH_CHUNK_US: most host time a held launch waits for its chunk's
                    * graph launch, 0: a sequence is one graph launched at its end */
  AG_OPT_NVTX,    /* AUTOGRAPH_NVTX: 0/1, NVTX ranges and marks for a tool that listens */
  AG_OPT_NVRTC,   /* AUTOGRAPH_NVRTC: path of the NVRTC library to use (src/jit.h), else unset */
  AG_OPT_CACHE_DIR, /* AUTOGRAPH_CACHE_DIR: folder of compiled kernels, "" or "off": none */
  AG_OPT_COUNT_
} ag_option_t;

typedef struct ag_config {
  int disable;             /* nonzero: pure pass-through, no work, no output */
  int log_level;           /* enum ag_log_level */
  int stats_summary;       /* AUTOGRAPH_STATS=1 */
  char stats_path[4096];   /* AUTOGRAPH_STATS=<path>, else empty */
  int repeats;             /* >= 1 */
  int min_seq, max_seq;    /* 1 <= min_seq <= max_seq <= AG_MAX_SEQ_LIMIT */
  int max_graphs;          /* >= 1 */
  int max_graph_mb;        /* >= 1 */
  char deny[1024];         /* AUTOGRAPH_DENY as given (patterns separated by commas) */
  char dump_path[4096];    /* AUTOGRAPH_DUMP, else empty */
  int dump_interval;       /* seconds, 0: no periodic dump */
  int dump_max_seq;        /* >= 0 */
  int fuse;                /* enum ag_fuse_level */
  char trace_path[4096];   /* AUTOGRAPH_TRACE, else empty */
  int trace_max_events;    /* >= 1 */
  int hold_us;             /* microseconds, 0..1000000; 0: nothing is ever held */
  int chunk_us;            /* microseconds, 0..1000000; 0: whole sequences */
  int nvtx;                /* nonzero: NVTX ranges and marks when a tool listens (src/nvtx.h) */
  char nvrtc[4096];        /* AUTOGRAPH_NVRTC, else empty (search, src/jit.h) */
  char cache_dir[4096];    /* the cache folder in force (default from $XDG_CACHE_HOME or $HOME),
                            * empty when there is none */
} ag_config_t;

/* AUTOGRAPH_FUSE. Each level includes the ones before it.
 *   off:   no substitution (the default);
 *   exact: substitutions whose result is bit-identical by construction (the same element-wise
 *          float operations in the same order, every intermediate still written);
 *   all:   also substitutions that compute the same function but may round differently on a
 *          GPU (a fused cuDNN call may pick other kernels than the calls it replaces). */
enum ag_fuse_level { AG_FUSE_OFF, AG_FUSE_EXACT, AG_FUSE_ALL };

/* Hard upper bound of AUTOGRAPH_MAX_SEQ: the per-sequence buffers are sized by it. */
#define AG_MAX_SEQ_LIMIT 4096

/* Nonzero when the kernel `name` matches a pattern of the comma-separated list `deny`. */
int ag__config_denied(const char *deny, const char *name);

/* The process-wide configuration; valid after ag__config_load(). */
extern ag_config_t ag__config;

/* Fills `cfg` from `getenv_fn` (getenv in the library; a stub in tests). Each malformed value
 * is reported once through `warn` (may be NULL) and replaced by its default. Returns the number
 * of malformed values. */
int ag__config_parse(ag_config_t *cfg, const char *(*getenv_fn)(const char *name),
                     void (*warn)(const char *msg));

/* The variable name of option `o`, and its effective value in `cfg` as text (into buf, as
 * snprintf does). For the dump's record of the options in force. */
const char *ag__config_name(ag_option_t o);
size_t ag__config_value(const ag_config_t *cfg, ag_option_t o, char *buf, size_t size);

/* Output paths (AUTOGRAPH_STATS, AUTOGRAPH_DUMP, AUTOGRAPH_TRACE) may name the process, so that
 * the processes of one job (torchrun's ranks, its agent, workers) write files of their own:
 *   %p  the process id (at the time of writing: a forked child writes its own)
 *   %r  the rank: $RANK, else $LOCAL_RANK, else 0
 *   %h  the host name (up to its first dot)
 *   %%  a percent sign
 * ag__config_path_ok: 0 when `tmpl` is valid (any other % sequence is not), else a reason.
 * ag__config_path: `tmpl` with its placeholders replaced, into buf (size bytes); returns 0, or
 * -AG_EINVAL when it does not fit. ag__config_path_names_process: nonzero when it has %p or %r
 * (each process gets a file of its own). */
const char *ag__config_path_ok(const char *tmpl);
int ag__config_path(const char *tmpl, char *buf, size_t size);
int ag__config_path_names_process(const char *tmpl);

/* Where a report (statistics, dump, trace) of this process goes, into buf: 1 when it is to be
 * written, 0 when not, -1 when the expanded path does not fit (logged). A process that launched
 * no kernel (`launched` 0: the torchrun agent, a shell or launcher run preloaded) writes nothing
 * where the path names the process, and elsewhere only where no file exists yet: it never
 * replaces a real report (a writer that can, creates the file exclusively too, against a race). */
int ag__report_path(const char *tmpl, int launched, char *buf, size_t size);

/* Loads ag__config from the process environment, once. */
void ag__config_load(void);

#endif
