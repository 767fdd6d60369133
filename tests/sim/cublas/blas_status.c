/* blas_status.c — the status strings and version queries of the simulated cuBLAS; they
 * touch no device. The simulated versions are those of the CUDA 13 headers this is built with.
 */
#include <cublas_api.h>
#include <stddef.h>

#include "cublas/common.h"

const char *CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) { return simblas_status_name(status); }
const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) { return simblas_status_string(status); }
size_t CUBLASWINAPI cublasGetCudartVersion(void) { return CUDART_VERSION; }
cublasStatus_t CUBLASWINAPI cublasGetProperty(libraryPropertyType type, int *value) {
  return simblas_property(type, value);
}
