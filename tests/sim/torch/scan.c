/* scan.c — CPU twins of PyTorch's scan kernels (ScanUtils.cuh): cumsum and cumprod along a
 * dimension, for float, c10::Half, c10::BFloat16 and (sums) int64.
 *
 *   tensor_kernel_scan_innermost_dim<T, Op>(T *tgt, const T *src, u32 num_rows, u32 row_size,
 *     u32 log_num_threads_x, T init, Op op): each row of row_size contiguous elements is scanned
 *     in tiles of 2 * num_threads_x values (init past the row's end), the running total of the
 *     tiles before combined into a tile's first value, then Sklansky's parallel prefix over the
 *     tile: at step m, thread x adds buf[a - 1] into buf[a + x % s], s = 2^m, a = (x / s) * 2s + s.
 *     The twin performs the same operations in the same order, so its results are the kernel's
 *     bit for bit, also where Op rounds to the element type.
 *   tensor_kernel_scan_outer_dim<T, index_t, Op>(T *tgt, const T *src, u32 num_orows,
 *     u32 num_irows, u32 row_size, T init, Op op): each (outer row, inner row) pair is scanned in
 *     order along the dimension (stride num_irows).
 * Op is std::plus<T> or std::multiplies<T>: for c10::Half and c10::BFloat16 an operation between
 * two values rounds to the element type, as c10's operators do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

enum { SC_PLUS, SC_MUL };

static simtw_val_t scan_op(simtw_dt_t dt, int op, simtw_val_t a, simtw_val_t b) {
  if (!simtw_dt_is_float(dt)) /* int64 sums wrap around, as the device's do */
    return simtw_ival((int64_t)((uint64_t)a.i + (uint64_t)b.i));
  float x = (float)a.f, y = (float)b.f;
  return simtw_cast(simtw_fval(op == SC_PLUS ? x + y : x * y), dt);
}

static void run_scan_inner(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid;
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  int op = k->p[1];
  size_t es = simtw_dt_size(dt);
  char *tgt = *(char **)args[0];
  const char *src = *(const char **)args[1];
  uint32_t num_rows = *(const uint32_t *)args[2], row_size = *(const uint32_t *)args[3];
  uint32_t lg = *(const uint32_t *)args[4];
  simtw_val_t init = simtw_load(dt, args[5]);
  if (lg > 9 || block.x != (1u << lg)) {
    fprintf(stderr, "sim: %s: %u threads in x for a tile of 2^%u, which has no twin; not run\n", k->name, block.x, lg);
    abort();
  }
  uint32_t ntx = 1u << lg;
  simtw_val_t buf[1024];
  for (uint32_t row = 0; row < num_rows; row++) {
    const char *rs = src + (size_t)row * row_size * es;
    char *rt = tgt + (size_t)row * row_size * es;
    simtw_val_t total = init;
    for (uint32_t col0 = 0; col0 < row_size; col0 += 2 * ntx) {
      for (uint32_t j = 0; j < 2 * ntx; j++)
        buf[j] = col0 + j < row_size ? simtw_load(dt, rs + (size_t)(col0 + j) * es) : init;
      buf[0] = scan_op(dt, op, buf[0], total);
      for (uint32_t m = 0; m <= lg; m++) {
        uint32_t s = 1u << m;
        /* the threads of one step write distinct upper halves and read lower ones */
        for (uint32_t x = 0; x < ntx; x++) {
          uint32_t a = ((x >> m) << (m + 1)) | s, ti = a + x % s, si = a - 1;
          buf[ti] = scan_op(dt, op, buf[ti], buf[si]);
        }
      }
      for (uint32_t j = 0; j < 2 * ntx && col0 + j < row_size; j++)
        simtw_store(dt, rt + (size_t)(col0 + j) * es, buf[j]);
      total = buf[2 * ntx - 1];
    }
  }
}

static void run_scan_outer(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[0];
  int op = k->p[1];
  size_t es = simtw_dt_size(dt);
  char *tgt = *(char **)args[0];
  const char *src = *(const char **)args[1];
  uint32_t norows = *(const uint32_t *)args[2], nirows = *(const uint32_t *)args[3];
  uint32_t row_size = *(const uint32_t *)args[4];
  simtw_val_t init = simtw_load(dt, args[5]);
  for (uint32_t o = 0; o < norows; o++)
    for (uint32_t i = 0; i < nirows; i++) {
      simtw_val_t acc = init;
      for (uint32_t c = 0; c < row_size; c++) {
        size_t off = ((size_t)o * row_size * nirows + (size_t)c * nirows + i) * es;
        acc = scan_op(dt, op, acc, simtw_load(dt, src + off));
        simtw_store(dt, tgt + off, acc);
      }
    }
}

/* "std::plus<T> >(" or "std::multiplies<T> >(" at s, with T the scan's element type. */
static int parse_op(const char *s, simtw_dt_t dt, int *op) {
  const char *e;
  if (strncmp(s, "std::plus<", 10) == 0) *op = SC_PLUS, s += 10;
  else if (strncmp(s, "std::multiplies<", 16) == 0) *op = SC_MUL, s += 16;
  else return 0;
  if (simtw_dt_parse(s, &e) != dt || strncmp(e, "> >(", 4) != 0) return 0;
  /* products of integers are not needed yet */
  return simtw_dt_is_float(dt) || *op == SC_PLUS;
}

int simtw_scan_resolve(const char *dm, simtw_nn_t *k) {
  static const char inner[] = "void at::native::tensor_kernel_scan_innermost_dim<";
  static const char outer[] = "void at::native::tensor_kernel_scan_outer_dim<";
  int is_outer = strncmp(dm, outer, sizeof outer - 1) == 0;
  if (!is_outer && strncmp(dm, inner, sizeof inner - 1) != 0) return 0;
  const char *p = dm + (is_outer ? sizeof outer : sizeof inner) - 1, *e;
  simtw_dt_t dt = simtw_dt_parse(p, &e);
  if ((dt != DT_F32 && dt != DT_F16 && dt != DT_BF16 && dt != DT_I64) || strncmp(e, ", ", 2) != 0) return 0;
  p = e + 2;
  if (is_outer) { /* the index type of the kernel's loops: the arguments are u32 either way */
    if (strncmp(p, "unsigned int, ", 14) == 0) p += 14;
    else if (strncmp(p, "unsigned long, ", 15) == 0) p += 15;
    else return 0;
  }
  int op;
  if (!parse_op(p, dt, &op)) return 0;
  k->run = is_outer ? run_scan_outer : run_scan_inner;
  k->p[0] = (int)dt;
  k->p[1] = op;
  return 1;
}
