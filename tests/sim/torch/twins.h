/* twins.h — what the files of the CPU twins of PyTorch's kernels share: element types and their
 * conversions (dtype.c), the twin record, and the resolvers of the kernels outside the
 * elementwise, reduction and foreach frameworks of twins.c (nn.c: softmax, losses, dropout,
 * indexing, concatenation, layer and RMS norm, reaching norm.c (batch and group norm)
 * and conv.c (depthwise convolution); pool.c: pooling, reaching resample.c (adaptive pooling,
 * padding, upsampling); scatter.c: scatter, gather and advanced indexing; scan.c: cumulative
 * sums and products), and the OffsetCalculator reader they share.
 *
 * Internal to libtorchtwins.so (its version script exports simtw_twin only).
 */
#ifndef SIMTW_TWINS_H
#define SIMTW_TWINS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Element types, numbered as c10::ScalarType (the dtype codes of LoadWithCast/StoreWithCast);
 * DT_U32 and DT_U16 are the opaque 4- and 2-byte types of where's lambda, not ScalarTypes. */
typedef enum {
  DT_NONE = -1,
  DT_U8 = 0,
  DT_I8 = 1,
  DT_I16 = 2,
  DT_I32 = 3,
  DT_I64 = 4,
  DT_F16 = 5,
  DT_F32 = 6,
  DT_F64 = 7,
  DT_BOOL = 11,
  DT_BF16 = 15,
  DT_U32 = 100,
  DT_U16 = 101,
} simtw_dt_t;

/* One element's value: floating types in f (exactly: every float, half and bfloat16 value is a
 * double), integer and bool types in i. A float16 or bfloat16 element loaded from memory also
 * keeps its bits (raw, raw_dt that type; 0 otherwise) for as long as it is passed on unchanged,
 * so that a NaN an operation returns as it came (a clamp, a copy, a select) is stored with its
 * sign and payload, as the CUDA code stores the very value it was given, where a value computed
 * in float is narrowed (and its NaN made the quiet one). */
typedef struct {
  double f;
  int64_t i;
  int is_f;
  unsigned short raw;
  simtw_dt_t raw_dt;
} simtw_val_t;

size_t simtw_dt_size(simtw_dt_t dt);
int simtw_dt_is_float(simtw_dt_t dt);
/* The C++ type name at s (as the demangler spells it: "float", "long", "c10::Half", ...)
 * followed by one of ",)> " or the end; sets *end after it. DT_NONE when none. */
simtw_dt_t simtw_dt_parse(const char *s, const char **end);
/* A floating element type (float, c10::Half, c10::BFloat16) at s, followed by `rest`: sets *dt and
 * returns the position after both, else NULL (s may be NULL). */
const char *simtw_dt_float_then(const char *s, const char *rest, int *dt);
simtw_val_t simtw_load(simtw_dt_t dt, const void *p);
/* static_cast<dt>(v) as C++ and c10 define it: rounding to nearest even for floating targets,
 * truncation toward zero for integer ones, != 0 for bool. */
simtw_val_t simtw_cast(simtw_val_t v, simtw_dt_t dt);
/* Stores v cast to dt. */
void simtw_store(simtw_dt_t dt, void *p, simtw_val_t v);
simtw_val_t simtw_fval(double f);
simtw_val_t simtw_ival(int64_t i);

/* A resolved twin: nn.c's kernels fill run and the integer parameters they parsed from the
 * kernel's name. */
struct simtw_nn;
typedef void (*simtw_run_fn)(const struct simtw_nn *k, dim3 grid, dim3 block, void **args);
typedef struct simtw_nn {
  simtw_run_fn run;
  int p[6];
  const char *name;
} simtw_nn_t;

/* Fills k when the demangled name dm is one of nn.c's kernels; returns 1, else 0. */
int simtw_nn_resolve(const char *dm, simtw_nn_t *k);
/* The same for pool.c's kernels (2-D max and average pooling). */
int simtw_pool_resolve(const char *dm, simtw_nn_t *k);
/* The same for scatter.c's kernels (gather, scatter, scatter_add). */
int simtw_scatter_resolve(const char *dm, simtw_nn_t *k);

