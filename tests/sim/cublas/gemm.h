/* gemm.h — the one kernel of the simulated cuBLAS and cuBLASLt: a GEMM with float32, float16 or
 * bfloat16 matrices and float32 compute, one thread per element of C, shared by the device code
 * (kernels.cu) and its CPU twin (common_twin.c).
 *
 * Column-major, as cuBLAS: C = alpha op(A) op(B) + beta C (C not read when beta is 0), then the
 * epilogue (cuBLASLt's bias, added per row, and ReLU). Batched GEMMs step A, B and C by their
 * strides per batch (blockIdx.y). Elements are read as their type and widened to float (exact);
 * the products are accumulated in float in index order with fused multiply-adds, as a
 * straightforward GPU kernel compiled by nvcc does, and the result is rounded once to C's type
 * (to nearest even, as cuBLAS's conversions and c10::Half/c10::BFloat16 do; NaN stays NaN).
 */
#ifndef SIM_CUBLAS_GEMM_H
#define SIM_CUBLAS_GEMM_H

#ifdef __CUDACC__
#define GEMM_FN __host__ __device__ static inline
#else
#include <math.h>
#include <string.h>
#define GEMM_FN static inline
#endif

#include "common/halfconv.h"

#define GEMM_BLOCK 128
#define GEMM_K_BLAS "cublassim_sgemm"
#define GEMM_K_LT "cublasltsim_sgemm"

enum { GEMM_EPI_NONE = 0, GEMM_EPI_BIAS = 1, GEMM_EPI_RELU = 2 };
/* Element types of the matrices and the bias. */
enum { GEMM_F32 = 0, GEMM_F16 = 1, GEMM_BF16 = 2 };

typedef struct gemm {
  int transa, transb;          /* 0 N, 1 T (C is the same as T for real data) */
  int m, n, k;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  float alpha, beta;
  int epilogue;                /* GEMM_EPI_* bits */
  const void *bias;            /* m values of bias_type, with GEMM_EPI_BIAS */
  int atype, btype, ctype, bias_type; /* GEMM_F32, GEMM_F16, GEMM_BF16 */
} gemm_t;

GEMM_FN float gemm_load(int type, const void *p, long long i) {
  if (type == GEMM_F16) return simh_half_to_float(((const unsigned short *)p)[i]);
  if (type == GEMM_BF16) return simh_bf16_to_float(((const unsigned short *)p)[i]);
  return ((const float *)p)[i];
}

GEMM_FN void gemm_store(int type, void *p, long long i, float v) {
  if (type == GEMM_F16) ((unsigned short *)p)[i] = simh_float_to_half(v);
  else if (type == GEMM_BF16) ((unsigned short *)p)[i] = simh_float_to_bf16(v);
  else ((float *)p)[i] = v;
}

/* Element i of batch b. */
GEMM_FN void gemm_elem(const gemm_t *p, const void *A, const void *B, void *C, long long i,
                       long long b) {
  long long r = i % p->m, c = i / p->m;
  long long a0 = b * p->stride_a, b0 = b * p->stride_b;
  float acc = 0.0f;
  for (int l = 0; l < p->k; l++) {
    float x = gemm_load(p->atype, A, a0 + (p->transa ? l + r * p->lda : r + l * p->lda));
    float y = gemm_load(p->btype, B, b0 + (p->transb ? c + l * p->ldb : l + c * p->ldb));
    acc = fmaf(x, y, acc);
  }
  long long o = b * p->stride_c + r + c * p->ldc;
  float v = p->beta != 0.0f ? fmaf(p->beta, gemm_load(p->ctype, C, o), p->alpha * acc)
                            : p->alpha * acc;
  if (p->epilogue & GEMM_EPI_BIAS) v += gemm_load(p->bias_type, p->bias, r);
  if ((p->epilogue & GEMM_EPI_RELU) && !(v > 0.0f)) v = v != v ? v : 0.0f;
  gemm_store(p->ctype, C, o, v);
}

#endif
