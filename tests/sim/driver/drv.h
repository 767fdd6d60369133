/* drv.h — internals shared by the files of the simulated CUDA driver (libcuda.so.1).
 *
 * SIM_DEVICES devices (default 1, at most DRV_MAX_DEVICES), each with its primary context, its
 * own legacy default stream and its own memory budget. All driver state is guarded by one mutex (drv_lock); the
 * device threads (device.c) run queued operations with the lock released, each op on one
 * thread, and broadcast drv_cond whenever an operation (or a graph's event record node)
 * completes. Internal functions return CUDA_SUCCESS
 * or the CUresult the calling API function must return; helpers named drv_* are never exported
 * (the version script exports cu* and simctl_* only).
 */
#ifndef SIM_DRV_H
#define SIM_DRV_H

#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <vector_types.h>

#include "common/simcommon.h"
#include "elf.h"

#define DRV_VERSION 13000
#define DRV_CC_MAJOR 9
#define DRV_CC_MINOR 0
#define DRV_TOTAL_MEM (80ull << 30)
#define DRV_MAX_SHMEM_DEFAULT (48 * 1024)
#define DRV_MAX_SHMEM_OPTIN (227 * 1024)
#define DRV_MAX_DEVICES 16

/* Fault injection at the top of every exported function: the natural error of that API. */
#define DRV_FAIL(api, err)                                                                  \
  do {                                                                                      \
    if (simc_should_fail(api)) return (err);                                                \
  } while (0)

/* Generates the legacy and the per-thread default stream flavour of one API function from one
 * implementation `impl(int ptds, args…)`. */
#define DRV_UNPAREN(...) __VA_ARGS__
#define DRV_BOTH(impl, legacy, perthread, params, args)                                     \
  CUresult CUDAAPI legacy params { return impl(0, DRV_UNPAREN args); }                     \
  CUresult CUDAAPI perthread params { return impl(1, DRV_UNPAREN args); }

/* The driver version the simulator reports and loads images for: DRV_VERSION, or an older one
 * that SIM_DRIVER_VERSION asks for (e.g. 12040: a CUDA 12.4 driver), which then refuses the PTX
 * and cubins such a driver cannot load (module.c) and the runtimes newer than it. */
int drv_version(void);

extern pthread_mutex_t drv_lock;
extern pthread_cond_t drv_cond;

/* ---- init.c: initialisation, device, context ---- */
struct drv_stream;
struct CUctx_st {
  uint32_t magic;
  int dev;                 /* the device ordinal whose primary context this is */
  struct drv_stream *legacy; /* its legacy default stream */
  unsigned peers;          /* bit d: peer access to device d's memory enabled */
  size_t used;             /* device memory allocated on the device (page-rounded) */
  unsigned flags;
  int retained;            /* primary context retain count; active while > 0 */
  CUresult sticky;         /* sticky device fault (simctl_kernel_fault), reported by later calls */
  CUresult async_err;      /* non-sticky error found on the device thread, reported once */
  size_t limits[16];
  unsigned gen;            /* bumped each time the context is destroyed (reset, last release) */
};
/* The primary contexts of devices 0 … drv_ndev - 1 (drv_ndev from SIM_DEVICES, set by cuInit). */
extern struct CUctx_st drv_ctxs[DRV_MAX_DEVICES];
extern int drv_ndev;
/* CUDA_SUCCESS when cuInit has run and a context is current (*out set), else the API error. */
CUresult drv_ctx(struct CUctx_st **out);
CUresult drv_check_init(void);
/* The context current on the calling thread (even released), or NULL. */
struct CUctx_st *drv_ctx_current(void);
/* Nonzero when c is one of the devices' primary contexts. */
int drv_valid_ctx(const struct CUctx_st *c);
/* The error an API that reports asynchronous errors returns now: the sticky fault, else a
 * pending non-sticky one (cleared), of the context current on the thread (device 0's when none
 * is). Takes the lock. */
CUresult drv_async_error(void);
/* The context whose work the calling device thread runs (device 0's on other threads). */
struct CUctx_st *drv_running_ctx(void);

/* ---- getproc.c ---- */
CUresult drv_get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                      CUdriverProcAddressQueryResult *status);

/* ---- device.c: device thread, streams, events ---- */
typedef struct drv_op drv_op_t;
typedef struct drv_stream drv_stream_t;

