/* fuzz-image.c — fuzz target for ag__image_kernels, ag__image_entries and ag__image_size
 * (src/elf.c): fatbin wrappers, fatbin containers and cubins as handed to
 * __cudaRegisterFatBinary and cuModuleLoadData.
 *
 * The input is the image, passed with its exact size (the parser must never read outside it;
 * an empty input is skipped, since size 0 means "trust the headers"). Every reported kernel
 * must be readable: a NUL-terminated name, and parameters present when counted. The last byte
 * of the input picks after how many kernels the callback stops the walk, so that the early-stop
 * path is exercised. ag__image_size, told the input's length, must never claim more. A wrapper
 * (magic 0x466243B1) holds a pointer, which could point anywhere, so such inputs are not given
 * to the parser as they are: the pointer is replaced by the address of a copy of the rest of the
 * input, and that copy is used only when it is a container whose declared size fits in it
 * (through a wrapper the parser believes the container's header).
 */
#include <string.h>

#include "elf.h"
#include "fuzz.h"

typedef struct walk {
  unsigned seen, stop_at;
  uint64_t sum;
} walk_t;

static int on_kernel(const ag_kernel_desc_t *k, void *ctx) {
  walk_t *w = ctx;
  FUZZ_ASSERT(k->name != NULL);
  w->sum += strlen(k->name); /* touches every byte of the name: an overread shows */
  FUZZ_ASSERT(k->nparams == 0 || k->params != NULL);
  for (uint32_t i = 0; i < k->nparams; i++)
    w->sum += (uint64_t)k->params[i].offset + k->params[i].size;
  if (++w->seen == w->stop_at) return 7;
  return 0;
}

static int on_entry(const ag_image_entry_t *e, void *ctx) {
  walk_t *w = ctx;
  FUZZ_ASSERT(e->kind == AG_ENTRY_CUBIN || e->kind == AG_ENTRY_PTX);
  /* Every byte reported must be readable: an overread shows. */
  for (size_t i = 0; e->data && i < e->size; i++) w->sum += ((const uint8_t *)e->data)[i];
  if (++w->seen == w->stop_at) return 7;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0; /* size 0 means "unknown, trust the headers": not a bounded input */
  walk_t w = {0, (unsigned)(data[size - 1] % 8), 0};
  ag_image_err_t err;
  uint32_t magic = 0;
  if (size >= 4) memcpy(&magic, data, 4);
  if (magic == 0x466243B1u) {
    /* Wrapper: {u32 magic, u32 version, const void *data, void *filename}; its container is
     * the rest of the input, copied to a buffer of exactly its length. */
    if (size < 24) return 0;
    size_t n = size - 24;
    uint8_t *payload = malloc(n ? n : 1);
    if (!payload) return 0;
    memcpy(payload, data + 24, n);
    uint32_t inner = 0;
    if (n >= 16) memcpy(&inner, payload, 4);
    size_t declared = inner == 0xBA55ED50u ? ag__image_size(payload, n) : 0;
    if (declared && declared <= n) {
      uint8_t wrap[24];
      memcpy(wrap, data, 24);
      const void *p = payload;
      memcpy(wrap + 8, &p, sizeof p);
      memset(wrap + 16, 0, 8);
      int rc = ag__image_kernels(wrap, 0, on_kernel, &w, &err);
      FUZZ_ASSERT(rc <= 0 || rc == 7);
    }
    free(payload);
    return 0;
  }
  int rc = ag__image_kernels(data, size, on_kernel, &w, &err);
  FUZZ_ASSERT(rc <= 0 || rc == 7);
  if (rc < 0) FUZZ_ASSERT(memchr(err.msg, '\0', sizeof err.msg) != NULL);
  /* The entry walk, from the headers and with every entry's bytes. */
  for (int with_data = 0; with_data <= 1; with_data++) {
    w.seen = 0;
    rc = ag__image_entries(data, size, with_data, on_entry, &w, &err);
    FUZZ_ASSERT(rc <= 0 || rc == 7);
  }
  /* The size query must stay inside the input when it is told the input's length. */
  if (size >= 64) {
    size_t s = ag__image_size(data, size);
    FUZZ_ASSERT(s <= size);
  }
  return 0;
}
