/* lt_status.c — the status strings and version queries of the simulated cuBLASLt; they
 * touch no device. The simulated versions are those of the CUDA 13 headers this is built with.
 */
#include <cublasLt.h>
#include <cublas_api.h>
#include <stddef.h>

#include "cublas/common.h"

const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) { return simblas_status_name(status); }
const char *CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) { return simblas_status_string(status); }
size_t CUBLASWINAPI cublasLtGetCudartVersion(void) { return CUDART_VERSION; }
size_t CUBLASWINAPI cublasLtGetVersion(void) { return CUBLAS_VERSION; }
cublasStatus_t CUBLASWINAPI cublasLtGetProperty(libraryPropertyType type, int *value) {
  return simblas_property(type, value);
}
