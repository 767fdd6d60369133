/* dt.h — the kernels, CPU twins and helpers every program of the differential test generator
 * (tests/difftest/gen.py) includes.
 *
 * Every kernel is 1-D: thread i of the grid handles element i, and the twin iterates exactly the
 * threads the launch has (SIM_FOR_EACH_THREAD), so a launch that covers fewer elements than a
 * buffer holds computes exactly those, on the simulator as on a GPU. Values stay finite and
 * bounded (|x| <= 4 after every kernel), so checksums over the bits are meaningful.
 *
 * The PyTorch-named elementwise kernels at the end are declared as PyTorch instantiates them
 * (the names and layouts the library's fusion patterns look for; the same declarations as
 * tests/progs/k-fuse.cu), and their twins honour the launch geometry as the real kernels do:
 * WORK = 4 * blockDim.x elements per block.
 */
#ifndef AG_DIFFTEST_DT_H
#define AG_DIFFTEST_DT_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fused-twins.h"
#include "prog.h"
#include "sim_kernel.h"

#define DT_UNUSED __attribute__((unused))

/* ---- kernel bodies, shared by the kernels and their twins ---- */

__host__ __device__ static inline float dt_clampf(float v) { return v > 4.0f ? 4.0f : v < -4.0f ? -4.0f : v; }

__host__ __device__ static inline float dt_val(unsigned seed, unsigned long i) {
  unsigned h = (unsigned)(i * 2654435761u) ^ (seed * 40503u + 0x9e3779b9u);
  h ^= h >> 15;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  return ((float)(h % 4001u) - 2000.0f) / 1024.0f;
}

#define DT_BIG_N 1000 /* floats in the by-value struct: 4 KiB of parameters */
struct DtBig {
  float *y;
  const float *x;
  int n;
  int k;
  float c[DT_BIG_N];
};

extern "C" __global__ void dt_fill(float *y, int n, unsigned seed) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)n) y[i] = dt_val(seed, i);
}
extern "C" __global__ void dt_axpy(float *y, const float *x, float a, int n) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)n) y[i] = dt_clampf(y[i] + a * x[i]);
}
extern "C" __global__ void dt_scale(float *y, float a, int n) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)n) y[i] = dt_clampf(y[i] * a + 0.25f);
}
extern "C" __global__ void dt_mix(float *y, const float *a, const float *b, int n, int k) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)n) y[i] = dt_clampf(a[i] * 0.5f - b[(i + (unsigned)k) % (unsigned)n]);
}
extern "C" __global__ void dt_big(DtBig p) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)p.n) p.y[i] = dt_clampf(p.x[i] * 0.75f + p.c[(i + (unsigned)p.k) % DT_BIG_N]);
}
/* Uses dynamic shared memory, so its launches depend on the function's shared-memory limit. */
extern "C" __global__ void dt_shm(float *y, int n) {
  extern __shared__ float sh[];
  unsigned long i = PROG_TID();
  sh[threadIdx.x] = i < (unsigned long)n ? y[i] : 0.0f;
  __syncthreads();
  if (i < (unsigned long)n) y[i] = dt_clampf(sh[threadIdx.x] * -0.5f + 1.0f);
}
/* Writes v to host-mapped memory after everything before it in its stream. */
extern "C" __global__ void dt_flag(int *flag, int v) {
  if (PROG_TID() == 0) {
    __threadfence_system();
    *(volatile int *)flag = v;
  }
}

