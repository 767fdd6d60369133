/* elf.c — kernels and parameter layouts from fatbins, cubins and host ELF files.
 *
 * Contract (see elf.h): every walk reads only inside the bytes its caller declared readable, or,
 * when the caller passes size 0, inside the extent the image's own headers declare (capped at
 * AG_IMAGE_CAP); every malformed input yields -AG_ETRUNC / -AG_ECORRUPT / -AG_EUNSUP with an
 * offset and a message, never a crash. No state outlives a call, so concurrent walks are safe.
 * Decompression buffers are released on every path. ELF files are read in place through the
 * bounds-checked view below (no ELF library: every field is copied out with memcpy, every
 * offset checked against the readable bytes before use).
 *
 * Layouts this file relies on (checked against nvcc 13.0 output and libcublasLt.so.13):
 *   wrapper    u32 magic 0x466243B1, u32 version (1, or 2 with -rdc), u64 data pointer,
 *              u64 filename_or_fatbins (ignored)
 *   container  u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 payload_size; containers
 *              in a .nv_fatbin section follow each other 8-byte aligned, padded with zeros
 *   entry      u16 kind (1 PTX, 2 cubin), u32 header_size at +4 (64, 80, 96 or 112), u64 size at
 *              +8, u32 arch at +28, u64 flags at +40 (0x8000 zstd, 0x2000 LZ4), u64
 *              decompressed_size at +56. A compressed payload is one zstd frame, or one raw
 *              LZ4 block (nvcc before 12.8, and -compress-mode=speed), padded to 8.
 *   cubin      ELF, e_machine 190; a kernel is an STT_FUNC symbol with st_other & 0x10 and owns a
 *              section ".nv.info.<name>" of type 0x70000000 whose sh_info is the kernel's text
 *              section. Its records are u8 format, u8 attribute, then by format: 1 two pad bytes,
 *              2 one byte and a pad, 3 a u16, 4 a u16 length and that many bytes (always 4-byte
 *              multiples in practice, but only the length is trusted).
 *              0x17 KPARAM_INFO: u32 index, u16 ordinal, u16 offset, u32 flags (size: bits 18–31).
 *              0x45 KPARAM_INFO_V2 (every parameter of a kernel with one over 16 KiB): u32 index,
 *              u16 ordinal, u16 offset, u32 size (low 24 bits). CUDA 13 caps the parameter block
 *              at 32 764 bytes, so u16 offsets suffice.
 *              0x19 CBANK_PARAM_SIZE: u16 total bytes (absent for kernels without parameters).
 */
#define _GNU_SOURCE
#include "elf.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define WRAPPER_MAGIC   0x466243B1u
#define CONTAINER_MAGIC 0xBA55ED50u
#define ENTRY_PTX       1
#define ENTRY_CUBIN     2
#define ENTRY_MIN_HDR   64u     /* the last field read is decompressed_size at +56 */
#define FLAG_ZSTD       0x8000u
#define FLAG_LZ4        0x2000u
#define EM_CUDA_        190
#define STO_CUDA_ENTRY  0x10
#define SHT_NV_INFO     0x70000000u
#define NVI_KPARAM      0x17
#define NVI_CBANK_SIZE  0x19
#define NVI_KPARAM_V2   0x45
#define AG_IMAGE_CAP    ((size_t)1 << 30) /* largest extent believed when the caller gives none */

/* ---- reading little-endian fields at any alignment ---------------------------------------- */

static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ---- walk state ---------------------------------------------------------------------------- */

typedef struct walk {
  ag_kernel_cb cb;       /* per kernel of each cubin (ag__image_kernels), or NULL */
  ag_entry_cb ecb;       /* per entry instead (ag__image_entries), or NULL */
  int entry_data;        /* ecb: with each entry's bytes (decompressed), not only its header */
  void *ctx;
  ag_image_err_t *err;
  const uint8_t *base;   /* start of the caller's buffer: error offsets are relative to it */
  size_t at;             /* offset of the image being parsed, for errors found inside a cubin */
  ZSTD_DCtx *dctx;       /* created on the first compressed entry */
  uint8_t *zbuf;         /* decompression buffer, reused across entries */
  size_t zcap;
  ag_kparam_t *params;   /* per-kernel scratch, reused */
  size_t pcap;
  uint32_t *info_of;     /* text section index -> .nv.info.<kernel> section index, reused */
  size_t icap;
} walk_t;

