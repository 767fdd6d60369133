/* k-fuse.cu — chains of PyTorch's eager elementwise kernels, for kernel-pattern substitution.
 *
 * The kernels are declared exactly as PyTorch 2.5 instantiates them for contiguous float32
 * tensors, so that nvcc mangles them to the same names and gives them the same parameter
 * layouts (see src/pattern.c): at::native::vectorized_elementwise_kernel<4, F,
 * at::detail::Array<char*, N>>(int, F, Array) with F one of CUDAFunctor_add<float> (add, and
 * sub as add with alpha = -1), BinaryFunctor<float, float, float, binary_internal::MulFunctor
 * <float>> (mul), BinaryFunctor<…, DivFunctor<float>> (div), and the lambda(float) of
 * launch_clamp_scalar (clamp_min, i.e. relu). One difference: PyTorch defines
 * launch_clamp_scalar in an anonymous namespace, whose mangled name nvcc derives from the file;
 * here it is the named namespace clamp_impl, so that the CPU twin's name is known. The
 * library's name patterns cover both.
 *
 * Each step runs one sequence between two copies to the host, on the legacy stream:
 *   gen(x, step)                     the input changes every step (a scalar argument)
 *   t1 = x + w        (add)          \ torch_add_relu
 *   h  = relu(t1)     (clamp_min)    /
 *   t2 = h * g        (mul)          \ torch_mul_add
 *   o  = t2 + b       (add)          /
 *   sum(o, acc)                      accumulates o
 * then copies t1, t2 and o to the host (the intermediates are read: they must still be
 * written) and hashes them. The data hold negative values, -0.0 and NaN.
 *
 * The mode (argv[1]) changes one thing, to exercise each condition of the patterns:
 *   train     as above (both patterns match)
 *   alt       the buffers alternate between two sets every step (same element count):
 *             the replay updates the fused nodes, which still match
 *   relu-other  relu reads another buffer than the add wrote (no torch_add_relu)
 *   count     relu covers one element less than the add wrote (no torch_add_relu)
 *   sub       t1 = x - w, i.e. the add functor with alpha = -1 (no torch_add_relu)
 *   alpha     t1 = x + 0.5 * w (alpha != 1 is not substituted; no torch_add_relu)
 *   div       t2 = h / g, another functor (no torch_mul_add)
 *   alias     from step STEPS/2 on, relu reads another buffer: the conditions that held when
 *             the graph was built fail on a later occurrence
 *   grow      from step STEPS/2 on, the four operations cover NG elements but keep the grid of
 *             N (the last NG - 1024 elements stay unwritten): the same launch shapes, so the
 *             same sequence, whose new arguments fail the shape condition (no pattern)
 *   clamp-max, clamp-neg0, clamp-lim0, clamp-lim1
 *             the relu is clamp_max(t1, 0), clamp_min(t1, -0.0), clamp_min(t1, 0.5), or has
 *             its unused upper limit 0.5 (no torch_add_relu)
 *   add2-other, add2-alpha, add2-count
 *             the add of mul→add reads another buffer than the product, has alpha 0.5, or
 *             covers one element less (no torch_mul_add)
 *   overlap-add2  the add's other operand starts one element into the product (no
 *             torch_mul_add: one thread per element would read a product not yet written)
 *   overlap-relu  relu writes the add's input x shifted by one element (no torch_add_relu)
 *   SHAPE-OP  one launch of operation OP (add, relu, mul, or add2: the add of mul→add) gets
 *             another shape than PyTorch gives it (set_shape: short, long, block, gridy);
 *             that operation's pattern must not match, the other one still does
 * Buffers hold NG elements, zeroed first; the data and the hashes cover all NG.
 * The output is the same with and without the library; the last line counts launches.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fused-twins.h"
#include "prog.h"
#include "sim_kernel.h"

enum { N = 1000, NG = 1100, STEPS = 24, THREADS = 128, WORK = 4 * THREADS };

/* ---- PyTorch's types, as far as names and layouts go ---- */

namespace c10 {
struct Scalar {
  double v;
  template <typename T> T to() const { return (T)v; }
};
} // namespace c10

