/* scatter.c — CPU twins of PyTorch's scatter/gather kernels (ScatterGatherKernel.cu):
 * torch.gather, scatter_ with a tensor or a scalar source, and scatter_add_ (which is also
 * gather's backward, as gather is scatter's); and of advanced indexing (IndexKernel.cu): a[idx]
 * with index tensors, index_put_ (with accumulation: its sorted backward-style kernel), index_copy_
 * and index_fill_.
 *
 * All of them are one template, _scatter_gather_elementwise_kernel<128, 8, loop>(int N, loop),
 * whose loop lambda comes from _cuda_scatter_gather_internal_kernel<is_scatter_like, scalar_t,
 * index_t>::operator()<F> (a tensor source) or _cuda_scatter_fill_internal_kernel<scalar_t,
 * index_t>::operator()<F> (a scalar source). The host side restrides the tensors so that all
 * walk the index tensor's shape, the dimension `dim` of the indexed one with stride 0; the
 * lambda then gets, for element i < N, the byte offsets of i in each operand from its
 * OffsetCalculator, reads idx = index[i] and applies F (TensorAssign: *dst = *src; ReduceAdd:
 * *dst += *src) to
 *   scatter-like: dst = self + off0 (+ idx * index_stride elements), src = src + off1,
 *   gather:       dst = self + off0, src = src + off1 (+ idx * index_stride elements),
 *   fill:         dst = self + off0 (+ idx * index_stride elements), src = the scalar.
 * The captured values, as the wheel lays them out (read from its launches: the pointers, sizes
 * and strides of known tensors fall at these offsets, and the sizes match the cubins' parameter
 * blocks): the OffsetCalculator<3> (604 bytes), then at 608 index_ptr, 616 int64 index_size,
 * 624 eight bytes the loop does not read, 632 self_ptr, 640 int64 index_stride, 648 int64 numel
 * (self's, a bound for the atomic functors), 656 src_ptr; for fill the OffsetCalculator<2>
 * (504 bytes), then 504 index_ptr, 512 index_size, 520 (unread), 528 self_ptr, 536 index_stride,
 * 544 numel, 552 the scalar (scalar_t's bytes).
 *
 * TensorAssign is instantiated on OpaqueType<size> (any element type of that size: a byte copy);
 * the twins cover it for 1, 2, 4 and 8 bytes, and ReduceAdd for float, c10::Half and
 * c10::BFloat16 (an atomic add whose sum is rounded once to the element type: the twin rounds the
 * exact sum, as double holds it or double rounding through it is innocuous). Elements run in
 * index order: where several write one place, the last one's value stays (assign) and the sum is
 * in index order (add); the GPU's order is unspecified in both (PyTorch documents scatter_ with
 * repeated indices as nondeterministic).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

enum { SG_GATHER, SG_SCATTER, SG_FILL };

/* One element's read of the index tensor (int64 or int32 as index_t says). */
static int64_t read_index(const char *p, int size) {
  if (size == 8) {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

static int64_t rd64(const char *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

static char *rdptr(const char *p) {
  char *v;
  memcpy(&v, p, 8);
  return v;
}

/* k->p: [0] SG_*, [1] element size, [2] the element type for ReduceAdd (0: assign), [3] index size. */
static void run_scatter_gather(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int kind = k->p[0], es = k->p[1], add = k->p[2], is = k->p[3];
  int n = *(int *)args[0];
  const char *l = args[1];
  int nops = kind == SG_FILL ? 2 : 3;
  size_t base = (simtw_oc_size(nops) + 7) & ~(size_t)7;
  const char *index_ptr = rdptr(l + base);
  char *self_ptr = rdptr(l + base + 24);
  int64_t index_stride = rd64(l + base + 32);
  const char *src_ptr = kind == SG_FILL ? l + base + 48 : rdptr(l + base + 48);
  for (int i = 0; i < n; i++) {
    int idx_arg = kind == SG_FILL ? 1 : 2;
    int64_t idx = read_index(index_ptr + simtw_oc_get(l, nops, idx_arg, (uint32_t)i), is);
    char *dst = self_ptr + simtw_oc_get(l, nops, 0, (uint32_t)i);
    const char *src = kind == SG_FILL ? src_ptr : src_ptr + simtw_oc_get(l, nops, 1, (uint32_t)i);
    if (kind == SG_GATHER) src += idx * index_stride * es;
    else dst += idx * index_stride * es;
    if (add) { /* the exact sum rounded once, as the device's atomic add rounds it */
      simtw_dt_t dt = (simtw_dt_t)add;
      simtw_store(dt, dst, simtw_fval(simtw_load(dt, dst).f + simtw_load(dt, src).f));
    } else {
      memmove(dst, src, (size_t)es);
    }
  }
}

/* ---- advanced indexing: a[idx] and index_put_ (IndexKernel.cu) ---- */

/* index_elementwise_kernel<128, 4, gpu_index_kernel<F>::lambda(int)>(int64 N, lambda), F the
 * lambda of index_kernel_impl<OpaqueType<size>> (a[i0, i1, …]: *out = *(in + offset)) or of
 * index_put_kernel_impl<OpaqueType<size>> (index_put_ without accumulate: *(out + offset) =
 * *in). The host restrides so that out, in and the index tensors walk one shape, the indexed
 * dimensions with stride 0 in the indexed tensor; for element i the byte offset is
 * sum_k idx_k * strides[k] over the num_indices index tensors, idx_k = index_k[i] (int64, a
 * negative one counting from sizes[k]). The lambda, as the wheel lays it out (read from its
 * launches): OffsetCalculator<3> (604 bytes: out, in and the first index tensor, whose offsets
 * all index tensors share), then at 608 out_ptr, 616 in_ptr, 624 int num_indices, 632
 * char *index_ptrs[25], 832 int64 sizes[25], 1032 int64 strides[25] (bytes), 1232 the functor.
 * Elements run in index order: with repeated indices, index_put_ keeps the last value (the
 * GPU's choice among them is unspecified, as PyTorch documents). */
static void run_index(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int put = k->p[0], es = k->p[1];
  int64_t n = *(int64_t *)args[0];
  const char *l = args[1];
  size_t base = (simtw_oc_size(3) + 7) & ~(size_t)7;
  char *out_ptr = rdptr(l + base);
  const char *in_ptr = rdptr(l + base + 8);
  int nidx;
  memcpy(&nidx, l + base + 16, 4);
  if (nidx < 0 || nidx > 25) return;
  for (int64_t i = 0; i < n; i++) {
    uint64_t o_out = simtw_oc_get(l, 3, 0, (uint32_t)i), o_in = simtw_oc_get(l, 3, 1, (uint32_t)i);
    uint64_t o_idx = simtw_oc_get(l, 3, 2, (uint32_t)i);
    int64_t offset = 0;
    for (int j = 0; j < nidx; j++) {
      int64_t size = rd64(l + base + 224 + 8 * j), stride = rd64(l + base + 424 + 8 * j);
      int64_t v = rd64(rdptr(l + base + 24 + 8 * j) + o_idx);
      if (v < 0) v += size;
      offset += v * stride;
    }
    if (put) memmove(out_ptr + o_out + offset, in_ptr + o_in, (size_t)es);
    else memmove(out_ptr + o_out, in_ptr + o_in + offset, (size_t)es);
  }
}

/* index_elementwise_kernel<128, 4, index_copy_kernel_impl<OpaqueType<size>>::lambda(int)>(int64 N,
 * lambda) (index_copy_): the host restrides self so that self, index and source walk source's
 * shape, self's dimension dim with stride 0; element i then copies *source(i) to
 * self(i) + index[i] * self_dim_stride elements. The lambda, as the wheel lays it out (its
 * 648 bytes; the fields in the order the loop uses them, as the other index lambdas have them):
 * OffsetCalculator<3> (604 bytes: self, index, source), then at 608 self_ptr, 616 idx_ptr,
 * 624 source_ptr, 632 int64 self_dim_size, 640 int64 self_dim_stride. An index outside
 * [0, self_dim_size) is the kernel's device-side assertion; the twin stops there too. With
 * repeated indices the last element in order stays (the GPU's choice is unspecified). */
static void run_index_copy(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int es = k->p[1];
  int64_t n = *(int64_t *)args[0];
  const char *l = args[1];
  size_t base = (simtw_oc_size(3) + 7) & ~(size_t)7;
  char *self_ptr = rdptr(l + base);
  const char *idx_ptr = rdptr(l + base + 8), *src_ptr = rdptr(l + base + 16);
  int64_t size = rd64(l + base + 24), stride = rd64(l + base + 32);
  for (int64_t i = 0; i < n; i++) {
    int64_t idx = rd64(idx_ptr + simtw_oc_get(l, 3, 1, (uint32_t)i));
    if (idx < 0 || idx >= size) {
      fprintf(stderr, "sim: %s: index %lld outside [0, %lld): the kernel's assertion; stopped\n", k->name,
              (long long)idx, (long long)size);
      abort();
    }
    memmove(self_ptr + simtw_oc_get(l, 3, 0, (uint32_t)i) + idx * stride * es,
            src_ptr + simtw_oc_get(l, 3, 2, (uint32_t)i), (size_t)es);
  }
}

/* index_elementwise_kernel<128, 4, index_fill_kernel_impl<OpaqueType<size>>::lambda(int)>(int64 N,
 * lambda) (index_fill_, and index_copy's backward): self restrided as for index_copy, element i
 * stores the fill value at self(i) + index[i] * self_dim_stride elements, a negative index
 * counting from self_dim_size. The lambda (544 bytes, fields in the order of use):
 * OffsetCalculator<2> (504 bytes: self, index), then at 504 self_ptr, 512 idx_ptr, 520 int64
 * self_dim_size, 528 int64 self_dim_stride, 536 the fill value (size bytes). */
static void run_index_fill(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int es = k->p[1];
  int64_t n = *(int64_t *)args[0];
  const char *l = args[1];
  size_t base = (simtw_oc_size(2) + 7) & ~(size_t)7;
  char *self_ptr = rdptr(l + base);
  const char *idx_ptr = rdptr(l + base + 8);
  int64_t size = rd64(l + base + 16), stride = rd64(l + base + 24);
  for (int64_t i = 0; i < n; i++) {
    int64_t idx = rd64(idx_ptr + simtw_oc_get(l, 2, 1, (uint32_t)i));
    if (idx < -size || idx >= size) {
      fprintf(stderr, "sim: %s: index %lld outside [-%lld, %lld): the kernel's assertion; stopped\n", k->name,
              (long long)idx, (long long)size, (long long)size);
      abort();
    }
    if (idx < 0) idx += size;
    memcpy(self_ptr + simtw_oc_get(l, 2, 0, (uint32_t)i) + idx * stride * es, l + base + 32, (size_t)es);
  }
}

/* indexing_backward_kernel_small_stride<T>(const int64 *sorted_indices, const int64 *indices,
 * const T *grad_output, T *grad_weight, int64 numel, int64 stride, int64 stride_before,
 * int64 outer_dim, bool accumulate) (Indexing.cu; index_put_ with accumulate=True, after cub's
 * radix sort has sorted the destination rows with their positions): for z < outer_dim (blockIdx.z
 * onward, every gridDim.z-th), row idx = blockIdx.x * blockDim.y + threadIdx.y that begins a run
 * of equal sorted_indices, feature tidx = threadIdx.x < stride: with accumulate,
 * gradient = 0.f + each grad_output[indices[idx + i] * stride + z * numel * stride + tidx] * 1.f
 * in run order (float, the opmath of float, Half and BFloat16), then
 * grad_weight[sorted_indices[idx] * stride + z * stride_before + tidx] = T(float(that) +
 * gradient); without, the run's last grad_output row is stored. The twin does the same float
 * operations in the same order. A block narrower than stride would leave features unwritten; it
 * has no twin. */
static void run_indexing_backward_small(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  size_t es = simtw_dt_size(dt);
  const int64_t *sorted = *(const int64_t **)args[0], *pos = *(const int64_t **)args[1];
  const char *go = *(const char **)args[2];
  char *gw = *(char **)args[3];
  int64_t numel = *(int64_t *)args[4], stride = *(int64_t *)args[5], sb = *(int64_t *)args[6];
  int64_t outer = *(int64_t *)args[7];
  int acc = *(unsigned char *)args[8] != 0;
  if ((int64_t)block.x < stride || grid.z == 0) {
    fprintf(stderr, "sim: %s: %u threads in x for a stride of %lld, which has no twin; not run\n", k->name, block.x,
            (long long)stride);
    abort();
  }
  int64_t rows = (int64_t)grid.x * block.y;
  for (int64_t z = 0; z < outer; z++) /* blockIdx.z's loops together cover every z once */
    for (int64_t idx = 0; idx < rows && idx < numel; idx++) {
      if (idx > 0 && sorted[idx] == sorted[idx - 1]) continue;
      int64_t dup = 1;
      while (idx + dup < numel && sorted[idx + dup] == sorted[idx]) dup++;
      int64_t wrow = sorted[idx] * stride + z * sb;
      for (int64_t t = 0; t < stride; t++) {
        char *w = gw + es * (size_t)(wrow + t);
        if (!acc) {
          const char *g = go + es * (size_t)(pos[idx + dup - 1] * stride + z * numel * stride + t);
          simtw_store(dt, w, simtw_fval((float)simtw_load(dt, g).f));
          continue;
        }
        float gradient = 0.0f;
        for (int64_t i = 0; i < dup; i++) {
          const char *g = go + es * (size_t)(pos[idx + i] * stride + z * numel * stride + t);
          gradient += (float)simtw_load(dt, g).f * 1.0f;
        }
        simtw_store(dt, w, simtw_fval((float)simtw_load(dt, w).f + gradient));
      }
    }
}

/* The element size of "at::native::OpaqueType<N>", "float", "c10::Half" or "c10::BFloat16" at s
 * (then *end after it), else 0; *is_float the floating type (else 0). */
static int elem(const char *s, const char **end, int *is_float) {
  *is_float = 0;
  if (strncmp(s, "at::native::OpaqueType<", 23) == 0) {
    int n = atoi(s + 23);
    const char *e = strchr(s + 23, '>');
    if (!e || (n != 1 && n != 2 && n != 4 && n != 8)) return 0;
    *end = e + 1;
    return n;
  }
  simtw_dt_t dt = simtw_dt_parse(s, end);
  if (dt == DT_F32 || dt == DT_F16 || dt == DT_BF16) {
    *is_float = (int)dt;
    return (int)simtw_dt_size(dt);
  }
  return 0;
}

#define SG_PREFIX "void at::native::_scatter_gather_elementwise_kernel<128, 8, at::native::"

#define INDEX_PREFIX "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::"

#define INDEX_COPY_PREFIX "void at::native::index_elementwise_kernel<128, 4, at::native::index_copy_kernel_impl<"
#define INDEX_FILL_PREFIX "void at::native::index_elementwise_kernel<128, 4, at::native::index_fill_kernel_impl<"

int simtw_scatter_resolve(const char *dm, simtw_nn_t *k) {
  const char *p, *e;
  int is_float;
  memset(k, 0, sizeof *k);
  if (simtw_sort_resolve(dm, k) || simtw_embbag_resolve(dm, k)) return 1;
  static const char ibk[] = "void (anonymous namespace)::indexing_backward_kernel_small_stride<";
  if (strncmp(dm, ibk, sizeof ibk - 1) == 0) {
    simtw_dt_t dt = simtw_dt_parse(dm + sizeof ibk - 1, &e);
    if ((dt == DT_F32 || dt == DT_F16 || dt == DT_BF16) && strncmp(e, ">(long const*, long const*, ", 28) == 0) {
      k->p[0] = (int)dt;
      k->run = run_indexing_backward_small;
    }
    return k->run != NULL;
  }
  if (strncmp(dm, INDEX_FILL_PREFIX, strlen(INDEX_FILL_PREFIX)) == 0) {
    p = dm + strlen(INDEX_FILL_PREFIX);
    static const char args_[] = " >(at::TensorIterator&, long, long, long, at::native::OpaqueType<";
    size_t na = sizeof args_ - 1;
    if ((k->p[1] = elem(p, &e, &is_float)) && !is_float && strncmp(e, args_, na) == 0 &&
        atoi(e + na) == k->p[1] && strncmp(e + na + 1, ">)::{lambda(int)#1}>(", 21) == 0)
      k->run = run_index_fill;
    return k->run != NULL;
  }
  if (strncmp(dm, INDEX_COPY_PREFIX, strlen(INDEX_COPY_PREFIX)) == 0) {
    p = dm + strlen(INDEX_COPY_PREFIX);
    if ((k->p[1] = elem(p, &e, &is_float)) && !is_float &&
        strncmp(e, " >(at::TensorIterator&, long, long, long)::{lambda(int)#1}>(", 60) == 0)
      k->run = run_index_copy;
    return k->run != NULL;
  }
  if (strncmp(dm, INDEX_PREFIX, strlen(INDEX_PREFIX)) == 0) {
    p = dm + strlen(INDEX_PREFIX);
    if (strncmp(p, "index_put_kernel_impl<", 22) == 0) {
      k->p[0] = 1;
      p += 22;
    } else if (strncmp(p, "index_kernel_impl<", 18) == 0) {
      p += 18;
    } else {
      return 0;
    }
    if ((k->p[1] = elem(p, &e, &is_float)) && !is_float && strncmp(e, " >(", 3) == 0) k->run = run_index;
    return k->run != NULL;
  }
  if (strncmp(dm, SG_PREFIX, strlen(SG_PREFIX)) != 0) return 0;
  p = dm + strlen(SG_PREFIX);
  if (strncmp(p, "_cuda_scatter_gather_internal_kernel<true, ", 43) == 0) {
    k->p[0] = SG_SCATTER;
    p += 43;
  } else if (strncmp(p, "_cuda_scatter_gather_internal_kernel<false, ", 44) == 0) {
    k->p[0] = SG_GATHER;
    p += 44;
  } else if (strncmp(p, "_cuda_scatter_fill_internal_kernel<", 35) == 0) {
    k->p[0] = SG_FILL;
    p += 35;
  } else {
    return 0;
  }
  if (!(k->p[1] = elem(p, &e, &is_float))) return 0;
  if (strncmp(e, ", long>::operator()<", 20) == 0) {
    k->p[3] = 8;
    e += 20;
  } else if (strncmp(e, ", int>::operator()<", 19) == 0) {
    k->p[3] = 4;
    e += 19;
  } else {
    return 0;
  }
  if (!is_float && strncmp(e, "at::native::TensorAssign>(", 26) == 0) {
    k->run = run_scatter_gather;
  } else if (is_float && k->p[0] == SG_SCATTER && strncmp(e, "at::native::ReduceAdd>(", 23) == 0) {
    k->p[2] = is_float;
    k->run = run_scatter_gather;
  }
  return k->run != NULL;
}