static int fail(walk_t *w, size_t offset, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records why a walk failed; returns `code` (negative) so callers can `return fail(…)`. */
static int fail(walk_t *w, size_t offset, int code, const char *fmt, ...) {
  if (w->err) {
    va_list ap;
    w->err->offset = offset;
    va_start(ap, fmt);
    vsnprintf(w->err->msg, sizeof(w->err->msg), fmt, ap);
    va_end(ap);
  }
  return code;
}

static size_t off_of(const walk_t *w, const uint8_t *p) { return (size_t)(p - w->base); }

/* ---- zstd, loaded when first needed ------------------------------------------------------- */

/* libzstd.so.1 is opened at the first compressed entry instead of being linked: a process that
 * meets none never loads it, and a wheel built for old glibc need not carry a copy built for a
 * new one. Without it, compressed images read as -AG_ELIB and their kernels stay unknown (their
 * launches pass through). The handle is kept for the life of the process. */
static struct {
  size_t (*frame_size)(const void *, size_t);
  unsigned long long (*content_size)(const void *, size_t);
  ZSTD_DCtx *(*create)(void);
  size_t (*release)(ZSTD_DCtx *);
  size_t (*decompress)(ZSTD_DCtx *, void *, size_t, const void *, size_t);
  unsigned (*is_error)(size_t);
  const char *(*error_name)(size_t);
  char why[128]; /* empty when loaded */
} zstd;
static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;

static void zstd_load(void) {
  void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(zstd.why, sizeof zstd.why, "%s", e ? e : "libzstd.so.1 not found");
    return;
  }
  *(void **)&zstd.frame_size = dlsym(h, "ZSTD_findFrameCompressedSize");
  *(void **)&zstd.content_size = dlsym(h, "ZSTD_getFrameContentSize");
  *(void **)&zstd.create = dlsym(h, "ZSTD_createDCtx");
  *(void **)&zstd.release = dlsym(h, "ZSTD_freeDCtx");
  *(void **)&zstd.decompress = dlsym(h, "ZSTD_decompressDCtx");
  *(void **)&zstd.is_error = dlsym(h, "ZSTD_isError");
  *(void **)&zstd.error_name = dlsym(h, "ZSTD_getErrorName");
  if (!zstd.frame_size || !zstd.content_size || !zstd.create || !zstd.release ||
      !zstd.decompress || !zstd.is_error || !zstd.error_name)
    snprintf(zstd.why, sizeof zstd.why, "libzstd.so.1 lacks a function of the decoder");
}

static void walk_free(walk_t *w) {
  if (w->dctx) zstd.release(w->dctx);
  free(w->zbuf);
  free(w->params);
  free(w->info_of);
}

/* ---- a read-only view of a 64-bit little-endian ELF image -------------------------------- */

typedef struct elfv {
  const uint8_t *p;
  size_t n;          /* readable bytes */
  size_t shoff;      /* section header table: shnum entries, all inside [0, n) */
  size_t shnum;
  size_t shstrndx;   /* section names; 0 when there is none */
} elfv_t;

/* Opens the view: the identification, the section header table's entry size and place (with
 * extended numbering: more than 0xff00 sections, or names past it). Returns 0, -AG_ETRUNC
 * when the header or the table reach past n, -AG_ECORRUPT otherwise; *why says what. */
static int elfv_open(elfv_t *e, const uint8_t *p, size_t n, const char **why) {
  Elf64_Ehdr eh;
  *e = (elfv_t){.p = p, .n = n};
  *why = "truncated ELF header";
  if (n < sizeof(eh)) return memcmp(p, ELFMAG, n < SELFMAG ? n : SELFMAG) ? -AG_ECORRUPT : -AG_ETRUNC;
  memcpy(&eh, p, sizeof(eh));
  *why = "not a 64-bit little-endian ELF";
  if (memcmp(p, ELFMAG, SELFMAG) != 0 || p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
    return -AG_ECORRUPT;
  if (!eh.e_shoff) return 0; /* no sections */
  *why = "bad section header size";
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) return -AG_ECORRUPT;
  *why = "section header table past the end";
  if (eh.e_shoff > n || n - eh.e_shoff < sizeof(Elf64_Shdr)) return -AG_ETRUNC;
  Elf64_Shdr sh0;
  memcpy(&sh0, p + eh.e_shoff, sizeof(sh0));
  size_t shnum = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
  if ((n - eh.e_shoff) / sizeof(Elf64_Shdr) < shnum) return -AG_ETRUNC;
  size_t strndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
  *why = "section name table index out of range";
  if (strndx >= shnum && strndx != SHN_UNDEF) return -AG_ECORRUPT;
  e->shoff = eh.e_shoff, e->shnum = shnum, e->shstrndx = strndx;
  return 0;
}

/* Section i's header (i < shnum). */
static Elf64_Shdr elfv_shdr(const elfv_t *e, size_t i) {
  Elf64_Shdr sh;
  memcpy(&sh, e->p + e->shoff + i * sizeof(sh), sizeof(sh));
  return sh;
}

