/* sort.c — CPU twins of PyTorch's sorting kernels for short slices: torch.sort's in-place
 * bitonic sort (SortUtils.cuh) and torch.topk's single-block selection (TensorTopK.cu), for
 * float, c10::Half and c10::BFloat16 keys with int64 values (indices).
 *
 *   bitonicSortKVInPlace<KeyDims, ValueDims, block_dim_x, max_block_dim_y, K, long, Comparator,
 *     unsigned>(TensorInfo<K> keys, u32 keySlices, u32 keySliceSize, u32 keySliceStride,
 *     TensorInfo<long> values, u32 valueSliceStride, Comparator comp): row blockIndex *
 *     blockDim.y + threadIdx.y of every block sorts one slice of up to 2 * block_dim_x keys
 *     (with their values) in shared memory, positions past keySliceSize invalid (they sort to the
 *     end). The network is bitonicSort's: for size = 2, 4, … below 2 * block_dim_x, thread x
 *     compares pos = 2x - (x & (stride - 1)) with pos + stride for stride = size / 2 … 1 in the
 *     direction flag = x & (size / 2), then a final merge with direction false; bitonicSwap
 *     swaps when ((comp(kA, kB) && validA) || !validB) == dir. The twin runs the same network
 *     compare by compare (the threads of one step touch distinct pairs), so where keys tie the
 *     values come out in the kernel's order, not a stable one. Comparator is LTOp<K, true>
 *     (ascending) or GTOp<K, true> (descending), NaN ordered above every number.
 *   sbtopk::gatherTopK<T, unsigned, Dim, false>(TensorInfo<const T> input, u32 inputSliceSize,
 *     u32 k, bool largest, u32 numInputSlices, u32 inputWithinSliceStride, TensorInfo<T> topK,
 *     u32 topKWithinSliceStride, TensorInfo<long> indices, u32 indicesWithinSliceStride,
 *     T *kthValues): block b selects slice b. Values compare as TopKTypeConfig<T>::convert makes
 *     them (their bits, negatives' inverted and positives' sign bit set: -0 below +0, every NaN
 *     the largest); radixSelect finds the k-th largest (smallest) converted value; the kernel then
 *     writes, in index order, the values strictly above (below) it, followed by those equal to it
 *     in index order until k are written, each with its index in the slice. The twin computes the
 *     same k-th value and writes the same sequence. The variant with precomputed kthValues (the
 *     multi-block path's last step) has no twin here.
 *
 * TensorInfo<T, unsigned> is {T *data; u32 sizes[25]; u32 strides[25]; int dims;} (strides in
 * elements); IndexToOffset walks Dims dimensions (info.dims when Dims is -1).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

/* getLinearBlockId over the grid: the number of blocks. */
static uint64_t st_blocks(dim3 grid) { return (uint64_t)grid.x * grid.y * grid.z; }

/* ---- bitonicSortKVInPlace ---- */

typedef struct {
  double key; /* the key's value (every float, half and bfloat16 is a double) */
  unsigned char raw[4]; /* its bytes, stored back unchanged */
  int64_t val;
  int valid;
} st_item_t;

/* LTOp<K, true> (desc 0) or GTOp<K, true> (desc 1). */
static int st_comp(int desc, double a, double b) {
  if (desc) return (isnan(a) && !isnan(b)) || a > b;
  return (isnan(b) && !isnan(a)) || a < b;
}

static void st_bitonic_swap(st_item_t *a, st_item_t *b, int dir, int desc) {
  int swap = (st_comp(desc, a->key, b->key) && a->valid) || !b->valid;
  if (swap == dir) {
    st_item_t t = *a;
    *a = *b;
    *b = t;
  }
}

/* k->p: [0] key dtype, [1] KeyDims, [2] ValueDims, [3] block_dim_x, [4] max_block_dim_y,
 * [5] 1 for GTOp (descending). */
