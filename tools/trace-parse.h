/* trace-parse.h — a streaming reader of Chrome trace JSON as torch.profiler exports it.
 *
 * Contract: ag__trace_parse() reads one JSON document from a reader (a file, plain or gzip,
 * or a memory buffer, plain or gzip: recognised by the gzip magic, not by the file name) and
 * calls `fn` once per trace event, in file order, with the fields the predictor needs. It
 * never holds the document in memory: bytes are pulled through a fixed window, strings are
 * decoded into a buffer bounded by the limits, and nesting is tracked with an explicit stack
 * bounded by `max_depth` (no recursion), so any input — truncated, hostile, endless — ends in
 * either success or one error with a byte offset, never in a crash or unbounded memory.
 *
 * The document is either an object with a "traceEvents" array (the JSON Object Format that
 * Kineto writes) or a bare array of events (the JSON Array Format). Anything else that is
 * valid JSON is "not a Chrome trace". Events are objects; within them the reader keeps name,
 * cat, ph, ts, dur (microseconds, kept as integer nanoseconds, exact for the "123.456" form
 * Kineto prints), pid and tid (numbers, or strings: then a hash of the string), and from
 * "args": correlation, External id, stream, device, "shared memory", grid and block (arrays
 * of three integers). Other members are checked for syntax and skipped. Strings are decoded
 * to UTF-8; an escaped lone surrogate half and an escaped U+0000 (\u0000) become U+FFFD, so a
 * delivered string never holds a NUL before its end.
 *
 * Functions return 0 or -AG_E… and fill an ag_trace_err_t: `msg` says what went wrong,
 * `offset` is the byte offset in the JSON text (after decompression) and, for gzip input,
 * `gz_offset` is the offset in the compressed file where the problem was seen.
 */
#ifndef AG_TRACE_PARSE_H
#define AG_TRACE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "ag.h"

/* What kind of failure (so the caller can word it; the message says the rest). */
enum ag_trace_errkind {
  AG_TRACE_OK,
  AG_TRACE_EIO,       /* the file cannot be opened or read */
  AG_TRACE_EGZIP,     /* gzip data corrupt or truncated */
  AG_TRACE_ESYNTAX,   /* not JSON (or truncated JSON) */
  AG_TRACE_ELIMIT,    /* a size or depth limit was hit */
  AG_TRACE_ENOTTRACE, /* valid JSON, but not a Chrome trace */
  AG_TRACE_ESTOP,     /* the callback asked to stop */
  AG_TRACE_ENOMEM,
};

typedef struct ag_trace_err {
  int kind;           /* enum ag_trace_errkind */
  uint64_t offset;    /* byte offset in the JSON text */
  int64_t gz_offset;  /* byte offset in the compressed input, or -1 when not gzip */
  char msg[256];
} ag_trace_err_t;

typedef struct ag_trace_limits {
  uint64_t max_bytes;  /* JSON text (after decompression) read at most */
  size_t max_string;   /* longest string, decoded */
  int max_depth;       /* deepest nesting of arrays and objects */
  uint64_t max_events; /* events delivered at most */
} ag_trace_limits_t;

/* Defaults: 64 GiB of text, 1 MiB strings, depth 64, 2^31 events. */
void ag__trace_limits_default(ag_trace_limits_t *lim);

/* Which optional fields an event carried (ag_trace_event_t.has). */
enum {
  AG_TEV_TS = 1 << 0, AG_TEV_DUR = 1 << 1, AG_TEV_PID = 1 << 2, AG_TEV_TID = 1 << 3,
  AG_TEV_CORR = 1 << 4, AG_TEV_EXT = 1 << 5, AG_TEV_STREAM = 1 << 6, AG_TEV_DEVICE = 1 << 7,
  AG_TEV_SHMEM = 1 << 8, AG_TEV_GRID = 1 << 9, AG_TEV_BLOCK = 1 << 10,
};

typedef struct ag_trace_event {
  uint64_t offset;       /* byte offset of the event's '{' */
  const char *name;      /* decoded, NUL-terminated ("" when absent); valid during the call */
  size_t name_len;
  char cat[64];          /* truncated to 63 bytes */
  char ph[8];
  unsigned has;          /* AG_TEV_* */
  int64_t ts_ns, dur_ns;
  int64_t pid, tid;
  int64_t correlation, external_id, stream, device, shmem;
  uint32_t grid[3], block[3];
} ag_trace_event_t;

typedef struct ag_trace_reader ag_trace_reader_t;

/* Opens a file (plain or gzip). Returns 0 or -AG_ENOENT (err filled). */
int ag__trace_open_file(ag_trace_reader_t **out, const char *path, ag_trace_err_t *err);

/* Reads from memory (plain or gzip); the buffer must outlive the reader. Returns 0 or
 * -AG_ENOMEM. */
int ag__trace_open_mem(ag_trace_reader_t **out, const void *data, size_t size,
                       ag_trace_err_t *err);

/* Nonzero when the input is gzip-compressed (known after opening). */
int ag__trace_is_gzip(const ag_trace_reader_t *r);

void ag__trace_close(ag_trace_reader_t *r);

/* Parses the whole document, calling fn for every event (fn returns 0 to go on, nonzero to
 * stop: the parse then fails with AG_TRACE_ESTOP). Returns 0 or -AG_EINVAL / -AG_ENOMEM /
 * -AG_ETRUNC with err filled. */
int ag__trace_parse(ag_trace_reader_t *r, const ag_trace_limits_t *lim,
                    int (*fn)(const ag_trace_event_t *ev, void *arg), void *arg,
                    ag_trace_err_t *err);

#endif