/* A section's contents, or NULL when they reach past the readable bytes (*len 0 for none). */
static const uint8_t *elfv_data(const elfv_t *e, const Elf64_Shdr *sh, size_t *len) {
  *len = 0;
  if (sh->sh_type == SHT_NOBITS || sh->sh_type == SHT_NULL) return e->p;
  if (sh->sh_offset > e->n || sh->sh_size > e->n - sh->sh_offset) return NULL;
  *len = sh->sh_size;
  return e->p + sh->sh_offset;
}

/* The NUL-terminated string at offset off of string table section strsec, or NULL when the
 * section is not a string table inside the image or the string runs past its end. */
static const char *elfv_str(const elfv_t *e, size_t strsec, size_t off) {
  if (!strsec || strsec >= e->shnum) return NULL;
  Elf64_Shdr sh = elfv_shdr(e, strsec);
  size_t len;
  const uint8_t *d = elfv_data(e, &sh, &len);
  if (!d || sh.sh_type != SHT_STRTAB || off >= len || !memchr(d + off, 0, len - off)) return NULL;
  return (const char *)d + off;
}

/* ---- cubins -------------------------------------------------------------------------------- */

/* Checks the ELF header of a CUDA cubin with `len` readable bytes (0: unknown, then at most
 * `cap` are believed) and sets *ext to the extent its headers declare: the section and program
 * header tables and every section's contents. Returns 0, -AG_ETRUNC when the headers reach past
 * the readable bytes, or -AG_ECORRUPT when it is not a 64-bit little-endian EM_CUDA ELF; *why
 * then says what is wrong. */