namespace at {
struct TensorIteratorBase {
  int dtype; /* 6: float, the 7th case of the dispatch switch as in PyTorch */
};
namespace detail {
template <typename T, int size_> struct Array {
  T data[size_];
};
} // namespace detail
namespace native {
namespace detail {
enum class ClampLimits { Min, Max, MinMax };
}

template <typename scalar_t> struct CUDAFunctor_add {
  using opmath_t = float;
  opmath_t alpha_;
  CUDAFunctor_add(opmath_t alpha) : alpha_(alpha) {}
  __device__ scalar_t operator()(scalar_t self, scalar_t other) const {
    return self + alpha_ * other;
  }
};

namespace binary_internal {
template <typename T> struct MulFunctor {
  __device__ T operator()(T a, T b) const { return a * b; }
};
template <typename scalar_t> struct DivFunctor {
  __device__ scalar_t operator()(scalar_t a, scalar_t b) const { return a / b; }
};
} // namespace binary_internal

template <typename arg1_t, typename arg2_t, typename return_t, typename func_t>
struct BinaryFunctor {
  __device__ return_t operator()(arg1_t a, arg2_t b) const { return f(a, b); }
  BinaryFunctor(func_t f_) : f(f_) {}

 private:
  func_t f;
};

/* The device body: element i of every operand at data[j] + 4*i (contiguous), WORK elements
 * per block as PyTorch's launch_vectorized_kernel lays them out. */
template <typename func_t>
__device__ void apply(int n, const func_t &f, const at::detail::Array<char *, 3> &d) {
  for (int k = 0; k < 4; k++) {
    int i = blockIdx.x * WORK + k * THREADS + threadIdx.x;
    if (i < n) ((float *)d.data[0])[i] = f(((float *)d.data[1])[i], ((float *)d.data[2])[i]);
  }
}
template <typename func_t>
__device__ void apply(int n, const func_t &f, const at::detail::Array<char *, 2> &d) {
  for (int k = 0; k < 4; k++) {
    int i = blockIdx.x * WORK + k * THREADS + threadIdx.x;
    if (i < n) ((float *)d.data[0])[i] = f(((float *)d.data[1])[i]);
  }
}

template <int vec_size, typename func_t, typename array_t>
__global__ void vectorized_elementwise_kernel(int N_, func_t f, array_t data) {
  apply(N_, f, data);
}

/* The next elementwise launch's shape, when a mode changes it (0: as PyTorch launches). */
static unsigned next_grid, next_grid_y, next_block;

template <typename func_t, typename array_t>
void gpu_kernel(int n, const func_t &f, array_t data) {
  dim3 grid(next_grid ? next_grid : (n + WORK - 1) / WORK, next_grid_y ? next_grid_y : 1);
  dim3 block(next_block ? next_block : THREADS);
  next_grid = next_grid_y = next_block = 0;
  vectorized_elementwise_kernel<4, func_t, array_t><<<grid, block, 0, 0>>>(n, f, data);
  CHECK_CUDA(cudaGetLastError());
  PROG_RT();
}

namespace clamp_impl {
/* The structure of PyTorch's launch_clamp_scalar: the dispatch macro's lambda, one lambda per
 * dtype case (float is the 7th), and the [=] lambda(float) handed to gpu_kernel, capturing
 * minmax, lim0_val and lim1_val in that order of first use. */
void launch_clamp_scalar(TensorIteratorBase &iter, c10::Scalar lim0, c10::Scalar lim1,
                         at::native::detail::ClampLimits minmax, int n,
                         at::detail::Array<char *, 2> data) {
  [&] {
    switch (iter.dtype) {
      case 0: [&] {}(); break;
      case 1: [&] {}(); break;
      case 2: [&] {}(); break;
      case 3: [&] {}(); break;
      case 4: [&] {}(); break;
      case 5: [&] {}(); break;
      case 6:
        [&] {
          using scalar_t = float;
          using opmath_t = float;
          auto lim0_val = lim0.to<opmath_t>();
          auto lim1_val = lim1.to<opmath_t>();
          gpu_kernel(n, [=] __host__ __device__(scalar_t v) -> scalar_t {
            if (isnan(static_cast<opmath_t>(v))) {
              return v;
            } else if (minmax == at::native::detail::ClampLimits::Min) {
              return ::max(static_cast<opmath_t>(v), lim0_val);
            } else if (minmax == at::native::detail::ClampLimits::Max) {
              return ::min(static_cast<opmath_t>(v), lim0_val);
            } else {
              return ::min(::max(static_cast<opmath_t>(v), lim0_val), lim1_val);
            }
          }, data);
        }();
        break;
    }
  }();
}
} // namespace clamp_impl
} // namespace native
} // namespace at

using namespace at::native;
typedef at::detail::Array<char *, 3> Arr3;
typedef at::detail::Array<char *, 2> Arr2;

