/* embbag.c — CPU twin of torch.nn.functional.embedding_bag's forward in sum and mean modes
 * (EmbeddingBag.cu), for float, c10::Half and c10::BFloat16 weights with int64 indices.
 *
 *   EmbeddingBag_updateOutputKernel_sum_mean<T, long>(const long *input, const long *offsets,
 *     const T *weight, T *output, long *offset2bag, int64 numIndices, int64 numBags,
 *     int64 featureSize, int64 weight_stride0, int64 weight_stride1, int mode, long *bag_size,
 *     const T *per_sample_weights, int64 per_sample_weights_stride, int64 padding_idx,
 *     int64 numRows): each (bag, feature) pair, one thread, sums in float (T's accumulate type)
 *     the bag's rows input[begin .. end) in order, begin = offsets[bag] (0 for the first bag),
 *     end = offsets[bag + 1] (numIndices for the last), a row equal to padding_idx counting as 0
 *     and not in the bag's size; mean mode (1) divides by the size when it is not 0. It stores
 *     T(sum) at output[bag * featureSize + feature], the size at bag_size[bag] and, for feature
 *     0, bag into offset2bag of each of its positions. The twin does the same float operations
 *     in the same order. Per-sample weights (a product added to the sum, which the compiler may
 *     fuse) have no twin here; a row outside [0, numRows) is the kernel's assertion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

static void run_embbag_sum_mean(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  size_t es = simtw_dt_size(dt);
  const int64_t *input = *(const int64_t **)args[0], *offsets = *(const int64_t **)args[1];
  const char *weight = *(const char **)args[2];
  char *output = *(char **)args[3];
  int64_t *offset2bag = *(int64_t **)args[4];
  int64_t nidx = *(int64_t *)args[5], nbags = *(int64_t *)args[6], fsize = *(int64_t *)args[7];
  int64_t ws0 = *(int64_t *)args[8], ws1 = *(int64_t *)args[9];
  int mode = *(int *)args[10];
  int64_t *bag_size = *(int64_t **)args[11];
  const void *psw = *(const void **)args[12];
  int64_t padding_idx = *(int64_t *)args[14], nrows = *(int64_t *)args[15];
  if (psw || (mode != 0 && mode != 1)) {
    fprintf(stderr, "sim: %s: %s, which has no twin; not run\n", k->name,
            psw ? "per-sample weights" : "a mode other than sum and mean");
    abort();
  }
  for (int64_t bag = 0; bag < nbags; bag++) {
    int64_t begin = bag == 0 ? 0 : offsets[bag], end = bag < nbags - 1 ? offsets[bag + 1] : nidx;
    if (end < begin) {
      fprintf(stderr, "sim: %s: bag %lld ends before it begins: the kernel's assertion; stopped\n", k->name,
              (long long)bag);
      abort();
    }
    for (int64_t f = 0; f < fsize; f++) {
      float sum = 0.0f;
      int64_t size = 0;
      for (int64_t e = begin; e < end; e++) {
        int64_t row = input[e];
        if (row < 0 || row >= nrows) {
          fprintf(stderr, "sim: %s: index %lld outside [0, %lld): the kernel's assertion; stopped\n", k->name,
                  (long long)row, (long long)nrows);
          abort();
        }
        int pad = row == padding_idx;
        float v = pad ? 0.0f : (float)simtw_load(dt, weight + es * (size_t)(row * ws0 + f * ws1)).f;
        sum += v;
        size += pad ? 0 : 1;
        if (f == 0) offset2bag[e] = bag;
      }
      if (mode == 1 && size != 0) sum = sum / (float)size;
      bag_size[bag] = size;
      simtw_store(dt, output + es * (size_t)(bag * fsize + f), simtw_fval(sum));
    }
  }
}

int simtw_embbag_resolve(const char *dm, simtw_nn_t *k) {
  static const char pre[] = "void at::native::(anonymous namespace)::EmbeddingBag_updateOutputKernel_sum_mean<";
  const char *e;
  if (strncmp(dm, pre, sizeof pre - 1) != 0) return 0;
  simtw_dt_t dt = simtw_dt_parse(dm + sizeof pre - 1, &e);
  if ((dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) || strncmp(e, ", long>(", 8) != 0) return 0;
  k->run = run_embbag_sum_mean;
  k->p[0] = (int)dt;
  return 1;
}
