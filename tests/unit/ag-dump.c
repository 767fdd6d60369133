/* ag-dump — the dump's document, built from a sequence table filled by hand: options, states
 * and reasons (learning, graphed, demoted, evicted, denied), kernels from the shape hook, order
 * by estimated saving, truncation at AUTOGRAPH_DUMP_MAX_SEQ, and the "pointer" heuristic. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "dump.h"
#include "stats.h"

static const char *env_dump_cap;

static const char *fake_env(const char *name) {
  if (!strcmp(name, "AUTOGRAPH_DUMP")) return "/x/d.json";
  if (!strcmp(name, "AUTOGRAPH_DUMP_INTERVAL")) return "5";
  if (!strcmp(name, "AUTOGRAPH_DUMP_MAX_SEQ")) return env_dump_cap;
  return NULL;
}

static int nwarn;
static void warn(const char *msg) {
  (void)msg;
  nwarn++;
}

/* Nonzero when `doc` contains `s`. */
static int has(const char *doc, const char *s) { return strstr(doc, s) != NULL; }

int main(void) {
  /* Options: parsed, written back as text. */
  ag_config_t c;
  char val[64];
  env_dump_cap = "7";
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 0);
  CHECK_STR(c.dump_path, "/x/d.json");
  CHECK_INT(c.dump_interval, ==, 5);
  CHECK_INT(c.dump_max_seq, ==, 7);
  ag__config_value(&c, AG_OPT_DUMP_MAX_SEQ, val, sizeof val);
  CHECK_STR(val, "7");
  ag__config_value(&c, AG_OPT_LOG, val, sizeof val);
  CHECK_STR(val, "warn");
  CHECK_STR(ag__config_name(AG_OPT_DUMP_INTERVAL), "AUTOGRAPH_DUMP_INTERVAL");
  env_dump_cap = "-1";
  CHECK_INT(ag__config_parse(&c, fake_env, warn), ==, 1);
  CHECK_INT(c.dump_max_seq, ==, 1000);
  CHECK_INT(nwarn, ==, 1);

  /* The pointer heuristic. */
  CHECK(ag__dump_looks_like_address(0x7f3a40000000ull));
  CHECK(ag__dump_looks_like_address(0x302000000ull));
  CHECK(!ag__dump_looks_like_address(0));
  CHECK(!ag__dump_looks_like_address(12345));
  CHECK(!ag__dump_looks_like_address(0x3ff0000000000000ull)); /* 1.0 as a double */
  CHECK(!ag__dump_looks_like_address(0x7f3a40000004ull));     /* not 16-byte aligned */

  /* A table with four sequences of two kernels. */
  ag__config.dump_max_seq = 1000;
  ag_seqtab_t *t = ag__seqtab_new(8, 1 << 30, NULL);
  CHECK(t != NULL);
  uint64_t hs[2] = {101, 102};
  ag_kparam_t params[2] = {{0, 8}, {8, 4}};
  ag_kinfo_t k = {.nparams = 2, .param_bytes = 12, .params = params, .name = "_Z4stepPfi", .id = 3};
  ag_launch_t l = {.grid = {4, 1, 1}, .block = {128, 1, 1}, .shmem = 16, .path = AG_PATH_RUNTIME};
  ag__dump_shape(101, &k, &l, AG_PATH_RUNTIME, NULL);
  ag__dump_shape(102, &k, &l, AG_PATH_CUDNN, "cudnnConvolutionForward");
  ag__dump_shape(101, &k, &l, AG_PATH_DRIVER, NULL); /* already known: kept as first seen */
  ag_seq_t *s[4];
  for (int i = 0; i < 4; i++) {
    int added;
    s[i] = ag__seqtab_find(t, 1000 + (uint64_t)i, hs, NULL, 2, &added);
    CHECK(s[i] && added);
    CHECK_INT(s[i]->id, ==, i + 1);
  }
  s[0]->count = 1;                                           /* learning */
  s[1]->count = 5, s[1]->state = AG_SEQ_READY;               /* graphed, pays */
  s[1]->replays = 3, s[1]->replay_ns = 50, s[1]->replayed = 7; /* 3 whole runs, and a chunk */
  s[2]->count = 4, s[2]->state = AG_SEQ_DEMOTED;             /* demoted */
  s[2]->replays = 16, s[2]->replay_ns = 900;
  ag__dump_demoted(s[2], "replay does not pay");
  s[3]->count = 0, s[3]->state = AG_SEQ_COUNTING;            /* evicted */
  ag__dump_graph_gone(s[3], 1);
  ag__dump_denied(&k, &l, AG_PATH_RUNTIME, NULL);
  ag__dump_denied(&k, &l, AG_PATH_RUNTIME, NULL);

  /* Runs and cuts: the calls made before the next launch join the cut, "exit" and calls after a
   * launch do not; a replayed run is listed but not counted as a cut. */
  ag__stats_run(AG_RUN_REPLAYED, 1, 2, 2, "cudaStreamSynchronize");
  ag__stats_run(AG_RUN_CUT, 2, 4, 3, "cudaMemcpyAsync");
  ag__stats_run_call("cudaStreamSynchronize");
  ag__stats_run_call("cudaStreamSynchronize");
  ag__stats_run_call("exit");
  ag__stats.launches++;
  ag__stats_run_call("cudaFree");

  char *doc;
  size_t n = ag__dump_render(t, 100.0, AG_DUMP_SIGNAL, &doc);
  CHECK(n > 0 && doc != NULL);
  CHECK_INT(strlen(doc), ==, n);
  CHECK(has(doc, "\"schema\":\"autograph-dump\",\"version\":3,\"written_at\":\"signal\""));
  CHECK(has(doc, "\"cuts\":[{\"sequence\":2,\"length\":4,\"after\":3,\"calls\":[\"cudaMemcpyAsync\","
                 "\"cudaStreamSynchronize\"],\"count\":1,\"launches\":3}],\"cuts_omitted\":0"));
  CHECK(has(doc, "\"runs_total\":2,\"runs\":[{\"sequence\":1,\"length\":2,\"launches\":2,"
                 "\"outcome\":\"replayed\",\"calls\":[\"cudaStreamSynchronize\"]},{\"sequence\":2,"
                 "\"length\":4,\"launches\":3,\"outcome\":\"cut\",\"calls\":[\"cudaMemcpyAsync\","
                 "\"cudaStreamSynchronize\"]}]"));
  CHECK(has(doc, "\"AUTOGRAPH_DUMP_MAX_SEQ\":\"1000\""));
  CHECK(has(doc, "\"driver_version\":null"));
  CHECK(has(doc, "\"truncated\":false,\"sequences_omitted\":0"));
  /* Saving: s[1] 3 * (200 - 50) = 450 first; s[2] 16 * (200 - 900) < 0 last. */
  const char *p1 = strstr(doc, "\"id\":2,"), *p0 = strstr(doc, "\"id\":1,"),
             *p2 = strstr(doc, "\"id\":3,"), *pd = strstr(doc, "\"id\":-1,");
  CHECK(p1 && p0 && p2 && pd);
  CHECK(p1 < p0 && p0 < p2 && pd < p2);
  CHECK(has(p1, "\"state\":\"graphed\",\"reason\":null,\"host_ns\":{\"launch_mean\":200.0,"
                "\"replay_mean\":50.0},\"saved_ns_est\":450.0"));
  CHECK(has(p1, "\"replays\":3,\"launches_replayed\":7"));
  CHECK(has(doc, "\"state\":\"demoted\",\"reason\":\"replay does not pay\""));
  CHECK(has(doc, "\"id\":4,"));
  CHECK(has(doc, "\"state\":\"evicted\",\"reason\":\"graph cache full"));
  CHECK(has(doc, "\"state\":\"learning\",\"reason\":null"));
  CHECK(has(pd, "\"length\":1,\"seen\":2,\"replays\":0,\"launches_replayed\":0,\"state\":\"denied\""));
  CHECK(has(doc, "{\"position\":0,\"node\":\"kernel\","
                 "\"name\":\"_Z4stepPfi\",\"demangled\":\"_Z4stepPfi\",\"path\":\"runtime\","
                 "\"cudnn_call\":null,\"grid\":[4,1,1],\"block\":[128,1,1],\"shmem\":16,"
                 "\"param_sizes\":[8,4],\"varied\":[]}"));
  CHECK(has(doc, "\"path\":\"cudnn\",\"cudnn_call\":\"cudnnConvolutionForward\""));
  free(doc);

  /* Truncation: the two largest savings are kept. */
  ag__config.dump_max_seq = 2;
  n = ag__dump_render(t, 100.0, AG_DUMP_EXIT, &doc);
  CHECK(n > 0 && doc != NULL);
  CHECK(has(doc, "\"truncated\":true,\"sequences_omitted\":3"));
  CHECK(has(doc, "\"id\":2,"));
  CHECK(!has(doc, "\"id\":3,"));
  free(doc);

  /* Without a launch cost the estimates are unknown. */
  ag__config.dump_max_seq = 1000;
  n = ag__dump_render(t, 0, AG_DUMP_INTERVAL, &doc);
  CHECK(n > 0 && doc != NULL);
  CHECK(has(doc, "\"written_at\":\"interval\""));
  CHECK(has(doc, "\"launch_mean\":null,\"replay_mean\":50.0},\"saved_ns_est\":0.0"));
  free(doc);
  ag__seqtab_free(t);
  return 0;
}
