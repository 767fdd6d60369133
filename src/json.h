/* json.h — a tiny append-only JSON writer into a fixed buffer, and a tokenizer for reading.
 *
 * Never allocates. Output beyond the buffer is dropped but still measured (`len` keeps growing),
 * so a caller can size a second attempt as with snprintf. Strings are escaped per RFC 8259.
 *
 * The reader splits a document into tokens (objects, arrays, strings, other values) in an array
 * the caller provides, each naming its text by offsets into the document; strings are left as
 * written (escapes are not decoded), which suits keys and names made of plain characters.
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

/* ---- reading ---- */

enum { AG_JSON_OBJ = 1, AG_JSON_ARR, AG_JSON_STR, AG_JSON_PRIM };

typedef struct ag_jtok {
  uint8_t type;       /* AG_JSON_… */
  uint32_t start, end; /* the text: inside the quotes for a string */
  uint32_t size;      /* an object's keys or an array's items */
  uint32_t next;      /* the token after this one's subtree (its next sibling, if any) */
} ag_jtok_t;

/* Tokenizes s[0..len) into tok[0..ntok). Returns the number of tokens the document needs (tok may
 * be NULL to count them; only the first ntok are written), or -1 when it is not valid JSON. */
int ag__json_parse(const char *s, size_t len, ag_jtok_t *tok, int ntok);
/* The value of `key` in the object at tok[obj], or -1. */
int ag__json_get(const char *s, const ag_jtok_t *tok, int obj, const char *key);
/* Nonzero when the string token t spells exactly `str`. */
int ag__json_is(const char *s, const ag_jtok_t *t, const char *str);
/* The number a token spells (0 for a token that is not one). */
double ag__json_num(const char *s, const ag_jtok_t *t);

#endif
