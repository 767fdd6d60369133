/* fuzz-hostelf.c — fuzz target for ag__elf_fatbins (src/elf.c): the .nv_fatbin and
 * __nv_relfatbin sections of a host executable or shared library, as the kernel inspector
 * reads them from a mapped file. The input is the whole file, passed with its exact size.
 */
#include <string.h>

#include "elf.h"
#include "fuzz.h"

static int on_kernel(const ag_kernel_desc_t *k, void *ctx) {
  uint64_t *sum = ctx;
  FUZZ_ASSERT(k->name != NULL);
  *sum += strlen(k->name);
  FUZZ_ASSERT(k->nparams == 0 || k->params != NULL);
  for (uint32_t i = 0; i < k->nparams; i++) *sum += k->params[i].offset + k->params[i].size;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t sum = 0;
  ag_image_err_t err;
  int rc = ag__elf_fatbins(data, size, on_kernel, &sum, &err);
  FUZZ_ASSERT(rc <= 0);
  return 0;
}