SIM_KERNEL(dt_fill) {
  float *y = SIM_ARG(0, float *);
  int n = SIM_ARG(1, int);
  unsigned seed = SIM_ARG(2, unsigned);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = dt_val(seed, i);
}
SIM_KERNEL(dt_axpy) {
  float *y = SIM_ARG(0, float *);
  const float *x = SIM_ARG(1, const float *);
  float a = SIM_ARG(2, float);
  int n = SIM_ARG(3, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = dt_clampf(y[i] + a * x[i]);
}
SIM_KERNEL(dt_scale) {
  float *y = SIM_ARG(0, float *);
  float a = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = dt_clampf(y[i] * a + 0.25f);
}
SIM_KERNEL(dt_mix) {
  float *y = SIM_ARG(0, float *);
  const float *a = SIM_ARG(1, const float *), *b = SIM_ARG(2, const float *);
  int n = SIM_ARG(3, int), k = SIM_ARG(4, int);
  SIM_FOR_EACH_THREAD(i)
  if (i < (unsigned long)n) y[i] = dt_clampf(a[i] * 0.5f - b[(i + (unsigned)k) % (unsigned)n]);
}
SIM_KERNEL(dt_big) {
  const DtBig *p = (const DtBig *)sim_args[0];
  SIM_FOR_EACH_THREAD(i)
  if (i < (unsigned long)p->n) p->y[i] = dt_clampf(p->x[i] * 0.75f + p->c[(i + (unsigned)p->k) % DT_BIG_N]);
}
SIM_KERNEL(dt_shm) {
  float *y = SIM_ARG(0, float *);
  int n = SIM_ARG(1, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = dt_clampf(y[i] * -0.5f + 1.0f);
}
SIM_KERNEL(dt_flag) {
  (void)sim_grid, (void)sim_block;
  __atomic_store_n(SIM_ARG(0, int *), SIM_ARG(1, int), __ATOMIC_RELEASE);
}

/* Writes through p, which the program makes null: an illegal address, a sticky fault of the
 * context (every later call returns cudaErrorIllegalAddress until a device reset). The twin
 * cannot fault; it reports the fault through the simulated driver's control, looked up in the
 * process (the driver is loaded by the runtime, perhaps without global symbols). */
extern "C" __global__ void dt_fault(float *p) {
  if (PROG_TID() == 0) *(volatile float *)p = 1.0f;
}
SIM_KERNEL(dt_fault) {
  (void)sim_grid, (void)sim_block, (void)sim_args;
  void (*fault)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "simctl_kernel_fault");
  void *h = fault ? NULL : dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h) {
    fault = (void (*)(void))dlsym(h, "simctl_kernel_fault");
    dlclose(h);
  }
  if (fault) fault();
}

/* A __device__ array copied to and from in stream order (cudaMemcpyTo/FromSymbolAsync). On the
 * simulator a symbol is its host shadow, which the twin reads. */
#define DT_SYM_N 256
__device__ float dt_sym[DT_SYM_N];
extern "C" __global__ void dt_symk(float *y, int n) {
  unsigned long i = PROG_TID();
  if (i < (unsigned long)n) y[i] = dt_clampf(y[i] + dt_sym[i % DT_SYM_N] * 0.5f);
}
SIM_KERNEL(dt_symk) {
  float *y = SIM_ARG(0, float *);
  int n = SIM_ARG(1, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = dt_clampf(y[i] + dt_sym[i % DT_SYM_N] * 0.5f);
}

/* Twins of the kernels in tests/kernels/dt-mod.cu and dt-mod2.cu (loaded with cuModuleLoadData).
 * dtm_tick has no parameters: it counts its runs in host memory the program reads after a
 * synchronisation (on a GPU it would bump a __device__ counter). */
static unsigned long dtm_ticks;
SIM_KERNEL(dtm_tick) {
  (void)sim_args;
  dtm_ticks += SIM_THREADS();
}
SIM_KERNEL(dtm_axpy) {
  float *y = SIM_ARG(0, float *);
  const float *x = SIM_ARG(1, const float *);
  float a = SIM_ARG(2, float);
  int n = SIM_ARG(3, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = dt_clampf(y[i] - a * x[i]);
}
SIM_KERNEL(dtm2_mix) {
  int n = SIM_ARG(0, int);
  float a = SIM_ARG(1, float);
  float *y = SIM_ARG(2, float *);
  const float *x = SIM_ARG(3, const float *);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = dt_clampf(x[i] * a - y[i] * 0.5f);
}

/* Twins of the plugins' kernels (tests/difftest/plugin.cu), kept here so that dlclose unloads
 * the plugins. */
SIM_KERNEL(dtp_a) {
  float *y = SIM_ARG(0, float *);
  int n = SIM_ARG(1, int);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = y[i] * 0.5f + 1.0f;
}
SIM_KERNEL(dtp_b) {
  int n = SIM_ARG(0, int);
  float *y = SIM_ARG(1, float *);
  SIM_FOR_EACH_THREAD(i) if (i < (unsigned long)n) y[i] = y[i] * -0.25f + 0.5f;
}

/* ---- host helpers ---- */

static unsigned long dt_failed_launches DT_UNUSED;

/* Prints `label: <hash>` over n floats of host memory. */
static inline void dt_print(const char *label, const float *v, size_t n) {
  printf("%s: %016llx\n", label, (unsigned long long)prog_hash(v, n * sizeof(float)));
}

/* Host function: hashes n floats of host memory into *out (run by the stream, in order). */
struct DtHostFn {
  const float *src;
  int n;
  unsigned long long *out;
};
static void CUDART_CB dt_hostfn(void *p) {
  DtHostFn *h = (DtHostFn *)p;
  *h->out = prog_hash(h->src, (size_t)h->n * sizeof(float));
}

/* The host waits, with no CUDA call, until a kernel has written v to mapped memory. Gives up
 * after DT_FLAG_SECONDS (default 10) so that a hang shows as an exit status, not a time-out. */
static inline void dt_wait_flag(volatile int *flag, int v) {
  const char *e = getenv("DT_FLAG_SECONDS");
  double limit = e ? atof(e) : 10.0;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != v) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 > limit) {
      printf("flag %d: not written after %.0f s\n", v, limit);
      fflush(stdout);
      _exit(3);
    }
  }
}

