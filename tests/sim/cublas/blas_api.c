/* blas_api.c — the simulated cuBLAS: handles and the GEMMs PyTorch calls (float32; float16 and
 * bfloat16 through the typed-by-argument GEMMs, with float32 compute).
 *
 * A handle holds a stream, a workspace, a math mode and the pointer mode. The GEMMs check their
 * arguments as cuBLAS documents (CUBLAS_STATUS_INVALID_VALUE) and launch the GEMM kernel
 * (gemm.h) on the handle's stream through the driver (common_drv.c); nothing is computed on the
 * caller. Scalars are read at the call, so only CUBLAS_POINTER_MODE_HOST is simulated. Every other
 * function of the real library is a generated stub (blas_unsupported.c).
 */
#include <cublas_api.h>
#include <stdint.h>
#include <stdlib.h>

#include "cublas/common.h"

#define HANDLE_MAGIC 0xB1A5B1A5u

struct cublasContext {
  uint32_t magic;
  cudaStream_t stream;
  cublasMath_t math;
  cublasPointerMode_t pmode;
  cublasAtomicsMode_t atomics;
};

static int ok(cublasHandle_t h) { return h && h->magic == HANDLE_MAGIC; }

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t *handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  if (simblas_init()) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasHandle_t h = calloc(1, sizeof *h);
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  h->magic = HANDLE_MAGIC;
  h->math = CUBLAS_DEFAULT_MATH;
  h->pmode = CUBLAS_POINTER_MODE_HOST;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->magic = 0;
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetVersion_v2(cublasHandle_t handle, int *version) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!streamId) return CUBLAS_STATUS_INVALID_VALUE;
  *streamId = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

/* The GEMM kernel needs no workspace; the one given is accepted as cuBLAS accepts it. */
cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                                  size_t workspaceSizeInBytes) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (workspaceSizeInBytes && !workspace) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->pmode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pmode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->atomics = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode) {
  if (!ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->atomics;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- GEMM ---- */

static const int F32[3] = {GEMM_F32, GEMM_F32, GEMM_F32};

static int trans(cublasOperation_t op, int *t) {
  if (op == CUBLAS_OP_N) *t = 0;
  else if (op == CUBLAS_OP_T || op == CUBLAS_OP_C) *t = 1;
  else return -1;
  return 0;
}

/* types: the GEMM_* element types of A, B and C. */
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const void *A, long long lda,
                           long long sa, const void *B, long long ldb, long long sb,
                           const float *beta, void *C, long long ldc, long long sc, int batch,
                           const int types[3]) {
  if (!ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  gemm_t p = {0};
  p.atype = types[0], p.btype = types[1], p.ctype = types[2];
  if (trans(ta, &p.transa) || trans(tb, &p.transb) || m < 0 || n < 0 || k < 0 || batch < 0 ||
      lda < (p.transa ? k : m) || lda < 1 || ldb < (p.transb ? n : k) || ldb < 1 ||
      ldc < m || ldc < 1 || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (h->pmode != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_NOT_SUPPORTED;
  p.m = m, p.n = n, p.k = k;
  p.lda = lda, p.ldb = ldb, p.ldc = ldc;
  p.stride_a = sa, p.stride_b = sb, p.stride_c = sc;
  p.alpha = *alpha, p.beta = *beta;
  CUresult r = simblas_gemm(GEMM_K_BLAS, h->stream, &p, batch, A, B, C);
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k,
                                           const float *alpha, const float *A, int lda,
                                           const float *B, int ldb, const float *beta, float *C,
                                           int ldc) {
  return gemm(handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, F32);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const float *alpha, const float *A, int lda, long long strideA, const float *B, int ldb,
    long long strideB, const float *beta, float *C, int ldc, long long strideC, int batchCount) {
  return gemm(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
              ldc, strideC, batchCount, F32);
}

/* The typed-by-argument GEMMs, with float32 compute (TF32 and the pedantic and fast modes
 * included: the simulated kernel computes in float32 whatever the mode) and float32 scalars: A,
 * B and C all float32, all float16 or all bfloat16 (the combinations PyTorch uses; cuBLAS also
 * allows half inputs with a float32 C, not simulated). Fills types; 0 when not simulated. */
static int typed(cudaDataType a, cudaDataType b, cudaDataType c, cublasComputeType_t ct,
                 int types[3]) {
  if (ct != CUBLAS_COMPUTE_32F && ct != CUBLAS_COMPUTE_32F_PEDANTIC &&
      ct != CUBLAS_COMPUTE_32F_FAST_TF32)
    return 0;
  if (a != b || a != c) return 0;
  types[0] = types[1] = types[2] = a == CUDA_R_32F ? GEMM_F32 : a == CUDA_R_16F ? GEMM_F16
                                 : a == CUDA_R_16BF ? GEMM_BF16 : -1;
  return types[0] >= 0;
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const void *alpha, const void *A, cudaDataType Atype,
                                         int lda, const void *B, cudaDataType Btype, int ldb,
                                         const void *beta, void *C, cudaDataType Ctype, int ldc,
                                         cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)algo;
  int types[3];
  if (!typed(Atype, Btype, Ctype, computeType, types)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return gemm(handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1,
              types);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long strideA,
    const void *B, cudaDataType Btype, int ldb, long long strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)algo;
  int types[3];
  if (!typed(Atype, Btype, Ctype, computeType, types)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return gemm(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
              ldc, strideC, batchCount, types);
}
