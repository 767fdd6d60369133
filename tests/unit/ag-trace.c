/* ag-trace — the trace recorder and writer (src/trace.c), driven through its hooks as the engine
 * calls them: the document is valid JSON (checked by a strict parser here), names are escaped
 * and bytes outside ASCII replaced, slices are written sorted with the enclosing held run first,
 * the cap keeps exactly AUTOGRAPH_TRACE_MAX_EVENTS events and ends with "trace truncated" and the
 * number dropped, recording stops once written, demotion reasons are copied (the engine's buffer
 * may be on its stack) within a fixed table, a forked child writes nothing, and the file is
 * written through path.tmp. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "stats.h"
#include "trace.h"

/* ---- a strict JSON parser (RFC 8259): returns the end of the value, or NULL ---------------- */

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
  return p;
}

static const char *value(const char *p, int depth);

static const char *string(const char *p) {
  if (*p++ != '"') return NULL;
  for (;;) {
    unsigned char c = (unsigned char)*p++;
    if (c == '"') return p;
    if (c < 0x20 || c >= 0x80) return NULL; /* the writer promises ASCII */
    if (c == '\\') {
      c = (unsigned char)*p++;
      if (c == 'u') {
        for (int i = 0; i < 4; i++, p++)
          if (!strchr("0123456789abcdefABCDEF", *p) || !*p) return NULL;
      } else if (!strchr("\"\\/bfnrt", c) || !c) {
        return NULL;
      }
    }
  }
}

static const char *number(const char *p) {
  const char *s = p;
  if (*p == '-') p++;
  if (*p == '0') p++;
  else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
  else return NULL;
  if (*p == '.') {
    if (!(*++p >= '0' && *p <= '9')) return NULL;
    while (*p >= '0' && *p <= '9') p++;
  }
  return p > s ? p : NULL;
}

static const char *value(const char *p, int depth) {
  if (depth > 32) return NULL;
  p = ws(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    int obj = *p == '{';
    p = ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
      if (obj) {
        if (!(p = string(ws(p)))) return NULL;
        p = ws(p);
        if (*p++ != ':') return NULL;
      }
      if (!(p = value(p, depth + 1))) return NULL;
      p = ws(p);
      if (*p == ',') {
        p++;
        continue;
      }
      return *p == close ? p + 1 : NULL;
    }
  }
  if (*p == '"') return string(p);
  if (!strncmp(p, "true", 4)) return p + 4;
  if (!strncmp(p, "false", 5)) return p + 5;
  if (!strncmp(p, "null", 4)) return p + 4;
  return number(p);
}

static void check_json(const char *doc) {
  const char *end = value(doc, 0);
  if (!end || *ws(end)) {
    fprintf(stderr, "invalid JSON near offset %ld:\n%s\n", end ? (long)(end - doc) : -1L, doc);
    CHECK(!"the trace is valid JSON");
  }
}

/* ---- helpers ------------------------------------------------------------------------------- */

static char dir[] = "/tmp/ag-trace-XXXXXX";

