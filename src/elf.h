/* elf.h — kernels and their parameter layouts, read from CUDA device code images.
 *
 * One parser for every consumer: the engine (layouts of kernels the driver cannot describe),
 * the simulator's driver (cuModuleLoadData, cuFuncGetParamInfo), and the kernel inspector.
 * It accepts, by content:
 *   - a fatbin wrapper as handed to __cudaRegisterFatBinary (magic 0x466243B1),
 *   - a fatbin container (magic 0xBA55ED50), or several back to back,
 *   - a cubin (an ELF image of machine EM_CUDA, 190).
 * zstd-compressed entries (flag 0x8000) are decompressed with libzstd; PTX entries are skipped.
 * It never reads outside [data, data + size) and returns -AG_ETRUNC / -AG_ECORRUPT for bad input.
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
  int arch;                  /* SM version of the image, e.g. 80; 0 when unknown (bare cubin: from e_flags) */
  uint32_t nparams;
  const ag_kparam_t *params; /* nparams entries, in parameter order (ordinal 0 first) */
  uint32_t param_bytes;      /* size of the parameter block (CBANK_PARAM_SIZE, else end of last) */
} ag_kernel_desc_t;

/* Called once per kernel per cubin image. Return 0 to continue, nonzero to stop the walk
 * (the walk then returns that value). */
typedef int (*ag_kernel_cb)(const ag_kernel_desc_t *k, void *ctx);

/* Where and why a walk failed, for messages such as "file: offset 0x40: truncated entry". */
typedef struct ag_image_err {
  size_t offset;     /* byte offset into the input where the problem was found */
  char msg[128];
} ag_image_err_t;

/* Walks every kernel of every cubin in an image. `size` is the number of readable bytes; pass 0
 * when it is unknown (a registered fatbin or cuModuleLoadData image) and the parser derives the
 * extent from the headers. `err` may be NULL. Returns 0, the callback's nonzero value, or
 * -AG_E… (with err filled in). */
int ag__image_kernels(const void *data, size_t size, ag_kernel_cb cb, void *ctx,
                      ag_image_err_t *err);

/* Size in bytes of the image at `data` as its headers describe it (wrapper → container(s),
 * container, or cubin), or 0 when it is none of those. Bounded by `limit` when nonzero. */
size_t ag__image_size(const void *data, size_t limit);

#endif
