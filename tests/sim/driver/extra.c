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
