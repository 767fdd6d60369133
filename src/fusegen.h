/* fusegen.h — one CUDA C kernel for a chain of PyTorch elementwise kernels, bit for bit.
 *
 * Three steps, each pure (no driver call, no lock):
 *   - ag__fg_table_load reads the calibration table of the wheel's elementwise kernels
 *     (tools/calibrate-elementwise's JSON) into a compact form that keeps, for each kernel, only
 *     the operations this file computes exactly: their kind, element type, where each scalar sits
 *     in the functor and the functor bytes that identify the operation. It allocates two blocks
 *     (the kernels and their names), which ag__fg_table_free releases; nothing else here
 *     allocates.
 *   - ag__fg_build describes a chain (src/chain.h: consecutive contiguous elementwise launches,
 *     each reading what an earlier one wrote) from its launches' kernels and argument bytes: a
 *     list of operations, each with its kind, element types, scalars (the values the kernel
 *     holds, read from its functor bytes) and operands (a tensor of the chain's pointer list as
 *     it was before the chain, or an earlier operation's result). A launch it cannot describe
 *     exactly makes the chain not fusable, with an enum reason.
 *   - ag__fg_emit writes the CUDA C of one kernel that computes the whole chain: a grid-stride
 *     loop over N in which each tensor read from outside the chain is loaded once, each operation
 *     computes in PyTorch's opmath type (float for float16 and bfloat16) with the same functions
 *     and the same fused multiply-adds as PyTorch's kernels (written as __fmaf_rn, __fmul_rn,
 *     __fadd_rn…, which no compiler contracts), and each result is rounded to its tensor's type
 *     and stored where the unfused kernel stored it, every intermediate included.
 *
 * The kernel: extern "C" __global__ void ag_fused_<key>(int n, ag_fused_args a), where the
 * struct holds `void *t[]` (the chain's tensors, ag_fg_chain_t.ptr order: one address appears
 * twice when a result is stored over a tensor the chain read before), when the chain has
 * scalars `float s[]` (ag_fg_chain_t.scal order) and, when it has strided accesses,
 * `unsigned g[]` (ag_fg_chain_t.g: each access's sizes, then its strides). Scalars, sizes and
 * strides are parameters, not literals, so that one compiled kernel serves every launch of a
 * chain of that shape (a disk cache keyed by ag__fg_key finds it whatever their values). It
 * includes no header: its float16 and bfloat16 conversions are written into it (see fusegen.c).
 *
 * A group of fills (AG_FG_FILL, ag_fg_chain_t.fills): consecutive launches of FillFunctor
 * kernels, each writing one value over its own tensor of its own element count, run as one kernel
 * whose grid has a row of blocks per fill (blockIdx.y), the horizontal case. The fills are
 * independent, so the group must not write any memory twice (AG_FG_OVERLAP). `unsigned g[]` then
 * holds each fill's element count and value bits, stored as they are (the functor holds the value
 * in the tensor's own type, so no rounding is involved).
 *
 * Strided launches (the framework that walks tensors through an OffsetCalculator: broadcasts,
 * slices, transposed views) take part as well. Element i of such a launch is at a tensor's
 * offset that the calculator's mixed-radix walk gives, which the fused kernel computes the same
 * way, per tensor. The chain is still one loop over i: element i of every launch in one thread,
 * which is exact only when a value passes from one launch to the next at the same element, so a
 * tensor the chain wrote must be read back with the walk it was written with (the same offset
 * for every i), and a tensor read through one walk must not share memory with one written
 * (AG_FG_OVERLAP). One exception: a launch that reads, through a walk that visits every element
 * once (a transposed view of a dense tensor), what one earlier launch wrote in the plain order;
 * that earlier launch is then computed in the later one's order (its element W(i) in thread i,
 * each of its tensors walked from W(i)), when nothing else depends on its order: it reads no
 * result of the chain, nothing read its result before, nothing else wrote that tensor. Else
 * AG_FG_STRIDES.
 */
