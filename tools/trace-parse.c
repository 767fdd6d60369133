/* trace-parse.c — the streaming Chrome trace reader (see trace-parse.h).
 *
 * Two layers. The reader turns a file or a buffer, plain or gzip (zlib, every member of a
 * multi-member file), into a window of JSON text refilled on demand; it knows the offset of
 * every byte, and for gzip input how much compressed input it has consumed, so that a
 * truncated or corrupt file is reported where it went wrong. The parser is a state machine
 * over that window with an explicit stack (kind and role of every open array or object): the
 * role says what a value means to a Chrome trace (the traceEvents array, an event, its args,
 * a grid or block triple), so the fields of an event are picked up as they stream past and
 * the event is delivered when its object closes. Nothing is recursive and every buffer is
 * bounded by the limits, so hostile input costs at most the limits and ends in one error.
 */
#include "trace-parse.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define WINDOW (64u << 10)

struct ag_trace_reader {
  int fd;                      /* -1: memory input */
  const uint8_t *mem;          /* memory input */
  size_t mem_len;
  int gz, zinit, zdone;
  z_stream z;
  uint8_t *in;                 /* compressed input read from the file */
  size_t in_len, in_pos;       /* plain files: bytes read ahead when sniffing the magic */
  int raw_eof;
  uint64_t raw_used;           /* compressed bytes consumed */
  uint8_t *buf;                /* the text window */
  const uint8_t *text;         /* what the window shows (buf, or the memory itself) */
  size_t pos, len;
  uint64_t base;               /* offset of text[0] */
  int eof;
};

static void seterr(ag_trace_err_t *err, int kind, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void seterr(ag_trace_err_t *err, int kind, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && err->kind == AG_TRACE_OK) { /* the first error is the one that matters */
    err->kind = kind;
    err->offset = off;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  }
  va_end(ap);
}

void ag__trace_limits_default(ag_trace_limits_t *lim) {
  lim->max_bytes = 64ull << 30;
  lim->max_string = 1u << 20;
  lim->max_depth = 64;
  lim->max_events = 1ull << 31;
}

/* ---- the reader --------------------------------------------------------------------------- */

static ag_trace_reader_t *reader_new(void) {
  ag_trace_reader_t *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->fd = -1;
  if (!(r->buf = malloc(WINDOW)) || !(r->in = malloc(WINDOW))) {
    free(r->buf), free(r);
    return NULL;
  }
  r->text = r->buf;
  return r;
}

static int gz_start(ag_trace_reader_t *r) {
  r->gz = 1;
  if (inflateInit2(&r->z, 15 + 32) != Z_OK) return -AG_ENOMEM; /* 32: gzip or zlib header */
  r->zinit = 1;
  return 0;
}

static void init_err(ag_trace_err_t *err) {
  if (!err) return;
  memset(err, 0, sizeof *err);
  err->gz_offset = -1;
}