static int cubin_extent(const uint8_t *p, size_t len, size_t cap, size_t *ext, const char **why) {
  size_t lim = len ? len : cap;
  Elf64_Ehdr eh;
  *why = "truncated ELF header";
  if (lim < sizeof(eh)) return -AG_ETRUNC;
  memcpy(&eh, p, sizeof(eh));
  *why = "not a 64-bit little-endian ELF";
  if (memcmp(p, ELFMAG, SELFMAG) != 0 || p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
    return -AG_ECORRUPT;
  *why = "not a CUDA ELF (e_machine != 190)";
  if (eh.e_machine != EM_CUDA_) return -AG_ECORRUPT;
  *why = "bad ELF table entry size";
  if ((eh.e_shoff && eh.e_shentsize != sizeof(Elf64_Shdr)) ||
      (eh.e_phnum && eh.e_phentsize != sizeof(Elf64_Phdr)))
    return -AG_ECORRUPT;
  /* Offsets are u64 and counts u16: compare against lim before adding, so nothing wraps. */
  *why = "section header table past the end";
  size_t shnum = eh.e_shnum;
  if (!shnum && eh.e_shoff) { /* extended numbering: the count is section 0's sh_size */
    Elf64_Shdr sh0;
    if (eh.e_shoff > lim || lim - eh.e_shoff < sizeof(sh0)) return -AG_ETRUNC;
    memcpy(&sh0, p + eh.e_shoff, sizeof(sh0));
    shnum = sh0.sh_size > lim ? lim : sh0.sh_size;
  }
  if (eh.e_shoff > lim || (lim - eh.e_shoff) / sizeof(Elf64_Shdr) < shnum) return -AG_ETRUNC;
  *why = "program header table past the end";
  if (eh.e_phoff > lim || (lim - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum) return -AG_ETRUNC;
  size_t end = sizeof(eh);
  if (shnum && eh.e_shoff + shnum * sizeof(Elf64_Shdr) > end)
    end = eh.e_shoff + shnum * sizeof(Elf64_Shdr);
  if (eh.e_phnum && eh.e_phoff + (size_t)eh.e_phnum * sizeof(Elf64_Phdr) > end)
    end = eh.e_phoff + (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
  *why = "section past the end";
  for (size_t i = 0; i < shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, p + eh.e_shoff + i * sizeof(sh), sizeof(sh));
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) continue;
    if (sh.sh_offset > lim || sh.sh_size > lim - sh.sh_offset) return -AG_ETRUNC;
    if (sh.sh_offset + sh.sh_size > end) end = sh.sh_offset + sh.sh_size;
  }
  *ext = end;
  return 0;
}

/* The SM version in a cubin's e_flags: bits 8–15 since ELF ABI version 8 (CUDA 12.8), the low
 * byte before. */
static int cubin_arch(const uint8_t *p) {
  uint32_t flags = rd32(p + offsetof(Elf64_Ehdr, e_flags));
  return p[EI_ABIVERSION] >= 8 ? (int)((flags >> 8) & 0xff) : (int)(flags & 0xff);
}

/* Decodes one .nv.info.<kernel> section into w->params. Returns 0 or -AG_E…. */
static int parse_nv_info(walk_t *w, const char *name, const uint8_t *d, size_t n,
                         ag_kernel_desc_t *k) {
  uint32_t nrec = 0, cbank = 0;
  bool have_cbank = false;
  /* Pass 1: validate the record chain and count parameter records. */
  for (size_t o = 0; o < n;) {
    if (n - o < 4)
      return fail(w, w->at, -AG_ETRUNC, "%s: .nv.info record at 0x%zx truncated", name, o);
    uint8_t fmt = d[o], attr = d[o + 1];
    size_t rec = 4;
    if (fmt == 4) {
      rec += rd16(d + o + 2);
      if (rec > n - o)
        return fail(w, w->at, -AG_ETRUNC, "%s: .nv.info record at 0x%zx overruns its section",
                    name, o);
      if (attr == NVI_KPARAM || attr == NVI_KPARAM_V2) {
        if (rec < 16)
          return fail(w, w->at, -AG_ECORRUPT, "%s: short parameter record at 0x%zx", name, o);
        nrec++;
      }
    } else if (fmt == 3) {
      if (attr == NVI_CBANK_SIZE) { cbank = rd16(d + o + 2); have_cbank = true; }
    } else if (fmt != 1 && fmt != 2) {
      return fail(w, w->at, -AG_ECORRUPT, "%s: .nv.info record at 0x%zx has format %u", name,
                  o, fmt);
    }
    o += rec;
  }
  if (nrec > w->pcap) {
    ag_kparam_t *np = realloc(w->params, nrec * sizeof(*np));
    if (!np) return fail(w, w->at, -AG_ENOMEM, "out of memory");
    w->params = np;
    w->pcap = nrec;
  }
  /* Pass 2: place each parameter by ordinal; they must be exactly 0 .. nrec-1. A size of all
   * ones marks an unfilled slot (no parameter is 4 GiB). */
  for (uint32_t i = 0; i < nrec; i++) w->params[i].size = UINT32_MAX;
  uint32_t end = 0;
  for (size_t o = 0; o < n;) {
    uint8_t fmt = d[o], attr = d[o + 1];
    size_t rec = fmt == 4 ? 4u + rd16(d + o + 2) : 4u;
    if (fmt == 4 && (attr == NVI_KPARAM || attr == NVI_KPARAM_V2)) {
      const uint8_t *r = d + o + 4;
      uint32_t ord = rd16(r + 4), off = rd16(r + 6), fl = rd32(r + 8);
      uint32_t size = attr == NVI_KPARAM ? fl >> 18 : fl & 0xffffffu;
      if (ord >= nrec || w->params[ord].size != UINT32_MAX)
        return fail(w, w->at, -AG_ECORRUPT, "%s: parameter ordinal %u duplicated or beyond %u",
                    name, ord, nrec);
      w->params[ord].offset = off;
      w->params[ord].size = size;
      if (off + size > end) end = off + size;
    }
    o += rec;
  }
  if (have_cbank && end > cbank)
    return fail(w, w->at, -AG_ECORRUPT, "%s: parameters end at %u, past the %u-byte block",
                name, end, cbank);
  k->nparams = nrec;
  k->params = nrec ? w->params : NULL;
  k->param_bytes = have_cbank ? cbank : end;
  return 0;
}

/* The .nv.info section describing kernel `name` whose code is in section `text`: the one whose
 * sh_info names that section, verified by name; failing that, a search by name. Returns its
 * index, or 0 when there is none. */
static size_t find_nv_info(const elfv_t *e, const uint32_t *info_of, size_t text, const char *name) {
  static const char prefix[] = ".nv.info.";
  size_t plen = sizeof(prefix) - 1;
  if (text < e->shnum && info_of[text]) {
    Elf64_Shdr sh = elfv_shdr(e, info_of[text]);
    const char *sn = elfv_str(e, e->shstrndx, sh.sh_name);
    if (sn && strncmp(sn, prefix, plen) == 0 && strcmp(sn + plen, name) == 0) return info_of[text];
  }
  for (size_t i = 1; i < e->shnum; i++) {
    Elf64_Shdr sh = elfv_shdr(e, i);
    if (sh.sh_type != SHT_NV_INFO) continue;
    const char *sn = elfv_str(e, e->shstrndx, sh.sh_name);
    if (sn && strncmp(sn, prefix, plen) == 0 && strcmp(sn + plen, name) == 0) return i;
  }
  return 0;
}

/* Reports every kernel of the cubin at p[0, len) to the callback. `arch` 0 takes it from the
 * ELF header. Returns 0, the callback's nonzero value, or -AG_E…. */
static int walk_cubin(walk_t *w, const uint8_t *p, size_t len, int arch) {
  const char *why;
  size_t ext;
  int rc = cubin_extent(p, len, 0, &ext, &why);
  elfv_t e;
  if (!rc) rc = elfv_open(&e, p, ext, &why);
  if (rc) return fail(w, w->at, rc, "cubin: %s", why);
  size_t shnum = e.shnum, symsec = 0;
  Elf64_Shdr symsh = {0};
  if (shnum > w->icap) {
    uint32_t *ni = realloc(w->info_of, shnum * sizeof(*ni));
    if (!ni) return fail(w, w->at, -AG_ENOMEM, "out of memory");
    w->info_of = ni;
    w->icap = shnum;
  }
  if (shnum) memset(w->info_of, 0, shnum * sizeof(*w->info_of)); /* info_of is NULL while icap is 0 */
  for (size_t i = 1; i < shnum; i++) {
    Elf64_Shdr sh = elfv_shdr(&e, i);
    if (sh.sh_type == SHT_SYMTAB && !symsec) symsec = i, symsh = sh;
    else if (sh.sh_type == SHT_NV_INFO && sh.sh_info && sh.sh_info < shnum)
      w->info_of[sh.sh_info] = (uint32_t)i;
  }
  if (!symsec) return 0; /* no symbols, no kernels */
  size_t symlen;
  const uint8_t *syms = elfv_data(&e, &symsh, &symlen);
  if (!syms) return fail(w, w->at, -AG_ECORRUPT, "cubin: symbol table past the end");
  if (symsh.sh_entsize != sizeof(Elf64_Sym))
    return fail(w, w->at, -AG_ECORRUPT, "cubin: symbol table entries of %llu bytes, not %zu",
                (unsigned long long)symsh.sh_entsize, sizeof(Elf64_Sym));
  size_t nsyms = symlen / sizeof(Elf64_Sym);
  if (!arch) arch = cubin_arch(p);
  for (size_t i = 1; i < nsyms; i++) {
    Elf64_Sym sym;
    memcpy(&sym, syms + i * sizeof(sym), sizeof(sym));
    if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || !(sym.st_other & STO_CUDA_ENTRY) ||
        sym.st_shndx == SHN_UNDEF)
      continue;
    const char *name = elfv_str(&e, symsh.sh_link, sym.st_name);
    if (!name || !*name) return fail(w, w->at, -AG_ECORRUPT, "cubin: kernel symbol %zu has no name", i);
    ag_kernel_desc_t k = {.name = name, .arch = arch};
    size_t info = find_nv_info(&e, w->info_of, sym.st_shndx, name);
    /* Without its .nv.info section a kernel's layout is unknown; reporting it as taking no
     * parameters would make its arguments silently vanish from copies and comparisons. */
    Elf64_Shdr ish = info ? elfv_shdr(&e, info) : (Elf64_Shdr){0};
    size_t dlen;
    const uint8_t *d = info ? elfv_data(&e, &ish, &dlen) : NULL;
    if (!d) return fail(w, w->at, -AG_ECORRUPT, "cubin: kernel %s: no readable .nv.info.%s", name, name);
    rc = parse_nv_info(w, name, d, dlen, &k);
    if (!rc) rc = w->cb(&k, w->ctx);
    if (rc) return rc;
  }
  return 0;
}