#ifndef AG_FUSEGEN_H
#define AG_FUSEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "chain.h"

/* Element types. AG_FG_U8: bool or unsigned char, a mask that operations read and never write. */
enum { AG_FG_F32 = 0, AG_FG_F16 = 1, AG_FG_BF16 = 2, AG_FG_U8 = 3 };

/* The bytes of an element of type dt. */
static inline int ag__fg_dt_size(int dt) { return dt == AG_FG_F32 ? 4 : dt == AG_FG_U8 ? 1 : 2; }

/* What an operation computes (x, y: its operands in float; s0, s1: its scalars). */
enum ag_fg_kind {
  AG_FG_ADD,       /* x + y (add, alpha 1) */
  AG_FG_AXPY,      /* fma(s0, y, x) (add and sub with alpha: CUDAFunctor_add) */
  AG_FG_MUL,       /* x * y */
  AG_FG_DIV,       /* x / y */
  AG_FG_ADD_S,     /* x + s0 (CUDAFunctorOnSelf_add, alpha 1) */
  AG_FG_SUB_S,     /* x - s0 (CUDAFunctorOnSelf_add, alpha -1) */
  AG_FG_MUL_S,     /* x * s0 (a multiplication by a scalar, and a division: s0 the reciprocal) */
  AG_FG_NEG,
  AG_FG_ABS,
  AG_FG_EXP,
  AG_FG_LOG,
  AG_FG_SQRT,
  AG_FG_RSQRT,
  AG_FG_RECIP,     /* 1 / x */
  AG_FG_SIGMOID,   /* 1 / (1 + exp(-x)) */
  AG_FG_TANH,
  AG_FG_SILU,      /* x / (1 + exp(-x)) */
  AG_FG_GELU,      /* x * 0.5 * (1 + erf(x * sqrt(1/2))) */
  AG_FG_RELU,      /* NaN, else max(x, 0) (launch_clamp_scalar) */
  AG_FG_CLAMP,     /* NaN, else min(max(x, s0), s1) */
  AG_FG_CLAMP_MIN, /* NaN, else max(x, s0) */
  AG_FG_POW_S,     /* pow(x, s0) (the general case of pow with a scalar exponent) */
  AG_FG_CAST,      /* x, stored in another type */
  AG_FG_THRESHOLD, /* x <= s0 ? s1 : y (threshold_kernel_impl: threshold, and ReLU's backward) */
  AG_FG_MASKED_SCALE, /* y * x * s0, y a mask of 0 and 1 read as float (masked_scale_kernel:
                         dropout) */
  AG_FG_SQUARE,    /* x * x (pow with the exponent 2: pow_tensor_scalar_kernel_impl's own lambda) */
  AG_FG_CUBE,      /* x * x * x (pow with the exponent 3), x * x rounded to the type first */
  AG_FG_FILL,      /* the value's bits, stored (FillFunctor: a group of fills, below) */
  /* The hard activations, their lambdas' captured constants checked by their functors' bytes;
   * max and min are std::max and std::min: max(a, b) = a < b ? b : a, min(a, b) = b < a ? b : a,
   * so a NaN passes through both. */
  AG_FG_HARDSIGMOID,    /* min(max(x + 3, 0), 6) * (1/6) */
  AG_FG_HARDSWISH,      /* x * min(max(x + 3, 0), 6) * (1/6), the products in that order */
  AG_FG_HARDSIGMOID_BW, /* (y > -3 && y < 3) ? x * (1/6) : 0 (x the gradient, y the input) */
  AG_FG_HARDSWISH_BW,   /* y <= -3 ? 0 : y < 3 ? x * (y / 3 + 0.5) : x */
  AG_FG_LEAKY_RELU,     /* x > 0 ? x : x * s0 (s0 the negative slope) */
  AG_FG_LEAKY_RELU_BW,  /* x > 0 ? y : y * s0 (x the input, y the gradient) */
  AG_FG_SIGMOID_BW,     /* x * (1 - y) * y (x the gradient, y the output), each step rounded */
  AG_FG_TANH_BW,        /* x * (1 - y * y): in float32 x * fma(-y, y, 1); else each step rounded */
  AG_FG_GELU_TANH,      /* 0.5 * x * (1 + tanh(kBeta * fma(kKappa, x * x * x, x))) */
  AG_FG_NKINDS
};