/* Writes the trace through ag__trace_write_fd and returns it (malloc'd, NUL-terminated). */
static char *render(void) {
  char path[64];
  size_t len;
  snprintf(path, sizeof path, "%s/fd.json", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK_INT(ag__trace_write_fd(fd), ==, 0);
  close(fd);
  unsigned char *b = check_read_file(path, 1, &len);
  char *s = realloc(b, len + 1);
  CHECK(s);
  s[len] = 0;
  check_json(s);
  return s;
}

static int count(const char *doc, const char *s) {
  int n = 0;
  for (const char *p = doc; (p = strstr(p, s)) != NULL; p += strlen(s)) n++;
  return n;
}

int main(void) {
  ag_seq_t s;
  uint64_t dropped, t;
  char *doc;

  CHECK(mkdtemp(dir));
  memset(&s, 0, sizeof s);
  s.id = 3, s.n = 2, s.key.hash = 0x00ab00cd00ef0012ull;

  /* A cap of 4: a replayed held run (2 events), a flushed one (2), then two that are dropped. */
  CHECK_INT(ag__trace_open(4), ==, 0);
  CHECK_INT(ag__trace_armed, ==, 1);
  ag__trace_hold((void *)0x10);
  ag__trace_cause("api \"quoted\"\\\n\x01");
  t = ag__now_ns();
  ag__trace_replay((void *)0x10, &s, 2, t, t + 1500, 1, 0);
  ag__trace_hold((void *)0x1);
  ag__trace_flush((void *)0x1, 2, AG_FB_MISMATCH, ag__now_ns(), 0, NULL);
  CHECK_INT(ag__trace_count(&dropped), ==, 4);
  CHECK_INT(dropped, ==, 0);
  {
    char why[64]; /* the engine formats reasons on its stack */
    snprintf(why, sizeof why, "graph path failed (CUDA error %d)", 700);
    ag__trace_demote(&s, why);
    memset(why, 'x', sizeof why - 1);
  }
  ag__trace_evict(&s);
  CHECK_INT(ag__trace_count(&dropped), ==, 4);
  CHECK_INT(dropped, ==, 2);
  doc = render();
  CHECK(strstr(doc, "{\"traceEvents\":[") == doc);
  CHECK(strstr(doc, "\"displayTimeUnit\":\"ns\""));
  CHECK(strstr(doc, "\"cause\":\"api \\\"quoted\\\"\\\\\\n\\u0001\""));
  CHECK(strstr(doc, "\"name\":\"stream 0x10\""));
  CHECK(strstr(doc, "\"name\":\"stream 0x1 (legacy default stream)\""));
  CHECK(strstr(doc, "\"name\":\"autograph engine\""));
  CHECK(strstr(doc, "\"cause\":\"mismatch\",\"fallback\":\"mismatch\""));
  CHECK(strstr(doc, "\"seq\":3,\"hash\":\"00ab00cd00ef0012\",\"launches\":2,\"updates\":1"));
  CHECK(strstr(doc, "\"dur\":1.500"));
  /* The held run was recorded after its replay but encloses it: it is written first. */
  CHECK(strstr(doc, "\"name\":\"held\"") && strstr(doc, "\"name\":\"replay\""));
  CHECK(strstr(doc, "\"name\":\"held\"") < strstr(doc, "\"name\":\"replay\""));
  CHECK_INT(count(doc, "\"ph\":\"X\""), ==, 4);
  CHECK_INT(count(doc, "\"name\":\"demote\""), ==, 0);
  CHECK(strstr(doc, "\"name\":\"trace truncated\""));
  CHECK(strstr(doc, "\"args\":{\"dropped\":2,\"max_events\":4}}\n]"));
  CHECK(strstr(doc, "\"recorded_events\":4,\"dropped_events\":2"));
  free(doc);
  /* Written means closed: nothing more is recorded. */
  ag__trace_hold((void *)0x10);
  ag__trace_flush((void *)0x10, 1, AG_FB_FLUSHED, ag__now_ns(), 0, NULL);
  CHECK_INT(ag__trace_count(&dropped), ==, 4);
  CHECK_INT(dropped, ==, 2);

  /* Reasons are copied into a fixed table; names with bytes outside ASCII stay valid JSON. */
  CHECK_INT(ag__trace_open(1000), ==, 0);
  {
    char why[64];
    snprintf(why, sizeof why, "caf\xc3\xa9 \"reason\"");
    ag__trace_demote(&s, why);
    for (int i = 0; i < 40; i++) {
      snprintf(why, sizeof why, "reason %d", i);
      ag__trace_demote(&s, why);
    }
    ag__trace_demote(&s, "reason 0"); /* a known one is still found */
  }
  ag__trace_hold((void *)0x20);
  ag__trace_cause_fallback(AG_FB_DENIED);
  ag__trace_flush((void *)0x20, 5, AG_FB_FLUSHED, ag__now_ns(), 719, NULL);
  ag__trace_hold((void *)0x20);
  ag__trace_flush((void *)0x20, 6, AG_FB_FLUSHED, ag__now_ns(), 0, NULL);
  t = ag__now_ns();
  ag__trace_build((void *)0x30, &s, 2, t, 999);
  /* A run in chunks: each chunk's replay ends a held slice and the run is held again after it;
   * a run whose last entries all went in chunks ends with no event. */
  ag__trace_hold((void *)0x40);
  ag__trace_replay((void *)0x40, &s, 3, ag__now_ns(), ag__now_ns(), 0, 1);
  ag__trace_replay((void *)0x40, &s, 4, ag__now_ns(), ag__now_ns(), 0, 1);
  ag__trace_replay((void *)0x40, &s, 5, ag__now_ns(), ag__now_ns(), 0, 0);
  ag__trace_hold((void *)0x50);
  ag__trace_replay((void *)0x50, &s, 7, ag__now_ns(), ag__now_ns(), 0, 1);
  ag__trace_unhold((void *)0x50);
  doc = render();
  CHECK_INT(count(doc, "\"cause\":\"chunk complete\""), ==, 3);
  CHECK_INT(count(doc, "\"launches\":5,\"outcome\":\"replay\",\"cause\":\"sequence complete\""), ==, 1);
  CHECK(strstr(doc, "\"reason\":\"caf?? \\\"reason\\\"\""));
  CHECK_INT(count(doc, "\"reason\":\"reason 0\""), ==, 2);
  CHECK(strstr(doc, "\"reason\":\"reason 30\""));
  CHECK(!strstr(doc, "\"reason\":\"reason 31\"")); /* 32 kept: the first one and 31 more */
  CHECK_INT(count(doc, "reason not kept"), ==, 9);
  CHECK(strstr(doc, "\"cause\":\"launch not holdable (denied)\",\"fallback\":\"flushed\","
                    "\"cuda_error\":719"));
  /* A flush of reason "flushed" without a cause set is called by its reason. */
  CHECK(strstr(doc, "\"launches\":6,\"cause\":\"flushed\""));
  CHECK(strstr(doc, "\"ok\":false,\"cuda_error\":999"));
  CHECK_INT(count(doc, "\"name\":\"held\""), ==, 2 + 3 + 1);
  CHECK(!strstr(doc, "trace truncated"));
  CHECK(strstr(doc, "\"dropped_events\":0"));
  free(doc);

  /* A forked child never writes. */
  char path[96], tmp[100];
  snprintf(path, sizeof path, "%s/t.json", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  snprintf(ag__config.trace_path, sizeof ag__config.trace_path, "%s", path);
  CHECK_INT(ag__trace_open(10), ==, 0);
  ag__trace_hold((void *)0x10);
  ag__trace_flush((void *)0x10, 1, AG_FB_FLUSHED, ag__now_ns(), 0, NULL);
  ag__trace_atfork_child();
  CHECK_INT(ag__trace_armed, ==, 0);
  CHECK_INT(ag__trace_count(NULL), ==, 0);
  ag__stats.families[AG_FAM_LAUNCH] = 1; /* as if this process had used CUDA */
  ag__trace_write();
  CHECK(access(path, F_OK) != 0);

  /* The parent's write: through path.tmp, renamed. */
  CHECK_INT(ag__trace_open(10), ==, 0);
  ag__trace_hold((void *)0x10);
  ag__trace_flush((void *)0x10, 1, AG_FB_FLUSHED, ag__now_ns(), 0, NULL);
  ag__trace_write();
  CHECK(access(tmp, F_OK) != 0);
  size_t len;
  unsigned char *b = check_read_file(path, 10, &len);
  doc = realloc(b, len + 1);
  doc[len] = 0;
  check_json(doc);
  CHECK_INT(count(doc, "\"name\":\"flush\""), ==, 1);
  free(doc);
  unlink(path);
  snprintf(path, sizeof path, "%s/fd.json", dir);
  unlink(path);
  rmdir(dir);
  printf("ag-trace: ok\n");
  return 0;
}
