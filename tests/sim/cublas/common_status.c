/* common_status.c — the status names and version properties cuBLAS and cuBLASLt report alike
 * (common.h); they touch no device. The versions are those of the CUDA 13 headers this is built
 * with. */
#include <cublas_api.h>

#include "cublas/common.h"

const char *simblas_status_name(cublasStatus_t s) {
  switch (s) {
#define S(x) case x: return #x;
    S(CUBLAS_STATUS_SUCCESS) S(CUBLAS_STATUS_NOT_INITIALIZED) S(CUBLAS_STATUS_ALLOC_FAILED)
    S(CUBLAS_STATUS_INVALID_VALUE) S(CUBLAS_STATUS_ARCH_MISMATCH) S(CUBLAS_STATUS_MAPPING_ERROR)
    S(CUBLAS_STATUS_EXECUTION_FAILED) S(CUBLAS_STATUS_INTERNAL_ERROR)
    S(CUBLAS_STATUS_NOT_SUPPORTED) S(CUBLAS_STATUS_LICENSE_ERROR)
#undef S
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char *simblas_status_string(cublasStatus_t s) {
  return s == CUBLAS_STATUS_NOT_SUPPORTED ? "operation not supported by the simulator"
                                          : simblas_status_name(s);
}

cublasStatus_t simblas_property(libraryPropertyType type, int *value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}