/* Why a chain is not fusable. */
enum ag_fg_reason {
  AG_FG_OK = 0,
  AG_FG_NOT_ELEMENTWISE, /* not a contiguous elementwise framework kernel (src/chain.h) */
  AG_FG_UNKNOWN_KERNEL,  /* the table does not know the kernel */
  AG_FG_UNKNOWN_OP,      /* the table knows it, but none of its operations is computed here */
  AG_FG_LAYOUT,          /* parameters other than the table's (functor place, tensor count) */
  AG_FG_CAST_LOADER,     /* the unrolled framework with casts in its loader (types at run time) */
  AG_FG_FUNCTOR,         /* the functor's bytes match none of the table's operations */
  AG_FG_SCALAR,          /* a scalar in an encoding or form not computed here */
  AG_FG_COUNT,           /* element counts differ, or are not positive */
  AG_FG_DTYPE,           /* a tensor read as one type after being written as another */
  AG_FG_OVERLAP,         /* two tensors overlap without being the same */
  AG_FG_TOO_BIG,         /* more operations, tensors or scalars than the limits below */
  AG_FG_STRIDES,         /* a tensor read back through other offsets than it was written with */
  AG_FG_SHAPE,           /* a launch whose grid and block are not the ones the table says its
                            framework gives N elements: it may not compute exactly [0, N) */
  AG_FG_NREASONS
};

#define AG_FG_MAX_OPS 16
#define AG_FG_MAX_PTRS 24
#define AG_FG_MAX_SCAL 32
#define AG_FG_MAX_ACC 8   /* distinct strided accesses (walks) per chain */
#define AG_FG_MAX_DIMS 6  /* dimensions of a walk, once merged */
#define AG_FG_OC_DIMS 25  /* PyTorch's OffsetCalculator: MAX_DIMS, its fixed array length */
#define AG_FG_MAX_CALOPS 4 /* operations kept per kernel of the table */
#define AG_FG_SIG_BYTES 16 /* functor bytes that identify an operation, at most */

/* ---- the calibration table ---- */

typedef struct ag_fg_place {
  uint16_t off; /* in the functor */
  uint8_t enc;  /* AG_FG_F32, AG_FG_F16, AG_FG_BF16 */
} ag_fg_place_t;

typedef struct ag_fg_calop {
  uint8_t cat;                   /* index in the generator's catalogue of operations */
  uint8_t nplaces[2];            /* per scalar: its places (all hold the same value) */
  ag_fg_place_t place[2][2];
  uint8_t sig[AG_FG_SIG_BYTES];  /* the functor's identifying bytes, as calibrated */
} ag_fg_calop_t;

typedef struct ag_fg_calkernel {
  const char *name; /* mangled; points into the table's name block */
  uint16_t functor_off, functor_size;
  uint16_t calc_off, data_off; /* the strided framework: its OffsetCalculator and data array */
  uint16_t threads;     /* threads per block of its launches, and the elements each block */
  uint32_t block_work;  /* computes (the grid over N elements is ceil(N / block_work)); 0: unknown */
  uint8_t tensors, dtype, nops, cast_loader, strided;
  ag_fg_calop_t ops[AG_FG_MAX_CALOPS];
} ag_fg_calkernel_t;

typedef struct ag_fg_table {
  ag_fg_calkernel_t *k; /* sorted by name */
  int n;
  char *names;
} ag_fg_table_t;

/* Reads the table from json[0..len). Returns 0 or -AG_EINVAL (not the table's schema, or not
 * JSON), -AG_ENOMEM. Kernels with no operation computed here are left out, and strided ones
 * whose calculator is not laid out as AG_FG_OC_DIMS dimensions (another PyTorch's). */