typedef struct drv_dep {
  drv_stream_t *s;
  uint64_t seq;            /* satisfied once s->done >= seq */
} drv_dep_t;

/* What an op is to the modelled clock (clock.c): ordering ops (event records and waits, frees in
 * stream order) take no time and are not counted as work. */
enum { DRV_OP_ORDER, DRV_OP_KERNEL, DRV_OP_MEMOP, DRV_OP_HOST, DRV_OP_GRAPH };

struct drv_op {
  drv_op_t *next;
  uint64_t seq;
  drv_dep_t *deps;
  int ndeps, cap_deps;
  int kind;                   /* DRV_OP_*, set by the caller before submission */
  uint64_t vready;            /* modelled time its explicit dependencies end (event waits) */
  void (*run)(drv_op_t *op);  /* on the device thread, lock released */
  void (*fini)(drv_op_t *op); /* frees the payload; may be NULL */
  void *arg;
  struct CUevent_st *event;   /* for event records: stamped when the op runs */
  /* An op that runs in parts (a graph launch, whose nodes may wait for events): `ready` (lock
   * held, NULL for ordinary ops) says whether a part can run now, and `run` sets `unfinished`
   * when parts remain; the op then stays at the head of its stream, which runs nothing else. */
  int (*ready)(drv_op_t *op);
  int unfinished;
};

/* DRV_STREAM_NODE: not a stream but the counter of an executable graph's event record node
 * (graph.c): each launch takes the next sequence number and completes it when the node runs,
 * so an event recorded by the node is complete once the node's dependencies are. */
enum { DRV_STREAM_USER, DRV_STREAM_LEGACY, DRV_STREAM_PTDS, DRV_STREAM_NODE };

struct drv_capture;
struct drv_stream {
  uint32_t magic;
  int kind;
  unsigned flags;
  int priority;
  unsigned long long id;
  uint64_t submitted, done;
  uint64_t vend;           /* modelled end of the latest op submitted (clock.c) */
  struct CUctx_st *ctx;    /* the context it was created in */
  drv_op_t *head, *tail;
  int running;             /* a device thread is running the head op */
  int destroyed;
  drv_stream_t *next_all;
  /* Capture state: the capture this stream belongs to and its current dependency set. */
  struct drv_capture *cap;
  CUgraphNode *cap_deps;
  size_t ncap_deps, cap_cap_deps;
};

struct CUevent_st {
  uint32_t magic;
  unsigned flags;
  struct CUctx_st *ctx;    /* the context it was created in */
  int recorded;            /* cuEventRecord was called at least once */
  drv_stream_t *s;         /* stream and op sequence of the latest record */
  uint64_t seq;
  uint64_t time_ns;        /* stamped on the device thread when the record ran */
  uint64_t vtime;          /* modelled time the latest record completes (clock.c) */
  struct drv_capture *cap; /* recorded in this capture (deps below), or NULL */
  CUgraphNode *cap_deps;
  size_t ncap_deps;
  int destroyed;
  struct CUevent_st *all_next; /* every event ever created: see cuEventCreate */
};

int drv_device_start(void);
/* Resolves a stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream)
 * for the legacy (ptds = 0) or per-thread (ptds = 1) flavour. */
CUresult drv_stream(CUstream h, int ptds, drv_stream_t **out);
drv_op_t *drv_op_new(void (*run)(drv_op_t *), void (*fini)(drv_op_t *), void *arg);
void drv_op_free(drv_op_t *op);
int drv_op_add_dep(drv_op_t *op, drv_stream_t *s, uint64_t seq);
/* Queues op on s with the implicit legacy-stream dependencies. Lock held. Checks capture
 * rules for the legacy stream (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). Frees op on error. */
CUresult drv_submit_locked(drv_stream_t *s, drv_op_t *op);
/* Waits (lock held) until s has completed everything up to seq, or every stream everything
 * submitted so far. Called alone, they are the simulator's own waits (a graph exec updated
 * while a launch of it may run, a module unloaded under queued launches): a GPU does not wait
 * there, so they leave the modelled clock alone. */
void drv_wait_stream_locked(drv_stream_t *s, uint64_t seq);
void drv_wait_all_locked(void);
/* The waits of calls that CUDA makes wait for the device (synchronisations, synchronous copies,
 * frees): the same waits, then the modelled host clock moves to the modelled end of the work
 * waited for (drv_clock_block_locked). Lock held. */