/* ---- fatbin containers --------------------------------------------------------------------- */

/* Makes w->zbuf hold at least `want` bytes. Returns 0 or -AG_ENOMEM. */
static int zbuf_reserve(walk_t *w, uint64_t want) {
  if (want <= w->zcap) return 0;
  uint8_t *nb = malloc(want);
  if (!nb)
    return fail(w, w->at, -AG_ENOMEM, "out of memory (%llu bytes)", (unsigned long long)want);
  free(w->zbuf);
  w->zbuf = nb;
  w->zcap = want;
  return 0;
}

/* Decompresses a zstd entry payload into w->zbuf. Returns 0 or -AG_E…. */
static int inflate_entry(walk_t *w, const uint8_t *src, size_t n, uint64_t want, size_t *outlen) {
  pthread_once(&zstd_once, zstd_load);
  if (zstd.why[0]) return fail(w, w->at, -AG_ELIB, "zstd-compressed image: %s", zstd.why);
  /* The payload is one frame padded to 8 bytes: decompress exactly the frame. */
  size_t frame = zstd.frame_size(src, n);
  if (zstd.is_error(frame))
    return fail(w, w->at, -AG_ECORRUPT, "zstd: %s", zstd.error_name(frame));
  unsigned long long csize = zstd.content_size(src, frame);
  if (csize == ZSTD_CONTENTSIZE_ERROR)
    return fail(w, w->at, -AG_ECORRUPT, "zstd: bad frame header");
  if (!want) want = csize;
  if (!want || want == ZSTD_CONTENTSIZE_UNKNOWN || want > AG_IMAGE_CAP ||
      (csize != ZSTD_CONTENTSIZE_UNKNOWN && csize != want))
    return fail(w, w->at, -AG_ECORRUPT, "zstd: implausible decompressed size %llu",
                (unsigned long long)want);
  int rc = zbuf_reserve(w, want);
  if (rc) return rc;
  if (!w->dctx && !(w->dctx = zstd.create()))
    return fail(w, w->at, -AG_ELIB, "zstd: cannot create a context");
  size_t got = zstd.decompress(w->dctx, w->zbuf, want, src, frame);
  if (zstd.is_error(got) || got != want)
    return fail(w, w->at, -AG_ECORRUPT, "zstd: %s",
                zstd.is_error(got) ? zstd.error_name(got) : "short output");
  *outlen = got;
  return 0;
}

