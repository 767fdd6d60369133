/* ag-config — the options table: defaults, every accepted value, and one warning per
 * malformed value with the default kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"

static const char *vals[12][2];
static int nwarn;
static char last[256];

static const char *fake_env(const char *name) {
  for (int i = 0; i < 12; i++)
    if (vals[i][0] && !strcmp(vals[i][0], name)) return vals[i][1];
  return NULL;
}

static void warn(const char *msg) {
  nwarn++;
  strncpy(last, msg, sizeof last - 1);
}

static void set(const char *dis, const char *log, const char *stats) {
  vals[0][0] = "AUTOGRAPH_DISABLE", vals[0][1] = dis;
  vals[1][0] = "AUTOGRAPH_LOG", vals[1][1] = log;
  vals[2][0] = "AUTOGRAPH_STATS", vals[2][1] = stats;
  nwarn = 0;
  last[0] = 0;
}

int main(void) {
  ag_config_t c;

  set(NULL, NULL, NULL);
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_INT(c.disable, ==, 0);
  CHECK_INT(c.log_level, ==, AG_LOG_WARN);
  CHECK_INT(c.stats_summary, ==, 0);
  CHECK_STR(c.stats_path, "");

  set("1", "debug", "1");
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_INT(c.disable, ==, 1);
  CHECK_INT(c.log_level, ==, AG_LOG_DEBUG);
  CHECK_INT(c.stats_summary, ==, 1);

  set("0", "error", "/tmp/x y.json");
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_INT(c.disable, ==, 0);
  CHECK_INT(c.log_level, ==, AG_LOG_ERROR);
  CHECK_INT(c.stats_summary, ==, 0);
  CHECK_STR(c.stats_path, "/tmp/x y.json");

  set("2", "verbose", "0");
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 2);
  CHECK_INT(nwarn, ==, 2);
  CHECK_INT(c.disable, ==, 0);
  CHECK_INT(c.log_level, ==, AG_LOG_WARN);
  CHECK_INT(c.stats_summary, ==, 0);
  CHECK_STR(c.stats_path, "");
  CHECK(strstr(last, "AUTOGRAPH_LOG=\"verbose\" is not valid") != NULL);
  CHECK(strstr(last, "default \"warn\"") != NULL);

  set("", "", ""); /* empty means unset */
  CHECK_INT(ag__config_parse(&c, fake_env, NULL), ==, 0);
  CHECK_INT(c.log_level, ==, AG_LOG_WARN);
  CHECK_INT(c.repeats, ==, 1);
  CHECK_INT(c.min_seq, ==, 2);
  CHECK_INT(c.max_seq, ==, 256);
  CHECK_INT(c.max_graphs, ==, 512);
  CHECK_INT(c.max_graph_mb, ==, 2048);
  CHECK_STR(c.deny, "");

  /* The engine's options. */
  vals[3][0] = "AUTOGRAPH_REPEATS", vals[3][1] = "3";
  vals[4][0] = "AUTOGRAPH_MIN_SEQ", vals[4][1] = "4";
  vals[5][0] = "AUTOGRAPH_MAX_SEQ", vals[5][1] = "64";
  vals[6][0] = "AUTOGRAPH_MAX_GRAPHS", vals[6][1] = "10";
  vals[7][0] = "AUTOGRAPH_MAX_GRAPH_MB", vals[7][1] = "100";
  vals[8][0] = "AUTOGRAPH_DENY", vals[8][1] = "softmax*, *_bw";
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_INT(c.repeats, ==, 3);
  CHECK_INT(c.min_seq, ==, 4);
  CHECK_INT(c.max_seq, ==, 64);
  CHECK_INT(c.max_graphs, ==, 10);
  CHECK_INT(c.max_graph_mb, ==, 100);
  CHECK(ag__config_denied(c.deny, "softmax_fwd"));
  CHECK(ag__config_denied(c.deny, "relu_bw"));
  CHECK(!ag__config_denied(c.deny, "relu"));
  CHECK(!ag__config_denied("", "relu"));

  /* Malformed: one warning each, defaults kept. */
  vals[3][1] = "two", vals[4][1] = "0", vals[5][1] = "99999999", vals[6][1] = "-1";
  vals[7][1] = "12x";
  set(NULL, NULL, NULL);
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 5);
  CHECK_INT(nwarn, ==, 5);
  CHECK_INT(c.repeats, ==, 1);
  CHECK_INT(c.min_seq, ==, 2);
  CHECK_INT(c.max_seq, ==, 256);
  CHECK_INT(c.max_graphs, ==, 512);
  CHECK_INT(c.max_graph_mb, ==, 2048);
  CHECK(strstr(last, "AUTOGRAPH_MAX_GRAPH_MB=\"12x\" is not valid") != NULL);

  /* Bounds that contradict each other: one warning, both defaults. */
  vals[3][1] = "2", vals[4][1] = "50", vals[5][1] = "10", vals[6][1] = "1", vals[7][1] = "1";
  set(NULL, NULL, NULL);
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 1);
  CHECK_INT(c.min_seq, ==, 2);
  CHECK_INT(c.max_seq, ==, 256);

  /* Fusion level and trace: defaults, every accepted value, the value as the dump records it,
   * and the malformed values. */
  vals[4][1] = "2", vals[5][1] = "256";
  char buf[64];
  set(NULL, NULL, NULL);
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_INT(c.fuse, ==, AG_FUSE_OFF);
  CHECK_STR(c.trace_path, "");
  CHECK_INT(c.trace_max_events, ==, 1000000);
  ag__config_value(&c, AG_OPT_FUSE, buf, sizeof buf);
  CHECK_STR(buf, "off");
  CHECK_STR(ag__config_name(AG_OPT_TRACE_MAX_EVENTS), "AUTOGRAPH_TRACE_MAX_EVENTS");
  static const char *const levels[] = {"off", "exact", "chains", "all"};
  for (int i = 0; i < 4; i++) {
    vals[9][0] = "AUTOGRAPH_FUSE", vals[9][1] = levels[i];
    vals[10][0] = "AUTOGRAPH_TRACE", vals[10][1] = "t.json";
    vals[11][0] = "AUTOGRAPH_TRACE_MAX_EVENTS", vals[11][1] = "7";
    CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
    CHECK_INT(c.fuse, ==, i);
    ag__config_value(&c, AG_OPT_FUSE, buf, sizeof buf);
    CHECK_STR(buf, levels[i]);
    CHECK_STR(c.trace_path, "t.json");
    CHECK_INT(c.trace_max_events, ==, 7);
  }
  vals[9][1] = "1", vals[11][1] = "0";
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 2);
  CHECK_INT(c.fuse, ==, AG_FUSE_OFF);
  CHECK_INT(c.trace_max_events, ==, 1000000);
  /* NVTX: on by default; 0 turns it off, 1 on; anything else warns and keeps it on. */
  vals[9][0] = vals[10][0] = vals[11][0] = NULL;
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_INT(c.nvtx, ==, 1);
  CHECK_STR(ag__config_name(AG_OPT_NVTX), "AUTOGRAPH_NVTX");
  static const char *const nvtx_ok[][2] = {{"0", "0"}, {"1", "1"}};
  for (int i = 0; i < 2; i++) {
    vals[9][0] = "AUTOGRAPH_NVTX", vals[9][1] = nvtx_ok[i][0];
    CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
    CHECK_INT(c.nvtx, ==, i);
    ag__config_value(&c, AG_OPT_NVTX, buf, sizeof buf);
    CHECK_STR(buf, nvtx_ok[i][1]);
  }
  static const char *const nvtx_bad[] = {"2", "-1", "off", "yes", "1x"};
  for (int i = 0; i < 5; i++) {
    vals[9][1] = nvtx_bad[i];
    set(NULL, NULL, NULL);
    CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 1);
    CHECK_INT(c.nvtx, ==, 1);
    CHECK(strstr(last, "AUTOGRAPH_NVTX=") != NULL);
  }
  vals[9][0] = NULL;
  /* Output paths that name the process: placeholders checked when parsed, replaced when a
   * report is written. */
  set(NULL, NULL, "/tmp/s-%p-%r-%h-%%.json");
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_STR(c.stats_path, "/tmp/s-%p-%r-%h-%%.json");
  CHECK_INT(ag__config_path_names_process(c.stats_path), ==, 1);
  CHECK_INT(ag__config_path_names_process("/tmp/s-%h-%%p.json"), ==, 0);
  {
    char want[512], host[256], got[512];
    CHECK_INT(gethostname(host, sizeof host), ==, 0);
    host[sizeof host - 1] = 0;
    host[strcspn(host, ".")] = 0;
    setenv("RANK", "3", 1);
    snprintf(want, sizeof want, "/tmp/s-%ld-3-%s-%%.json", (long)getpid(), host);
    CHECK_INT(ag__config_path(c.stats_path, got, sizeof got), ==, 0);
    CHECK_STR(got, want);
    unsetenv("RANK");
    setenv("LOCAL_RANK", "5", 1);
    CHECK_INT(ag__config_path("r%r", got, sizeof got), ==, 0);
    CHECK_STR(got, "r5");
    unsetenv("LOCAL_RANK");
    CHECK_INT(ag__config_path("r%r", got, sizeof got), ==, 0);
    CHECK_STR(got, "r0");
    CHECK_INT(ag__config_path("%p%p%p", got, 4), ==, -AG_EINVAL); /* does not fit */
    /* A process that launched nothing writes nothing where the path names the process, and
     * elsewhere only where no file exists yet; one that launched writes in any case. */
    char dir[] = "/tmp/ag-config.XXXXXX", file[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(file, sizeof file, "%s/a.json", dir);
    CHECK_INT(ag__report_path("/tmp/a-%p.json", 0, got, sizeof got), ==, 0);
    CHECK_INT(ag__report_path(file, 0, got, sizeof got), ==, 1);
    CHECK_STR(got, file);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    fclose(f);
    CHECK_INT(ag__report_path(file, 0, got, sizeof got), ==, 0);
    CHECK_INT(ag__report_path(file, 1, got, sizeof got), ==, 1);
    CHECK_INT(unlink(file), ==, 0);
    CHECK_INT(rmdir(dir), ==, 0);
  }
  set(NULL, NULL, "/tmp/s-%d.json");
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 1);
  CHECK_STR(c.stats_path, "");
  CHECK(strstr(last, "unknown placeholder") != NULL);
  set(NULL, NULL, "/tmp/s-%");
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 1);
  CHECK(strstr(last, "a lone %") != NULL);

  /* The run-time compiler's NVRTC and cache folder. Unset: the folder under $XDG_CACHE_HOME when
   * that is absolute, else under $HOME, else none; "" and "off": none; a path: that one. */
  set(NULL, NULL, NULL);
  vals[9][0] = "XDG_CACHE_HOME", vals[10][0] = "HOME", vals[11][0] = "AUTOGRAPH_CACHE_DIR";
  static const char *const dirs[][4] = {
      /* XDG_CACHE_HOME, HOME, AUTOGRAPH_CACHE_DIR, the folder in force ("off": none) */
      {"/x/cache", "/home/u", NULL, "/x/cache/libautograph"},
      {"relative", "/home/u", NULL, "/home/u/.cache/libautograph"},
      {"", "/home/u", NULL, "/home/u/.cache/libautograph"},
      {NULL, "/home/u", NULL, "/home/u/.cache/libautograph"},
      {NULL, NULL, NULL, "off"},
      {"/x/cache", "/home/u", "", "off"},
      {"/x/cache", "/home/u", "off", "off"},
      {"/x/cache", "/home/u", "/c/d", "/c/d"},
      {"/x/cache", "/home/u", "rel/d", "rel/d"},
  };
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    vals[9][1] = dirs[i][0], vals[10][1] = dirs[i][1], vals[11][1] = dirs[i][2];
    CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
    CHECK_STR(c.cache_dir, strcmp(dirs[i][3], "off") ? dirs[i][3] : "");
    ag__config_value(&c, AG_OPT_CACHE_DIR, buf, sizeof buf);
    CHECK_STR(buf, dirs[i][3]);
  }
  CHECK_STR(ag__config_name(AG_OPT_CACHE_DIR), "AUTOGRAPH_CACHE_DIR");
  {
    static char longer[5000];
    memset(longer, 'a', sizeof longer - 1);
    longer[0] = '/';
    vals[9][1] = "/x/cache", vals[11][1] = longer;
    CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 1);
    CHECK(strstr(last, "AUTOGRAPH_CACHE_DIR=") != NULL);
    CHECK_STR(c.cache_dir, "/x/cache/libautograph"); /* the default */
    vals[11][0] = "AUTOGRAPH_NVRTC", vals[11][1] = longer;
    CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 1);
    CHECK(strstr(last, "AUTOGRAPH_NVRTC=") != NULL);
    CHECK_STR(c.nvrtc, "");
  }
  vals[11][0] = "AUTOGRAPH_NVRTC", vals[11][1] = "/opt/nvrtc/libnvrtc.so.12";
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_STR(c.nvrtc, "/opt/nvrtc/libnvrtc.so.12");
  ag__config_value(&c, AG_OPT_NVRTC, buf, sizeof buf);
  CHECK_STR(buf, "/opt/nvrtc/libnvrtc.so.12");
  CHECK_STR(ag__config_name(AG_OPT_NVRTC), "AUTOGRAPH_NVRTC");
  vals[9][0] = vals[10][0] = vals[11][0] = NULL;

  return 0;
}
