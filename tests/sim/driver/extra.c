/* extra.c — what the generated stubs of unsupported.c (from unsupported.list) answer. */
#include "drv.h"

#include <stdio.h>
#include <stdlib.h>

/* CUDA_ERROR_NOT_SUPPORTED; with SIM_LOG_UNSUPPORTED set, the function's name on stderr. */
int drv_unsupported(int err, const char *name);
int drv_unsupported(int err, const char *name) {
  if (getenv("SIM_LOG_UNSUPPORTED")) fprintf(stderr, "sim: %s is not simulated\n", name);
  return err;
}

/* NVIDIA's private interfaces, asked for by UUID: there are none here. NVRTC calls this (it
 * dlopens libcuda.so.1, calls cuInit, then this) before it compiles for a real architecture,
 * and crashed when the driver had no such symbol; with no table and an error it goes on. Not
 * in the getter's table (cuGetProcAddress still says it is not found). */
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  if (table) *table = NULL;
  return CUDA_ERROR_NOT_FOUND;
}