static void run_bitonic(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  size_t es = simtw_dt_size(dt);
  unsigned bdx = (unsigned)k->p[3], n2 = 2 * bdx;
  int desc = k->p[5];
  if (block.x != bdx || block.y > (unsigned)k->p[4] || block.z != 1) {
    fprintf(stderr, "sim: %s: a block of %ux%ux%u, which has no twin; not run\n", k->name, block.x, block.y, block.z);
    abort();
  }
  simtw_ti_t keys = simtw_ti_read(args[0], 4), values = simtw_ti_read(args[4], 4);
  uint32_t slices = *(uint32_t *)args[1], size = *(uint32_t *)args[2], kstride = *(uint32_t *)args[3];
  uint32_t vstride = *(uint32_t *)args[5];
  st_item_t *s = malloc(n2 * sizeof *s);
  if (!s) abort();
  uint64_t nb = st_blocks(grid);
  for (uint64_t b = 0; b < nb; b++) {
    if (b * block.y >= slices) break;
    for (unsigned y = 0; y < block.y; y++) {
      uint32_t row = (uint32_t)(b * block.y + y);
      if (row >= slices) continue; /* its threads take part in the sort of nothing */
      uint32_t ko = simtw_ti_offset(&keys, k->p[1], row), vo = simtw_ti_offset(&values, k->p[2], row);
      for (unsigned idx = 0; idx < n2; idx++) {
        st_item_t *it = &s[idx];
        memset(it, 0, sizeof *it);
        it->valid = idx < size;
        if (it->valid) {
          const char *kp = keys.data + es * (ko + idx * kstride);
          memcpy(it->raw, kp, es);
          it->key = simtw_load(dt, kp).f;
          memcpy(&it->val, values.data + 8 * (size_t)(vo + idx * vstride), 8);
        }
      }
      for (unsigned sz = 2; sz < n2; sz *= 2)
        for (unsigned stride = sz / 2; stride > 0; stride /= 2)
          for (unsigned x = 0; x < bdx; x++) {
            unsigned pos = 2 * x - (x & (stride - 1));
            st_bitonic_swap(&s[pos], &s[pos + stride], (x & (sz / 2)) != 0, desc);
          }
      for (unsigned stride = n2 / 2; stride > 0; stride /= 2)
        for (unsigned x = 0; x < bdx; x++) {
          unsigned pos = 2 * x - (x & (stride - 1));
          st_bitonic_swap(&s[pos], &s[pos + stride], 0, desc);
        }
      for (unsigned idx = 0; idx < n2 && idx < size; idx++) {
        memcpy(keys.data + es * (ko + idx * kstride), s[idx].raw, es);
        memcpy(values.data + 8 * (size_t)(vo + idx * vstride), &s[idx].val, 8);
      }
    }
  }
  free(s);
}

/* ---- sbtopk::gatherTopK ---- */

/* TopKTypeConfig<T>::convert: the order-preserving unsigned form of the value's bits. */
static uint32_t st_topk_convert(simtw_dt_t dt, const char *p) {
  if (dt == DT_F32) {
    uint32_t x;
    float v;
    memcpy(&x, p, 4);
    memcpy(&v, p, 4);
    uint32_t mask = (x & 0x80000000u) ? 0xffffffffu : 0x80000000u;
    return v == v ? x ^ mask : 0xffffffffu;
  }
  uint16_t x;
  memcpy(&x, p, 2);
  double v = simtw_load(dt, p).f;
  uint32_t mask = (x & 0x8000u) ? 0xffffu : 0x8000u;
  return v == v ? (uint32_t)(x ^ mask) : 0xffffu;
}

static int st_u32_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* k->p: [0] dtype, [1] Dim. */
static void run_topk(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  size_t es = simtw_dt_size(dt);
  int dims = k->p[1];
  simtw_ti_t in = simtw_ti_read(args[0], 4), topk = simtw_ti_read(args[6], 4), ind = simtw_ti_read(args[8], 4);
  uint32_t size = *(uint32_t *)args[1], kk = *(uint32_t *)args[2];
  int largest = *(unsigned char *)args[3] != 0;
  uint32_t slices = *(uint32_t *)args[4], istride = *(uint32_t *)args[5];
  uint32_t tstride = *(uint32_t *)args[7], xstride = *(uint32_t *)args[9];
  if (kk == 0 || kk > size) {
    fprintf(stderr, "sim: %s: k = %u of a slice of %u, which has no twin; not run\n", k->name, kk, size);
    abort();
  }
  uint32_t *conv = malloc(size * sizeof *conv), *sorted = malloc(size * sizeof *sorted);
  if (!conv || !sorted) abort();
  uint64_t nb = st_blocks(grid);
  for (uint64_t b = 0; b < nb && b < slices; b++) {
    uint32_t slice = (uint32_t)b;
    const char *is = in.data + es * simtw_ti_offset(&in, dims, slice);
    char *ts = topk.data + es * simtw_ti_offset(&topk, dims, slice);
    char *xs = ind.data + 8 * (size_t)simtw_ti_offset(&ind, dims, slice);
    for (uint32_t i = 0; i < size; i++) conv[i] = sorted[i] = st_topk_convert(dt, is + es * (size_t)i * istride);
    qsort(sorted, size, sizeof *sorted, st_u32_cmp);
    uint32_t kth = largest ? sorted[size - kk] : sorted[kk - 1];
    uint32_t w = 0;
    for (int pass = 0; pass < 2; pass++)
      for (uint32_t i = 0; i < size && w < kk; i++) {
        int take = pass == 0 ? (largest ? conv[i] > kth : conv[i] < kth) : conv[i] == kth;
        if (!take) continue;
        int64_t idx = i;
        memcpy(ts + es * (size_t)w * tstride, is + es * (size_t)i * istride, es);
        memcpy(xs + 8 * (size_t)w * xstride, &idx, 8);
        w++;
      }
  }
  free(conv);
  free(sorted);
}

