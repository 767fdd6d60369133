/* attrs.cu — a repeated sequence of launches that carry launch attributes, an `extra` buffer and
 * a large by-value parameter.
 *
 * Every iteration makes the same six launches on one stream, then copies the result back
 * synchronously (which ends the sequence) and prints its checksum:
 *   1. at_step through cudaLaunchKernelExC with a cluster dimension, a preferred cluster
 *      dimension, a cluster scheduling policy, a priority, a memory sync domain and domain map,
 *      an access policy window, programmatic stream serialization, NVLink-centric scheduling
 *      (CUDA 13 headers) and an IGNORE entry;
 *   2. at_mul through cuLaunchKernelEx (from cudaGetDriverEntryPointByVersion, on the CUfunction
 *      of cudaGetFuncBySymbol) as a cooperative launch with a priority, then again through
 *      cudaLaunchCooperativeKernel;
 *   3. at_add through cuLaunchKernel with its arguments in an `extra` parameter buffer
 *      (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END);
 *   4. at_big with <<<>>> and a 24,804-byte struct by value (CUDA 12.1 large parameters), whose
 *      one small field changes every iteration while its table stays;
 *   5. at_step again through cudaLaunchKernelExC without attributes.
 * Every kernel folds its scalar arguments into the buffer (a non-commutative map), so each
 * launch's arguments show in the checksum. In iteration DIVERGE the last launch has a cluster
 * dimension too: it is another launch than the learned sequence's, so a library holding the
 * first five must perform them one by one, each with its own attributes. From iteration CHANGE on, the first launch's cluster
 * dimension and priority change: the kernel folds the cluster dimension it runs with into the
 * buffer (on a GPU from %cluster_nctaid… registers, sm_90 and later; on the simulator its twin
 * asks simctl_launch_attr, which also gives the priority and the sync domain, folded likewise). A
 * library that replayed the graph built with the old attributes would print other checksums.
 * On a GPU older than sm_90 the cluster launch fails: the program is meant for the simulator and
 * for Hopper-class parts. Output: one checksum per iteration, then the launch counts.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 1024, BLOCK = 64, GRID = N / BLOCK, ITERS = 40, DIVERGE = 12, CHANGE = 22, TABLE = 6200 };

struct at_big_t {
  unsigned table[TABLE];
  unsigned step;
};
static_assert(sizeof(struct at_big_t) > 24 * 1024 && sizeof(struct at_big_t) <= 32764,
              "a large by-value parameter (CUDA 12.1 and later)");

__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, unsigned salt,
                                                 unsigned seen, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] ^ (salt + seen)) * 2654435761u + (unsigned)i;
}
__host__ __device__ static inline void mul_body(unsigned long i, unsigned *x, unsigned m, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * (m | 1u) + 0x9e3779b9u;
}
__host__ __device__ static inline void add_body(unsigned long i, unsigned *x, unsigned a, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] + a) ^ (x[i] >> 13);
}
__host__ __device__ static inline void big_body(unsigned long i, const struct at_big_t *p,
                                                unsigned *x, int n) {
  if (i < (unsigned long)n) x[i] = x[i] * 31u + p->table[(i * 7u + p->step) % TABLE] + p->step;
}

/* What the first launch's attributes look like to the kernel: its cluster size (x * 16 + y). */
__device__ static inline unsigned cluster_seen(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned cx, cy;
  asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(cx));
  asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(cy));
  /* nctaid counts clusters in the grid; the cluster's size in blocks is the grid's over it. */
  return (gridDim.x / cx) * 16u + gridDim.y / cy;
#else
  return 0;
#endif
}

extern "C" __global__ void at_step(unsigned *x, unsigned salt, int n) {
  step_body(PROG_TID(), x, salt, cluster_seen(), n);
}
extern "C" __global__ void at_mul(unsigned *x, unsigned m, int n) { mul_body(PROG_TID(), x, m, n); }
extern "C" __global__ void at_add(unsigned *x, int n, unsigned a) { add_body(PROG_TID(), x, a, n); }
extern "C" __global__ void at_big(const __grid_constant__ struct at_big_t p, unsigned *x, int n) {
  big_body(PROG_TID(), &p, x, n);
}

/* ---- CPU twins: the simulator tells them the attributes of the launch they run for ---- */