/* Polls a stream or an event until it is complete; a query that says "not ready" must not
 * leave an error behind (cudaGetLastError clears it either way, as a careful program does). */
static inline void dt_poll_stream(cudaStream_t s) {
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) sched_yield();
  CHECK_CUDA(e);
  (void)cudaGetLastError();
}
static inline void dt_poll_event(cudaEvent_t ev) {
  cudaError_t e;
  while ((e = cudaEventQuery(ev)) == cudaErrorNotReady) sched_yield();
  CHECK_CUDA(e);
  (void)cudaGetLastError();
}
/* Queries that leave the last error as CUDA leaves it: a "not ready" answer is not an error,
 * so nothing should remain for cudaGetLastError (the simulator once left cudaErrorNotReady
 * there). */
static inline void dt_peek_stream_keep(cudaStream_t s) {
  cudaError_t e = cudaStreamQuery(s);
  if (e != cudaErrorNotReady) CHECK_CUDA(e);
}
static inline void dt_peek_event_keep(cudaEvent_t ev) {
  cudaError_t e = cudaEventQuery(ev);
  if (e != cudaErrorNotReady) CHECK_CUDA(e);
}
/* A query whose answer the program ignores (it may be either). */
static inline void dt_peek_stream(cudaStream_t s) {
  cudaError_t e = cudaStreamQuery(s);
  if (e != cudaErrorNotReady) CHECK_CUDA(e);
  (void)cudaGetLastError();
}
static inline void dt_peek_event(cudaEvent_t ev) {
  cudaError_t e = cudaEventQuery(ev);
  if (e != cudaErrorNotReady) CHECK_CUDA(e);
  (void)cudaGetLastError();
}

/* Turns between threads: thread code runs its chunk when the turn counter reaches its number. */
static pthread_mutex_t dt_turn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dt_turn_cv = PTHREAD_COND_INITIALIZER;
static int dt_turn_now;
static inline void dt_turn_wait(int t) {
  pthread_mutex_lock(&dt_turn_mu);
  while (dt_turn_now != t) pthread_cond_wait(&dt_turn_cv, &dt_turn_mu);
  pthread_mutex_unlock(&dt_turn_mu);
}
static inline void dt_turn_pass(int t) {
  pthread_mutex_lock(&dt_turn_mu);
  dt_turn_now = t + 1;
  pthread_cond_broadcast(&dt_turn_cv);
  pthread_mutex_unlock(&dt_turn_mu);
}

/* ---- the driver API, through the runtime's entry points ---- */

static PFN_cuModuleLoadData_v2000 dt_cuModuleLoadData;
static PFN_cuModuleGetFunction_v2000 dt_cuModuleGetFunction;
static PFN_cuModuleUnload_v2000 dt_cuModuleUnload;
static PFN_cuLaunchKernel_v4000 dt_cuLaunchKernel;
static PFN_cuCtxSetLimit_v3010 dt_cuCtxSetLimit;
static PFN_cuFuncSetCacheConfig_v3000 dt_cuFuncSetCacheConfig;
static PFN_cuCtxSetCacheConfig_v3020 dt_cuCtxSetCacheConfig;

static void dt_get(const char *name, void **fn, int version) {
  cudaDriverEntryPointQueryResult q;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q));
  CHECK_INT(q, ==, cudaDriverEntryPointSuccess);
}
static void dt_driver_init(void) {
  dt_get("cuModuleLoadData", (void **)&dt_cuModuleLoadData, 2000);
  dt_get("cuModuleGetFunction", (void **)&dt_cuModuleGetFunction, 2000);
  dt_get("cuModuleUnload", (void **)&dt_cuModuleUnload, 2000);
  dt_get("cuLaunchKernel", (void **)&dt_cuLaunchKernel, 4000);
  dt_get("cuCtxSetLimit", (void **)&dt_cuCtxSetLimit, 3010);
  dt_get("cuFuncSetCacheConfig", (void **)&dt_cuFuncSetCacheConfig, 3000);
  dt_get("cuCtxSetCacheConfig", (void **)&dt_cuCtxSetCacheConfig, 3020);
}

