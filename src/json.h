/* json.h — a tiny append-only JSON writer into a fixed buffer.
 *
 * Never allocates. Output beyond the buffer is dropped but still measured (`len` keeps growing),
 * so a caller can size a second attempt as with snprintf. Strings are escaped per RFC 8259.
 */
#ifndef AG_JSON_H
#define AG_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef struct ag_json {
  char *buf;
  size_t size, len;
  int need_comma; /* a value was written at the current nesting level */
} ag_json_t;

void ag__json_init(ag_json_t *j, char *buf, size_t size);
void ag__json_begin(ag_json_t *j, char open);          /* '{' or '[' */
void ag__json_end(ag_json_t *j, char close);           /* '}' or ']' */
void ag__json_key(ag_json_t *j, const char *key);      /* writes "key": */
void ag__json_u64(ag_json_t *j, uint64_t v);
void ag__json_str(ag_json_t *j, const char *s);
/* Writes `text`, which must already be one valid JSON value (a number, true, false, null). */
void ag__json_raw(ag_json_t *j, const char *text);
/* Terminates the buffer; returns the full length needed (excluding the NUL). */
size_t ag__json_finish(ag_json_t *j);

#endif