void drv_sync_stream_locked(drv_stream_t *s);
void drv_sync_all_locked(void);
/* The same for the streams of one context only (its synchronisation, its end). */
void drv_sync_ctx_locked(const struct CUctx_st *c);
uint64_t drv_now_ns(void);
/* Something other than the end of an op completed (a graph's event record node): wakes the
 * threads waiting for completions and the idle device threads (lock held). */
void drv_wake_locked(void);
CUresult drv_event(CUevent h, struct CUevent_st **out);

/* ---- clock.c: the modelled clock ---- */
/* Spends a modelled host cost: busy-waits ns on the caller, as the cost variables always did,
 * and advances the modelled host clock by ns. Takes the lock. */
void drv_cost(uint64_t ns);
/* Gives op its modelled start and end as it is queued on s (lock held, after every check that
 * may refuse it): start = max(host clock + SIM_LAUNCH_LATENCY_NS, s's latest end, op->vready);
 * its work is accounted, s->vend becomes its end, and a graph's event record nodes get the
 * modelled time of their record. */
void drv_clock_submit_locked(drv_stream_t *s, drv_op_t *op);
/* The host waited for work that ends at modelled time t: the host clock becomes max(host, t),
 * and when it moved, a step ends there (lock held). */
void drv_clock_block_locked(uint64_t t);
/* The program's controls: declared host work (the clock only, nothing spins), and the figures so
 * far (host clock, busy time, idle time before the device end; NULL pointers allowed; 0). */
void simctl_host_work(unsigned long long ns);
int simctl_clock(unsigned long long *host_ns, unsigned long long *busy_ns,
                 unsigned long long *idle_ns);

/* ---- memory.c ---- */
/* DRV_MEM_SYMBOL: a __device__/__constant__ variable's storage, which the simulated runtime
 * keeps in host memory and declares with simctl_symbol_track: device memory to copies and
 * pointer queries, never freed or unmapped by the driver. */
enum { DRV_MEM_DEVICE = 1, DRV_MEM_HOST, DRV_MEM_REGISTERED, DRV_MEM_MANAGED, DRV_MEM_SYMBOL };
/* Declares [p, p + n) a device symbol's storage (see DRV_MEM_SYMBOL); 0, or -1 when it
 * overlaps memory already tracked. Called by the simulated runtime, found with dlsym. */
int simctl_symbol_track(const void *p, size_t n);
/* Forgets the symbol storage starting at p (its object is being unloaded). */
void simctl_symbol_untrack(const void *p);
typedef struct drv_alloc {
  uintptr_t base;
  size_t size;
  int kind;
  unsigned flags;
  unsigned long long id;
  int dev;                 /* the device of the context it was made in */
} drv_alloc_t;
/* The allocation containing [p, p + n), or NULL (lock held). */
const drv_alloc_t *drv_mem_find(uintptr_t p, size_t n);

/* A 3-D copy, normalised: every pointer a host address, pitches in bytes. */
typedef struct drv_copy {
  char *dst;
  const char *src;
  size_t dpitch, dheight, spitch, sheight;
  size_t width, height, depth;
  void *staging;          /* owned snapshot of a pageable source, or NULL */
} drv_copy_t;
typedef struct drv_set {
  char *dst;
  size_t pitch, width, height;  /* width in elements */
  unsigned value, elem;
} drv_set_t;
void drv_copy_run(const drv_copy_t *c);
void drv_set_run(const drv_set_t *m);
/* Validates a CUDA_MEMCPY3D (also used for 2-D copies) into *out (lock held). */
CUresult drv_copy_from3d(const CUDA_MEMCPY3D *p, drv_copy_t *out);
CUresult drv_set_check(const drv_set_t *m);

/* ---- module.c ---- */
typedef void (*drv_twin_fn)(dim3 grid, dim3 block, void **args);
struct CUfunc_st {
  uint32_t magic;
  char *name;
  struct CUmod_st *mod;
  uint32_t nparams;
  ag_kparam_t *params;
  uint32_t param_bytes;
  int arch;
  drv_twin_fn twin;
  int twin_resolved;
  int max_dyn_shmem;
  int carveout;
  struct CUfunc_st *pool_next; /* in the pool of freed handles (see module.c) */
};
typedef struct CUfunc_st drv_func_t;
/* A primary context was destroyed (lock not held): its modules go, libraries stay. */
void drv_modules_ctx_destroyed(const struct CUctx_st *c);
CUresult drv_func(CUfunction f, drv_func_t **out);
/* PTX text images (ptx.c): nonzero when `image` is PTX text; walks its kernels as
 * ag__image_kernels walks a cubin's (0, the callback's value, or -AG_E…). */
