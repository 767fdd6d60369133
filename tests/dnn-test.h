/* dnn-test.h — host helpers shared by the cuDNN unit tests (tests/unit/dnn-*.cu): deterministic
 * data, and copies between host and device arrays of floats. */
#ifndef AG_TESTS_DNN_TEST_H
#define AG_TESTS_DNN_TEST_H

#include <cuda_runtime.h>

#include "check.h"

/* n floats in [-1, 1) from a linear congruential sequence started at seed. */
static inline void fill(float *v, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

static inline float *dev_from(const float *h, size_t n) {
  float *d;
  CHECK_CUDA(cudaMalloc(&d, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

static inline void to_host(float *h, const float *d, size_t n) {
  CHECK_CUDA(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
}

#endif