/* Reads an LZ4 length extension (bytes added while they are 255) onto *len; `cap` bounds it.
 * Returns 0, or 1 when the input ends or the length passes cap. */
static int lz4_more(const uint8_t *src, size_t n, size_t *i, size_t *len, size_t cap) {
  unsigned b;
  do {
    if (*i >= n) return 1;
    b = src[(*i)++];
    *len += b;
    if (*len > cap) return 1;
  } while (b == 255);
  return 0;
}

/* Decompresses an LZ4 entry payload (one raw block: sequences of a token, literals, a 16-bit
 * offset and a match; the last sequence has literals only) into w->zbuf: exactly `want` bytes,
 * the padding after the block ignored. Every length and offset is checked against the input
 * and the output produced so far. Returns 0 or -AG_E…. */
static int lz4_entry(walk_t *w, const uint8_t *src, size_t n, uint64_t want, size_t *outlen) {
  if (!want || want > AG_IMAGE_CAP)
    return fail(w, w->at, -AG_ECORRUPT, "LZ4: implausible decompressed size %llu",
                (unsigned long long)want);
  int rc = zbuf_reserve(w, want);
  if (rc) return rc;
  uint8_t *out = w->zbuf;
  size_t o = 0, i = 0, cap = (size_t)want;
  while (o < cap) {
    if (i >= n)
      return fail(w, w->at, -AG_ETRUNC, "LZ4: the block ends after %zu of %zu bytes", o, cap);
    unsigned tok = src[i++];
    size_t lit = tok >> 4, match = tok & 15u, off;
    if (lit == 15 && lz4_more(src, n, &i, &lit, cap))
      return fail(w, w->at, -AG_ECORRUPT, "LZ4: bad literal length at %zu", i);
    if (lit > n - i || lit > cap - o)
      return fail(w, w->at, -AG_ECORRUPT, "LZ4: %zu literals overrun the block at %zu", lit, i);
    memcpy(out + o, src + i, lit);
    o += lit, i += lit;
    if (o == cap) break; /* the last sequence: literals only */
    if (n - i < 2) return fail(w, w->at, -AG_ETRUNC, "LZ4: the block ends inside a sequence");
    off = (size_t)src[i] | (size_t)src[i + 1] << 8;
    i += 2;
    if (!off || off > o)
      return fail(w, w->at, -AG_ECORRUPT, "LZ4: match offset %zu with %zu bytes out", off, o);
    if (match == 15 && lz4_more(src, n, &i, &match, cap))
      return fail(w, w->at, -AG_ECORRUPT, "LZ4: bad match length at %zu", i);
    match += 4;
    if (match > cap - o)
      return fail(w, w->at, -AG_ECORRUPT, "LZ4: a match of %zu overruns the output", match);
    for (size_t k = 0; k < match; k++, o++) out[o] = out[o - off]; /* may overlap itself */
  }
  *outlen = cap;
  return 0;
}

