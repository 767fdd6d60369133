/* json.c — the JSON writer (see json.h). */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(ag_json_t *j, char c) {
  if (j->len + 1 < j->size) j->buf[j->len] = c;
  j->len++;
}

static void puts_(ag_json_t *j, const char *s) {
  while (*s) put(j, *s++);
}

static void sep(ag_json_t *j) {
  if (j->need_comma) put(j, ',');
  j->need_comma = 1;
}

void ag__json_init(ag_json_t *j, char *buf, size_t size) {
  j->buf = buf;
  j->size = size;
  j->len = 0;
  j->need_comma = 0;
}

void ag__json_begin(ag_json_t *j, char open) {
  sep(j);
  put(j, open);
  j->need_comma = 0;
}

void ag__json_end(ag_json_t *j, char close) {
  put(j, close);
  j->need_comma = 1;
}

void ag__json_key(ag_json_t *j, const char *key) {
  ag__json_str(j, key);
  put(j, ':');
  j->need_comma = 0; /* the value follows without a comma */
}

void ag__json_u64(ag_json_t *j, uint64_t v) {
  char tmp[24];
  sep(j);
  snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
  puts_(j, tmp);
}

void ag__json_raw(ag_json_t *j, const char *text) {
  sep(j);
  puts_(j, text);
}

void ag__json_str(ag_json_t *j, const char *s) {
  sep(j);
  put(j, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
    case '"': puts_(j, "\\\""); break;
    case '\\': puts_(j, "\\\\"); break;
    case '\n': puts_(j, "\\n"); break;
    case '\r': puts_(j, "\\r"); break;
    case '\t': puts_(j, "\\t"); break;
    default:
      if (*p < 0x20) {
        char tmp[8];
        snprintf(tmp, sizeof tmp, "\\u%04x", *p);
        puts_(j, tmp);
      } else {
        put(j, (char)*p);
      }
    }
  }
  put(j, '"');
}

size_t ag__json_finish(ag_json_t *j) {
  if (j->size) j->buf[j->len < j->size ? j->len : j->size - 1] = 0;
  return j->len;
}

/* ---- reading ---- */

typedef struct {
  const char *s;
  size_t len, at;
  ag_jtok_t *tok;
  int ntok, n;
} reader_t;

static void skip_ws(reader_t *r) {
  while (r->at < r->len && strchr(" \t\r\n", r->s[r->at]) && r->s[r->at]) r->at++;
}

static int new_tok(reader_t *r, int type, size_t start) {
  int i = r->n++;
  if (r->tok && i < r->ntok) {
    r->tok[i].type = (uint8_t)type;
    r->tok[i].start = r->tok[i].end = (uint32_t)start;
    r->tok[i].size = 0;
  }
  return i;
}

static void close_tok(reader_t *r, int i, size_t end, uint32_t size) {
  if (r->tok && i < r->ntok) r->tok[i].end = (uint32_t)end, r->tok[i].size = size, r->tok[i].next = (uint32_t)r->n;
}

/* One value at r->at; 0 or -1. Nesting is bounded so that a hostile document cannot exhaust the
 * stack. */
static int value(reader_t *r, int depth) {
  skip_ws(r);
  if (r->at >= r->len || depth > 64) return -1;
  char c = r->s[r->at];
  if (c == '"') {
    size_t start = ++r->at;
    while (r->at < r->len && r->s[r->at] != '"') r->at += r->s[r->at] == '\\' ? 2 : 1;
    if (r->at >= r->len) return -1;
    int i = new_tok(r, AG_JSON_STR, start);
    close_tok(r, i, r->at++, 0);
    return 0;
  }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    int i = new_tok(r, c == '{' ? AG_JSON_OBJ : AG_JSON_ARR, r->at++);
    uint32_t size = 0;
    skip_ws(r);
    if (r->at < r->len && r->s[r->at] == close) {
      close_tok(r, i, ++r->at, 0);
      return 0;
    }
    for (;;) {
      if (c == '{') { /* a key string, then a colon */
        skip_ws(r);
        if (r->at >= r->len || r->s[r->at] != '"' || value(r, depth + 1)) return -1;
        skip_ws(r);
        if (r->at >= r->len || r->s[r->at++] != ':') return -1;
      }
      if (value(r, depth + 1)) return -1;
      size++;
      skip_ws(r);
      if (r->at >= r->len) return -1;
      char d = r->s[r->at++];
      if (d == close) break;
      if (d != ',') return -1;
    }
    close_tok(r, i, r->at, size);
    return 0;
  }
  size_t start = r->at;
  while (r->at < r->len && strchr("+-.0123456789eEtruefalsn", r->s[r->at]) && r->s[r->at]) r->at++;
  if (r->at == start) return -1;
  close_tok(r, new_tok(r, AG_JSON_PRIM, start), r->at, 0);
  return 0;
}

int ag__json_parse(const char *s, size_t len, ag_jtok_t *tok, int ntok) {
  reader_t r = {s, len, 0, tok, ntok, 0};
  if (value(&r, 0)) return -1;
  skip_ws(&r);
  return r.at == len ? r.n : -1;
}

int ag__json_is(const char *s, const ag_jtok_t *t, const char *str) {
  size_t n = strlen(str);
  return t->type == AG_JSON_STR && t->end - t->start == n && !memcmp(s + t->start, str, n);
}

int ag__json_get(const char *s, const ag_jtok_t *tok, int obj, const char *key) {
  if (obj < 0 || tok[obj].type != AG_JSON_OBJ) return -1;
  int k = obj + 1;
  for (uint32_t i = 0; i < tok[obj].size; i++) {
    int v = k + 1;
    if (ag__json_is(s, &tok[k], key)) return v;
    k = (int)tok[v].next;
  }
  return -1;
}

double ag__json_num(const char *s, const ag_jtok_t *t) {
  char buf[64];
  size_t n = t->end - t->start;
  if (t->type != AG_JSON_PRIM || n >= sizeof buf) return 0;
  memcpy(buf, s + t->start, n);
  buf[n] = 0;
  return strtod(buf, NULL);
}
