/* ag-json — the JSON writer (escaping, commas, truncation that still measures) and the stats
 * report built on it (per-name counters merged by name, every contract field present). */
#include <string.h>

#include "check.h"
#include "json.h"
#include "stats.h"

int main(void) {
  char buf[256];
  ag_json_t j;

  ag__json_init(&j, buf, sizeof buf);
  ag__json_begin(&j, '{');
  ag__json_key(&j, "a\"b\\c\n"), ag__json_u64(&j, 18446744073709551615ull);
  ag__json_key(&j, "ctl\x01"), ag__json_str(&j, "x");
  ag__json_key(&j, "o"), ag__json_begin(&j, '{'), ag__json_end(&j, '}');
  ag__json_key(&j, "l"), ag__json_begin(&j, '[');
  ag__json_u64(&j, 1), ag__json_u64(&j, 2);
  ag__json_end(&j, ']');
  ag__json_end(&j, '}');
  size_t n = ag__json_finish(&j);
  CHECK_STR(buf, "{\"a\\\"b\\\\c\\n\":18446744073709551615,\"ctl\\u0001\":\"x\",\"o\":{},"
                 "\"l\":[1,2]}");
  CHECK_INT(n, ==, strlen(buf));

  /* Truncation: the buffer stays terminated, the length says what was needed. */
  char small[8];
  ag__json_init(&j, small, sizeof small);
  ag__json_str(&j, "0123456789");
  CHECK_INT(ag__json_finish(&j), ==, 12);
  CHECK_INT(strlen(small), ==, 7);

  /* The stats report: two table entries with one name are merged. */
  static ag_call_t calls[] = {{"cuB", AG_FAM_COPY, 0, NULL, 0}, {"cuA", AG_FAM_LAUNCH, 0, NULL, 0},
                              {"cuB", AG_FAM_COPY, 0, NULL, 0}, {"never", AG_FAM_SYNC, 0, NULL, 0}};
  CHECK_INT(ag__stats_register(calls, 4), ==, 0);
  calls[0].count = 2, calls[1].count = 5, calls[2].count = 3;
  ag__stats.launches = 5;
  ag__stats.by_path[AG_PATH_DRIVER] = 5;
  static char big[4096];
  n = ag__stats_json(big, sizeof big);
  CHECK_INT(n, ==, strlen(big));
  CHECK(strstr(big, "{\"version\":1,\"launches\":5,\"replayed\":0,\"graphs\":0,"
                    "\"graph_launches\":0,\"updates\":0,\"passthrough\":0,") == big);
  CHECK(strstr(big, "\"fallbacks\":{}") != NULL);
  CHECK(strstr(big, "\"by_path\":{\"runtime\":0,\"driver\":5,\"cudnn\":0}") != NULL);
  CHECK(strstr(big, "\"unclassified\":0") != NULL);
  CHECK(strstr(big, "\"calls\":{\"cuA\":5,\"cuB\":5}}") != NULL);
  n = ag__stats_summary(big, sizeof big);
  CHECK_STR(big, "autograph: 5 launches (runtime 0, driver 5, cudnn 0), 0 replayed (0.0%), "
                 "0 graphs, 0 updates; 0 ordering calls\n");

  /* Fused-pattern counts: by name (a copy of the literal counts in the same slot), into the
   * total, in the report and the summary. */
  CHECK(strstr(big, "fused") == NULL);
  n = ag__stats_json(big, sizeof big);
  CHECK(strstr(big, "\"fused\":0,\"fused_by_pattern\":{}") != NULL);
  char name[] = "p_one";
  ag__stats_fused("p_one", 2);
  ag__stats_fused(name, 1);
  ag__stats_fused("p_two", 4);
  CHECK_INT(ag__stats_fused_count("p_one"), ==, 3);
  CHECK_INT(ag__stats_fused_count("p_two"), ==, 4);
  CHECK_INT(ag__stats_fused_count("p_none"), ==, 0);
  n = ag__stats_json(big, sizeof big);
  CHECK(strstr(big, "\"fused\":7,\"fused_by_pattern\":{\"p_one\":3,\"p_two\":4}") != NULL);
  n = ag__stats_summary(big, sizeof big);
  CHECK(strstr(big, "0 updates, 7 fused; 0 ordering calls") != NULL);
  ag__stats_reset();
  CHECK_INT(ag__stats_fused_count("p_one"), ==, 0);
  CHECK_INT(ag__stats.fused, ==, 0);
  return 0;
}
