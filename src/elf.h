/* elf.h — kernels and their parameter layouts, read from CUDA device code images.
 *
 * One parser for every consumer: the engine (layouts of kernels the driver cannot describe),
 * the simulator's driver (cuModuleLoadData, cuFuncGetParamInfo), and the kernel inspector.
 * It accepts, by content:
 *   - a fatbin wrapper as handed to __cudaRegisterFatBinary (magic 0x466243B1),
 *   - a fatbin container (magic 0xBA55ED50), or several back to back,
 *   - a cubin (an ELF image of machine EM_CUDA, 190).
 * and, through ag__elf_fatbins, the .nv_fatbin section of a host executable or shared library.
 * zstd-compressed entries (flag 0x8000) are decompressed with libzstd; LZ4 ones (0x2000) are
 * refused with -AG_EUNSUP; PTX entries are skipped. It never reads outside [data, data + size),
 * or, when size is 0, outside what the image's headers declare (believing at most 1 GiB), and
 * returns -AG_ETRUNC / -AG_ECORRUPT for bad input, never crashing. A kernel whose cubin lacks
 * its .nv.info.<name> section makes the walk fail (-AG_ECORRUPT) rather than be reported with
 * a made-up layout. Walks share no state: any number may run at once on different threads.
 *
 * This header has the same name as the system <elf.h>; see the end of the file.
 */
#ifndef AG_ELF_H
#define AG_ELF_H

#include "ag.h"

typedef struct ag_kparam {
  uint32_t offset; /* byte offset in the parameter block */
  uint32_t size;   /* bytes */
} ag_kparam_t;

typedef struct ag_kernel_desc {
  const char *name;          /* mangled name (NUL-terminated; valid during the callback only) */
  int arch;                  /* SM version, e.g. 80: the fatbin entry's, else the cubin's e_flags */
  uint32_t nparams;
  const ag_kparam_t *params; /* nparams entries, in parameter order (ordinal 0 first) */
  uint32_t param_bytes;      /* size of the parameter block (CBANK_PARAM_SIZE, else end of last) */
} ag_kernel_desc_t;

/* Called once per kernel per cubin image. Return 0 to continue, nonzero to stop the walk
 * (the walk then returns that value). */
typedef int (*ag_kernel_cb)(const ag_kernel_desc_t *k, void *ctx);

/* One entry of an image, for ag__image_entries: a cubin, or PTX text (which carries no
 * parameter layouts the library reads, but is what a driver compiles for a GPU that no cubin
 * of the image suits). */
enum { AG_ENTRY_CUBIN = 1, AG_ENTRY_PTX = 2 };
typedef struct ag_image_entry {
  int kind;          /* AG_ENTRY_CUBIN or AG_ENTRY_PTX */
  int arch;          /* SM version it is for: sm_XY for a cubin, compute_XY for PTX (e.g. 75) */
  int version;       /* PTX: ISA version times ten (90: 9.0); cubin: its ELF ABI version */
  const void *data;  /* with_data: the entry's bytes, decompressed (PTX: text, not always
                        NUL-terminated), valid during the callback only; else NULL */
  size_t size;
} ag_image_entry_t;

/* Called once per entry; nonzero stops the walk (which then returns that value). */
typedef int (*ag_entry_cb)(const ag_image_entry_t *e, void *ctx);

/* Where and why a walk failed, for messages such as "file: offset 0x40: truncated entry". */
typedef struct ag_image_err {
  size_t offset;     /* byte offset into the input where the problem was found */
  char msg[128];
} ag_image_err_t;

/* Walks every kernel of every cubin in an image. `size` is the number of readable bytes; pass 0
 * when it is unknown (a registered fatbin or cuModuleLoadData image) and the parser derives the
 * extent from the headers (for a container: that one container; with a size, every container
 * back to back in it, zero padding between them allowed). A wrapper's container is always read
 * by its header, and error offsets are then relative to that container. Kernels are reported
 * in symbol-table order; a cubin entry's arch comes from its fatbin entry header. `err` may be
 * NULL. Returns 0, the callback's nonzero value, or -AG_E… (with err filled in):
 * -AG_EINVAL (not an image), -AG_ETRUNC, -AG_ECORRUPT, -AG_EUNSUP (LZ4 entry, wrapper version
 * other than 1 or 2), -AG_ENOMEM, -AG_ELIB. */
int ag__image_kernels(const void *data, size_t size, ag_kernel_cb cb, void *ctx,
                      ag_image_err_t *err);

/* Walks the entries of an image (as ag__image_kernels reads it) instead of its kernels: every
 * cubin and every PTX entry of a fatbin, in order, as their headers describe them, and with
 * their bytes (decompressed) when `with_data` (decompressing costs: a choice among entries is
 * made from the headers alone); a bare cubin is one entry with the architecture and ABI version
 * of its ELF header, and its bytes. Same returns as ag__image_kernels. */
int ag__image_entries(const void *data, size_t size, int with_data, ag_entry_cb cb, void *ctx,
                      ag_image_err_t *err);

/* Size in bytes of the image at `data` as its headers describe it, or 0 when it is none of those
 * or its headers claim more than `limit` bytes (when nonzero; else at most 1 GiB is believed):
 *   - a wrapper: the size of the one container its data pointer designates (the bytes are
 *     there, not at `data`; the wrapper itself is 24 bytes),
 *   - a container: that one container (16-byte header + payload), not any that follow it,
 *   - a cubin: the furthest byte its section table, program header table or sections reach. */
size_t ag__image_size(const void *data, size_t limit);

/* Walks every kernel of every cubin in the fatbins of a host ELF file (executable, shared
 * library or object) of `size` readable bytes at `elf`, e.g. a whole mmapped libcublasLt.so.13:
 * all containers of its .nv_fatbin section, or of __nv_relfatbin when there is no .nv_fatbin
 * (that section holds pre-link copies of the same kernels). Error offsets are file offsets.
 * Returns 0, the callback's nonzero value, -AG_ENOENT when the file has neither section, or
 * -AG_E… (with err filled in). */
int ag__elf_fatbins(const void *elf, size_t size, ag_kernel_cb cb, void *ctx,
                    ag_image_err_t *err);

#endif

/* With -Isrc this header shadows the system <elf.h> (which <link.h> includes, and whose ELF
 * structures elf.c reads), so it brings the system one in as well, for every includer. It stays
 * outside the guard: when this file is first reached through a quoted include (not through the search
 * path), the lookup starts over, finds it again under -Isrc, and that second pass continues to
 * the system header. Clang warns about the first case, which is intended here. */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#pragma clang diagnostic ignored "-Winclude-next-absolute-path"
#endif
#include_next <elf.h>
#ifdef __clang__
#pragma clang diagnostic pop
#endif