typedef int (*launch_attr_fn)(int id, CUlaunchAttributeValue *out);

static launch_attr_fn launch_attr(void) {
  static launch_attr_fn fn;
  if (!fn) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) fn = (launch_attr_fn)dlsym(h, "simctl_launch_attr");
    if (!fn) {
      fprintf(stderr, "attrs: the simulator's simctl_launch_attr is missing\n");
      exit(2);
    }
  }
  return fn;
}

SIM_KERNEL(at_step) {
  CUlaunchAttributeValue v;
  unsigned seen = 1u * 16u + 1u; /* no cluster dimension: every block is its own cluster */
  if (launch_attr()(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v) == 1)
    seen = v.clusterDim.x * 16u + v.clusterDim.y;
  /* Simulator only: what a GPU kernel cannot read (priority, sync domain) is folded as well. */
  if (launch_attr()(CU_LAUNCH_ATTRIBUTE_PRIORITY, &v) == 1) seen += (unsigned)(-v.priority) << 8;
  if (launch_attr()(CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, &v) == 1)
    seen += ((unsigned)v.memSyncDomain + 1u) << 12;
  SIM_FOR_EACH_THREAD(i) step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), seen, SIM_ARG(2, int));
}
SIM_KERNEL(at_mul) {
  CUlaunchAttributeValue v;
  /* A cooperative launch: the simulator says so, or the result is wrong on purpose. */
  unsigned m = SIM_ARG(1, unsigned);
  if (launch_attr()(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) != 1 || !v.cooperative) m ^= 0x55u;
  SIM_FOR_EACH_THREAD(i) mul_body(i, SIM_ARG(0, unsigned *), m, SIM_ARG(2, int));
}
SIM_KERNEL(at_add) {
  SIM_FOR_EACH_THREAD(i) add_body(i, SIM_ARG(0, unsigned *), SIM_ARG(2, unsigned), SIM_ARG(1, int));
}
SIM_KERNEL(at_big) {
  SIM_FOR_EACH_THREAD(i)
  big_body(i, &SIM_ARG(0, struct at_big_t), SIM_ARG(1, unsigned *), SIM_ARG(2, int));
}

/* ---- the program ---- */

static PFN_cuLaunchKernelEx_v11060 p_cuLaunchKernelEx;
static PFN_cuLaunchKernel_v4000 p_cuLaunchKernel;

static void get(const char *name, void **fn, int version) {
  cudaDriverEntryPointQueryResult q;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q));
  CHECK_INT(q, ==, cudaDriverEntryPointSuccess);
}