/* Walks the entries of one container whose payload is p[0, n). */
static int walk_entries(walk_t *w, const uint8_t *p, size_t n) {
  for (size_t o = 0; o < n;) {
    const uint8_t *e = p + o;
    size_t left = n - o;
    if (left < 16) return fail(w, off_of(w, e), -AG_ETRUNC, "truncated entry header");
    uint16_t kind = rd16(e);
    uint32_t hs = rd32(e + 4);
    uint64_t size = rd64(e + 8);
    if (hs < ENTRY_MIN_HDR)
      return fail(w, off_of(w, e), -AG_ECORRUPT, "entry header size %u", hs);
    if (hs > left) return fail(w, off_of(w, e), -AG_ETRUNC, "truncated entry header");
    if (size > left - hs)
      return fail(w, off_of(w, e), -AG_ETRUNC, "entry of %llu bytes overruns its container",
                  (unsigned long long)size);
    o += hs + size;
    /* PTX and anything newer carry no layouts we use; an entry walk reports PTX too. */
    if (kind != ENTRY_CUBIN && !(w->ecb && kind == ENTRY_PTX)) continue;
    uint64_t flags = rd64(e + 40);
    const uint8_t *img = e + hs;
    size_t len = size;
    w->at = off_of(w, e);
    /* The header's version: a PTX entry's ISA version (major at +26, minor at +24); a cubin's
     * ELF ABI version (at +24, with 1 at +26). */
    ag_image_entry_t ent = {.kind = kind == ENTRY_PTX ? AG_ENTRY_PTX : AG_ENTRY_CUBIN,
                            .arch = (int)rd32(e + 28),
                            .version = kind == ENTRY_PTX ? 10 * rd16(e + 26) + rd16(e + 24) : rd16(e + 24)};
    if (w->ecb && !w->entry_data) {
      int rc = w->ecb(&ent, w->ctx);
      if (rc) return rc;
      continue;
    }
    if (flags & FLAG_ZSTD) {
      int rc = inflate_entry(w, img, len, rd64(e + 56), &len);
      if (rc) return rc;
      img = w->zbuf;
    } else if (flags & FLAG_LZ4) {
      int rc = lz4_entry(w, img, len, rd64(e + 56), &len);
      if (rc) return rc;
      img = w->zbuf;
    }
    int rc;
    if (w->ecb) {
      ent.data = img, ent.size = len;
      rc = w->ecb(&ent, w->ctx);
    } else {
      rc = walk_cubin(w, img, len, (int)rd32(e + 28));
    }
    if (rc) return rc;
  }
  return 0;
}

/* Walks back-to-back containers in p[0, n), skipping zero padding between them. */
static int walk_containers(walk_t *w, const uint8_t *p, size_t n) {
  size_t o = 0;
  while (o < n) {
    if (!p[o]) { o++; continue; }
    const uint8_t *c = p + o;
    if (n - o < 16) return fail(w, off_of(w, c), -AG_ETRUNC, "truncated fatbin header");
    if (rd32(c) != CONTAINER_MAGIC)
      return fail(w, off_of(w, c), -AG_ECORRUPT, "bad fatbin magic 0x%08x", rd32(c));
    uint16_t hs = rd16(c + 6);
    uint64_t payload = rd64(c + 8);
    if (hs < 16) return fail(w, off_of(w, c), -AG_ECORRUPT, "fatbin header size %u", hs);
    if (hs > n - o || payload > n - o - hs)
      return fail(w, off_of(w, c), -AG_ETRUNC, "fatbin of %llu bytes overruns its %zu bytes",
                  (unsigned long long)payload + hs, n - o);
    int rc = walk_entries(w, c + hs, payload);
    if (rc) return rc;
    o += hs + payload;
  }
  return 0;
}

/* ---- public entry points ------------------------------------------------------------------- */

/* The extent of the container at p as its header declares it, or 0 if implausible. */
static size_t container_extent(const uint8_t *p, size_t lim) {
  if (lim < 16 || rd32(p) != CONTAINER_MAGIC) return 0;
  uint64_t hs = rd16(p + 6), payload = rd64(p + 8);
  if (hs < 16 || hs > lim || payload > lim - hs) return 0; /* hs > lim: lim - hs would wrap */
  return hs + payload;
}

size_t ag__image_size(const void *data, size_t limit) {
  const uint8_t *p = data;
  size_t lim = limit ? limit : AG_IMAGE_CAP;
  if (!p || lim < 4) return 0;
  uint32_t magic = rd32(p);
  if (magic == WRAPPER_MAGIC) {
    if (lim < 24) return 0;
    const uint8_t *c = (const uint8_t *)(uintptr_t)rd64(p + 8);
    return c ? container_extent(c, AG_IMAGE_CAP) : 0;
  }
  if (magic == CONTAINER_MAGIC) return container_extent(p, lim);
  const char *why;
  size_t ext;
  return cubin_extent(p, limit, AG_IMAGE_CAP, &ext, &why) ? 0 : ext;
}

