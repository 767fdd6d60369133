/* ag-json — the JSON writer (escaping, commas, truncation that still measures), the stats
 * report built on it (per-name counters merged by name, every contract field present) and the
 * tokenizer (nesting, siblings, keys, numbers, counting without tokens, malformed documents). */
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

  /* The tokenizer: a document's tokens, each subtree skipped by `next`. */
  const char doc[] = " {\"a\": [1, {\"b\": \"x\\\"y\"}, -2.5e1], \"c\": {}, \"d\": true} ";
  ag_jtok_t tok[16];
  int nt = ag__json_parse(doc, strlen(doc), NULL, 0);
  CHECK_INT(nt, ==, 12);
  CHECK_INT(ag__json_parse(doc, strlen(doc), tok, 16), ==, 12);
  CHECK(tok[0].type == AG_JSON_OBJ && tok[0].size == 3 && tok[0].next == 12);
  int a = ag__json_get(doc, tok, 0, "a");
  CHECK(a == 2 && tok[a].type == AG_JSON_ARR && tok[a].size == 3 && tok[a].next == 8);
  CHECK(ag__json_num(doc, &tok[a + 1]) == 1.0);
  int b = ag__json_get(doc, tok, (int)tok[a + 1].next, "b");
  CHECK(b > 0 && tok[b].type == AG_JSON_STR && tok[b].end - tok[b].start == 4); /* x\"y, raw */
  CHECK(ag__json_num(doc, &tok[tok[tok[a + 1].next].next]) == -25.0);
  int c = ag__json_get(doc, tok, 0, "c");
  CHECK(c > 0 && tok[c].type == AG_JSON_OBJ && tok[c].size == 0);
  CHECK(ag__json_get(doc, tok, c, "a") == -1);
  CHECK(ag__json_is(doc, &tok[ag__json_get(doc, tok, 0, "d") - 1], "d"));
  CHECK(ag__json_get(doc, tok, 0, "e") == -1 && ag__json_get(doc, tok, a, "a") == -1);
  /* Fewer tokens than the document needs: counted all the same, only the first written. */
  CHECK_INT(ag__json_parse(doc, strlen(doc), tok, 3), ==, 12);
  static const char *const bad[] = {"", "{", "{\"a\" 1}", "[1,]", "[1 2]", "{1: 2}", "\"open", "[] x", "{\"a\":}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_INT(ag__json_parse(bad[i], strlen(bad[i]), tok, 16), ==, -1);
  char deep[200];
  memset(deep, '[', sizeof deep);
  CHECK_INT(ag__json_parse(deep, sizeof deep, tok, 16), ==, -1); /* nesting beyond the bound */
  return 0;
}