/* Resolvers reached through the ones above (pool.c's and nn.c's answer with them when their own
 * kernels do not match): resample.c's reflection padding, nearest and bilinear upsampling and
 * softmax over a non-last dimension (through simtw_pool_resolve); conv.c's depthwise
 * convolution and norm.c's batch norm (through simtw_nn_resolve). */
int simtw_resample_resolve(const char *dm, simtw_nn_t *k);
int simtw_conv_resolve(const char *dm, simtw_nn_t *k);
int simtw_norm_resolve(const char *dm, simtw_nn_t *k);
/* rnn.c's fused LSTM and GRU cells (through simtw_nn_resolve). */
int simtw_rnn_resolve(const char *dm, simtw_nn_t *k);

/* OffsetCalculator<n, uint32_t> at oc (twins.c): the byte offset of linear element idx in tensor
 * arg (of n), and the calculator's size in bytes. */
uint64_t simtw_oc_get(const char *oc, int n, int arg, uint32_t idx);
size_t simtw_oc_size(int n);

/* The pointer stored at byte `off` of a kernel parameter (any alignment). */
static inline void *simtw_read_ptr(const void *p, size_t off) {
  void *v;
  memcpy(&v, (const char *)p + off, sizeof v);
  return v;
}

/* The int32, int64 and float fields at byte `off` of a kernel parameter (any alignment). */
static inline int32_t simtw_read_i32(const void *p, size_t off) {
  int32_t v;
  memcpy(&v, (const char *)p + off, sizeof v);
  return v;
}
static inline int64_t simtw_read_i64(const void *p, size_t off) {
  int64_t v;
  memcpy(&v, (const char *)p + off, sizeof v);
  return v;
}
static inline float simtw_read_f32(const void *p, size_t off) {
  float v;
  memcpy(&v, (const char *)p + off, sizeof v);
  return v;
}

/* A TensorInfo<T, IndexType> parameter (tensorinfo.c), read with index_bytes 4 (int, unsigned
 * int) or 8 (int64_t); dims is 0 when the count read is out of range. */
#define SIMTW_TI_DIMS 25
typedef struct {
  char *data;
  int64_t sizes[SIMTW_TI_DIMS], strides[SIMTW_TI_DIMS];
  int dims;
} simtw_ti_t;
simtw_ti_t simtw_ti_read(const void *arg, int index_bytes);
/* IndexToOffset<T, IndexType, dims>::get: the element offset of linear index i (last dimension
 * fastest); dims is the kernel's template argument: -2 contiguous (the offset is i), -1 the
 * tensor's own count. */
uint64_t simtw_ti_offset(const simtw_ti_t *t, int dims, uint64_t i);
uint64_t simtw_ti_numel(const simtw_ti_t *t);

/* Philox4x32-10 (Salmon et al., as cuRAND implements it): the 4 words of block ctr under key. */
void simtw_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The same for scan.c's kernels (cumsum and cumprod along a dimension). */
int simtw_scan_resolve(const char *dm, simtw_nn_t *k);

/* sort.c: torch.sort's bitonic sort of short slices and torch.topk's single-block selection
 * (reached through simtw_scatter_resolve). */
int simtw_sort_resolve(const char *dm, simtw_nn_t *k);
/* embbag.c: embedding_bag's forward in sum and mean modes (reached the same way). */
int simtw_embbag_resolve(const char *dm, simtw_nn_t *k);
/* flash.c: the FlashAttention-2 kernels of scaled_dot_product_attention's flash backend. */
int simtw_flash_resolve(const char *dm, simtw_nn_t *k);
/* attention.c: the memory-efficient attention kernels of scaled_dot_product_attention
 * (fmha_cutlassF forward, fmha_cutlassB backward), reached through simtw_nn_resolve. */
int simtw_attn_resolve(const char *dm, simtw_nn_t *k);
/* The same for multiout.c's kernels (batch norm's update of the running statistics). */
int simtw_multiout_resolve(const char *dm, simtw_nn_t *k);
/* The same for fusedopt.c's kernels (SGD, Adam and AdamW with fused=True). */
int simtw_fusedopt_resolve(const char *dm, simtw_nn_t *k);

#endif