/* ---- cub's single-tile radix sort ---- */

/* DeviceRadixSortSingleTileKernel<Policy, SortOrder, KeyT, ValueT, OffsetT, identity_decomposer>(
 * const KeyT *keys_in, KeyT *keys_out, const ValueT *values_in, ValueT *values_out,
 * OffsetT num_items, int current_bit, int end_bit, decomposer): one block sorts all num_items
 * (cub launches it only when they fit one tile) by the bits [current_bit, end_bit) of each key's
 * radix form (the bits of an unsigned key, a signed one's with the sign bit flipped), ascending
 * (SortOrder 0) or descending (1). Radix sorting is stable: keys whose digits tie keep their
 * input order, in either direction. ValueT is cub's NullType (keys only) or
 * at::cuda::cub::detail::OpaqueType<size> (a value moved with its key). */
typedef struct {
  uint64_t digit;
  uint64_t pos;
} st_rs_t;

/* Ascending by digit, then by input position: a stable order. */
static int st_rs_cmp(const void *a, const void *b) {
  const st_rs_t *x = a, *y = b;
  if (x->digit != y->digit) return x->digit < y->digit ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* k->p: [0] key size, [1] 1 for a signed key, [2] descending, [3] value size (0: none). */
static void run_radix_single_tile(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  int ks = k->p[0], is_signed = k->p[1], vs = k->p[3];
  const char *kin = *(const char **)args[0], *vin = *(const char **)args[2];
  char *kout = *(char **)args[1], *vout = *(char **)args[3];
  uint64_t n = *(uint64_t *)args[4];
  int begin = *(int *)args[5], end = *(int *)args[6];
  if (begin < 0 || end > 8 * ks || begin > end) {
    fprintf(stderr, "sim: %s: bits [%d, %d) of a %d-byte key, which has no twin; not run\n", k->name, begin, end, ks);
    abort();
  }
  st_rs_t *v = malloc((n ? n : 1) * sizeof *v);
  char *kt = malloc((n ? n : 1) * (size_t)ks), *vt = malloc((n ? n : 1) * (size_t)(vs ? vs : 1));
  if (!v || !kt || !vt) abort();
  for (uint64_t i = 0; i < n; i++) {
    uint64_t bits = 0;
    memcpy(&bits, kin + i * (uint64_t)ks, (size_t)ks); /* little-endian: the low bytes */
    if (is_signed) bits ^= 1ull << (8 * ks - 1);
    uint64_t mask = end - begin >= 64 ? ~0ull : (1ull << (end - begin)) - 1;
    v[i].digit = (bits >> begin) & mask;
    if (k->p[2]) v[i].digit = mask - v[i].digit; /* descending: the complement's ascending order */
    v[i].pos = i;
  }
  qsort(v, n, sizeof *v, st_rs_cmp);
  /* through copies: keys_out may be keys_in (cub's double buffer alternates them) */
  for (uint64_t i = 0; i < n; i++) {
    memcpy(kt + i * (uint64_t)ks, kin + v[i].pos * (uint64_t)ks, (size_t)ks);
    if (vs) memcpy(vt + i * (uint64_t)vs, vin + v[i].pos * (uint64_t)vs, (size_t)vs);
  }
  memcpy(kout, kt, n * (size_t)ks);
  if (vs) memcpy(vout, vt, n * (size_t)vs);
  free(v);
  free(kt);
  free(vt);
}

/* ---- resolver ---- */

/* An integer at *s followed by sep; advances *s past both. */
static int st_int(const char **s, const char *sep, int *v) {
  char *e;
  long x = strtol(*s, &e, 10);
  size_t n = strlen(sep);
  if (e == *s || strncmp(e, sep, n) != 0) return 0;
  *v = (int)x;
  *s = e + n;
  return 1;
}

static int st_key_dt(simtw_dt_t dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

/* The key type of cub's radix sort at s: its size and signedness; 0 for others. */
static int st_rs_key(const char *s, const char **end, int *is_signed) {
  static const struct {
    const char *name;
    int size, is_signed;
  } keys[] = {{"unsigned char", 1, 0}, {"signed char", 1, 1}, {"unsigned short", 2, 0}, {"short", 2, 1},
              {"unsigned int", 4, 0},  {"int", 4, 1},         {"unsigned long", 8, 0},  {"long", 8, 1}};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    size_t n = strlen(keys[i].name);
    if (strncmp(s, keys[i].name, n) == 0 && s[n] == ',') {
      *end = s + n;
      *is_signed = keys[i].is_signed;
      return keys[i].size;
    }
  }
  return 0;
}

int simtw_sort_resolve(const char *dm, simtw_nn_t *k) {
  static const char rs[] = "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortSingleTileKernel<";
  if (strncmp(dm, rs, sizeof rs - 1) == 0) {
    /* the policy (its tile's shape does not change the result), then the order */
    const char *p = strstr(dm, ">::Policy"), *e;
    if (!p) return 0;
    p += 9;
    while (*p >= '0' && *p <= '9') p++;
    int desc, is_signed, ks, vs = 0;
    static const char order[] = ", (at_cuda_detail::cub::SortOrder)";
    if (strncmp(p, order, sizeof order - 1) != 0) return 0;
    p += sizeof order - 1;
    if ((*p != '0' && *p != '1') || strncmp(p + 1, ", ", 2) != 0) return 0;
    desc = *p == '1';
    p += 3;
    if (!(ks = st_rs_key(p, &e, &is_signed))) return 0;
    p = e + 2;
    if (strncmp(p, "at_cuda_detail::cub::NullType, ", 31) == 0) {
      p += 31;
    } else if (strncmp(p, "at::cuda::cub::detail::OpaqueType<", 34) == 0) {
      vs = atoi(p + 34);
      if ((vs != 1 && vs != 2 && vs != 4 && vs != 8) || strncmp(p + 35, ">, ", 3) != 0) return 0;
      p += 38;
    } else {
      return 0;
    }
    static const char tail[] = "unsigned long long, at_cuda_detail::cub::detail::identity_decomposer_t>(";
    if (strncmp(p, tail, sizeof tail - 1) != 0) return 0;
    k->run = run_radix_single_tile;
    k->p[0] = ks;
    k->p[1] = is_signed;
    k->p[2] = desc;
    k->p[3] = vs;
    return 1;
  }

  static const char bitonic[] = "void at::native::bitonicSortKVInPlace<";
  static const char topk[] = "void at::native::sbtopk::gatherTopK<";
  const char *p, *e;
  char want[96];
  if (strncmp(dm, bitonic, sizeof bitonic - 1) == 0) {
    int kd, vd, bx, by;
    p = dm + sizeof bitonic - 1;
    if (!st_int(&p, ", ", &kd) || !st_int(&p, ", ", &vd) || !st_int(&p, ", ", &bx) || !st_int(&p, ", ", &by))
      return 0;
    if (kd < -1 || kd == 0 || kd > 3 || vd < -1 || vd == 0 || vd > 3) return 0;
    if (bx < 1 || bx > 512 || (bx & (bx - 1)) || by < 1 || by > 1024) return 0;
    simtw_dt_t dt = simtw_dt_parse(p, &e);
    if (!st_key_dt(dt) || strncmp(e, ", long, at::native::", 20) != 0) return 0;
    p = e + 20;
    int desc;
    if (strncmp(p, "LTOp<", 5) == 0) desc = 0;
    else if (strncmp(p, "GTOp<", 5) == 0) desc = 1;
    else return 0;
    p += 5;
    if (simtw_dt_parse(p, &e) != dt || strncmp(e, ", true>, unsigned int>(", 23) != 0) return 0;
    k->run = run_bitonic;
    k->p[0] = (int)dt;
    k->p[1] = kd;
    k->p[2] = vd;
    k->p[3] = bx;
    k->p[4] = by;
    k->p[5] = desc;
    return 1;
  }
  if (strncmp(dm, topk, sizeof topk - 1) == 0) {
    int d;
    p = dm + sizeof topk - 1;
    simtw_dt_t dt = simtw_dt_parse(p, &e);
    if (!st_key_dt(dt) || strncmp(e, ", unsigned int, ", 16) != 0) return 0;
    p = e + 16;
    if (!st_int(&p, ", false>(", &d) || d < -1 || d == 0 || d > 3) return 0;
    snprintf(want, sizeof want, "at::cuda::detail::TensorInfo<%.*s const, unsigned int>", (int)(e - (dm + sizeof topk - 1)),
             dm + sizeof topk - 1);
    if (strncmp(p, want, strlen(want)) != 0) return 0;
    k->run = run_topk;
    k->p[0] = (int)dt;
    k->p[1] = d;
    return 1;
  }
  return 0;
}
