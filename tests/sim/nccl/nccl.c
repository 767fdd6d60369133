/* nccl.c — the simulated libnccl.so.2: communicators of ranks on one host, and their collectives
 * and point-to-point operations as kernels on the simulated device (tests/sim/README.md, "NCCL").
 *
 * Setup. ncclGetUniqueId names a POSIX shared-memory segment; every rank of
 * ncclCommInitRank(Config|Scalable) opens it (creating it if first), maps it, and waits until all
 * nranks have joined (rank 0 then unlinks the name, so nothing stays behind). The segment holds a
 * barrier, one staging slot per rank for the collectives and one mailbox per ordered pair of
 * ranks for sends and receives.
 *
 * Operations. Each operation is a launch, on the caller's stream through the driver's
 * cuLaunchKernelEx, of a kernel with NCCL's name (ncclDevKernel_AllReduce_Sum_f32_RING_LL, …)
 * from this library's own embedded device code, its argument block (ncclsim.h) saying everything
 * it needs: so an interposer sees NCCL's launch pattern (driver launches of ncclDevKernel_*
 * kernels, with the memory synchronisation domain attribute NCCL sets). The kernel's CPU twin
 * (sim_<name>, below), run by the simulated device in stream order, does the work: a
 * collective copies its input into its slot in chunks, meets its peers at the barrier, computes
 * its output from all slots in rank order (so every rank gets the same bits) and meets them
 * again; the point-to-point kernel of a group moves data through the mailboxes until each of its
 * sends and receives is done. A twin waits for peers that have not launched their part yet:
 * up to SIM_NCCL_TIMEOUT_S seconds (default 30), then it reports which operation of which rank
 * waited, marks the communicator failed (ncclCommGetAsyncError answers ncclRemoteError, and the
 * peers' twins stop waiting too) and returns.
 *
 * Groups (ncclGroupStart/End) defer the operations to the end of the outermost group: the
 * collectives are launched in order, then each communicator's sends and receives on one stream
 * as one ncclDevKernel_SendRecv kernel (up to NCCLSIM_MAX_P2P of them each).
 *
 * SIM_NCCL_BUFFER_BYTES sets the size of each slot and mailbox (default 4 MiB; larger
 * operations go in chunks). SIM_NCCL_LOG=1 prints, when a communicator ends, how many kernels it
 * ran, how long the first waited for its peers (the ranks' start-up differs) and the longest
 * wait of the others.
 *
 * Every other function of the real library's API exists (unsupported.c, generated from
 * unsupported.list) and answers ncclInvalidUsage.
 */
#define _GNU_SOURCE
#include "common/halfconv.h"
#include "nccl/ncclsim.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector_types.h>

#define SHM_MAGIC 0x4e43434cu /* "NCCL" */
#define ID_PREFIX "/ncclsim-"
#define HDR_BYTES 4096
#define MAX_RANKS 64

/* ---- the driver, reached as the real library reaches it: dlopen and the getter ---- */

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
static struct {
  CUresult (*init)(unsigned);
  CUresult (*ctx_get)(CUcontext *);
  CUresult (*ctx_set)(CUcontext);
  CUresult (*ctx_device)(CUdevice *);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*primary_retain)(CUcontext *, CUdevice);
  CUresult (*module_load)(CUmodule *, const void *);
  CUresult (*module_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static int drv_ready;

extern const unsigned char ncclsim_fatbin[];

static void drv_load(void) {
  static const struct {
    const char *name;
    int version;
    void **slot;
  } want[] = {
      {"cuInit", 2000, (void **)&drv.init},
      {"cuCtxGetCurrent", 4000, (void **)&drv.ctx_get},
      {"cuCtxSetCurrent", 4000, (void **)&drv.ctx_set},
      {"cuCtxGetDevice", 2000, (void **)&drv.ctx_device},
      {"cuDeviceGet", 2000, (void **)&drv.device_get},
      {"cuDevicePrimaryCtxRetain", 7000, (void **)&drv.primary_retain},
      {"cuModuleLoadData", 2000, (void **)&drv.module_load},
      {"cuModuleGetFunction", 2000, (void **)&drv.module_function},
      {"cuLaunchKernelEx", 12000, (void **)&drv.launch_ex},
  };
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); /* kept until the process ends */
  getproc_fn getproc = lib ? (getproc_fn)dlsym(lib, "cuGetProcAddress_v2") : NULL;
  if (!getproc) return;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    CUdriverProcAddressQueryResult found;
    *want[i].slot = NULL;
    if (getproc(want[i].name, want[i].slot, want[i].version, CU_GET_PROC_ADDRESS_DEFAULT,
                &found) != CUDA_SUCCESS || !*want[i].slot)
      return;
  }
  drv_ready = drv.init(0) == CUDA_SUCCESS;
}

/* ---- errors ---- */

static __thread char last_error[256];

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return r;
}

/* The answer of every generated stub (unsupported.c). */
int ncclsim_unsupported(int err, const char *name);
int ncclsim_unsupported(int err, const char *name) {
  if (getenv("SIM_LOG_UNSUPPORTED")) fprintf(stderr, "sim: %s is not simulated\n", name);
  return (int)fail((ncclResult_t)err, "%s is not simulated", name);
}