int ag__fg_table_load(ag_fg_table_t *t, const char *json, size_t len);
void ag__fg_table_free(ag_fg_table_t *t);
/* The table's record of a mangled kernel name, or NULL. */
const ag_fg_calkernel_t *ag__fg_table_find(const ag_fg_table_t *t, const char *name);

/* ---- a chain's description ---- */

typedef struct ag_fg_operand {
  int8_t op;   /* >= 0: that operation's result; -1: the tensor ptr as it was before the chain */
  uint8_t ptr; /* the tensor (index in ag_fg_chain_t.ptr) */
} ag_fg_operand_t;

typedef struct ag_fg_op {
  uint8_t kind, in_dt, out_dt, nin, out, nscal;
  ag_fg_operand_t in[2];
  uint8_t scal[2]; /* indices in ag_fg_chain_t.scal */
} ag_fg_op_t;

/* A strided walk over n elements: element i is at Σ digit_d(i) × stride[d] elements from the
 * tensor's address, digit_d the d-th digit of i in the mixed radix size[0], size[1], …
 * (size[0] the fastest), as OffsetCalculator::get computes it. Kept merged: no dimension of size
 * 1, no two that one dimension could walk; a walk that merges to element i itself is no access of
 * its own (contiguous). A walk with a base walks, in place of i, the element that walk base - 1
 * gives (a launch computed in another launch's order, below). */
typedef struct ag_fg_access {
  uint8_t dims, base;
  uint32_t size[AG_FG_MAX_DIMS], stride[AG_FG_MAX_DIMS];
} ag_fg_access_t;

typedef struct ag_fg_chain {
  int32_t n; /* elements (a group of fills: the most of any fill) */
  int nops, nptrs, nscal, nacc, ng;
  int fills; /* a group of fills (op i writes tensor i; g[2i], g[2i + 1]: its count and bits) */
  ag_fg_op_t op[AG_FG_MAX_OPS];
  uint64_t ptr[AG_FG_MAX_PTRS];
  uint8_t ptr_dt[AG_FG_MAX_PTRS];
  uint8_t ptr_loaded[AG_FG_MAX_PTRS];  /* read before the chain writes it: loaded once */
  uint8_t ptr_written[AG_FG_MAX_PTRS]; /* written by the chain */
  uint8_t ptr_acc[AG_FG_MAX_PTRS];     /* 0: element i; k: walk acc[k - 1] */
  float scal[AG_FG_MAX_SCAL];
  ag_fg_access_t acc[AG_FG_MAX_ACC];
  uint32_t g[2 * AG_FG_MAX_ACC * AG_FG_MAX_DIMS]; /* the walks' sizes and strides, as passed */
} ag_fg_chain_t;

/* Describes the chain l[0..n) (each launch's kernel layout and argument bytes), or the group of
 * fills when l[0] is a one-tensor kernel (ag__chain_single). Returns AG_FG_OK or the reason it
 * is not fusable, with *bad the launch at fault (-1 for the chain as a whole): for an overlap,
 * the launch that brought the later of the two tensors in, so that the launches before it may
 * form a chain of their own. */
int ag__fg_build(const ag_fg_table_t *t, const ag_chain_launch_t *l, int n, ag_fg_chain_t *c, int *bad);

/* Writes the kernel's CUDA C into buf (NUL-terminated, truncated to size), its name into
 * name[0..32). Returns the length the whole source needs, excluding the NUL (as snprintf). */
size_t ag__fg_emit(const ag_fg_chain_t *c, char *buf, size_t size, char name[32]);
/* The stable key of the chain's kernel: a 64-bit FNV-1a hash of its source written under a
 * fixed name (so every chain of one shape, whatever its pointers and scalars, has one key). */
uint64_t ag__fg_key(const ag_fg_chain_t *c);

/* Names, for logs and tests. */
const char *ag__fg_reason_name(int reason);
const char *ag__fg_kind_name(int kind);

#endif
