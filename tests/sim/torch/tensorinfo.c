/* tensorinfo.c — PyTorch's TensorInfo kernel parameter (ATen/cuda/detail/TensorInfo.cuh) and its
 * IndexToOffset, shared by the twins of the kernels that take one (nn.c, sort.c, rnn.c).
 *
 * A TensorInfo<T, IndexType> is the data pointer, then sizes[25] and strides[25] of IndexType
 * (4 bytes for int and unsigned int, 8 for int64_t), then the dimension count (int). The twins
 * compute offsets in 64-bit arithmetic: a kernel only gets 32-bit indices when every offset fits
 * in them (canUse32BitIndexMath), so the results are the same.
 */
#include <string.h>

#include "twins.h"

simtw_ti_t simtw_ti_read(const void *arg, int index_bytes) {
  simtw_ti_t t;
  const char *p = arg;
  memcpy(&t.data, p, sizeof t.data);
  for (int i = 0; i < SIMTW_TI_DIMS; i++) {
    const char *size = p + 8 + index_bytes * i, *stride = size + index_bytes * SIMTW_TI_DIMS;
    if (index_bytes == 4) {
      int32_t a, b;
      memcpy(&a, size, 4), memcpy(&b, stride, 4);
      t.sizes[i] = a, t.strides[i] = b;
    } else {
      memcpy(&t.sizes[i], size, 8), memcpy(&t.strides[i], stride, 8);
    }
  }
  memcpy(&t.dims, p + 8 + 2 * SIMTW_TI_DIMS * index_bytes, 4);
  if (t.dims < 0 || t.dims > SIMTW_TI_DIMS) t.dims = 0;
  return t;
}

uint64_t simtw_ti_offset(const simtw_ti_t *t, int dims, uint64_t i) {
  if (dims == -2) return i;
  if (dims < 0 || dims > SIMTW_TI_DIMS) dims = t->dims;
  if (dims < 1) return i;
  uint64_t off = 0;
  for (int d = dims - 1; d > 0; d--) {
    off += (i % (uint64_t)t->sizes[d]) * (uint64_t)t->strides[d];
    i /= (uint64_t)t->sizes[d];
  }
  return off + i * (uint64_t)t->strides[0];
}

uint64_t simtw_ti_numel(const simtw_ti_t *t) {
  uint64_t n = 1;
  for (int d = 0; d < t->dims; d++) n *= (uint64_t)t->sizes[d];
  return n;
}