int drv_is_ptx(const void *image);
int drv_ptx_kernels(const void *image, ag_kernel_cb cb, void *ctx);
drv_twin_fn drv_func_twin(drv_func_t *f);

/* The largest parameter block a kernel may take (CUDA 12.1 and later, Volta and later). */
#define DRV_MAX_PARAM_BYTES 32764

/* Launch attributes in force for one launch or kernel node (attrs.c). `set` has bit `id` for
 * every attribute given explicitly; the others have their default value (zero: no cluster, not
 * cooperative, priority 0, default domain and map, no window, default policy). The value of each
 * is kept normalised (only the bytes its id means), so that two sets compare with memcmp. */
#define DRV_KATTR_IDS 17
typedef struct drv_kattrs {
  unsigned set;
  CUlaunchAttributeValue v[DRV_KATTR_IDS];
} drv_kattrs_t;
/* Where an attribute is given: an ordinary launch (cuLaunchKernelEx) or a kernel node. */
enum { DRV_KATTR_LAUNCH, DRV_KATTR_NODE };
/* The shape of a launch or kernel node that the attributes are checked against. */
typedef struct drv_kshape {
  dim3 grid, block;
  size_t shmem;           /* dynamic shared memory per block */
} drv_kshape_t;
/* Validates one attribute for `where` against the launch's shape, and stores it in *ka (which
 * may already hold others: a cluster dimension and a preferred one are checked against each
 * other). Returns
 * CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE (an id not valid there, a value out of range),
 * CUDA_ERROR_INVALID_CLUSTER_SIZE, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE or
 * CUDA_ERROR_NOT_SUPPORTED (a graph feature the simulator lacks: device-updatable nodes). */
CUresult drv_kattr_set(drv_kattrs_t *ka, int where, CUlaunchAttributeID id,
                       const CUlaunchAttributeValue *v, drv_kshape_t sh);
/* No attribute given: every one at its default. */
extern const drv_kattrs_t drv_kattrs_none;
/* Rechecks every attribute of *ka against a new shape (a node's parameters changed). */
CUresult drv_kattr_recheck(const drv_kattrs_t *ka, drv_kshape_t sh);
/* The simulated SMs, and how many blocks of `threads` threads using `shmem` bytes of shared
 * memory each fit on one at once (the model is in attrs.c; 0 for a block of 0 or over 1024
 * threads). cuOccupancyMaxActiveBlocksPerMultiprocessor answers it, and a cooperative grid may
 * hold at most that many times DRV_SMS blocks. */
#define DRV_SMS 132
unsigned drv_blocks_per_sm(unsigned threads, size_t shmem);
/* CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE when a cooperative grid of this shape cannot be
 * co-resident, else CUDA_SUCCESS (also for a block or shared memory size the launch refuses
 * with CUDA_ERROR_INVALID_VALUE, which its own validation reports). */
CUresult drv_coop_check(dim3 grid, dim3 block, size_t shmem);
/* The value in force of attribute `id` (its default when not set). */
CUresult drv_kattr_get(const drv_kattrs_t *ka, CUlaunchAttributeID id, CUlaunchAttributeValue *v);
/* Gives the twin of the kernel running on this device thread its launch attributes (see
 * simctl_launch_attr in attrs.c). */
void drv_kattr_running(const drv_kattrs_t *ka);

/* A kernel launch with its argument values copied (used by launches and kernel nodes). */
typedef struct drv_launch {
  drv_func_t *f;
  dim3 grid, block;
  unsigned shmem;
  char *blob;              /* param_bytes argument bytes */
  void **argv;             /* nparams pointers into blob */
  drv_kattrs_t *attrs;     /* launch attributes, NULL when none were given (a node keeps its
                            * own across parameter sets); owned, separate so that the common
                            * launch record stays small */
} drv_launch_t;
CUresult drv_launch_prepare(drv_launch_t *l, CUfunction f, unsigned gx, unsigned gy,
                            unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                            void **params, void **extra);
