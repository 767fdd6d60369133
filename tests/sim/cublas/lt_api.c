/* lt_api.c — the simulated cuBLASLt: handles, descriptors and cublasLtMatmul for float32,
 * float16 and bfloat16 matrices with float32 compute and scale (A, B, C and D of one type; a
 * bias of D's type, or float32).
 *
 * Descriptors are allocated by the Create functions and hold what the matmul reads: the matmul
 * descriptor its compute and scale types, transposes, epilogue (DEFAULT, RELU, BIAS, RELU_BIAS)
 * and bias pointer; a layout its type, rows, columns, leading dimension, batch count and stride
 * (column order only). The heuristic offers one algorithm, needing no workspace. cublasLtMatmul
 * launches the GEMM kernel (gemm.h) on the given stream through the driver, with D the output;
 * C must be D or beta 0 (the simulated kernel updates in place). Host scalars only. Any other
 * case answers CUBLAS_STATUS_NOT_SUPPORTED; every other function of the real library is a
 * generated stub (lt_unsupported.c).
 *
 * A cuBLAS handle may be passed where a cuBLASLt handle is expected, as the real libraries allow
 * and PyTorch does; the matmul and the heuristic therefore accept any non-NULL handle (they keep
 * no state in it).
 */
#include <cublasLt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cublas/common.h"

#define LT_MAGIC 0x17A5B1A5u

typedef struct lt_handle {
  uint32_t magic;
} lt_handle_t;

typedef struct lt_desc {
  int32_t compute, scale, transa, transb, pmode;
  uint32_t epilogue;
  const void *bias;
  int32_t bias_type;
} lt_desc_t;

typedef struct lt_layout {
  int32_t type, order;
  uint64_t rows, cols;
  int64_t ld, stride;
  int32_t batch;
} lt_layout_t;