/* The folder of the test kernels: $DT_KERNELS, else $BUILD/tests/kernels, else build/…. */
static const char *dt_kernel_dir(void) {
  static char dir[4096];
  const char *k = getenv("DT_KERNELS"), *b = getenv("BUILD");
  if (k) return k;
  snprintf(dir, sizeof dir, "%s/tests/kernels", b ? b : "build");
  return dir;
}

/* Reads a cubin into memory: heap (kept), or an anonymous mapping the caller unmaps. */
static void *dt_read_image(const char *name, int mapped, size_t *size) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dt_kernel_dir(), name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  CHECK(n > 0);
  rewind(f);
  size_t cap = ((size_t)n + 4095) & ~(size_t)4095;
  void *buf = mapped ? mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                     : aligned_alloc(8, cap);
  CHECK(buf != NULL && buf != MAP_FAILED);
  CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *size = cap;
  return buf;
}

/* Loads a cubin from a heap buffer (freed after the load), from an anonymous mapping unmapped
 * after the load (how = 1), or from the data of a shared object dlclosed after the load
 * (how = 2: build/tests/difftest/libdt-image.so holds dt-mod.cubin). All legal: the driver
 * copied the image. */
static CUmodule dt_load_module(const char *name, int how) {
  CUmodule m;
  if (how == 2) {
    char path[4200];
    const char *b = getenv("BUILD");
    snprintf(path, sizeof path, "%s/tests/difftest/libdt-image.so", b ? b : "build");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
      exit(2);
    }
    const void *img = dlsym(h, "dt_image");
    CHECK(img != NULL);
    CHECK_CU(dt_cuModuleLoadData(&m, img));
    CHECK(dlclose(h) == 0);
    return m;
  }
  size_t size;
  void *img = dt_read_image(name, how, &size);
  CHECK_CU(dt_cuModuleLoadData(&m, img));
  if (how) CHECK(munmap(img, size) == 0);
  else free(img);
  return m;
}

/* ---- plugins: a shared library dlopened, run and dlclosed (tests/difftest/plugin.cu) ---- */

typedef int (*dt_plugin_run_t)(float *y, int n, int it, cudaStream_t s);
static void *dt_plugin_open(const char *name, dt_plugin_run_t *run) {
  char path[4200];
  const char *b = getenv("BUILD");
  snprintf(path, sizeof path, "%s/tests/difftest/%s", b ? b : "build", name);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    exit(2);
  }
  *run = (dt_plugin_run_t)dlsym(h, "dt_plugin_run");
  CHECK(*run != NULL);
  return h;
}

/* ---- PyTorch's elementwise kernels (names and layouts as PyTorch 2.5 instantiates them) ---- */

namespace c10 {
struct Scalar {
  double v;
  template <typename T> T to() const { return (T)v; }
};
} // namespace c10
namespace at {
struct TensorIteratorBase {
  int dtype;
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
  __device__ scalar_t operator()(scalar_t self, scalar_t other) const { return self + alpha_ * other; }
};
namespace binary_internal {
template <typename T> struct MulFunctor {
  __device__ T operator()(T a, T b) const { return a * b; }
};
} // namespace binary_internal
template <typename arg1_t, typename arg2_t, typename return_t, typename func_t>
struct BinaryFunctor {
  __device__ return_t operator()(arg1_t a, arg2_t b) const { return f(a, b); }
  BinaryFunctor(func_t f_) : f(f_) {}

