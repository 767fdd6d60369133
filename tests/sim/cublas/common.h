/* common.h — internals shared by the simulated cuBLAS and cuBLASLt (common_*.c is linked into
 * both libraries; each keeps its own copy, as the real ones each embed their runtime). */
#ifndef SIM_CUBLAS_COMMON_H
#define SIM_CUBLAS_COMMON_H

#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

#include "cublas/gemm.h"

/* Loads the driver through cuGetProcAddress_v2 (once) and the embedded module into the current
 * context (the primary context of device 0 when none is current). Returns 0, else -1. */
int simblas_init(void);
/* Launches kernel `kname` (GEMM_K_*) over batch GEMMs p on stream s through the driver's
 * cuLaunchKernel. Returns the driver's result. */
CUresult simblas_gemm(const char *kname, cudaStream_t s, const gemm_t *p, int batch,
                      const void *A, const void *B, void *C);
/* Status names and strings, and the version properties, cuBLAS and cuBLASLt report alike. */
const char *simblas_status_name(cublasStatus_t status);
const char *simblas_status_string(cublasStatus_t status);
cublasStatus_t simblas_property(libraryPropertyType type, int *value);
/* What every generated stub answers (with SIM_LOG_UNSUPPORTED, the name on stderr). */
int simblas_unsupported(int status, const char *name);

#endif
