/* pattern.c — the table of kernel patterns and its rules (see pattern.h).
 *
 * The originals, as PyTorch 2.5 launches them for float32 tensors that are contiguous
 * (TensorIterator's is_contiguous(): launch_vectorized_kernel, whose TrivialOffsetCalculator
 * makes element i of every operand live at data[j] + 4*i), with 32-bit indexing:
 *
 *   add   a + b        vectorized_elementwise_kernel<V, CUDAFunctor_add<float>, Array<char*, 3>>
 *                      (int N, {float alpha_}, {out, self, other}); computes self + alpha*other
 *   mul   a * b        vectorized_elementwise_kernel<V, BinaryFunctor<float, float, float,
 *                      binary_internal::MulFunctor<float>>, Array<char*, 3>>
 *                      (int N, {} (1 byte), {out, a, b}); computes a * b
 *   relu  relu(a)      at::relu is clamp_min(a, 0): launch_clamp_scalar's lambda(float) closure
 *                      {ClampLimits minmax, float lim0_val, float lim1_val, …} with minmax == Min
 *                      and both limits 0, Array<char*, 2> {out, in}; computes
 *                      isnan(v) ? v : ::max(v, 0.0f)
 *
 * `sub` is add with alpha = -1 in that version and fails the alpha condition, as does any
 * alpha other than 1: with alpha == 1, self + alpha*other is exactly self + other whether or
 * not nvcc contracted it into an FMA, so the fused kernel is exact by construction without
 * knowing PyTorch's SASS. A CPU scalar operand (`t * 2.0`) makes PyTorch launch another kernel
 * (opmath_symmetric_gpu_kernel_with_scalars removes the operand and wraps the functor in
 * AUnaryFunctor with the scalar as a field), which no pattern names.
 *
 * Launch shape: the fused kernel computes all N elements (grid-stride), so each original must
 * compute exactly its N elements too, and which elements an original computes depends on its
 * grid and block, not on N alone. In PyTorch's CUDALoops.cuh, vectorized_elementwise_kernel
 * gives block b the elements [b*W, b*W + W) below N, W = num_threads() * elements per thread
 * (remaining = N - W*blockIdx.x; full blocks through the vectorized policy, the tail through the
 * unroll policy), and each thread's share is computed from threadIdx.x with the constant
 * num_threads() = 128 as its stride: blockIdx.y/z and threadIdx.y/z are never read. So the
 * elements computed are [0, N) exactly when blockDim is (128, 1, 1) (fewer threads skip
 * elements, more are beyond the kernel's launch bounds; other y/z extents repeat elements,
 * concurrently, which an in-place operation does not survive), gridDim.y and gridDim.z are 1,
 * and gridDim.x * W >= N (blocks beyond that find remaining <= 0 and do nothing). W for float
 * is 512 in every version with the at::detail::Array spelling (thread_work_size() 4); the
 * std::array spelling covers versions with 4 elements per thread for 4-byte operands (W = 512)
 * and later ones with 8 (W = 1024), and the name does not say which. The rule, true whatever
 * the version: gridDim.x == ceil(N / 512), which is what launch_vectorized_kernel launches
 * when W is 512 and, when W is 1024, covers [0, N) with idle blocks after it; plus, when W may
 * be 1024, (gridDim.x - 1) * 1024 must fit in an int, the kernel's block-offset arithmetic. A
 * launch of a version with W = 1024 has ceil(N / 1024) blocks, which fails the rule when
 * N > 512: such launches are left as they are (what is unknown is never fused), unless the
 * calibration table of the loaded build (src/fchain.h) records the kernel's W and threads, as
 * calibration saw its framework launch it: then the rule is that W's, gridDim.x ==
 * ceil(N / W) with blockDim (threads, 1, 1).
 *
 * Buffers: the fused kernel handles element i of every operand in one thread (read the
 * inputs, write the intermediate, read it back where it is an input, write the output), which
 * is what the two kernels in sequence do only if any two buffers of the chain are the same
 * buffer or do not overlap at all over their N elements. That, the same N, and the second
 * kernel reading exactly what the first wrote, are checked on every occurrence.
 */
#include "pattern.h"

#include <fnmatch.h>
#include <stdint.h>
#include <string.h>

/* ---- the originals ---------------------------------------------------------------------- */

enum { OP_ADD, OP_MUL, OP_RELU };

typedef struct op_desc {
  const char *glob;        /* fnmatch pattern over the mangled name */
  uint32_t fmin, fmax;     /* size range of parameter 1, the functor */
  int ntensors;            /* pointers in parameter 2, the data array */
  int (*functor_ok)(const uint8_t *f, uint32_t size);
} op_desc_t;

static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* alpha must be exactly 1.0f (see the top of the file). */
static int add_ok(const uint8_t *f, uint32_t size) {
  (void)size;
  return rd32(f) == 0x3f800000u;
}

static int mul_ok(const uint8_t *f, uint32_t size) {
  (void)f, (void)size;
  return 1;
}

