/* json.c — the JSON writer (see json.h). */
#include "json.h"

#include <stdio.h>

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
