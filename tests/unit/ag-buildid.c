/* ag-buildid — build IDs of loaded objects (src/buildid.h): the ID read from memory for this
 * program and for the C library equals the one in their files' .note.gnu.build-id section (read
 * here independently, from the section headers); the object found by ID is the one found by
 * address and spans both; a heap address and an unknown ID find nothing; hexadecimal IDs parse,
 * malformed ones are refused. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid.h"
#include "check.h"

/* The build ID in the .note.gnu.build-id section of the ELF file at `path`, through its
 * section headers (not its program headers, which is what buildid.c reads); 0 when none. */
static size_t file_id(const char *path, uint8_t id[AG_BUILDID_MAX]) {
  FILE *f = fopen(path, "rb");
  size_t len = 0;
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = size > 0 ? malloc((size_t)size) : NULL;
  if (b && fread(b, 1, (size_t)size, f) == (size_t)size && size >= (long)sizeof(Elf64_Ehdr)) {
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
    const char *names = (const char *)b + sh[eh->e_shstrndx].sh_offset;
    for (int i = 0; i < eh->e_shnum; i++) {
      if (sh[i].sh_type != SHT_NOTE || strcmp(names + sh[i].sh_name, ".note.gnu.build-id")) continue;
      const uint8_t *n = b + sh[i].sh_offset;
      uint32_t namesz, descsz;
      memcpy(&namesz, n, 4), memcpy(&descsz, n + 4, 4);
      if (descsz <= AG_BUILDID_MAX) {
        memcpy(id, n + 12 + ((namesz + 3u) & ~3u), descsz);
        len = descsz;
      }
    }
  }
  free(b);
  fclose(f);
  return len;
}

/* The object holding `addr`, checked against its file `path`: the same ID, and found again by it. */
static void check_object(const char *what, const void *addr, const char *path) {
  ag_buildid_obj_t o, again;
  uint8_t want[AG_BUILDID_MAX];
  size_t wl = file_id(path, want);
  if (wl < 16) CHECK_FAIL_("%s (%s) has no build ID in its file", what, path);
  CHECK(ag__buildid_of(addr, &o) == 0);
  if (o.idlen != wl || memcmp(o.id, want, wl)) CHECK_FAIL_("%s: the ID in memory is not the file's", what);
  CHECK((uintptr_t)addr >= o.lo && (uintptr_t)addr < o.hi);
  CHECK(ag__buildid_find(o.id, o.idlen, &again) == 0);
  CHECK(again.lo == o.lo && again.hi == o.hi);
  /* One byte different, or one byte shorter: another build. */
  o.id[o.idlen - 1] ^= 1;
  CHECK(ag__buildid_find(o.id, o.idlen, &again) == -AG_ENOENT);
  o.id[o.idlen - 1] ^= 1;
  CHECK(ag__buildid_find(o.id, o.idlen - 1, &again) == -AG_ENOENT);
}

int main(void) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  CHECK(n > 0);
  exe[n] = 0;
  check_object("this program", (const void *)main, exe);

  Dl_info di;
  CHECK(dladdr((const void *)strlen, &di) && di.dli_fname);
  check_object("the C library", (const void *)strlen, di.dli_fname);

  ag_buildid_obj_t me, libc;
  CHECK(ag__buildid_of((const void *)main, &me) == 0 && ag__buildid_of((const void *)strlen, &libc) == 0);
  CHECK(me.lo != libc.lo);
  void *heap = malloc(64);
  ag_buildid_obj_t o;
  CHECK(ag__buildid_of(heap, &o) == -AG_ENOENT); /* a heap address lies in no object */
  free(heap);
  CHECK(ag__buildid_find(NULL, 0, &o) == -AG_ENOENT);

  uint8_t id[AG_BUILDID_MAX];
  CHECK(ag__buildid_parse("4b4D2488", id) == 4 && id[0] == 0x4b && id[1] == 0x4d && id[3] == 0x88);
  CHECK(ag__buildid_parse("4b4", id) == -AG_EINVAL);
  CHECK(ag__buildid_parse("4g", id) == -AG_EINVAL);
  CHECK(ag__buildid_parse("", id) == -AG_EINVAL);
  CHECK(ag__buildid_parse(NULL, id) == -AG_EINVAL);
  char longer[2 * AG_BUILDID_MAX + 3];
  memset(longer, 'a', sizeof longer - 1);
  longer[sizeof longer - 1] = 0;
  CHECK(ag__buildid_parse(longer, id) == -AG_EINVAL);
  longer[2 * AG_BUILDID_MAX] = 0;
  CHECK(ag__buildid_parse(longer, id) == AG_BUILDID_MAX);
  printf("ag-buildid: ok (this program, the C library: IDs of %zu and %zu bytes)\n", me.idlen, libc.idlen);
  return 0;
}
