/* getproc-logger.c — a stand-in libcuda.so.1 that records what a real CUDA runtime asks the
 * driver's getter for (see record-requests, which builds and runs it).
 *
 * Every cuGetProcAddress request is appended to $GETPROC_LOG as "symbol, ver=V, flags=F", in
 * order, and answered with a function that fails with CUDA_ERROR_NO_DEVICE, so the runtime
 * sees a driver without a GPU once it calls anything. cuInit and cuDriverGetVersion (13.0)
 * succeed and the getter answers for itself, so that the runtime goes on to fetch its whole table as it would on a real driver.
 */
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;

static void log_req(const char *symbol, int version, unsigned long long flags) {
  const char *path = getenv("GETPROC_LOG");
  FILE *f = path ? fopen(path, "a") : NULL;
  if (!f) return;
  fprintf(f, "%s, ver=%d, flags=%llu\n", symbol ? symbol : "", version, flags);
  fclose(f);
}

static CUresult no_device(void) { return 100; /* CUDA_ERROR_NO_DEVICE */ }

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *v) { if (v) *v = 13000; return 0; }
/* The runtime asks for private interfaces by UUID; there are none here. */
CUresult cuGetExportTable(const void **table, const void *id) {
  (void)id; if (table) *table = NULL; return 500; /* CUDA_ERROR_NOT_FOUND */
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                             int *status);

static void *answer(const char *symbol, int version) {
  if (symbol) {
    if (!__builtin_strcmp(symbol, "cuGetProcAddress"))
      return version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    if (!__builtin_strcmp(symbol, "cuInit")) return (void *)cuInit;
    if (!__builtin_strcmp(symbol, "cuDriverGetVersion")) return (void *)cuDriverGetVersion;
    if (!__builtin_strcmp(symbol, "cuGetExportTable")) return (void *)cuGetExportTable;
  }
  return (void *)no_device;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                             int *status) {
  log_req(symbol, version, flags);
  if (pfn) *pfn = answer(symbol, version);
  if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
  return 0;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
  log_req(symbol, version, flags);
  if (pfn) *pfn = answer(symbol, version);
  return 0;
}