static Arr3 arr3(float *o, const float *a, const float *b) {
  Arr3 d = {{(char *)o, (char *)a, (char *)b}};
  return d;
}

static void add(int n, float *o, const float *a, const float *b, float alpha) {
  gpu_kernel(n, CUDAFunctor_add<float>(alpha), arr3(o, a, b));
}
static void mul(int n, float *o, const float *a, const float *b) {
  gpu_kernel(n, BinaryFunctor<float, float, float, binary_internal::MulFunctor<float>>(
                    binary_internal::MulFunctor<float>()),
             arr3(o, a, b));
}
static void div_(int n, float *o, const float *a, const float *b) {
  gpu_kernel(n, BinaryFunctor<float, float, float, binary_internal::DivFunctor<float>>(
                    binary_internal::DivFunctor<float>()),
             arr3(o, a, b));
}
/* relu is clamp_min(a, 0); the modes that break the relu condition pass other limits. */
static void relu(int n, float *o, const float *a,
                 at::native::detail::ClampLimits minmax = at::native::detail::ClampLimits::Min,
                 double lim0 = 0.0, double lim1 = 0.0) {
  at::TensorIteratorBase it = {6};
  Arr2 d = {{(char *)o, (char *)a}};
  clamp_impl::launch_clamp_scalar(it, c10::Scalar{lim0}, c10::Scalar{lim1}, minmax, n, d);
}

/* ---- the other kernels of a step ---- */

__host__ __device__ static inline float gen_value(unsigned long i, int step) {
  unsigned h = (unsigned)(i * 2654435761u) ^ (unsigned)(step * 40503u);
  h ^= h >> 13;
  if (i % 17 == 0) return -0.0f; /* with w[i] = -0.0 too, t1[i] = -0.0 reaches relu */
  if (h % 97 == 0) return nanf("");
  if (h % 89 == 0) return -0.0f;
  return ((float)(h % 2001) - 1000.0f) / 256.0f;
}

extern "C" __global__ void kf_gen(float *x, int n, int step) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)n) x[i] = gen_value(i, step);
}

/* acc[i] += o[i], with NaN counted apart so that the sums stay comparable. */
__host__ __device__ static inline void sum_body(unsigned long i, const float *o, float *acc,
                                                int n) {
  if (i >= (unsigned long)n) return;
  float v = o[i];
  acc[i] += isnan(v) ? 1000.0f : v;
}

extern "C" __global__ void kf_sum(const float *o, float *acc, int n) {
  sum_body(PROG_TID(), o, acc, n);
}

SIM_KERNEL(kf_gen) {
  float *x = SIM_ARG(0, float *);
  int n = SIM_ARG(1, int), step = SIM_ARG(2, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) x[i] = gen_value(i, step);
}
SIM_KERNEL(kf_sum) {
  SIM_FOR_EACH_THREAD(i) sum_body(i, SIM_ARG(0, const float *), SIM_ARG(1, float *), SIM_ARG(2, int));
}

/* ---- CPU twins of PyTorch's kernels: the reference the fused kernels are compared with ---- */

/* The elements the device body above computes under a launch shape, in the order of its
 * blocks and threads, as PyTorch's kernel maps them: element b*WORK + k*THREADS + x for thread
 * x of block b, k < 4, below n. Blocks and threads that differ only in y or z repeat the same
 * elements. A launch of fewer blocks or threads leaves elements unwritten. */
#define TWIN_FOR_EACH_ELEMENT(i, n)                                                             \
  for (unsigned long long tw_b = 0; tw_b < (unsigned long long)sim_grid.x * sim_grid.y * sim_grid.z; tw_b++) \
    for (unsigned tw_t = 0; tw_t < sim_block.x * sim_block.y * sim_block.z; tw_t++)            \
      for (int tw_k = 0; tw_k < 4; tw_k++)                                                      \
        for (long long i = (long long)(tw_b % sim_grid.x) * WORK + tw_k * THREADS + tw_t % sim_block.x; \
             i < (n); i = (n))

static void twin_binary(dim3 sim_grid, dim3 sim_block, void **sim_args, int op) {
  int n = SIM_ARG(0, int);
  const char *const *d = (const char *const *)sim_args[2];
  float *o = (float *)d[0];
  const float *a = (const float *)d[1], *b = (const float *)d[2];
  float alpha = op == 0 ? SIM_ARG(1, float) : 0.0f;
  TWIN_FOR_EACH_ELEMENT(i, n) {
    /* The tests use alphas that are powers of two: alpha * b is exact, so a + alpha * b is
     * the same with or without an FMA. */
    o[i] = op == 0 ? a[i] + alpha * b[i] : op == 1 ? a[i] * b[i] : a[i] / b[i];
  }
}