/* The walk of an image for ag__image_kernels and ag__image_entries (w->cb or w->ecb set). */
static int walk_image(walk_t *w, const void *data, size_t size) {
  const uint8_t *p = data;
  int rc;
  if (!p || (!w->cb && !w->ecb)) return fail(w, 0, -AG_EINVAL, "no image or no callback");
  if (size && size < 4) return fail(w, 0, -AG_ETRUNC, "image of %zu bytes", size);
  uint32_t magic = rd32(p);
  if (magic == WRAPPER_MAGIC) {
    if (size && size < 24) return fail(w, 0, -AG_ETRUNC, "truncated fatbin wrapper");
    uint32_t version = rd32(p + 4);
    if (version != 1 && version != 2)
      return fail(w, 4, -AG_EUNSUP, "fatbin wrapper version %u", version);
    const uint8_t *c = (const uint8_t *)(uintptr_t)rd64(p + 8);
    if (!c) return fail(w, 8, -AG_ECORRUPT, "fatbin wrapper without data");
    /* The container lives elsewhere: its offsets are reported relative to its own start. */
    w->base = c;
    size_t n = container_extent(c, AG_IMAGE_CAP);
    rc = n ? walk_containers(w, c, n)
           : fail(w, 0, -AG_ECORRUPT, "fatbin wrapper data is not a plausible fatbin");
  } else if (magic == CONTAINER_MAGIC) {
    size_t n = size;
    if (!n && !(n = container_extent(p, AG_IMAGE_CAP)))
      return fail(w, 0, -AG_ECORRUPT, "implausible fatbin header");
    rc = walk_containers(w, p, n);
  } else if (!memcmp(p, ELFMAG, SELFMAG)) {
    const char *why;
    size_t n;
    rc = cubin_extent(p, size, AG_IMAGE_CAP, &n, &why);
    if (rc) {
      rc = fail(w, 0, rc, "cubin: %s", why);
    } else if (w->ecb) {
      ag_image_entry_t ent = {AG_ENTRY_CUBIN, cubin_arch(p), p[EI_ABIVERSION], p, n};
      rc = w->ecb(&ent, w->ctx);
    } else {
      rc = walk_cubin(w, p, n, 0);
    }
  } else {
    rc = fail(w, 0, -AG_EINVAL, "not a fatbin wrapper, fatbin or cubin (magic 0x%08x)", magic);
  }
  walk_free(w);
  return rc;
}

int ag__image_kernels(const void *data, size_t size, ag_kernel_cb cb, void *ctx,
                      ag_image_err_t *err) {
  walk_t w = {.cb = cb, .ctx = ctx, .err = err, .base = data};
  return walk_image(&w, data, size);
}

int ag__image_entries(const void *data, size_t size, int with_data, ag_entry_cb cb, void *ctx,
                      ag_image_err_t *err) {
  walk_t w = {.ecb = cb, .entry_data = with_data, .ctx = ctx, .err = err, .base = data};
  return walk_image(&w, data, size);
}

int ag__elf_fatbins(const void *elf, size_t size, ag_kernel_cb cb, void *ctx,
                    ag_image_err_t *err) {
  walk_t w = {.cb = cb, .ctx = ctx, .err = err, .base = elf};
  if (!elf || !size || !cb) return fail(&w, 0, -AG_EINVAL, "no file, no size or no callback");
  elfv_t e;
  const char *why;
  int rc = elfv_open(&e, elf, size, &why);
  if (rc) {
    rc = rc == -AG_ETRUNC && size < sizeof(Elf64_Ehdr) ? fail(&w, 0, rc, "%s", why)
         : rc == -AG_ETRUNC ? fail(&w, 0, rc, "host ELF: %s", why)
         : memcmp(elf, ELFMAG, size < SELFMAG ? size : SELFMAG) ? fail(&w, 0, rc, "not an ELF file")
                                                                 : fail(&w, 0, rc, "host ELF: %s", why);
    goto out;
  }
  /* __nv_relfatbin holds the relocatable, pre-link copies of the kernels that the device link
   * put into .nv_fatbin; it is read only when a file has no linked fatbin (-rdc objects). */
  static const char *const wanted[] = {".nv_fatbin", "__nv_relfatbin"};
  for (size_t pass = 0; pass < AG_ARRAY_SIZE(wanted); pass++) {
    bool found = false;
    for (size_t i = 1; i < e.shnum && !rc; i++) {
      Elf64_Shdr sh = elfv_shdr(&e, i);
      const char *name = elfv_str(&e, e.shstrndx, sh.sh_name);
      if (!name) { /* a truncated name table would otherwise read as "no device code" */
        rc = fail(&w, 0, -AG_ECORRUPT, "host ELF: section %zu: no readable name", i);
        break;
      }
      if (strcmp(name, wanted[pass]) != 0 || sh.sh_type == SHT_NOBITS) continue;
      found = true;
      if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset) {
        rc = fail(&w, sh.sh_offset, -AG_ETRUNC, "%s overruns the file", name);
        break;
      }
      rc = walk_containers(&w, (const uint8_t *)elf + sh.sh_offset, sh.sh_size);
    }
    if (found || rc) break;
    if (pass + 1 == AG_ARRAY_SIZE(wanted))
      rc = fail(&w, 0, -AG_ENOENT, "host ELF has no .nv_fatbin or __nv_relfatbin section");
  }
out:
  walk_free(&w);
  return rc;
}
