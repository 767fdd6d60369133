/* fuzz-trace.c — fuzz target for the profiler-trace reader (tools/trace-parse.c), the parser
 * behind autograph-predict: any bytes, plain or gzip (recognised by the magic, as for files).
 *
 * Properties checked whatever the input: the parse ends (success or one error) within the
 * limits; every delivered event has a NUL-terminated name of the stated length, a terminated
 * cat and ph, and flags only for fields it carries; events arrive at increasing byte offsets
 * inside the text read so far; a failure carries a kind and a message, a success none. Limits
 * are small here (64 KiB strings, depth 32, 4 MiB of text) so that a gzip bomb or a deep
 * nesting is stopped by the limit, which is itself a property: the parse never exceeds them.
 */
#include <string.h>

#include "fuzz.h"
#include "../../tools/trace-parse.h" /* the fuzz rules name no include folder for tools/ */

typedef struct seen {
  uint64_t events, last_offset;
  const ag_trace_limits_t *lim;
} seen_t;

static int on_event(const ag_trace_event_t *e, void *arg) {
  seen_t *s = arg;
  FUZZ_ASSERT(e->name != NULL);
  FUZZ_ASSERT(strlen(e->name) == e->name_len);
  FUZZ_ASSERT(e->name_len <= s->lim->max_string);
  FUZZ_ASSERT(memchr(e->cat, '\0', sizeof e->cat) != NULL);
  FUZZ_ASSERT(memchr(e->ph, '\0', sizeof e->ph) != NULL);
  FUZZ_ASSERT((e->has & ~0x7ffu) == 0);
  FUZZ_ASSERT(s->events == 0 || e->offset > s->last_offset);
  FUZZ_ASSERT(e->offset < s->lim->max_bytes);
  s->events++;
  s->last_offset = e->offset;
  /* A callback that stops must stop the parse: stop at the 1000th event. */
  return s->events == 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ag_trace_reader_t *r;
  ag_trace_err_t err;
  ag_trace_limits_t lim = {.max_bytes = 4u << 20, .max_string = 64u << 10, .max_depth = 32,
                           .max_events = 100000};
  seen_t s = {0, 0, &lim};
  if (ag__trace_open_mem(&r, data, size, &err)) return 0;
  int rc = ag__trace_parse(r, &lim, on_event, &s, &err);
  if (rc) {
    FUZZ_ASSERT(err.kind != AG_TRACE_OK);
    FUZZ_ASSERT(err.msg[0] != '\0');
    FUZZ_ASSERT(memchr(err.msg, '\0', sizeof err.msg) != NULL);
    FUZZ_ASSERT(err.kind != AG_TRACE_ESTOP || s.events == 1000);
    FUZZ_ASSERT(ag__trace_is_gzip(r) || err.gz_offset == -1);
  } else {
    FUZZ_ASSERT(err.kind == AG_TRACE_OK);
    FUZZ_ASSERT(s.events < 1000);
  }
  ag__trace_close(r);
  return 0;
}