CUresult drv_launch_copy(drv_launch_t *dst, const drv_launch_t *src);
void drv_launch_fini(drv_launch_t *l);
void drv_launch_run(const drv_launch_t *l);

/* ---- graph.c ---- */
struct CUgraphNode_st {
  uint32_t magic;
  CUgraphNodeType type;
  struct CUgraph_st *g;
  size_t index;
  CUgraphNode *deps;
  size_t ndeps;
  int disabled; /* an exec node turned off by cuGraphNodeSetEnabled: runs as an empty node */
  /* An exec event record node's counter (DRV_STREAM_NODE), made at its first launch and shared
   * by the copies of the exec's nodes; never freed, as events may name it for ever. */
  drv_stream_t *rec;
  union {
    drv_launch_t k;
    drv_copy_t c;
    drv_set_t m;
    CUDA_HOST_NODE_PARAMS h;
    CUevent ev;
  } u;
};
struct CUgraph_st {
  uint32_t magic;
  CUgraphNode *nodes;
  size_t n, cap;
  /* An executable graph's nodes, under drv_lock: users counts the launches that will still read
   * them; orphan marks nodes their exec no longer owns, freed by the last of those launches. */
  unsigned users;
  int orphan;
};
CUresult drv_graph_add(struct CUgraph_st *g, CUgraphNodeType type, const CUgraphNode *deps,
                       size_t ndeps, struct CUgraphNode_st **out);
void drv_graph_free(struct CUgraph_st *g);
/* One launch of an executable graph, the payload of its op. Its nodes run as their dependencies
 * complete, not in one piece: per node, whether it has run, for an event wait node the record
 * it waits for (the event's latest record at the launch, as cuStreamWaitEvent takes it at the
 * call; {NULL, 0} for a never-recorded event) with that record's modelled time, and for an event
 * record node the sequence number its record completes on the node's counter. */
typedef struct drv_graph_node_run {
  drv_dep_t wait;
  uint64_t vwait;
  uint64_t seq;
  int done;
} drv_graph_node_run_t;
typedef struct drv_graph_run {
  struct CUgraph_st *g;
  drv_graph_node_run_t *nodes;
  size_t left;             /* nodes not yet run */
  size_t first;            /* every node before it has run */
} drv_graph_run_t;

/* ---- capture.c ---- */
struct drv_capture {
  struct CUgraph_st *graph;
  CUstreamCaptureMode mode;
  int invalidated;
  unsigned long long id;
  drv_stream_t *origin;
  pthread_t thread;
  int ended;
  struct drv_capture *next;
};
/* The active capture e was last recorded in, or NULL. */
static inline struct drv_capture *drv_event_capture(const struct CUevent_st *e) {
  return e->cap && !e->cap->ended ? e->cap : NULL;
}
/* Every stream of capture c leaves it (lock held). */
void drv_capture_end_streams_locked(struct drv_capture *c);
/* If s is capturing: returns 1 and sets *res to the result of adding a node of `type` to the
 * capture graph (filled by fill(node, arg)); the op is not run. Returns 0 otherwise. Lock held. */
int drv_capture_node(drv_stream_t *s, CUgraphNodeType type,
                     CUresult (*fill)(struct CUgraphNode_st *n, void *arg), void *arg,
                     CUresult *res);
/* Potentially unsafe API (allocation, synchronous copy…): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * (invalidating the captures concerned) when the calling thread may not make it now. */
CUresult drv_capture_unsafe_locked(void);
/* Any capture active in the process (for cuCtxSynchronize): invalidates them all. */
CUresult drv_capture_any_locked(void);
void drv_capture_invalidate(struct drv_capture *c);
/* Event record / wait on a capturing stream (or of an event recorded in a capture). */
CUresult drv_capture_record_locked(drv_stream_t *s, struct CUevent_st *e);
/* An external record (CU_EVENT_RECORD_EXTERNAL) or wait (CU_EVENT_WAIT_EXTERNAL) on capturing
 * stream s: an event record or wait node after the stream's current dependencies, which the
 * graph's launches record or wait for; the event itself is left as it was. Lock held. */
CUresult drv_capture_event_node_locked(drv_stream_t *s, CUgraphNodeType type,
                                       struct CUevent_st *e);
CUresult drv_capture_wait_locked(drv_stream_t *s, struct CUevent_st *e);
extern struct drv_capture *drv_captures;

#endif