int main(void) {
  cudaStream_t s;
  unsigned *x;
  static unsigned host[N];
  static struct at_big_t big;
  int n = N;
  CHECK_CUDA(cudaStreamCreate(&s)); /* blocking: the synchronous copy waits for it */
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(x, 0, N * sizeof(unsigned)));
  get("cuLaunchKernelEx", (void **)&p_cuLaunchKernelEx, 11060);
  get("cuLaunchKernel", (void **)&p_cuLaunchKernel, 4000);
  cudaFunction_t f_mul, f_add;
  CHECK_CUDA(cudaGetFuncBySymbol(&f_mul, (const void *)at_mul));
  CHECK_CUDA(cudaGetFuncBySymbol(&f_add, (const void *)at_add));
  for (int t = 0; t < TABLE; t++) big.table[t] = (unsigned)t * 0x01000193u ^ 0x811c9dc5u;

  for (int it = 0; it < ITERS; it++) {
    int changed = it >= CHANGE;
    unsigned salt = (unsigned)it * 7919u;

    /* 1. cudaLaunchKernelExC with attributes. */
    cudaLaunchAttribute at[10];
    memset(at, 0, sizeof at);
    int na = 0;
    at[na].id = cudaLaunchAttributeClusterDimension;
    at[na].val.clusterDim.x = changed ? 4 : 2, at[na].val.clusterDim.y = 1;
    at[na++].val.clusterDim.z = 1;
    at[na].id = cudaLaunchAttributePreferredClusterDimension;
    at[na].val.preferredClusterDim.x = 8, at[na].val.preferredClusterDim.y = 1;
    at[na++].val.preferredClusterDim.z = 1;
    at[na].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    at[na++].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
    at[na].id = cudaLaunchAttributePriority;
    at[na++].val.priority = changed ? -3 : -1;
    at[na].id = cudaLaunchAttributeMemSyncDomain;
    at[na++].val.memSyncDomain = cudaLaunchMemSyncDomainRemote;
    at[na].id = cudaLaunchAttributeMemSyncDomainMap;
    at[na].val.memSyncDomainMap.default_ = 0, at[na++].val.memSyncDomainMap.remote = 1;
    at[na].id = cudaLaunchAttributeAccessPolicyWindow;
    at[na].val.accessPolicyWindow.base_ptr = x;
    at[na].val.accessPolicyWindow.num_bytes = N * sizeof(unsigned);
    at[na].val.accessPolicyWindow.hitRatio = 0.5f;
    at[na].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    at[na++].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[na++].val.programmaticStreamSerializationAllowed = 1;
    at[na++].id = cudaLaunchAttributeIgnore;
#if CUDART_VERSION >= 13000
    at[na].id = cudaLaunchAttributeNvlinkUtilCentricScheduling;
    at[na++].val.nvlinkUtilCentricScheduling = 1;
#endif
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = dim3(GRID);
    cfg.blockDim = dim3(BLOCK);
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = (unsigned)na;
    {
      void *args[] = {&x, &salt, &n};
      CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)at_step, args));
      PROG_RT();
    }

    /* 2. cuLaunchKernelEx, cooperative, with a priority. */
    {
      CUlaunchAttribute ca[2];
      memset(ca, 0, sizeof ca);
      ca[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      ca[0].value.cooperative = 1;
      ca[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
      ca[1].value.priority = -2;
      CUlaunchConfig c;
      memset(&c, 0, sizeof c);
      c.gridDimX = GRID, c.gridDimY = 1, c.gridDimZ = 1;
      c.blockDimX = BLOCK, c.blockDimY = 1, c.blockDimZ = 1;
      c.hStream = (CUstream)s;
      c.attrs = ca;
      c.numAttrs = 2;
      unsigned m = 3u + 2u * (unsigned)it;
      void *args[] = {&x, &m, &n};
      CHECK_CU(p_cuLaunchKernelEx(&c, (CUfunction)f_mul, args, NULL));
      PROG_DRV();
    }

    /* 2b. The same through cudaLaunchCooperativeKernel (a cooperative entry point). */
    {
      unsigned m = 5u + 4u * (unsigned)it;
      void *args[] = {&x, &m, &n};
      CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)at_mul, dim3(GRID), dim3(BLOCK), args, 0, s));
      PROG_RT();
    }

    /* 3. cuLaunchKernel with an `extra` buffer, packed as the kernel's parameters are laid out. */
    {
      struct {
        unsigned *x;
        int n;
        unsigned a;
      } buf = {x, n, 0x1234u + (unsigned)it};
      size_t size = sizeof buf;
      void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                       CU_LAUNCH_PARAM_END};
      CHECK_CU(p_cuLaunchKernel((CUfunction)f_add, GRID, 1, 1, BLOCK, 1, 1, 0, (CUstream)s, NULL,
                                extra));
      PROG_DRV();
    }

    /* 4. A large by-value parameter; only its small field changes. */
    big.step = (unsigned)it * 3u + 1u;
    PROG_LAUNCH(at_big, GRID, BLOCK, 0, s, big, x, n);

    /* 5. cudaLaunchKernelExC without attributes, except in iteration DIVERGE. */
    {
      unsigned salt2 = salt ^ 0xabcdu;
      void *args[] = {&x, &salt2, &n};
      cfg.attrs = NULL;
      cfg.numAttrs = 0;
      if (it == DIVERGE) {
        cfg.attrs = at;
        cfg.numAttrs = 1; /* the cluster dimension only */
      }
      CHECK_CUDA(cudaLaunchKernelExC(&cfg, (const void *)at_step, args));
      PROG_RT();
    }

    CHECK_CUDA(cudaMemcpy(host, x, sizeof host, cudaMemcpyDeviceToHost));
    printf("iter %2d: %016llx\n", it, (unsigned long long)prog_hash(host, sizeof host));
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaStreamDestroy(s));
  printf("launches: runtime=%lu driver=%lu cudnn=0\n", prog_runtime_launches_,
         prog_driver_launches_);
  return 0;
}