int ag__trace_open_file(ag_trace_reader_t **out, const char *path, ag_trace_err_t *err) {
  ag_trace_reader_t *r;
  ssize_t n;
  *out = NULL;
  init_err(err);
  if (!(r = reader_new())) {
    seterr(err, AG_TRACE_ENOMEM, 0, "out of memory");
    return -AG_ENOMEM;
  }
  if ((r->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
    seterr(err, AG_TRACE_EIO, 0, "cannot open: %s", strerror(errno));
    ag__trace_close(r);
    return -AG_ENOENT;
  }
  /* Sniff the magic: the first chunk is kept and served as text or as compressed input. */
  do n = read(r->fd, r->in, WINDOW); while (n < 0 && errno == EINTR);
  if (n < 0) {
    seterr(err, AG_TRACE_EIO, 0, "cannot read: %s", strerror(errno));
    ag__trace_close(r);
    return -AG_ENOENT;
  }
  r->in_len = (size_t)n;
  if (n == 0) r->raw_eof = 1;
  if (n >= 2 && r->in[0] == 0x1f && r->in[1] == 0x8b) {
    if (gz_start(r)) {
      seterr(err, AG_TRACE_ENOMEM, 0, "out of memory");
      ag__trace_close(r);
      return -AG_ENOMEM;
    }
    r->z.next_in = r->in;
    r->z.avail_in = (uInt)r->in_len;
  }
  *out = r;
  return 0;
}

int ag__trace_open_mem(ag_trace_reader_t **out, const void *data, size_t size,
                       ag_trace_err_t *err) {
  ag_trace_reader_t *r;
  *out = NULL;
  init_err(err);
  if (!(r = reader_new())) {
    seterr(err, AG_TRACE_ENOMEM, 0, "out of memory");
    return -AG_ENOMEM;
  }
  r->mem = data;
  r->mem_len = size;
  r->raw_eof = 1;
  if (size >= 2 && r->mem[0] == 0x1f && r->mem[1] == 0x8b) {
    if (gz_start(r)) {
      seterr(err, AG_TRACE_ENOMEM, 0, "out of memory");
      ag__trace_close(r);
      return -AG_ENOMEM;
    }
    /* zlib takes avail_in as a uInt: a larger buffer is fed in slices (see fill). */
    r->z.next_in = (Bytef *)(uintptr_t)r->mem;
    r->z.avail_in = size > (size_t)UINT32_MAX ? UINT32_MAX : (uInt)size;
    r->in_pos = r->z.avail_in; /* memory consumed into z so far */
  }
  *out = r;
  return 0;
}

int ag__trace_is_gzip(const ag_trace_reader_t *r) { return r && r->gz; }

void ag__trace_close(ag_trace_reader_t *r) {
  if (!r) return;
  if (r->fd >= 0) close(r->fd);
  if (r->zinit) inflateEnd(&r->z);
  free(r->buf), free(r->in), free(r);
}

/* More compressed input for zlib; returns 0 or -1 (err filled). */
static int raw_more(ag_trace_reader_t *r, ag_trace_err_t *err) {
  if (r->fd < 0) {
    size_t left = r->mem_len - r->in_pos;
    if (!left) {
      r->raw_eof = 1;
      return 0;
    }
    r->z.next_in = (Bytef *)(uintptr_t)(r->mem + r->in_pos);
    r->z.avail_in = left > (size_t)UINT32_MAX ? UINT32_MAX : (uInt)left;
    r->in_pos += r->z.avail_in;
    return 0;
  }
  ssize_t n;
  do n = read(r->fd, r->in, WINDOW); while (n < 0 && errno == EINTR);
  if (n < 0) {
    seterr(err, AG_TRACE_EIO, r->base + r->len, "cannot read: %s", strerror(errno));
    return -1;
  }
  if (n == 0) r->raw_eof = 1;
  r->z.next_in = r->in;
  r->z.avail_in = (uInt)n;
  return 0;
}

/* Makes text[pos] available. Returns 1, 0 at the end of the text, -1 on error. */
static int fill(ag_trace_reader_t *r, const ag_trace_limits_t *lim, ag_trace_err_t *err) {
  if (r->pos < r->len) return 1;
  if (r->eof) return 0;
  r->base += r->len;
  r->pos = r->len = 0;
  if (!r->gz) {
    if (r->fd < 0) {
      /* Memory: the whole buffer is the one window. */
      if (r->base == 0 && r->mem_len) {
        r->text = r->mem;
        r->len = r->mem_len;
      } else {
        r->eof = 1;
        return 0;
      }
    } else if (r->in_pos < r->in_len) {
      r->text = r->in + r->in_pos;
      r->len = r->in_len - r->in_pos;
      r->in_pos = r->in_len;
    } else {
      ssize_t n;
      do n = read(r->fd, r->buf, WINDOW); while (n < 0 && errno == EINTR);
      if (n < 0) {
        seterr(err, AG_TRACE_EIO, r->base, "cannot read: %s", strerror(errno));
        return -1;
      }
      r->text = r->buf;
      r->len = (size_t)n;
    }
  } else {
    r->text = r->buf;
    r->z.next_out = r->buf;
    r->z.avail_out = WINDOW;
    while (r->z.avail_out == WINDOW) {
      if (r->z.avail_in == 0 && !r->raw_eof && raw_more(r, err)) return -1;
      if (r->zdone) {
        /* A member ended: stop at the end of input, else the next member follows. */
        if (r->z.avail_in == 0 && r->raw_eof) break;
        if (inflateReset(&r->z) != Z_OK) {
          seterr(err, AG_TRACE_EGZIP, r->base, "gzip: cannot start the next member");
          err->gz_offset = (int64_t)r->raw_used;
          return -1;
        }
        r->zdone = 0;
      }
      uInt before = r->z.avail_in;
      int zr = inflate(&r->z, Z_NO_FLUSH);
      r->raw_used += before - r->z.avail_in;
      if (zr == Z_STREAM_END) {
        r->zdone = 1;
        continue;
      }
      if (zr == Z_OK) continue;
      if (zr == Z_BUF_ERROR && r->z.avail_in == 0 && !r->raw_eof) continue;
      if (err) {
        if (zr == Z_BUF_ERROR && r->z.avail_in == 0)
          seterr(err, AG_TRACE_EGZIP, r->base + (WINDOW - r->z.avail_out),
                 "truncated gzip data: the compressed input ends at byte %llu inside a member",
                 (unsigned long long)r->raw_used);
        else
          seterr(err, AG_TRACE_EGZIP, r->base + (WINDOW - r->z.avail_out),
                 "corrupt gzip data at compressed byte %llu (%s)",
                 (unsigned long long)r->raw_used, r->z.msg ? r->z.msg : "zlib error");
        err->gz_offset = (int64_t)r->raw_used;
      }
      return -1;
    }
    r->len = WINDOW - r->z.avail_out;
  }
  if (r->len == 0) {
    r->eof = 1;
    return 0;
  }
  if (r->base + r->len > lim->max_bytes) {
    seterr(err, AG_TRACE_ELIMIT, lim->max_bytes, "the JSON text is longer than the limit of %llu bytes",
           (unsigned long long)lim->max_bytes);
    return -1;
  }
  return 1;
}

/* ---- the parser ---------------------------------------------------------------------------- */

enum { K_OTHER, K_TRACEEVENTS, K_NAME, K_CAT, K_PH, K_TS, K_DUR, K_PID, K_TID, K_ARGS,
       K_CORR, K_EXT, K_STREAM, K_DEVICE, K_SHMEM, K_GRID, K_BLOCK };
enum { R_OTHER, R_TOP, R_EVENTS, R_EVENT, R_ARGS, R_GRID, R_BLOCK };
enum { C_OBJ, C_ARR };

typedef struct level {
  uint8_t kind, role, key; /* key: the member being read (objects) */
  uint32_t index;          /* elements so far (arrays) */
  uint32_t dims[3];        /* grid / block being read */
  int dims_ok;             /* every element so far was an integer */
} level_t;

typedef struct parser {
  ag_trace_reader_t *r;
  const ag_trace_limits_t *lim;
  ag_trace_err_t *err;
  int (*fn)(const ag_trace_event_t *ev, void *arg);
  void *arg;
  level_t *stack;
  int depth;
  char *s;                 /* the string being decoded */
  size_t slen, scap;
  char *name;              /* the current event's name */
  size_t name_cap;
  ag_trace_event_t ev;
  uint64_t events;
  int seen_events;         /* a traceEvents array (or a top-level array) was found */
  int top_kind;            /* -1: a scalar at the top */
} parser_t;

static inline uint64_t off_here(parser_t *p) { return p->r->base + p->r->pos; }

/* Next byte, or -1 at the end, -2 on error. */
static inline int next_byte(parser_t *p) {
  ag_trace_reader_t *r = p->r;
  if (AG_UNLIKELY(r->pos >= r->len)) {
    int f = fill(r, p->lim, p->err);
    if (f <= 0) return f == 0 ? -1 : -2;
  }
  return r->text[r->pos++];
}

static inline int peek_byte(parser_t *p) {
  ag_trace_reader_t *r = p->r;
  if (AG_UNLIKELY(r->pos >= r->len)) {
    int f = fill(r, p->lim, p->err);
    if (f <= 0) return f == 0 ? -1 : -2;
  }
  return r->text[r->pos];
}

static int syntax(parser_t *p, uint64_t off, int c, const char *what) {
  if (c == -2) return -AG_EINVAL; /* the reader said why */
  if (c == -1)
    seterr(p->err, AG_TRACE_ESYNTAX, off, "not JSON: the input ends at byte %llu while reading %s",
           (unsigned long long)off, what);
  else if (c >= 0x20 && c < 0x7f)
    seterr(p->err, AG_TRACE_ESYNTAX, off, "not JSON: unexpected '%c' at byte %llu (expected %s)", c,
           (unsigned long long)off, what);
  else
    seterr(p->err, AG_TRACE_ESYNTAX, off, "not JSON: unexpected byte 0x%02x at byte %llu (expected %s)",
           (unsigned)c & 0xff, (unsigned long long)off, what);
  return -AG_EINVAL;
}

/* Skips white space; returns the next byte without consuming it (or -1, -2). */
static int skip_ws(parser_t *p) {
  for (;;) {
    int c = peek_byte(p);
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c;
    p->r->pos++;
  }
}

static int s_put(parser_t *p, const char *bytes, size_t n, uint64_t start) {
  if (p->slen + n > p->lim->max_string) {
    seterr(p->err, AG_TRACE_ELIMIT, start, "a string at byte %llu is longer than the limit of %zu bytes",
           (unsigned long long)start, p->lim->max_string);
    return -AG_EINVAL;
  }
  if (p->slen + n + 1 > p->scap) {
    size_t cap = p->scap ? p->scap : 256;
    while (cap < p->slen + n + 1) cap *= 2;
    char *grown = realloc(p->s, cap);
    if (!grown) {
      seterr(p->err, AG_TRACE_ENOMEM, start, "out of memory");
      return -AG_ENOMEM;
    }
    p->s = grown, p->scap = cap;
  }
  memcpy(p->s + p->slen, bytes, n);
  p->slen += n;
  p->s[p->slen] = '\0';
  return 0;
}

static int hex4(parser_t *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    uint64_t at = off_here(p);
    int c = next_byte(p);
    if (c >= '0' && c <= '9') v = v * 16 + (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v = v * 16 + (unsigned)(c - 'A' + 10);
    else return syntax(p, at, c, "four hex digits after \\u");
  }
  *out = v;
  return 0;
}

/* Decodes a string whose opening quote was consumed into p->s. */
static int read_string(parser_t *p) {
  uint64_t start = off_here(p) - 1;
  p->slen = 0;
  if (s_put(p, "", 0, start)) return -AG_EINVAL;
  for (;;) {
    ag_trace_reader_t *r = p->r;
    /* Copy the run of plain bytes in the window at once. */
    if (r->pos < r->len) {
      size_t i = r->pos;
      while (i < r->len && r->text[i] != '"' && r->text[i] != '\\' && r->text[i] >= 0x20) i++;
      if (i > r->pos) {
        if (s_put(p, (const char *)r->text + r->pos, i - r->pos, start)) return -AG_EINVAL;
        r->pos = i;
      }
    }
    uint64_t at = off_here(p);
    int c = next_byte(p);
    if (c == '"') return 0;
    if (c < 0) return syntax(p, at, c, "the end of a string");
    if (c < 0x20) return syntax(p, at, c, "a string without raw control characters");
    if (c != '\\') {
      char b = (char)c;
      if (s_put(p, &b, 1, start)) return -AG_EINVAL;
      continue;
    }
    at = off_here(p);
    c = next_byte(p);
    char out[4];
    size_t n = 1;
    switch (c) {
    case '"': out[0] = '"'; break;
    case '\\': out[0] = '\\'; break;
    case '/': out[0] = '/'; break;
    case 'b': out[0] = '\b'; break;
    case 'f': out[0] = '\f'; break;
    case 'n': out[0] = '\n'; break;
    case 'r': out[0] = '\r'; break;
    case 't': out[0] = '\t'; break;
    case 'u': {
      unsigned u;
      if (hex4(p, &u)) return -AG_EINVAL;
      if (u >= 0xd800 && u < 0xdc00 && peek_byte(p) == '\\') {
        /* A surrogate pair; a lone half becomes U+FFFD below. */
        p->r->pos++;
        uint64_t at2 = off_here(p);
        int c2 = next_byte(p);
        unsigned lo;
        if (c2 != 'u') return syntax(p, at2, c2, "the low half of a surrogate pair");
        if (hex4(p, &lo)) return -AG_EINVAL;
        u = lo >= 0xdc00 && lo < 0xe000 ? 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00) : 0xfffd;
      } else if ((u >= 0xd800 && u < 0xe000) || u == 0) {
        /* A lone surrogate half has no code point; U+0000 would cut the C string the name
         * is delivered as (name_len would disagree with strlen). Both become U+FFFD. */
        u = 0xfffd;
      }
      if (u < 0x80) {
        out[0] = (char)u;
      } else if (u < 0x800) {
        out[0] = (char)(0xc0 | (u >> 6)), out[1] = (char)(0x80 | (u & 0x3f)), n = 2;
      } else if (u < 0x10000) {
        out[0] = (char)(0xe0 | (u >> 12)), out[1] = (char)(0x80 | ((u >> 6) & 0x3f));
        out[2] = (char)(0x80 | (u & 0x3f)), n = 3;
      } else {
        out[0] = (char)(0xf0 | (u >> 18)), out[1] = (char)(0x80 | ((u >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((u >> 6) & 0x3f)), out[3] = (char)(0x80 | (u & 0x3f)), n = 4;
      }
      break;
    }
    default: return syntax(p, at, c, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
    if (s_put(p, out, n, start)) return -AG_EINVAL;
  }
}

/* Appends byte c of a number to txt; returns 0 or -AG_EINVAL past 63 bytes. */
static int take(parser_t *p, char *txt, size_t *n, int c, uint64_t start) {
  if (*n == 63) {
    seterr(p->err, AG_TRACE_ELIMIT, start, "a number at byte %llu is longer than 63 characters",
           (unsigned long long)start);
    return -AG_EINVAL;
  }
  txt[(*n)++] = (char)c;
  p->r->pos++;
  return 0;
}

/* A number as JSON writes it. `txt` gets its text (it is never longer than 63 bytes: longer
 * numbers are refused, no trace needs them). */
static int read_number(parser_t *p, char txt[64]) {
  size_t n = 0;
  uint64_t start = off_here(p);
  int c, digits;
#define TAKE()                                           \
  do {                                                   \
    if (take(p, txt, &n, c, start)) return -AG_EINVAL;   \
    c = peek_byte(p);                                    \
  } while (0)
  c = peek_byte(p);
  if (c == '-') TAKE();
  if (c == '0') {
    TAKE();
  } else if (c >= '1' && c <= '9') {
    while (c >= '0' && c <= '9') TAKE();
  } else {
    return syntax(p, off_here(p), c, "a digit");
  }
  if (c == '.') {
    TAKE();
    for (digits = 0; c >= '0' && c <= '9'; digits++) TAKE();
    if (!digits) return syntax(p, off_here(p), c, "a digit after '.'");
  }
  if (c == 'e' || c == 'E') {
    TAKE();
    if (c == '+' || c == '-') TAKE();
    for (digits = 0; c >= '0' && c <= '9'; digits++) TAKE();
    if (!digits) return syntax(p, off_here(p), c, "a digit in the exponent");
  }
#undef TAKE
  if (c == -2) return -AG_EINVAL;
  txt[n] = '\0';
  return 0;
}

/* Microseconds as text → nanoseconds, exactly for plain decimals. Returns 0 or -1. */
static int number_ns(const char *t, int64_t *out) {
  if (!strpbrk(t, "eE")) {
    int neg = *t == '-';
    const char *q = t + neg;
    int64_t v = 0;
    int intdigits = 0;
    for (; *q >= '0' && *q <= '9'; q++, intdigits++) {
      if (intdigits >= 15) goto approx;
      v = v * 10 + (*q - '0');
    }
    v *= 1000;
    if (*q == '.') {
      int64_t scale = 100;
      for (q++; *q >= '0' && *q <= '9'; q++, scale /= 10) v += scale * (*q - '0');
    }
    *out = neg ? -v : v;
    return 0;
  }
approx:;
  double d = strtod(t, NULL) * 1000.0;
  if (!isfinite(d) || d > 9.2e18 || d < -9.2e18) return -1;
  *out = (int64_t)d;
  return 0;
}

/* An integer-valued number → int64. Returns 0 or -1 (not an integer, out of range). */
static int number_int(const char *t, int64_t *out) {
  if (!strpbrk(t, ".eE")) {
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
  }
  double d = strtod(t, NULL);
  if (!isfinite(d) || d != floor(d) || d > 9.2e18 || d < -9.2e18) return -1;
  *out = (int64_t)d;
  return 0;
}

static uint64_t hash_str(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
  return h;
}

static int classify_key(const level_t *l, const char *k) {
  switch (l->role) {
  case R_TOP: return !strcmp(k, "traceEvents") ? K_TRACEEVENTS : K_OTHER;
  case R_EVENT:
    if (!strcmp(k, "name")) return K_NAME;
    if (!strcmp(k, "cat")) return K_CAT;
    if (!strcmp(k, "ph")) return K_PH;
    if (!strcmp(k, "ts")) return K_TS;
    if (!strcmp(k, "dur")) return K_DUR;
    if (!strcmp(k, "pid")) return K_PID;
    if (!strcmp(k, "tid")) return K_TID;
    if (!strcmp(k, "args")) return K_ARGS;
    return K_OTHER;
  case R_ARGS:
    if (!strcmp(k, "correlation")) return K_CORR;
    if (!strcmp(k, "External id")) return K_EXT;
    if (!strcmp(k, "stream")) return K_STREAM;
    if (!strcmp(k, "device")) return K_DEVICE;
    if (!strcmp(k, "shared memory")) return K_SHMEM;
    if (!strcmp(k, "grid")) return K_GRID;
    if (!strcmp(k, "block")) return K_BLOCK;
    return K_OTHER;
  default: return K_OTHER;
  }
}

/* The role of a container opening here. */
static int new_role(parser_t *p, int kind) {
  if (p->depth == 0) {
    p->top_kind = kind;
    if (kind == C_ARR) {
      p->seen_events = 1;
      return R_EVENTS;
    }
    return R_TOP;
  }
  level_t *l = &p->stack[p->depth - 1];
  switch (l->role) {
  case R_TOP:
    if (l->key == K_TRACEEVENTS && kind == C_ARR) {
      p->seen_events = 1;
      return R_EVENTS;
    }
    return R_OTHER;
  case R_EVENTS: return kind == C_OBJ ? R_EVENT : R_OTHER;
  case R_EVENT: return l->key == K_ARGS && kind == C_OBJ ? R_ARGS : R_OTHER;
  case R_ARGS:
    if (kind == C_ARR && l->key == K_GRID) return R_GRID;
    if (kind == C_ARR && l->key == K_BLOCK) return R_BLOCK;
    return R_OTHER;
  default: return R_OTHER;
  }
}

static int push(parser_t *p, int kind, uint64_t at) {
  int role;
  if (p->depth >= p->lim->max_depth) {
    seterr(p->err, AG_TRACE_ELIMIT, at, "nesting deeper than %d levels at byte %llu",
           p->lim->max_depth, (unsigned long long)at);
    return -AG_EINVAL;
  }
  role = new_role(p, kind);
  level_t *l = &p->stack[p->depth++];
  memset(l, 0, sizeof *l);
  l->kind = (uint8_t)kind, l->role = (uint8_t)role;
  l->dims_ok = 1;
  if (role == R_EVENT) {
    memset(&p->ev, 0, sizeof p->ev);
    p->ev.offset = at;
    p->ev.name = "";
    if (p->name) p->name[0] = '\0';
  }
  return 0;
}

/* A scalar value: `str` is 1 for a string (in p->s), 0 for a number (its text in txt), -1 for
 * a literal (txt is then ""). */
static int scalar(parser_t *p, int str, const char *txt) {
  int64_t v;
  if (!p->depth) return 0;
  level_t *l = &p->stack[p->depth - 1];
  if (l->role == R_GRID || l->role == R_BLOCK) {
    if (str || l->index >= 3 || number_int(txt, &v) || v < 0 || v > UINT32_MAX) l->dims_ok = 0;
    else l->dims[l->index] = (uint32_t)v;
    return 0;
  }
  if (l->role == R_EVENT) {
    ag_trace_event_t *e = &p->ev;
    switch (l->key) {
    case K_NAME:
      if (str != 1) break;
      if (p->slen + 1 > p->name_cap) {
        char *grown = realloc(p->name, p->slen + 1);
        if (!grown) {
          seterr(p->err, AG_TRACE_ENOMEM, off_here(p), "out of memory");
          return -AG_ENOMEM;
        }
        p->name = grown, p->name_cap = p->slen + 1;
      }
      memcpy(p->name, p->s, p->slen + 1);
      e->name = p->name, e->name_len = p->slen;
      break;
    case K_CAT:
      if (str == 1) snprintf(e->cat, sizeof e->cat, "%s", p->s);
      break;
    case K_PH:
      if (str == 1) snprintf(e->ph, sizeof e->ph, "%s", p->s);
      break;
    case K_TS:
      if (!str && !number_ns(txt, &e->ts_ns)) e->has |= AG_TEV_TS;
      break;
    case K_DUR:
      if (!str && !number_ns(txt, &e->dur_ns)) e->has |= AG_TEV_DUR;
      break;
    case K_PID:
    case K_TID: {
      int64_t *dst = l->key == K_PID ? &e->pid : &e->tid;
      unsigned bit = l->key == K_PID ? AG_TEV_PID : AG_TEV_TID;
      if (str == 1) *dst = (int64_t)(hash_str(p->s, p->slen) >> 1), e->has |= bit;
      else if (!str && !number_int(txt, dst)) e->has |= bit;
      break;
    }
    default: break;
    }
    return 0;
  }
  if (l->role == R_ARGS && !str && !number_int(txt, &v)) {
    ag_trace_event_t *e = &p->ev;
    switch (l->key) {
    case K_CORR: e->correlation = v, e->has |= AG_TEV_CORR; break;
    case K_EXT: e->external_id = v, e->has |= AG_TEV_EXT; break;
    case K_STREAM: e->stream = v, e->has |= AG_TEV_STREAM; break;
    case K_DEVICE: e->device = v, e->has |= AG_TEV_DEVICE; break;
    case K_SHMEM: e->shmem = v, e->has |= AG_TEV_SHMEM; break;
    default: break;
    }
  }
  return 0;
}

/* Closes the innermost container. */
static int pop(parser_t *p) {
  level_t *l = &p->stack[--p->depth];
  if ((l->role == R_GRID || l->role == R_BLOCK) && l->dims_ok && l->index == 3) {
    uint32_t *dst = l->role == R_GRID ? p->ev.grid : p->ev.block;
    memcpy(dst, l->dims, sizeof l->dims);
    p->ev.has |= l->role == R_GRID ? AG_TEV_GRID : AG_TEV_BLOCK;
  }
  if (l->role == R_EVENT) {
    if (p->events >= p->lim->max_events) {
      seterr(p->err, AG_TRACE_ELIMIT, p->ev.offset, "more than %llu events",
             (unsigned long long)p->lim->max_events);
      return -AG_EINVAL;
    }
    p->events++;
    if (p->fn && p->fn(&p->ev, p->arg)) {
      seterr(p->err, AG_TRACE_ESTOP, p->ev.offset, "stopped at the event at byte %llu",
             (unsigned long long)p->ev.offset);
      return -AG_EINVAL;
    }
  }
  return 0;
}

static int literal(parser_t *p, const char *word) {
  for (const char *w = word; *w; w++) {
    uint64_t at = off_here(p);
    int c = next_byte(p);
    if (c != *w) return syntax(p, at, c, word);
  }
  return 0;
}

enum { S_VALUE, S_AFTER, S_OBJ_FIRST, S_ARR_FIRST, S_KEY };

static int run(parser_t *p) {
  int state = S_VALUE, c;
  char num[64];
  uint64_t at;
  for (;;) {
    switch (state) {
    case S_VALUE:
      c = skip_ws(p);
      at = off_here(p);
      if (c == '{' || c == '[') {
        p->r->pos++;
        if (push(p, c == '{' ? C_OBJ : C_ARR, at)) return -AG_EINVAL;
        state = c == '{' ? S_OBJ_FIRST : S_ARR_FIRST;
        break;
      }
      if (c == '"') {
        p->r->pos++;
        if (read_string(p) || scalar(p, 1, "")) return -AG_EINVAL;
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        if (read_number(p, num) || scalar(p, 0, num)) return -AG_EINVAL;
      } else if (c == 't' || c == 'f' || c == 'n') {
        if (literal(p, c == 't' ? "true" : c == 'f' ? "false" : "null") || scalar(p, -1, ""))
          return -AG_EINVAL;
      } else {
        if (p->depth == 0 && c == -1 && at == 0) {
          seterr(p->err, AG_TRACE_ESYNTAX, 0, "not JSON: the input is empty");
          return -AG_EINVAL;
        }
        return syntax(p, at, c, "a value");
      }
      if (p->depth == 0) p->top_kind = -1;
      state = S_AFTER;
      break;
    case S_AFTER:
      if (p->depth == 0) {
        c = skip_ws(p);
        if (c == -1) return 0;
        return syntax(p, off_here(p), c, "the end of the document");
      }
      c = skip_ws(p);
      at = off_here(p);
      if (p->stack[p->depth - 1].kind == C_OBJ) {
        if (c == ',') {
          p->r->pos++;
          state = S_KEY;
        } else if (c == '}') {
          p->r->pos++;
          if (pop(p)) return -AG_EINVAL;
        } else {
          return syntax(p, at, c, "',' or '}'");
        }
      } else {
        if (c == ',') {
          p->r->pos++;
          p->stack[p->depth - 1].index++;
          state = S_VALUE;
        } else if (c == ']') {
          p->r->pos++;
          p->stack[p->depth - 1].index++;
          if (pop(p)) return -AG_EINVAL;
        } else {
          return syntax(p, at, c, "',' or ']'");
        }
      }
      break;
    case S_ARR_FIRST:
      c = skip_ws(p);
      if (c == ']') {
        p->r->pos++;
        if (pop(p)) return -AG_EINVAL;
        state = S_AFTER;
      } else {
        state = S_VALUE;
      }
      break;
    case S_OBJ_FIRST:
    case S_KEY:
      c = skip_ws(p);
      at = off_here(p);
      if (state == S_OBJ_FIRST && c == '}') {
        p->r->pos++;
        if (pop(p)) return -AG_EINVAL;
        state = S_AFTER;
        break;
      }
      if (c != '"') return syntax(p, at, c, state == S_OBJ_FIRST ? "a key or '}'" : "a key");
      p->r->pos++;
      if (read_string(p)) return -AG_EINVAL;
      {
        level_t *l = &p->stack[p->depth - 1];
        l->key = (uint8_t)classify_key(l, p->s);
      }
      c = skip_ws(p);
      at = off_here(p);
      if (c != ':') return syntax(p, at, c, "':'");
      p->r->pos++;
      state = S_VALUE;
      break;
    }
  }
}

int ag__trace_parse(ag_trace_reader_t *r, const ag_trace_limits_t *lim,
                    int (*fn)(const ag_trace_event_t *ev, void *arg), void *arg,
                    ag_trace_err_t *err) {
  parser_t p;
  ag_trace_limits_t def;
  ag_trace_err_t local;
  int rc;
  if (!lim) ag__trace_limits_default(&def), lim = &def;
  if (!err) err = &local; /* the reader and parser always have somewhere to say what failed */
  init_err(err);
  memset(&p, 0, sizeof p);
  p.r = r, p.lim = lim, p.err = err, p.fn = fn, p.arg = arg;
  p.top_kind = -1;
  p.stack = calloc(lim->max_depth > 0 ? (size_t)lim->max_depth : 1, sizeof *p.stack);
  if (!p.stack) {
    seterr(err, AG_TRACE_ENOMEM, 0, "out of memory");
    return -AG_ENOMEM;
  }
  rc = run(&p);
  if (rc == 0 && !p.seen_events) {
    if (p.top_kind == C_OBJ)
      seterr(err, AG_TRACE_ENOTTRACE, 0, "not a Chrome trace: no \"traceEvents\" array");
    else
      seterr(err, AG_TRACE_ENOTTRACE, 0,
             "not a Chrome trace: the document is not an object with \"traceEvents\" or an array");
    rc = -AG_EINVAL;
  }
  if (rc && err->kind == AG_TRACE_OK) seterr(err, AG_TRACE_ESYNTAX, off_here(&p), "parse failed");
  if (rc && r->gz && err->gz_offset < 0) err->gz_offset = (int64_t)r->raw_used;
  free(p.stack), free(p.s), free(p.name);
  return rc;
}