#define K_ADD _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_
#define K_MUL _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_
#define K_DIV _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_internal10DivFunctorIfEEEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_
#define K_RELU _ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_10clamp_impl19launch_clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEiNS_6detail5ArrayIPcLi2EEEENKUlvE_clEvENKUlvE5_clEvEUlfE_SC_EEviT0_T1_

static float dev_max(float a, float b) { return a > b || (a == b && !signbit(a)) ? a : b; }
static float dev_min(float a, float b) { return a < b || (a == b && signbit(a)) ? a : b; }

#define SIM_KERNEL_X(name) SIM_KERNEL(name)
SIM_KERNEL_X(K_ADD) { twin_binary(sim_grid, sim_block, sim_args, 0); }
SIM_KERNEL_X(K_MUL) { twin_binary(sim_grid, sim_block, sim_args, 1); }
SIM_KERNEL_X(K_DIV) { twin_binary(sim_grid, sim_block, sim_args, 2); }
SIM_KERNEL_X(K_RELU) {
  int n = SIM_ARG(0, int);
  const unsigned char *f = (const unsigned char *)sim_args[1];
  int minmax;
  float lim0, lim1;
  memcpy(&minmax, f, 4);
  memcpy(&lim0, f + 4, 4);
  memcpy(&lim1, f + 8, 4);
  const char *const *d = (const char *const *)sim_args[2];
  float *o = (float *)d[0];
  const float *a = (const float *)d[1];
  TWIN_FOR_EACH_ELEMENT(i, n) {
    float v = a[i];
    /* ::max and ::min on the device are max.f32 and min.f32, which order -0.0 below +0.0. */
    if (isnan(v)) o[i] = v;
    else if (minmax == 0) o[i] = dev_max(v, lim0);
    else if (minmax == 1) o[i] = dev_min(v, lim0);
    else o[i] = dev_min(dev_max(v, lim0), lim1);
  }
}

/* ---- the program ---- */

/* A shape mode (short, long, block, gridy) changes the launch of one of the four elementwise
 * operations (add, relu, mul, add2), or -1; grow keeps the grid of N elements. */
static int shape = -1, shape_op = -1, grow;

/* Sets the shape of the launch of operation `op` on n elements, if the mode changes it:
 * short  one block less than PyTorch launches (the last n - 512*(blocks-1) elements unwritten)
 * long   one block more (idle: it finds nothing left to compute)
 * block  64 threads per block instead of 128 (half of every block's elements unwritten)
 * gridy  two rows of blocks (each element computed twice, to the same value) */
