/* ag-config — the options table: defaults, every accepted value, and one warning per
 * malformed value with the default kept. */
#include <string.h>

#include "check.h"
#include "config.h"

static const char *vals[3][2];
static int nwarn;
static char last[256];

static const char *fake_env(const char *name) {
  for (int i = 0; i < 3; i++)
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
  return 0;
}
