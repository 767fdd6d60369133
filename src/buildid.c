/* buildid.c — build IDs of the loaded objects (see buildid.h).
 *
 * dl_iterate_phdr holds the dynamic loader's lock while it calls back: callers must not hold a
 * lock that a thread inside the loader (a library constructor calling CUDA) may wait for, which
 * is why buildid.h's functions are never called under the engine lock.
 */
#define _GNU_SOURCE
#include "buildid.h"

#include <link.h>
#include <string.h>

#include "ag.h"

/* What one search looks for and what it found. */
typedef struct query {
  uintptr_t addr;       /* by address, when id is NULL */
  const uint8_t *id;    /* by build ID */
  size_t idlen;
  ag_buildid_obj_t *out;
  int found;
} query_t;

/* The NT_GNU_BUILD_ID note among the notes of one PT_NOTE segment [p, p + size), or 0. Notes
 * are 4-byte aligned name and descriptor after a 12-byte header (ELF gABI). */
static size_t note_id(const uint8_t *p, size_t size, uint8_t id[AG_BUILDID_MAX]) {
  size_t at = 0;
  while (size - at >= 12) {
    uint32_t namesz, descsz, type;
    memcpy(&namesz, p + at, 4), memcpy(&descsz, p + at + 4, 4), memcpy(&type, p + at + 8, 4);
    size_t name_at = at + 12, desc_at = name_at + ((namesz + 3u) & ~3u);
    if (desc_at < name_at || desc_at > size || descsz > size - desc_at) return 0;
    if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_at, "GNU", 4) && descsz &&
        descsz <= AG_BUILDID_MAX) {
      memcpy(id, p + desc_at, descsz);
      return descsz;
    }
    at = desc_at + ((descsz + 3u) & ~3u);
  }
  return 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  query_t *q = arg;
  ag_buildid_obj_t o;
  (void)size;
  memset(&o, 0, sizeof o);
  o.lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD) {
      if (start < o.lo) o.lo = start;
      if (start + ph->p_memsz > o.hi) o.hi = start + ph->p_memsz;
    } else if (ph->p_type == PT_NOTE && !o.idlen) {
      o.idlen = note_id((const uint8_t *)start, ph->p_filesz, o.id);
    }
  }
  if (o.lo >= o.hi) return 0;
  if (q->id ? o.idlen == q->idlen && !memcmp(o.id, q->id, o.idlen)
            : q->addr >= o.lo && q->addr < o.hi) {
    *q->out = o;
    q->found = 1;
    return 1;
  }
  return 0;
}

int ag__buildid_of(const void *addr, ag_buildid_obj_t *o) {
  query_t q = {(uintptr_t)addr, NULL, 0, o, 0};
  dl_iterate_phdr(visit, &q);
  return q.found ? 0 : -AG_ENOENT;
}

int ag__buildid_find(const uint8_t *id, size_t len, ag_buildid_obj_t *o) {
  if (!id || !len || len > AG_BUILDID_MAX) return -AG_ENOENT;
  query_t q = {0, id, len, o, 0};
  dl_iterate_phdr(visit, &q);
  return q.found ? 0 : -AG_ENOENT;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int ag__buildid_parse(const char *hex, uint8_t id[AG_BUILDID_MAX]) {
  size_t n = hex ? strlen(hex) : 0;
  if (!n || n % 2 || n / 2 > AG_BUILDID_MAX) return -AG_EINVAL;
  for (size_t i = 0; i < n; i += 2) {
    int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
    if (hi < 0 || lo < 0) return -AG_EINVAL;
    id[i / 2] = (uint8_t)(hi << 4 | lo);
  }
  return (int)(n / 2);
}