/* clamp_min(v, +0.0): minmax == ClampLimits::Min (0), lim0_val and lim1_val +0.0f. A limit of
 * -0.0f would make ::max return -0.0f for negative inputs: not relu, not matched. */
static int relu_ok(const uint8_t *f, uint32_t size) {
  (void)size;
  return rd32(f) == 0 && rd32(f + 4) == 0 && rd32(f + 8) == 0;
}

#define AG_VEC_KERNEL "_ZN2at6native29vectorized_elementwise_kernelILi?E"
static const op_desc_t ops[] = {
    [OP_ADD] = {AG_VEC_KERNEL "NS0_15CUDAFunctor_addIfEE*viT0_T1_", 4, 4, 3, add_ok},
    [OP_MUL] = {AG_VEC_KERNEL "NS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEE*viT0_T1_",
                1, 1, 3, mul_ok},
    [OP_RELU] = {AG_VEC_KERNEL "ZZZNS0_*launch_clamp_scalar*UlfE_*viT0_T1_", 12, 32, 2, relu_ok},
};

/* Nonzero when k is the original `op`: its name and its layout (int N, functor, pointers). */
static int op_fits(int op, const ag_kinfo_t *k) {
  const op_desc_t *d = &ops[op];
  if (!k || !k->name || k->nparams != 3 || !k->params) return 0;
  if (k->params[0].size != 4) return 0;
  if (k->params[1].size < d->fmin || k->params[1].size > d->fmax) return 0;
  if (k->params[2].size != 8u * (uint32_t)d->ntensors) return 0;
  for (int j = 0; j < 3; j++)
    if (k->params[j].offset + k->params[j].size > k->param_bytes) return 0;
  return fnmatch(d->glob, k->name, 0) == 0;
}

/* PyTorch's num_threads() on CUDA, and the smallest and largest elements per block that a
 * float32 vectorized_elementwise_kernel has had (see the top of the file). */
#define AG_TORCH_THREADS 128u
#define AG_TORCH_WORK_MIN 512u
#define AG_TORCH_WORK_MAX 1024u

/* Nonzero for the at::detail::Array spelling of the data array (PyTorch <= 2.5), whose
 * elements per block are AG_TORCH_WORK_MIN in every version. */
static int array_spelling(const ag_kinfo_t *k) {
  return strstr(k->name, "NS_6detail5ArrayIPc") != NULL;
}

/* Nonzero when the launch computes exactly elements [0, n) of every operand. */
static int shape_ok(const ag_pat_launch_t *l, int32_t n) {
  uint64_t work = l->work ? l->work : AG_TORCH_WORK_MIN;
  uint64_t work_max = l->work ? l->work : array_spelling(l->k) ? AG_TORCH_WORK_MIN : AG_TORCH_WORK_MAX;
  if (n <= 0) return 0;
  unsigned threads = l->work ? l->threads : AG_TORCH_THREADS;
  if (l->block[0] != threads || l->block[1] != 1 || l->block[2] != 1) return 0;
  if (l->grid[1] != 1 || l->grid[2] != 1) return 0;
  if (l->grid[0] != ((uint64_t)n + work - 1) / work) return 0;
  return ((uint64_t)l->grid[0] - 1) * work_max <= INT32_MAX;
}

static int32_t numel(const ag_pat_launch_t *l) {
  return (int32_t)rd32(l->args + l->k->params[0].offset);
}

static const uint8_t *functor(const ag_pat_launch_t *l) { return l->args + l->k->params[1].offset; }

/* Pointer j of the data array: 0 is the output, then the inputs in order. */
static uint64_t ptr(const ag_pat_launch_t *l, int j) {
  return rd64(l->args + l->k->params[2].offset + 8 * (size_t)j);
}

/* Nonzero when the n buffers of `bytes` each are pairwise the same or disjoint. */
static int same_or_disjoint(const uint64_t *p, int n, uint64_t bytes) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (p[i] != p[j] && p[i] < p[j] + bytes && p[j] < p[i] + bytes) return 0;
  return 1;
}

/* ---- the patterns ----------------------------------------------------------------------- */

struct ag_pattern {
  const char *name;   /* stats key */
  const char *kernel; /* fused kernel in the embedded module */
  int nops;
  int op[AG_PAT_MAX_OPS];
  /* Conditions linking the originals, beyond each functor's own. */
  int (*link_ok)(const ag_pat_launch_t *l);
  /* The fused kernel's arguments, as 8-byte slots; returns their number. */
  int (*args)(const ag_pat_launch_t *l, uint64_t *slot);
};

/* add (t = a + b) then relu (out = relu(t)), the relu reading exactly t. */
static int add_relu_link(const ag_pat_launch_t *l) {
  int32_t n = numel(&l[0]);
  if (n <= 0 || numel(&l[1]) != n) return 0;
  if (ptr(&l[1], 1) != ptr(&l[0], 0)) return 0;
  uint64_t p[4] = {ptr(&l[0], 0), ptr(&l[0], 1), ptr(&l[0], 2), ptr(&l[1], 0)};
  return same_or_disjoint(p, 4, (uint64_t)n * 4);
}