 private:
  func_t f;
};
template <typename func_t>
__device__ void dt_apply(int n, const func_t &f, const at::detail::Array<char *, 3> &d) {
  for (int k = 0; k < 4; k++) {
    int i = blockIdx.x * 4 * blockDim.x + k * blockDim.x + threadIdx.x;
    if (i < n) ((float *)d.data[0])[i] = f(((float *)d.data[1])[i], ((float *)d.data[2])[i]);
  }
}
template <typename func_t>
__device__ void dt_apply(int n, const func_t &f, const at::detail::Array<char *, 2> &d) {
  for (int k = 0; k < 4; k++) {
    int i = blockIdx.x * 4 * blockDim.x + k * blockDim.x + threadIdx.x;
    if (i < n) ((float *)d.data[0])[i] = f(((float *)d.data[1])[i]);
  }
}
template <int vec_size, typename func_t, typename array_t>
__global__ void vectorized_elementwise_kernel(int N_, func_t f, array_t data) {
  dt_apply(N_, f, data);
}
/* grid blocks of `threads` threads, 4 elements per thread: PyTorch's launch covers n; a
 * program may also launch fewer blocks, block by block. */
template <typename func_t, typename array_t>
void dt_gpu_kernel(int n, const func_t &f, array_t data, int grid, int threads, cudaStream_t s) {
  vectorized_elementwise_kernel<4, func_t, array_t><<<grid, threads, 0, s>>>(n, f, data);
  CHECK_CUDA(cudaGetLastError());
  PROG_RT();
}
namespace clamp_impl {
void launch_clamp_scalar(TensorIteratorBase &iter, c10::Scalar lim0, c10::Scalar lim1,
                         at::native::detail::ClampLimits minmax, int n,
                         at::detail::Array<char *, 2> data, int grid, int threads, cudaStream_t s) {
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
          dt_gpu_kernel(n, [=] __host__ __device__(scalar_t v) -> scalar_t {
            if (isnan(static_cast<opmath_t>(v))) {
              return v;
            } else if (minmax == at::native::detail::ClampLimits::Min) {
              return ::max(static_cast<opmath_t>(v), lim0_val);
            } else if (minmax == at::native::detail::ClampLimits::Max) {
              return ::min(static_cast<opmath_t>(v), lim0_val);
            } else {
              return ::min(::max(static_cast<opmath_t>(v), lim0_val), lim1_val);
            }
          }, data, grid, threads, s);
        }();
        break;
    }
  }();
}
} // namespace clamp_impl
} // namespace native
} // namespace at

typedef at::detail::Array<char *, 3> DtArr3;
typedef at::detail::Array<char *, 2> DtArr2;
static inline void dt_torch_add(int n, float *o, const float *a, const float *b, int grid, int threads, cudaStream_t s) {
  DtArr3 d = {{(char *)o, (char *)a, (char *)b}};
  at::native::dt_gpu_kernel(n, at::native::CUDAFunctor_add<float>(1.0f), d, grid, threads, s);
}
static inline void dt_torch_mul(int n, float *o, const float *a, const float *b, int grid, int threads, cudaStream_t s) {
  DtArr3 d = {{(char *)o, (char *)a, (char *)b}};
  using namespace at::native;
  dt_gpu_kernel(n, BinaryFunctor<float, float, float, binary_internal::MulFunctor<float>>(binary_internal::MulFunctor<float>()), d, grid, threads, s);
}
static inline void dt_torch_relu(int n, float *o, const float *a, int grid, int threads, cudaStream_t s) {
  at::TensorIteratorBase it = {6};
  DtArr2 d = {{(char *)o, (char *)a}};
  at::native::clamp_impl::launch_clamp_scalar(it, c10::Scalar{0.0}, c10::Scalar{0.0},
                                              at::native::detail::ClampLimits::Min, n, d, grid, threads, s);
}

/* Twins: exactly the elements the launch covers, as the device code. */
static void dt_torch_twin(dim3 g, dim3 b, void **sim_args, int op) {
  int n = SIM_ARG(0, int);
  const char *const *d = (const char *const *)sim_args[2];
  float *o = (float *)d[0];
  /* relu's Array<char *, 2> has no third pointer: reading one would run past the parameters. */
  const float *x = (const float *)d[1], *y = op == 2 ? NULL : (const float *)d[2];
  float alpha = op == 0 ? SIM_ARG(1, float) : 0.0f;
  for (unsigned blk = 0; blk < g.x; blk++)
    for (unsigned k = 0; k < 4; k++)
      for (unsigned t = 0; t < b.x; t++) {
        long i = (long)blk * 4 * b.x + (long)k * b.x + t;
        if (i >= n) continue;
        if (op == 0) o[i] = x[i] + alpha * y[i];
        else if (op == 1) o[i] = x[i] * y[i];
        else {
          float v = x[i];
          o[i] = isnan(v) ? v : (v > 0.0f || (v == 0.0f && !signbit(v))) ? v : 0.0f;
        }
      }
}
#define DT_K_ADD _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_
#define DT_K_MUL _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_
#define DT_K_RELU _ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_10clamp_impl19launch_clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEiNS_6detail5ArrayIPcLi2EEEiiP11CUstream_stENKUlvE_clEvENKUlvE5_clEvEUlfE_SC_EEviT0_T1_
#define DT_SIM_KERNEL_X(name) SIM_KERNEL(name)
DT_SIM_KERNEL_X(DT_K_ADD) { dt_torch_twin(sim_grid, sim_block, sim_args, 0); }
DT_SIM_KERNEL_X(DT_K_MUL) { dt_torch_twin(sim_grid, sim_block, sim_args, 1); }
DT_SIM_KERNEL_X(DT_K_RELU) { dt_torch_twin(sim_grid, sim_block, sim_args, 2); }

#endif
