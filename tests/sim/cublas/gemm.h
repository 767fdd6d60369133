/* gemm.h — the one kernel of the simulated cuBLAS and cuBLASLt: a float32 GEMM, one thread per
 * element of C, shared by the device code (kernels.cu) and its CPU twin (common_twin.c).
 *
 * Column-major, as cuBLAS: C = alpha op(A) op(B) + beta C (C not read when beta is 0), then the
 * epilogue (cuBLASLt's bias, added per row, and ReLU). Batched GEMMs step A, B and C by their
 * strides per batch (blockIdx.y). The products are accumulated in index order with fused
 * multiply-adds, as a straightforward GPU kernel compiled by nvcc does.
 */
#ifndef SIM_CUBLAS_GEMM_H
#define SIM_CUBLAS_GEMM_H

#ifdef __CUDACC__
#define GEMM_FN __host__ __device__ static inline
#else
#include <math.h>
#define GEMM_FN static inline
#endif

#define GEMM_BLOCK 128
#define GEMM_K_BLAS "cublassim_sgemm"
#define GEMM_K_LT "cublasltsim_sgemm"

enum { GEMM_EPI_NONE = 0, GEMM_EPI_BIAS = 1, GEMM_EPI_RELU = 2 };

typedef struct gemm {
  int transa, transb;          /* 0 N, 1 T (C is the same as T for real data) */
  int m, n, k;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  float alpha, beta;
  int epilogue;                /* GEMM_EPI_* bits */
  const float *bias;           /* m values, with GEMM_EPI_BIAS */
} gemm_t;

/* Element i of batch b. */
GEMM_FN void gemm_elem(const gemm_t *p, const float *A, const float *B, float *C, long long i,
                       long long b) {
  long long r = i % p->m, c = i / p->m;
  const float *a = A + b * p->stride_a, *bb = B + b * p->stride_b;
  float acc = 0.0f;
  for (int l = 0; l < p->k; l++) {
    float x = p->transa ? a[l + r * p->lda] : a[r + l * p->lda];
    float y = p->transb ? bb[c + l * p->ldb] : bb[l + c * p->ldb];
    acc = fmaf(x, y, acc);
  }
  float *out = C + b * p->stride_c + r + c * p->ldc;
  float v = p->beta != 0.0f ? fmaf(p->beta, *out, p->alpha * acc) : p->alpha * acc;
  if (p->epilogue & GEMM_EPI_BIAS) v += p->bias[r];
  if ((p->epilogue & GEMM_EPI_RELU) && !(v > 0.0f)) v = v != v ? v : 0.0f;
  *out = v;
}

#endif