/* ag_fused_add_relu(long long n, const float *a, const float *b, float *t, float *out) */
static int add_relu_args(const ag_pat_launch_t *l, uint64_t *s) {
  s[0] = (uint64_t)numel(&l[0]);
  s[1] = ptr(&l[0], 1), s[2] = ptr(&l[0], 2), s[3] = ptr(&l[0], 0), s[4] = ptr(&l[1], 0);
  return 5;
}

/* mul (t = x * y) then add (out = t + c or c + t), one operand of the add being exactly t. */
static int mul_add_link(const ag_pat_launch_t *l) {
  int32_t n = numel(&l[0]);
  uint64_t t = ptr(&l[0], 0);
  if (n <= 0 || numel(&l[1]) != n) return 0;
  if (ptr(&l[1], 1) != t && ptr(&l[1], 2) != t) return 0;
  uint64_t p[6] = {t, ptr(&l[0], 1), ptr(&l[0], 2), ptr(&l[1], 0), ptr(&l[1], 1), ptr(&l[1], 2)};
  return same_or_disjoint(p, 6, (uint64_t)n * 4);
}

/* ag_fused_mul_add(long long n, const float *x, const float *y, float *t, const float *c,
 *                  float *out, long long t_first): out = t_first ? t + c : c + t. */
static int mul_add_args(const ag_pat_launch_t *l, uint64_t *s) {
  int t_first = ptr(&l[1], 1) == ptr(&l[0], 0);
  s[0] = (uint64_t)numel(&l[0]);
  s[1] = ptr(&l[0], 1), s[2] = ptr(&l[0], 2), s[3] = ptr(&l[0], 0);
  s[4] = ptr(&l[1], t_first ? 2 : 1), s[5] = ptr(&l[1], 0), s[6] = (uint64_t)t_first;
  return 7;
}

static const struct ag_pattern table[] = {
    {"torch_add_relu", "ag_fused_add_relu", 2, {OP_ADD, OP_RELU}, add_relu_link, add_relu_args},
    {"torch_mul_add", "ag_fused_mul_add", 2, {OP_MUL, OP_ADD}, mul_add_link, mul_add_args},
};

int ag__pattern_count(void) { return (int)AG_ARRAY_SIZE(table); }

const ag_pattern_t *ag__pattern_at(int i) {
  return i >= 0 && i < ag__pattern_count() ? &table[i] : NULL;
}

const char *ag__pattern_name(const ag_pattern_t *p) { return p->name; }
const char *ag__pattern_kernel(const ag_pattern_t *p) { return p->kernel; }
int ag__pattern_len(const ag_pattern_t *p) { return p->nops; }
int ag__pattern_index(const ag_pattern_t *p) { return (int)(p - table); }

int ag__pattern_original(const ag_kinfo_t *k) {
  for (int op = 0; op < (int)AG_ARRAY_SIZE(ops); op++)
    if (op_fits(op, k)) return 1;
  return 0;
}

int ag__pattern_kernels_fit(const ag_pattern_t *p, const ag_pat_launch_t *l) {
  for (int i = 0; i < p->nops; i++)
    if (!op_fits(p->op[i], l[i].k)) return 0;
  return 1;
}

int ag__pattern_check(const ag_pattern_t *p, const ag_pat_launch_t *l) {
  for (int i = 0; i < p->nops; i++) {
    const op_desc_t *d = &ops[p->op[i]];
    if (!l[i].args || !d->functor_ok(functor(&l[i]), l[i].k->params[1].size)) return 0;
    if (!shape_ok(&l[i], numel(&l[i]))) return 0;
  }
  return p->link_ok(l);
}

const ag_pattern_t *ag__pattern_match(const ag_pat_launch_t *l, int avail) {
  for (int i = 0; i < ag__pattern_count(); i++) {
    const ag_pattern_t *p = &table[i];
    if (p->nops <= avail && ag__pattern_kernels_fit(p, l) && ag__pattern_check(p, l)) return p;
  }
  return NULL;
}

int ag__pattern_params(const ag_pattern_t *p, const ag_pat_launch_t *l, uint8_t *buf,
                       int *nargs, unsigned grid[3], unsigned block[3]) {
  uint64_t s[AG_PAT_MAX_ARGS] = {0};
  int n = p->args(l, s);
  if (n <= 0 || n > AG_PAT_MAX_ARGS || (int64_t)s[0] <= 0) return -AG_EINVAL;
  memcpy(buf, s, (size_t)n * 8);
  *nargs = n;
  /* One element per thread, in blocks of 256: the fused kernels also loop with a grid
   * stride, so the shape is a matter of speed only. */
  block[0] = 256, block[1] = block[2] = 1;
  grid[0] = (unsigned)((s[0] + 255) / 256), grid[1] = grid[2] = 1;
  return 0;
}
