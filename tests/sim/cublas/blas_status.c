/* blas_status.c — the status strings and version queries of the simulated cuBLAS; they
 * touch no device. The simulated versions are those of the CUDA 13 headers this is built with.
 */
#include <cublas_api.h>
#include <stddef.h>

static const char *status_name(cublasStatus_t s) {
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

const char *CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) { return status_name(status); }
const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_NOT_SUPPORTED ? "operation not supported by the simulator"
                                               : status_name(status);
}
size_t CUBLASWINAPI cublasGetCudartVersion(void) { return CUDART_VERSION; }

static cublasStatus_t property(libraryPropertyType type, int *value) {
  if (!value) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t CUBLASWINAPI cublasGetProperty(libraryPropertyType type, int *value) {
  return property(type, value);
}