typedef struct lt_pref {
  uint64_t max_workspace;
} lt_pref_t;

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *lightHandle) {
  if (!lightHandle) return CUBLAS_STATUS_INVALID_VALUE;
  if (simblas_init()) return CUBLAS_STATUS_NOT_INITIALIZED;
  lt_handle_t *h = calloc(1, sizeof *h);
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  h->magic = LT_MAGIC;
  *lightHandle = (cublasLtHandle_t)h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle) {
  lt_handle_t *h = (lt_handle_t *)lightHandle;
  if (!h || h->magic != LT_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->magic = 0;
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}

/* Copies an attribute value of exactly `size` bytes into dst. */
static cublasStatus_t set(void *dst, size_t size, const void *buf, size_t n) {
  if (!buf || n != size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(dst, buf, n);
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t get(const void *src, size_t size, void *buf, size_t n, size_t *written) {
  if (written) *written = size;
  if (!n && written) return CUBLAS_STATUS_SUCCESS;
  if (!buf || n < size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, src, size);
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- matmul descriptor ---- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
  if (!matmulDesc) return CUBLAS_STATUS_INVALID_VALUE;
  lt_desc_t *d = calloc(1, sizeof *d);
  if (!d) return CUBLAS_STATUS_ALLOC_FAILED;
  d->compute = computeType;
  d->scale = scaleType;
  d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  d->bias_type = -1;
  *matmulDesc = (cublasLtMatmulDesc_t)d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  free(matmulDesc);
  return CUBLAS_STATUS_SUCCESS;
}

static void *desc_field(lt_desc_t *d, cublasLtMatmulDescAttributes_t a, size_t *size) {
  switch (a) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: *size = 4; return &d->compute;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: *size = 4; return &d->scale;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: *size = 4; return &d->pmode;
    case CUBLASLT_MATMUL_DESC_TRANSA: *size = 4; return &d->transa;
    case CUBLASLT_MATMUL_DESC_TRANSB: *size = 4; return &d->transb;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: *size = 4; return &d->epilogue;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: *size = sizeof(void *); return &d->bias;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: *size = 4; return &d->bias_type;
    default: return NULL;
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void *buf, size_t sizeInBytes) {
  size_t size;
  void *f = matmulDesc ? desc_field((lt_desc_t *)matmulDesc, attr, &size) : NULL;
  if (!matmulDesc) return CUBLAS_STATUS_INVALID_VALUE;
  if (!f) return CUBLAS_STATUS_NOT_SUPPORTED;
  return set(f, size, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           void *buf, size_t sizeInBytes,
                                                           size_t *sizeWritten) {
  size_t size;
  void *f = matmulDesc ? desc_field((lt_desc_t *)matmulDesc, attr, &size) : NULL;
  if (!matmulDesc) return CUBLAS_STATUS_INVALID_VALUE;
  if (!f) return CUBLAS_STATUS_NOT_SUPPORTED;
  return get(f, size, buf, sizeInBytes, sizeWritten);
}

/* ---- matrix layouts ---- */

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  if (!matLayout) return CUBLAS_STATUS_INVALID_VALUE;
  lt_layout_t *l = calloc(1, sizeof *l);
  if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
  l->type = type;
  l->order = CUBLASLT_ORDER_COL;
  l->rows = rows, l->cols = cols, l->ld = ld;
  l->batch = 1;
  *matLayout = (cublasLtMatrixLayout_t)l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(const cublasLtMatrixLayout_t matLayout) {
  free(matLayout);
  return CUBLAS_STATUS_SUCCESS;
}

static void *layout_field(lt_layout_t *l, cublasLtMatrixLayoutAttribute_t a, size_t *size) {
  switch (a) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: *size = 4; return &l->type;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: *size = 4; return &l->order;
    case CUBLASLT_MATRIX_LAYOUT_ROWS: *size = 8; return &l->rows;
    case CUBLASLT_MATRIX_LAYOUT_COLS: *size = 8; return &l->cols;
    case CUBLASLT_MATRIX_LAYOUT_LD: *size = 8; return &l->ld;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: *size = 4; return &l->batch;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: *size = 8; return &l->stride;
    default: return NULL;
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             const void *buf, size_t sizeInBytes) {
  size_t size;
  void *f = matLayout ? layout_field((lt_layout_t *)matLayout, attr, &size) : NULL;
  if (!matLayout) return CUBLAS_STATUS_INVALID_VALUE;
  if (!f) return CUBLAS_STATUS_NOT_SUPPORTED;
  return set(f, size, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             void *buf, size_t sizeInBytes,
                                                             size_t *sizeWritten) {
  size_t size;
  void *f = matLayout ? layout_field((lt_layout_t *)matLayout, attr, &size) : NULL;
  if (!matLayout) return CUBLAS_STATUS_INVALID_VALUE;
  if (!f) return CUBLAS_STATUS_NOT_SUPPORTED;
  return get(f, size, buf, sizeInBytes, sizeWritten);
}

/* ---- preferences and the heuristic ---- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  lt_pref_t *p = calloc(1, sizeof *p);
  if (!p) return CUBLAS_STATUS_ALLOC_FAILED;
  *pref = (cublasLtMatmulPreference_t)p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  free(pref);
  return CUBLAS_STATUS_SUCCESS;
}

/* Every preference is accepted: the one algorithm needs no workspace and no alignment. */
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t sizeInBytes) {
  if (!pref || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
    return set(&((lt_pref_t *)pref)->max_workspace, 8, buf, sizeInBytes);
  return CUBLAS_STATUS_SUCCESS;
}

/* The GEMM_* element type of a cudaDataType; -1 when the kernel has none. */
static int gemm_type(int32_t t) {
  return t == CUDA_R_32F ? GEMM_F32 : t == CUDA_R_16F ? GEMM_F16 : t == CUDA_R_16BF ? GEMM_BF16 : -1;
}

/* Checks that the operation is one the GEMM kernel computes, and fills p (batch count in *batch). */
static cublasStatus_t plan(const lt_desc_t *d, const lt_layout_t *a, const lt_layout_t *b,
                           const lt_layout_t *c, const lt_layout_t *dd, gemm_t *p, int *batch) {
  if (d->compute != CUBLAS_COMPUTE_32F && d->compute != CUBLAS_COMPUTE_32F_FAST_TF32 &&
      d->compute != CUBLAS_COMPUTE_32F_PEDANTIC)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (d->scale != CUDA_R_32F || d->pmode != CUBLASLT_POINTER_MODE_HOST) return CUBLAS_STATUS_NOT_SUPPORTED;
  const lt_layout_t *all[] = {a, b, c, dd};
  for (int i = 0; i < 4; i++)
    if (!all[i] || all[i]->type != a->type || all[i]->order != CUBLASLT_ORDER_COL ||
        all[i]->batch != a->batch)
      return CUBLAS_STATUS_NOT_SUPPORTED;
  int type = gemm_type(a->type);
  if (type < 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  uint32_t epi = d->epilogue;
  memset(p, 0, sizeof *p);
  if (epi == CUBLASLT_EPILOGUE_RELU || epi == CUBLASLT_EPILOGUE_RELU_BIAS) p->epilogue |= GEMM_EPI_RELU;
  if (epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_RELU_BIAS) p->epilogue |= GEMM_EPI_BIAS;
  if (epi != CUBLASLT_EPILOGUE_DEFAULT && !p->epilogue) return CUBLAS_STATUS_NOT_SUPPORTED;
  /* The bias has D's type unless its type is set (float32 is also allowed with half D). */
  p->bias_type = d->bias_type == -1 ? type : gemm_type(d->bias_type);
  if ((p->epilogue & GEMM_EPI_BIAS) && (!d->bias || p->bias_type < 0 ||
                                        (p->bias_type != type && p->bias_type != GEMM_F32)))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  p->atype = p->btype = p->ctype = type;
  p->transa = d->transa != CUBLAS_OP_N;
  p->transb = d->transb != CUBLAS_OP_N;
  uint64_t m = p->transa ? a->cols : a->rows, k = p->transa ? a->rows : a->cols;
  uint64_t kb = p->transb ? b->cols : b->rows, n = p->transb ? b->rows : b->cols;
  if (k != kb || dd->rows != m || dd->cols != n || c->rows != m || c->cols != n ||
      m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff || c->ld != dd->ld ||
      c->stride != dd->stride)
    return CUBLAS_STATUS_INVALID_VALUE;
  p->m = (int)m, p->n = (int)n, p->k = (int)k;
  p->lda = a->ld, p->ldb = b->ld, p->ldc = dd->ld;
  p->stride_a = a->stride, p->stride_b = b->stride, p->stride_c = dd->stride;
  p->bias = d->bias;
  *batch = a->batch;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount) {
  if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!operationDesc || !preference || requestedAlgoCount < 1 || !heuristicResultsArray ||
      !returnAlgoCount)
    return CUBLAS_STATUS_INVALID_VALUE;
  gemm_t p;
  int batch;
  *returnAlgoCount = 0;
  cublasStatus_t st = plan((lt_desc_t *)operationDesc, (lt_layout_t *)Adesc, (lt_layout_t *)Bdesc,
                           (lt_layout_t *)Cdesc, (lt_layout_t *)Ddesc, &p, &batch);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  memset(&heuristicResultsArray[0], 0, sizeof heuristicResultsArray[0]);
  heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
  heuristicResultsArray[0].wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
    const void *A, cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
    const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
    cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
    size_t workspaceSizeInBytes, cudaStream_t stream) {
  (void)algo, (void)workspace, (void)workspaceSizeInBytes;
  if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!computeDesc || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  gemm_t p;
  int batch;
  cublasStatus_t st = plan((lt_desc_t *)computeDesc, (lt_layout_t *)Adesc, (lt_layout_t *)Bdesc,
                           (lt_layout_t *)Cdesc, (lt_layout_t *)Ddesc, &p, &batch);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  p.alpha = *(const float *)alpha;
  p.beta = *(const float *)beta;
  if (C != D && p.beta != 0.0f) return CUBLAS_STATUS_NOT_SUPPORTED;
  CUresult r = simblas_gemm(GEMM_K_LT, stream, &p, batch, A, B, D);
  return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