static void set_shape(int op, int n) {
  unsigned g = (unsigned)(n + WORK - 1) / WORK;
  if (grow) next_grid = (N + WORK - 1) / WORK;
  if (op != shape_op) return;
  if (shape == 0) next_grid = g - 1;
  else if (shape == 1) next_grid = g + 1;
  else if (shape == 2) next_block = THREADS / 2;
  else next_grid_y = 2;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "train";
  static const char *modes[] = {"train", "alt", "relu-other", "count", "sub", "alpha", "div",
                                "alias", "grow", "clamp-max", "clamp-neg0", "clamp-lim0",
                                "clamp-lim1", "add2-other", "add2-alpha", "add2-count",
                                "overlap-add2", "overlap-relu"};
  static const char *shapes[] = {"short", "long", "block", "gridy"};
  static const char *shape_ops[] = {"add", "relu", "mul", "add2"};
  int m = -1;
  for (int i = 0; i < (int)(sizeof modes / sizeof *modes); i++)
    if (!strcmp(mode, modes[i])) m = i;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      char name[32];
      snprintf(name, sizeof name, "%s-%s", shapes[i], shape_ops[j]);
      if (!strcmp(mode, name)) m = 0, shape = i, shape_op = j;
    }
  grow = m == 8;
  if (m < 0) {
    fprintf(stderr, "usage: k-fuse [train|alt|relu-other|count|sub|alpha|div|alias|grow|"
                    "clamp-max|clamp-neg0|clamp-lim0|clamp-lim1|add2-other|add2-alpha|"
                    "add2-count|overlap-add2|overlap-relu|{short,long,block,gridy}-{add,relu,mul,add2}]\n");
    return 2;
  }
  enum { X, W, T1, H, G, T2, B, O, OTHER, NBUF };
  float *buf[2][NBUF], *acc;
  for (int s = 0; s < 2; s++)
    for (int j = 0; j < NBUF; j++) {
      /* Zeroed: elements a mode leaves unwritten are read back and hashed. */
      CHECK_CUDA(cudaMalloc(&buf[s][j], NG * sizeof(float)));
      CHECK_CUDA(cudaMemset(buf[s][j], 0, NG * sizeof(float)));
    }
  CHECK_CUDA(cudaMalloc(&acc, NG * sizeof(float)));
  CHECK_CUDA(cudaMemset(acc, 0, NG * sizeof(float)));
  static float host[NG];
  for (int s = 0; s < 2; s++) {
    /* Weights and biases: fixed values, including a NaN and a -0.0. */
    for (int i = 0; i < NG; i++) host[i] = ((float)((i * 37) % 201) - 100.0f) / 64.0f;
    for (int i = 0; i < NG; i += 17) host[i] = -0.0f;
    CHECK_CUDA(cudaMemcpy(buf[s][W], host, sizeof host, cudaMemcpyHostToDevice));
    for (int i = 0; i < NG; i++) host[i] = ((float)((i * 53) % 101) - 50.0f) / 32.0f + (float)s;
    host[7] = nanf("");
    CHECK_CUDA(cudaMemcpy(buf[s][G], host, sizeof host, cudaMemcpyHostToDevice));
    for (int i = 0; i < NG; i++) host[i] = ((float)((i * 11) % 31) - 15.0f) / 8.0f;
    CHECK_CUDA(cudaMemcpy(buf[s][B], host, sizeof host, cudaMemcpyHostToDevice));
    for (int i = 0; i < NG; i++) host[i] = (float)(i % 13) - 6.0f;
    CHECK_CUDA(cudaMemcpy(buf[s][OTHER], host, sizeof host, cudaMemcpyHostToDevice));
  }

  uint64_t hash = 1469598103934665603ull;
  for (int step = 0; step < STEPS; step++) {
    float **v = buf[m == 1 ? step & 1 : 0];
    int relu_other = m == 2 || (m == 7 && step >= STEPS / 2);
    float alpha = m == 4 ? -1.0f : m == 5 ? 0.5f : 1.0f;
    /* grow: from step STEPS/2 on, the chain covers NG elements with the grid of N. */
    int n = m == 8 && step >= STEPS / 2 ? NG : N;
    PROG_LAUNCH(kf_gen, (NG + 255) / 256, 256, 0, 0, v[X], NG, step);
    set_shape(0, n);
    add(n, v[T1], v[X], v[W], alpha);
    set_shape(1, n);
    {
      using at::native::detail::ClampLimits;
      /* overlap-relu: relu writes X shifted by one element, which the add read. */
      float *h = m == 17 ? v[X] + 1 : v[H];
      relu(m == 3 ? n - 1 : n, h, relu_other ? v[OTHER] : v[T1],
           m == 9 ? ClampLimits::Max : ClampLimits::Min,
           m == 10 ? -0.0 : m == 11 ? 0.5 : 0.0, m == 12 ? 0.5 : 0.0);
      set_shape(2, n);
      if (m == 6) div_(n, v[T2], h, v[G]); else mul(n, v[T2], h, v[G]);
    }
    set_shape(3, n);
    /* overlap-add2: the add's other operand starts one element into the product. */
    add(m == 15 ? n - 1 : n, v[O], m == 13 ? v[OTHER] : v[T2], m == 16 ? v[T2] + 1 : v[B],
        m == 14 ? 0.5f : 1.0f);
    PROG_LAUNCH(kf_sum, (NG + 255) / 256, 256, 0, 0, v[O], acc, NG);
    int reads[3] = {T1, T2, O};
    for (int r = 0; r < 3; r++) {
      CHECK_CUDA(cudaMemcpy(host, v[reads[r]], sizeof host, cudaMemcpyDeviceToHost));
      hash = prog_hash(host, sizeof host, hash);
    }
    if (step % 8 == 7) printf("step %d: %016llx o[0]=%08x\n", step, (unsigned long long)hash, prog_fbits(host[0]));
  }
  CHECK_CUDA(cudaMemcpy(host, acc, sizeof host, cudaMemcpyDeviceToHost));
  prog_print_floats("acc", host, NG);
  printf("hash: %016llx\n", (unsigned long long)hash);
  printf("mode %s: %d steps of 6 launches\n", mode, STEPS);
  prog_print_launches();
  return 0;
}