static long env_long(const char *name, long dflt, long lo, long hi) {
  const char *e = getenv(name);
  if (!e || !*e) return dflt;
  char *end;
  long v = strtol(e, &end, 10);
  if (*end || v < lo || v > hi) {
    fprintf(stderr, "sim: %s=%s is not a number from %ld to %ld; %ld\n", name, e, lo, hi, dflt);
    return dflt;
  }
  return v;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- the shared segment ---- */

typedef struct {
  uint32_t magic;
  int32_t nranks;
  uint64_t buf_bytes;
  atomic_int joined;
  atomic_int aborted;          /* a rank timed out or aborted: nobody waits any more */
  atomic_uint bar_arrived, bar_gen;
  /* What each rank's current collective is, checked at its first barrier. */
  struct {
    uint64_t seq, count;
    uint32_t coll, op, dtype;
    int32_t root;
  } what[MAX_RANKS];
} shm_hdr_t;

typedef struct {
  _Alignas(64) atomic_uint_fast64_t state; /* 0: empty; n + 1: holds n bytes */
} mbox_t;

struct ncclComm {
  uint32_t magic;
  int rank, nranks, dev;
  CUcontext ctx;
  shm_hdr_t *hdr;
  size_t map_bytes;
  char *slots;                 /* nranks slots of buf_bytes */
  mbox_t *mstate;              /* nranks × nranks: [from * nranks + to] */
  char *mboxes;                /* the mailboxes' data, buf_bytes each */
  atomic_int refs;             /* the handle, plus each launched kernel not yet run */
  atomic_int async_err;
  long timeout_s;              /* SIM_NCCL_TIMEOUT_S, read at the communicator's creation */
  uint64_t seq;                /* collectives run (device side) */
  atomic_uint_fast64_t kernels, first_wait_ns, max_wait_ns; /* max_wait_ns: after the first */
  int destroyed;
};
#define COMM_MAGIC 0xC033u

/* The settings, read by the thread creating a communicator (twins read the communicator's). */
static long timeout_s(void) { return env_long("SIM_NCCL_TIMEOUT_S", 30, 1, 86400); }
static size_t buf_bytes(void) {
  return (size_t)(env_long("SIM_NCCL_BUFFER_BYTES", 4 << 20, 4096, 1L << 30) & ~7L);
}

static void comm_unref(struct ncclComm *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  if (getenv("SIM_NCCL_LOG"))
    fprintf(stderr, "sim nccl: rank %d of %d (device %d): %llu kernels, the first waited %.1f ms "
            "for its peers, the others at most %.1f ms\n", c->rank, c->nranks, c->dev,
            (unsigned long long)atomic_load(&c->kernels),
            (double)atomic_load(&c->first_wait_ns) / 1e6, (double)atomic_load(&c->max_wait_ns) / 1e6);
  munmap(c->hdr, c->map_bytes);
  c->magic = 0;
  free(c);
}

/* Waits until cond(c, arg) holds, the communicator is aborted, or the timeout passes (then the
 * communicator is marked failed and `what` reported). Returns 0 when cond holds. */
static int wait_for(struct ncclComm *c, int (*cond)(struct ncclComm *, void *), void *arg,
                    const char *what, uint64_t *waited) {
  uint64_t t0 = now_ns(), limit = (uint64_t)c->timeout_s * 1000000000u;
  for (unsigned spin = 0;; spin++) {
    if (cond(c, arg)) break;
    if (atomic_load(&c->hdr->aborted)) {
      atomic_store(&c->async_err, ncclRemoteError);
      return -1;
    }
    uint64_t t = now_ns();
    if (t - t0 > limit) {
      fprintf(stderr, "sim nccl: rank %d of %d waited %ld s for its peers in %s: a peer never "
              "launched its part (the communicator fails)\n", c->rank, c->nranks, c->timeout_s, what);
      atomic_store(&c->async_err, ncclRemoteError);
      atomic_store(&c->hdr->aborted, 1);
      return -1;
    }
    if (spin > 64) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
  if (waited) *waited += now_ns() - t0;
  return 0;
}

static int gen_moved(struct ncclComm *c, void *arg) {
  return atomic_load(&c->hdr->bar_gen) != *(unsigned *)arg;
}

static int barrier(struct ncclComm *c, const char *what, uint64_t *waited) {
  shm_hdr_t *h = c->hdr;
  unsigned gen = atomic_load(&h->bar_gen);
  if (atomic_fetch_add(&h->bar_arrived, 1) == (unsigned)c->nranks - 1) {
    atomic_store(&h->bar_arrived, 0);
    atomic_fetch_add(&h->bar_gen, 1);
    return 0;
  }
  return wait_for(c, gen_moved, &gen, what, waited);
}

/* ---- element types and reductions ---- */

static size_t type_size(uint32_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

/* A NaN keeps its sign and payload, made quiet (the shared conversion makes every NaN 0x7fc0). */
static uint16_t float_to_bf16(float f) {
  return isnan(f) ? (uint16_t)((simh_f2u(f) >> 16) | 0x40) : simh_float_to_bf16(f);
}

/* out[i] = the reduction of in[0][i], in[1][i], … in rank order, for n elements of type t.
 * Avg: floating types multiply each input by 1/nranks first (NCCL's PreMulSum), integers divide
 * the sum (SumPostDiv). */
static void reduce(void *out, const char *const *in, int nin, size_t n, uint32_t t, uint32_t op,
                   int nranks) {
#define RED_LOOP(T, LOAD, STORE, ISFLOAT)                                                    \
  for (size_t i = 0; i < n; i++) {                                                           \
    T acc = 0;                                                                               \
    for (int j = 0; j < nin; j++) {                                                          \
      T v = LOAD(((const T##_st *)(const void *)in[j])[i]);                                   \
      if (op == ncclAvg && ISFLOAT) v = (T)(v * (T)(1.0 / nranks));                          \
      if (j == 0) acc = v;                                                                   \
      else if (op == ncclSum || op == ncclAvg) acc = (T)(acc + v);                           \
      else if (op == ncclProd) acc = (T)(acc * v);                                           \
      else if (op == ncclMax) acc = v > acc ? v : acc;                                       \
      else acc = v < acc ? v : acc;                                                          \
      if (ISFLOAT) acc = LOAD(STORE(acc)); /* each partial rounded to the type */           \
    }                                                                                        \
    if (op == ncclAvg && !ISFLOAT) acc = (T)(acc / (T)nranks);                               \
    ((T##_st *)out)[i] = STORE(acc);                                                         \
  }
#define ID(x) (x)
  typedef int8_t i8; typedef int8_t i8_st;
  typedef uint8_t u8; typedef uint8_t u8_st;
  typedef int32_t i32; typedef int32_t i32_st;
  typedef uint32_t u32; typedef uint32_t u32_st;
  typedef int64_t i64; typedef int64_t i64_st;
  typedef uint64_t u64; typedef uint64_t u64_st;
  typedef float f32; typedef float f32_st;
  typedef double f64; typedef double f64_st;
  typedef float f16; typedef uint16_t f16_st;
  typedef float bf16; typedef uint16_t bf16_st;
  switch (t) {
  case ncclInt8: RED_LOOP(i8, ID, ID, 0) break;
  case ncclUint8: RED_LOOP(u8, ID, ID, 0) break;
  case ncclInt32: RED_LOOP(i32, ID, ID, 0) break;
  case ncclUint32: RED_LOOP(u32, ID, ID, 0) break;
  case ncclInt64: RED_LOOP(i64, ID, ID, 0) break;
  case ncclUint64: RED_LOOP(u64, ID, ID, 0) break;
  case ncclFloat32: RED_LOOP(f32, ID, ID, 1) break;
  case ncclFloat64: RED_LOOP(f64, ID, ID, 1) break;
  case ncclFloat16: RED_LOOP(f16, simh_half_to_float, simh_float_to_half, 1) break;
  case ncclBfloat16: RED_LOOP(bf16, simh_bf16_to_float, float_to_bf16, 1) break;
  default: break;
  }
#undef RED_LOOP
#undef ID
}

/* ---- the kernels' twins ---- */

static const char *coll_name(uint32_t coll) {
  static const char *const names[] = {"AllReduce", "Broadcast", "Reduce", "AllGather",
                                      "ReduceScatter", "SendRecv"};
  return coll < sizeof names / sizeof names[0] ? names[coll] : "?";
}

static void run_collective(struct ncclComm *c, const ncclsim_args_t *a, uint64_t *waited) {
  int n = c->nranks, r = c->rank;
  size_t es = type_size(a->dtype), cap = c->hdr->buf_bytes;
  char *mine = c->slots + (size_t)r * cap;
  const char *send = (const char *)(uintptr_t)a->send;
  char *recv = (char *)(uintptr_t)a->recv;
  const char *in[MAX_RANKS];
  char what[160];
  snprintf(what, sizeof what, "%s #%llu (%llu elements of type %u)", coll_name(a->coll),
           (unsigned long long)c->seq, (unsigned long long)a->count, a->dtype);
  /* What this rank runs, for the check at the first barrier. */
  c->hdr->what[r].seq = c->seq;
  c->hdr->what[r].count = a->count;
  c->hdr->what[r].coll = a->coll;
  c->hdr->what[r].op = a->op;
  c->hdr->what[r].dtype = a->dtype;
  c->hdr->what[r].root = a->root;
  /* Elements of one rank's part per chunk (ReduceScatter stages all n parts at once). */
  size_t per = cap / es / (a->coll == NCCLSIM_REDUCESCATTER ? (size_t)n : 1);
  size_t total = a->count;
  int first = 1;
  for (size_t off = 0; first || off < total; off += per) {
    size_t len = total - off < per ? total - off : per;
    if (total == 0) len = 0;
    switch (a->coll) {
    case NCCLSIM_ALLREDUCE:
    case NCCLSIM_REDUCE:
    case NCCLSIM_ALLGATHER:
      memcpy(mine, send + off * es, len * es);
      break;
    case NCCLSIM_BROADCAST:
      if (r == a->root) memcpy(mine, send + off * es, len * es);
      break;
    case NCCLSIM_REDUCESCATTER:
      for (int k = 0; k < n; k++)
        memcpy(mine + (size_t)k * len * es, send + ((size_t)k * total + off) * es, len * es);
      break;
    default: break;
    }
    if (barrier(c, what, first ? waited : NULL)) return;
    if (first) {
      for (int j = 0; j < n; j++) {
        if (c->hdr->what[j].seq != c->seq || c->hdr->what[j].coll != a->coll ||
            c->hdr->what[j].count != a->count || c->hdr->what[j].dtype != a->dtype ||
            c->hdr->what[j].op != a->op || c->hdr->what[j].root != a->root) {
          fprintf(stderr, "sim nccl: rank %d runs %s while rank %d runs %s #%llu with other "
                  "arguments: the ranks' calls do not match (the communicator fails)\n", r,
                  what, j, coll_name(c->hdr->what[j].coll), (unsigned long long)c->hdr->what[j].seq);
          atomic_store(&c->async_err, ncclInvalidUsage);
          atomic_store(&c->hdr->aborted, 1);
          return;
        }
      }
      first = 0;
    }
    for (int j = 0; j < n; j++) in[j] = c->slots + (size_t)j * cap;
    switch (a->coll) {
    case NCCLSIM_ALLREDUCE:
      reduce(recv + off * es, in, n, len, a->dtype, a->op, n);
      break;
    case NCCLSIM_REDUCE:
      if (r == a->root) reduce(recv + off * es, in, n, len, a->dtype, a->op, n);
      break;
    case NCCLSIM_BROADCAST:
      memcpy(recv + off * es, in[a->root], len * es);
      break;
    case NCCLSIM_ALLGATHER:
      for (int j = 0; j < n; j++) memcpy(recv + ((size_t)j * total + off) * es, in[j], len * es);
      break;
    case NCCLSIM_REDUCESCATTER: {
      const char *part[MAX_RANKS];
      for (int j = 0; j < n; j++) part[j] = in[j] + (size_t)r * len * es;
      reduce(recv + off * es, part, n, len, a->dtype, a->op, n);
      break;
    }
    default: break;
    }
    if (barrier(c, what, NULL)) return;
    if (total == 0) break;
  }
}

/* A group's sends and receives, in list order per peer and direction, progressing together. */
static void run_p2p(struct ncclComm *c, const ncclsim_args_t *a, uint64_t *waited) {
  int n = c->nranks, r = c->rank;
  size_t cap = c->hdr->buf_bytes;
  uint64_t done[NCCLSIM_MAX_P2P] = {0};
  int left = (int)a->np2p, progressed_ever = 0;
  uint64_t t0 = now_ns(), limit = (uint64_t)c->timeout_s * 1000000000u, idle_since = t0;
  for (unsigned spin = 0; left > 0; spin++) {
    int progressed = 0;
    for (uint32_t i = 0; i < a->np2p; i++) {
      const ncclsim_p2p_t *p = &a->p2p[i];
      if (done[i] == p->bytes + 1) continue;
      /* Only the first unfinished operation of each peer and direction moves. */
      int blocked = 0;
      for (uint32_t k = 0; k < i; k++)
        if (a->p2p[k].peer == p->peer && a->p2p[k].recv == p->recv && done[k] != a->p2p[k].bytes + 1)
          blocked = 1;
      if (blocked) continue;
      int from = p->recv ? p->peer : r, to = p->recv ? r : p->peer;
      mbox_t *m = &c->mstate[from * n + to];
      char *data = c->mboxes + (size_t)(from * n + to) * cap;
      char *buf = (char *)(uintptr_t)p->buf;
      uint64_t st = atomic_load(&m->state);
      if (!p->recv && st == 0) {
        size_t len = p->bytes - done[i] < cap ? p->bytes - done[i] : cap;
        memcpy(data, buf + done[i], len);
        atomic_store(&m->state, len + 1);
        done[i] += len;
        if (done[i] == p->bytes) done[i] = p->bytes + 1, left--;
        progressed = 1;
      } else if (p->recv && st != 0) {
        size_t len = st - 1;
        if (len > p->bytes - done[i]) len = p->bytes - done[i];
        memcpy(buf + done[i], data, len);
        atomic_store(&m->state, 0);
        done[i] += len;
        if (done[i] == p->bytes) done[i] = p->bytes + 1, left--;
        progressed = 1;
      }
      /* A message of 0 bytes still passes through the mailbox, as one empty chunk. */
    }
    uint64_t t = now_ns();
    if (progressed) {
      if (!progressed_ever && waited) *waited += t - t0;
      progressed_ever = 1;
      idle_since = t;
      spin = 0;
      continue;
    }
    if (atomic_load(&c->hdr->aborted)) {
      atomic_store(&c->async_err, ncclRemoteError);
      return;
    }
    if (t - idle_since > limit) {
      fprintf(stderr, "sim nccl: rank %d of %d waited %ld s for its peers in SendRecv (%d of %u "
              "sends and receives left): a peer never launched its part (the communicator fails)\n",
              r, n, c->timeout_s, left, a->np2p);
      atomic_store(&c->async_err, ncclRemoteError);
      atomic_store(&c->hdr->aborted, 1);
      return;
    }
    if (spin > 64) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
}

static void twin(void **args) {
  const ncclsim_args_t *a = args[0];
  struct ncclComm *c = (struct ncclComm *)(uintptr_t)a->comm;
  uint64_t waited = 0;
  if (!atomic_load(&c->hdr->aborted)) {
    if (a->coll == NCCLSIM_SENDRECV) {
      run_p2p(c, a, &waited);
    } else {
      run_collective(c, a, &waited);
      c->seq++;
    }
  }
  if (atomic_fetch_add(&c->kernels, 1) == 0) {
    atomic_store(&c->first_wait_ns, waited);
  } else {
    uint64_t m = atomic_load(&c->max_wait_ns);
    while (waited > m && !atomic_compare_exchange_weak(&c->max_wait_ns, &m, waited)) {
    }
  }
  comm_unref(c);
}

#define NCCLSIM_TWIN(coll, op, ty)                                                          \
  void sim_ncclDevKernel_##coll##_##op##_##ty##_RING_LL(dim3 g, dim3 b, void **args);       \
  void sim_ncclDevKernel_##coll##_##op##_##ty##_RING_LL(dim3 g, dim3 b, void **args) {      \
    (void)g, (void)b;                                                                       \
    twin(args);                                                                             \
  }
#define NCCLSIM_TWIN_OTHER(name)                                                            \
  void sim_##name(dim3 g, dim3 b, void **args);                                             \
  void sim_##name(dim3 g, dim3 b, void **args) {                                            \
    (void)g, (void)b;                                                                       \
    twin(args);                                                                             \
  }
NCCLSIM_REDUCING_KERNELS(NCCLSIM_TWIN)
NCCLSIM_OTHER_KERNELS(NCCLSIM_TWIN_OTHER)

/* ---- the kernels' handles, per context ---- */

#define KNAME_RED(coll, op, ty) "ncclDevKernel_" #coll "_" #op "_" #ty "_RING_LL",
#define KNAME_OTHER(name) #name,
static const char *const kernel_names[] = {NCCLSIM_REDUCING_KERNELS(KNAME_RED)
                                           NCCLSIM_OTHER_KERNELS(KNAME_OTHER)};
#define NKERNELS (sizeof kernel_names / sizeof kernel_names[0])

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  CUcontext ctx;
  CUmodule mod;
  CUfunction f[NKERNELS];
} mods[16];

static CUfunction kernel(CUcontext ctx, size_t idx) {
  CUfunction f = NULL;
  pthread_mutex_lock(&mod_lock);
  for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++) {
    if (mods[i].ctx && mods[i].ctx != ctx) continue;
    if (!mods[i].ctx) {
      if (drv.module_load(&mods[i].mod, ncclsim_fatbin) != CUDA_SUCCESS) break;
      mods[i].ctx = ctx;
    }
    if (!mods[i].f[idx] &&
        drv.module_function(&mods[i].f[idx], mods[i].mod, kernel_names[idx]) != CUDA_SUCCESS)
      mods[i].f[idx] = NULL;
    f = mods[i].f[idx];
    break;
  }
  pthread_mutex_unlock(&mod_lock);
  return f;
}

/* The index of a reduction kernel in kernel_names: collective (0 AllReduce, 1 ReduceScatter,
 * 2 Reduce) × operation family × type. */
static size_t red_index(int coll3, uint32_t op, uint32_t dtype) {
  static const int family[] = {[ncclSum] = 0, [ncclProd] = 1, [ncclMax] = 2, [ncclMin] = 2};
  static const int type_pos[] = {[ncclInt8] = 0, [ncclUint8] = 1, [ncclInt32] = 2,
                                 [ncclUint32] = 3, [ncclInt64] = 4, [ncclUint64] = 5,
                                 [ncclFloat16] = 6, [ncclFloat32] = 7, [ncclFloat64] = 8,
                                 [ncclBfloat16] = 9};
  if (op > ncclAvg || dtype > ncclBfloat16) return 0; /* refused by the callers' checks */
  int fam = op == ncclAvg ? (dtype == ncclFloat16 || dtype == ncclFloat32 ||
                             dtype == ncclFloat64 || dtype == ncclBfloat16 ? 3 : 4)
                          : family[op];
  return ((size_t)coll3 * 5 + (size_t)fam) * 10 + (size_t)type_pos[dtype];
}

/* ---- launching ---- */

static ncclResult_t launch(struct ncclComm *c, size_t idx, const ncclsim_args_t *a, CUstream s) {
  CUcontext cur = NULL;
  if (drv.ctx_get(&cur) != CUDA_SUCCESS || !cur)
    return fail(ncclInvalidUsage, "no current context: set the communicator's device first");
  CUfunction f = kernel(cur, idx);
  if (!f) return fail(ncclUnhandledCudaError, "cannot load the kernel %s", kernel_names[idx]);
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
  attr.value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 64;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  void *params[] = {(void *)a};
  atomic_fetch_add(&c->refs, 1);
  CUresult r = drv.launch_ex(&cfg, f, params, NULL);
  if (r != CUDA_SUCCESS) {
    comm_unref(c);
    return fail(ncclUnhandledCudaError, "cuLaunchKernelEx of %s failed with CUDA error %d",
                kernel_names[idx], (int)r);
  }
  return ncclSuccess;
}

/* ---- groups ---- */

typedef struct pending {
  struct ncclComm *comm;
  CUstream stream;
  size_t idx;             /* kernel; SIZE_MAX for a send or receive */
  ncclsim_args_t a;       /* a collective's arguments */
  ncclsim_p2p_t p;        /* a send's or receive's */
  struct pending *next;
} pending_t;

static __thread int group_depth;
static __thread pending_t *group_head, **group_tail; /* group_tail NULL: &group_head */
static __thread ncclResult_t group_err;

static ncclResult_t group_flush(void) {
  ncclResult_t r = group_err;
  group_err = ncclSuccess;
  /* Collectives in order. */
  for (pending_t *p = group_head; p; p = p->next)
    if (p->idx != SIZE_MAX && r == ncclSuccess) r = launch(p->comm, p->idx, &p->a, p->stream);
  /* Then each (communicator, stream)'s sends and receives as point-to-point kernels. */
  for (pending_t *p = group_head; p; p = p->next) {
    if (p->idx != SIZE_MAX || !p->comm) continue;
    ncclsim_args_t *a = calloc(1, sizeof *a);
    if (!a) {
      r = fail(ncclSystemError, "out of memory");
      break;
    }
    struct ncclComm *c = p->comm;
    CUstream s = p->stream;
    a->comm = (uint64_t)(uintptr_t)c;
    a->coll = NCCLSIM_SENDRECV;
    for (pending_t *q = p; q; q = q->next) {
      if (q->idx != SIZE_MAX || q->comm != c || q->stream != s) continue;
      a->p2p[a->np2p++] = q->p;
      q->comm = NULL; /* taken */
      if (a->np2p == NCCLSIM_MAX_P2P) {
        if (r == ncclSuccess) r = launch(c, NKERNELS - 1, a, s);
        a->np2p = 0;
      }
    }
    if (a->np2p && r == ncclSuccess) r = launch(c, NKERNELS - 1, a, s);
    free(a);
  }
  while (group_head) {
    pending_t *p = group_head;
    group_head = p->next;
    free(p);
  }
  group_tail = NULL;
  return r;
}

static ncclResult_t enqueue(pending_t *p) {
  if (!group_tail) group_tail = &group_head;
  *group_tail = p;
  group_tail = &p->next;
  return group_depth == 0 ? group_flush() : ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (group_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;
  return group_flush();
}

/* ---- checks ---- */

static ncclResult_t check_comm(struct ncclComm *c) {
  if (!c || c->magic != COMM_MAGIC || c->destroyed)
    return fail(ncclInvalidArgument, "invalid communicator");
  return ncclSuccess;
}

static ncclResult_t check_red(struct ncclComm *c, uint32_t dtype, uint32_t op) {
  ncclResult_t r = check_comm(c);
  if (r) return r;
  if (dtype >= ncclNumTypes) return fail(ncclInvalidArgument, "invalid data type %u", dtype);
  if (dtype == ncclFloat8e4m3 || dtype == ncclFloat8e5m2)
    return fail(ncclInvalidUsage, "8-bit floating types are not simulated");
  if (op >= ncclNumOps) return fail(ncclInvalidArgument, "invalid reduction %u", op);
  return ncclSuccess;
}

static ncclResult_t check_type(struct ncclComm *c, uint32_t dtype) {
  return check_red(c, dtype, ncclSum);
}

static pending_t *new_coll(struct ncclComm *c, uint32_t coll, const void *send, void *recv,
                           size_t count, uint32_t dtype, uint32_t op, int root, CUstream s) {
  pending_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->comm = c;
  p->stream = s;
  p->a.comm = (uint64_t)(uintptr_t)c;
  p->a.coll = coll;
  p->a.send = (uint64_t)(uintptr_t)send;
  p->a.recv = (uint64_t)(uintptr_t)recv;
  p->a.count = count;
  p->a.dtype = dtype;
  p->a.op = op;
  p->a.root = root;
  return p;
}

static ncclResult_t coll(struct ncclComm *c, uint32_t kind, size_t idx, const void *send,
                         void *recv, size_t count, uint32_t dtype, uint32_t op, int root,
                         CUstream s) {
  if (root < 0 || root >= c->nranks) return fail(ncclInvalidArgument, "invalid root %d", root);
  if (count && (!send || !recv)) return fail(ncclInvalidArgument, "NULL buffer");
  pending_t *p = new_coll(c, kind, send, recv, count, dtype, op, root, s);
  if (!p) return fail(ncclSystemError, "out of memory");
  p->idx = idx;
  return enqueue(p);
}

/* ---- the API ---- */

ncclResult_t ncclGetVersion(int *version) {
  if (!version) return fail(ncclInvalidArgument, "NULL version");
  *version = NCCLSIM_VERSION_CODE;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  case ncclTimeout: return "NCCL operation timed out";
  default: return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return last_error;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static atomic_uint counter;
  if (!id) return fail(ncclInvalidArgument, "NULL id");
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, ID_PREFIX "%ld-%u-%llx", (long)getpid(),
           atomic_fetch_add(&counter, 1), (unsigned long long)now_ns());
  return ncclSuccess;
}

static int all_joined(struct ncclComm *c, void *arg) {
  (void)arg;
  return atomic_load(&c->hdr->joined) >= c->nranks;
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
                              const void *config) {
  if (!out) return fail(ncclInvalidArgument, "NULL communicator");
  *out = NULL;
  if (nranks < 1 || nranks > MAX_RANKS)
    return fail(ncclInvalidArgument, "nranks %d (the simulator takes 1 to %d)", nranks, MAX_RANKS);
  if (rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "rank %d of %d", rank, nranks);
  if (strncmp(id->internal, ID_PREFIX, strlen(ID_PREFIX)) ||
      !memchr(id->internal, 0, sizeof id->internal))
    return fail(ncclInvalidArgument, "not a unique id of ncclGetUniqueId");
  if (config) {
    const ncclsim_config_head_t *h = config;
    if (h->magic != NCCLSIM_API_MAGIC)
      return fail(ncclInvalidArgument, "the configuration was not made by NCCL_CONFIG_INITIALIZER");
  }
  pthread_once(&drv_once, drv_load);
  if (!drv_ready) return fail(ncclUnhandledCudaError, "no CUDA driver");
  CUcontext ctx = NULL;
  CUdevice dev = 0;
  if (drv.ctx_get(&ctx) != CUDA_SUCCESS) return fail(ncclUnhandledCudaError, "cuCtxGetCurrent");
  if (!ctx && (drv.device_get(&dev, 0) || drv.primary_retain(&ctx, dev) || drv.ctx_set(ctx)))
    return fail(ncclUnhandledCudaError, "no context for device 0");
  if (drv.ctx_device(&dev) != CUDA_SUCCESS) return fail(ncclUnhandledCudaError, "cuCtxGetDevice");

  size_t cap = buf_bytes(), n = (size_t)nranks;
  size_t bytes = HDR_BYTES + n * cap + n * n * sizeof(mbox_t) + n * n * cap;
  int fd = shm_open(id->internal, O_CREAT | O_RDWR, 0600);
  if (fd < 0) return fail(ncclSystemError, "shm_open %s: %s", id->internal, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) || ((size_t)st.st_size < bytes && ftruncate(fd, (off_t)bytes))) {
    close(fd);
    return fail(ncclSystemError, "sizing %s: %s", id->internal, strerror(errno));
  }
  void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return fail(ncclSystemError, "mmap: %s", strerror(errno));
  struct ncclComm *c = calloc(1, sizeof *c);
  if (!c) {
    munmap(map, bytes);
    return fail(ncclSystemError, "out of memory");
  }
  c->magic = COMM_MAGIC;
  c->rank = rank;
  c->nranks = nranks;
  c->dev = (int)dev;
  c->ctx = ctx;
  c->timeout_s = timeout_s();
  c->hdr = map;
  c->map_bytes = bytes;
  c->mstate = (mbox_t *)((char *)map + HDR_BYTES + n * cap);
  c->slots = (char *)map + HDR_BYTES;
  c->mboxes = (char *)c->mstate + n * n * sizeof(mbox_t);
  atomic_init(&c->refs, 1);
  /* The segment's fields are zero when new; the first rank to come fills the constants, the
   * same values every rank would write. */
  c->hdr->magic = SHM_MAGIC;
  c->hdr->nranks = nranks;
  c->hdr->buf_bytes = cap;
  atomic_fetch_add(&c->hdr->joined, 1);
  char what[64];
  snprintf(what, sizeof what, "ncclCommInitRank (rank %d of %d)", rank, nranks);
  if (wait_for(c, all_joined, NULL, what, NULL)) {
    if (rank == 0) shm_unlink(id->internal);
    long waited_s = c->timeout_s;
    comm_unref(c);
    return fail(ncclSystemError, "not every rank joined within %ld s", waited_s);
  }
  if (rank == 0) shm_unlink(id->internal);
  *out = c;
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  return init_rank(comm, nranks, &id, rank, NULL);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    void *config) {
  return init_rank(comm, nranks, &id, rank, config);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
                                      ncclUniqueId *ids, void *config) {
  if (nId < 1 || !ids) return fail(ncclInvalidArgument, "no unique id");
  return init_rank(comm, nranks, &ids[0], rank, config);
}

/* The communicator goes once the kernels already launched with it have run. */
static ncclResult_t end_comm(ncclComm_t c, int abort_peers) {
  ncclResult_t r = check_comm(c);
  if (r) return r;
  if (abort_peers) atomic_store(&c->hdr->aborted, 1);
  c->destroyed = 1;
  comm_unref(c);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return comm ? end_comm(comm, 0) : ncclSuccess; }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return comm ? end_comm(comm, 1) : ncclSuccess; }

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return check_comm(comm); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err) {
  ncclResult_t r = check_comm(comm);
  if (r) return r;
  if (!err) return fail(ncclInvalidArgument, "NULL result");
  *err = (ncclResult_t)atomic_load(&comm->async_err);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  ncclResult_t r = check_comm(comm);
  if (r) return r;
  if (!count) return fail(ncclInvalidArgument, "NULL count");
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  ncclResult_t r = check_comm(comm);
  if (r) return r;
  if (!device) return fail(ncclInvalidArgument, "NULL device");
  *device = comm->dev;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  ncclResult_t r = check_comm(comm);
  if (r) return r;
  if (!rank) return fail(ncclInvalidArgument, "NULL rank");
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dtype,
                           ncclRedOp_t op, ncclComm_t comm, CUstream s) {
  ncclResult_t r = check_red(comm, dtype, op);
  if (r) return r;
  return coll(comm, NCCLSIM_ALLREDUCE, red_index(0, op, dtype), send, recv, count, dtype, op, 0, s);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount,
                               ncclDataType_t dtype, ncclRedOp_t op, ncclComm_t comm, CUstream s) {
  ncclResult_t r = check_red(comm, dtype, op);
  if (r) return r;
  return coll(comm, NCCLSIM_REDUCESCATTER, red_index(1, op, dtype), send, recv, recvcount, dtype,
              op, 0, s);
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t dtype,
                        ncclRedOp_t op, int root, ncclComm_t comm, CUstream s) {
  ncclResult_t r = check_red(comm, dtype, op);
  if (r) return r;
  /* Only the root's receive buffer is used. */
  if (count && comm->rank != root && !recv) recv = (void *)send;
  return coll(comm, NCCLSIM_REDUCE, red_index(2, op, dtype), send, recv, count, dtype, op, root, s);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dtype,
                           int root, ncclComm_t comm, CUstream s) {
  ncclResult_t r = check_type(comm, dtype);
  if (r) return r;
  /* Only the root's send buffer is read. */
  if (count && comm->rank != root && !send) send = recv;
  return coll(comm, NCCLSIM_BROADCAST, NKERNELS - 3, send, recv, count, dtype, ncclSum, root, s);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t dtype, int root, ncclComm_t comm,
                       CUstream s) {
  return ncclBroadcast(buff, buff, count, dtype, root, comm, s);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t dtype,
                           ncclComm_t comm, CUstream s) {
  ncclResult_t r = check_type(comm, dtype);
  if (r) return r;
  return coll(comm, NCCLSIM_ALLGATHER, NKERNELS - 2, send, recv, sendcount, dtype, ncclSum, 0, s);
}

static ncclResult_t p2p(const void *buf, size_t count, ncclDataType_t dtype, int peer,
                        ncclComm_t comm, CUstream s, int recv) {
  ncclResult_t r = check_type(comm, dtype);
  if (r) return r;
  if (peer < 0 || peer >= comm->nranks) return fail(ncclInvalidArgument, "invalid peer %d", peer);
  if (count && !buf) return fail(ncclInvalidArgument, "NULL buffer");
  pending_t *p = calloc(1, sizeof *p);
  if (!p) return fail(ncclSystemError, "out of memory");
  p->comm = comm;
  p->stream = s;
  p->idx = SIZE_MAX;
  p->p.buf = (uint64_t)(uintptr_t)buf;
  p->p.bytes = count * type_size(dtype);
  p->p.peer = peer;
  p->p.recv = recv;
  return enqueue(p);
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t dtype, int peer,
                      ncclComm_t comm, CUstream s) {
  return p2p(send, count, dtype, peer, comm, s, 0);
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                      CUstream s) {
  return p2p(recv, count, dtype, peer, comm, s, 1);
}

/* Registration only lets NCCL use a buffer in place: the simulated transfers always go through
 * the segment, so a registration is a handle that remembers the range. */
typedef struct {
  uint32_t magic;
  struct ncclComm *comm;
} reg_t;
#define REG_MAGIC 0x5e6u

ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  ncclResult_t r = check_comm(comm);
  if (r) return r;
  if (!handle || (!buff && size)) return fail(ncclInvalidArgument, "NULL buffer or handle");
  reg_t *g = malloc(sizeof *g);
  if (!g) return fail(ncclSystemError, "out of memory");
  g->magic = REG_MAGIC;
  g->comm = comm;
  *handle = g;
  return ncclSuccess;
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
  ncclResult_t r = check_comm(comm);
  if (r) return r;
  reg_t *g = handle;
  if (!g || g->magic != REG_MAGIC || g->comm != comm)
    return fail(ncclInvalidArgument, "not a registration of this communicator");
  g->magic = 0;
  free(g);
  return ncclSuccess;
}
