/* graph.c — performing held launches, as ordinary launches or as graphs (see graph.h).
 *
 * The graph keeps, per node, the node handle and a private copy of the arguments it was last
 * given; a replay compares the held bytes with that copy and updates only the nodes that differ.
 * Parameter pointers are rebuilt from the layout for every call that needs them, into a buffer
 * on the stack or owned by the graph: nothing is allocated per replay.
 *
 * Kernel-pattern substitution (AUTOGRAPH_FUSE=exact or above, src/pattern.h): a run of held
 * launches that a pattern matches becomes one node running a fused kernel from the library's
 * embedded module. Per node the graph keeps the held launches it stands for (first, count) and
 * its pattern; the copies of the arguments stay per held launch, so a replay compares each
 * original's held bytes with the graph's copy as for any node, and on a change re-checks the
 * pattern's conditions on the new arguments and rebuilds the fused node's parameters through
 * the same rule (one cuGraphExecKernelNodeSetParams). When the conditions no longer hold (a
 * later occurrence aliases its buffers differently), the graph is rebuilt at once without any
 * substitution and stays so: that sequence never substitutes again, which keeps a sequence
 * whose aliasing changes between occurrences from rebuilding at every replay. The dump's
 * per-launch "varied" bookkeeping is per held launch, whatever node a launch belongs to.
 *
 * The embedded module is loaded through the real driver on first use in each context, when a
 * graph that would use it is built; the caller (the engine's replay, under the engine lock,
 * quiet) makes that context current. If it cannot be loaded, substitution is off in that
 * context (logged once) and graphs are built without it.
 *
 * To confirm on a GPU: the cost model (ag__graph_cost: 64 KiB of device memory per kernel node
 * before driver 550 / CUDA 12.4, far less since), that cuGraphExecKernelNodeSetParams on a
 * node of a straight-line graph is cheaper than the launches it saves, and that the real driver
 * loads the embedded fatbin (only the simulator has shown it).
 */
#include "graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "config.h"
#include "dump.h"
#include "fchain.h"
#include "launch-attrs.h"
#include "log.h"
#include "pattern.h"
#include "real.h"
#include "stats.h"

/* The fused kernels' fatbin, linked in by shims/build.mk. Weak: the unit tests link the engine
 * without it, and then substitution simply never happens. */
extern const unsigned char ag__fused_fatbin[] __attribute__((weak, visibility("hidden")));

/* A chain of elementwise launches run by one generated kernel (src/fchain.h): the description
 * its parameters come from (that of the arguments the node was last given), and the parameter
 * block the node points to. */
typedef struct fcnode {
  ag_fg_chain_t desc;
  uint8_t params[AG_FCHAIN_PARAM_BYTES];
} fcnode_t;

/* One held launch, or a run of them replaced by a fused kernel. */
typedef struct gnode {
  int first, count;          /* the held launches [first, first + count) it stands for */
  const ag_pattern_t *pat;   /* NULL: an original launch, or a generated chain's */
  fcnode_t *fc;              /* a generated chain's kernel runs them, else NULL */
  CUfunction fn;             /* the fused kernel */
  int op;                    /* a stream operation's kind (AG_OP_…), 0 for a kernel */
  /* A pattern's: the launch shapes its originals were matched with (ag_pat_launch_t.work,
   * threads), which a later occurrence, of the same kernels, is checked against again. */
  uint32_t pwork[AG_PAT_MAX_OPS];
  unsigned pthreads[AG_PAT_MAX_OPS];
} gnode_t;

/* One CUDA graph: the held entries of one chunk of a sequence (below). */
typedef struct chunk {
  CUgraph g;
  CUgraphExec exec;
  int n;           /* held launches */
  int nn;          /* nodes (n when nothing was substituted) */
  CUgraphNode *nodes;
  gnode_t *map;    /* per node */
  uint32_t *off;   /* held launch i's arguments at args + off[i] */
  uint8_t *args;
  unsigned (*grid)[3]; /* held launch i's grid as its node has it (an update may change it) */
  uint8_t *fargs;  /* per node, AG_PAT_MAX_ARGS 8-byte slots: a fused node's parameters */
  void **ptrs;     /* scratch: parameter pointers of one node */
  uint32_t maxp;   /* its capacity */
  int nofuse;      /* built without substitution, for good */
  int waiting;     /* chains whose generated kernel was not ready when it was built, and pattern
                      candidates whose calibration table was still being read */
  int later;       /* chains whose kernel it did not request (AG_FCHAIN_LATER) */
  int on_from, on_to; /* only nodes [on_from, on_to) are enabled in the exec (a part of the
                       * chunk ran last); 0, nn: all */
  /* For the dump, per held launch: [2i] parameters (bit j: parameter j < 64) that an update
   * changed, [2i+1] those of them whose change did not look like an address. */
  uint64_t *varied;
} chunk_t;

/* A sequence's graphs: its held entries cut into chunks, each a graph of its own, launched
 * as soon as its last entry is held (src/engine.c decides where chunks end). */
struct ag_graph {
  int n;           /* held entries */
  int nchunks;
  int *start;      /* nchunks + 1: chunk j holds entries [start[j], start[j + 1]) */
  chunk_t **c;
  uint8_t *role;   /* per held entry, as ag__chain_scan marked it when the graph was built */
  int later;       /* chains of its chunks whose kernel was not requested when built */
  int waiting;     /* chains of its chunks whose generated kernel was not ready when built … */
  uint32_t gen;    /* … and ag__fchain_generation then */
};

/* ---- the embedded module, per context ------------------------------------------------------ */

/* Contexts the module was tried in. Only used under the engine lock (graphs are built and
 * replayed there), which is never needed by the driver calls made here. */
#define AG_FUSED_CTXS 16
#define AG_FUSED_PATTERNS 8
typedef struct fmod {
  void *ctx;
  int failed;
  CUmodule mod;
  CUfunction fn[AG_FUSED_PATTERNS];
} fmod_t;
static fmod_t fmods[AG_FUSED_CTXS];
static int nfmods;

static fmod_t *fused_module(void) {
  CUcontext ctx = NULL;
  fmod_t *m;
  if (!ag__real.cuCtxGetCurrent || ag__real.cuCtxGetCurrent(&ctx) || !ctx) return NULL;
  for (int i = 0; i < nfmods; i++)
    if (fmods[i].ctx == ctx) return fmods[i].failed ? NULL : &fmods[i];
  if (nfmods == AG_FUSED_CTXS) return NULL;
  m = &fmods[nfmods++];
  memset(m, 0, sizeof *m);
  m->ctx = ctx;
  CUresult r = CUDA_ERROR_NOT_FOUND;
  if (!ag__fused_fatbin || !ag__real.cuModuleLoadData || !ag__real.cuModuleGetFunction ||
      (r = ag__real.cuModuleLoadData(&m->mod, ag__fused_fatbin))) {
    m->failed = 1;
    ag__log(AG_LOG_WARN, "fused kernels unavailable in context %p (CUDA error %d): graphs are "
            "built without kernel-pattern substitution there", (void *)ctx, (int)r);
    return NULL;
  }
  for (int i = 0; i < ag__pattern_count() && i < AG_FUSED_PATTERNS; i++) {
    const ag_pattern_t *p = ag__pattern_at(i);
    if ((r = ag__real.cuModuleGetFunction(&m->fn[i], m->mod, ag__pattern_kernel(p)))) {
      m->fn[i] = NULL;
      ag__log(AG_LOG_WARN, "fused kernel %s not found (CUDA error %d): pattern %s disabled",
              ag__pattern_kernel(p), (int)r, ag__pattern_name(p));
    }
  }
  return m;
}

void ag__graph_ctx_gone(void *ctx) {
  ag__fchain_ctx_gone(ctx);
  /* The module died with its context (or is about to); a context created later, perhaps at the
   * same address, loads it again. */
  for (int i = 0; i < nfmods;)
    if (!ctx || fmods[i].ctx == ctx)
      fmods[i] = fmods[--nfmods];
    else
      i++;
}

/* Held launch h, its arguments at args, as the kernel patterns see it; no launch shape known. */
static void pat_launch(ag_pat_launch_t *l, const ag_held_t *h, const uint8_t *args) {
  l->k = h->k, l->args = args, l->work = 0, l->threads = 0;
  memcpy(l->grid, h->grid, sizeof l->grid), memcpy(l->block, h->block, sizeof l->block);
}

/* The held entries h[0..n) as the kernel patterns see them, with the launch shape the
 * calibration table records for a pattern's originals (src/fchain.h). Returns nonzero when
 * the table is still being read for one of them: whether a pattern matches may change once it
 * is. */
static int pat_view(ag_pat_launch_t *l, const ag_held_t *h, int n, const uint8_t *arena) {
  int pending = 0;
  for (int i = 0; i < n; i++) {
    int work = 0;
    pat_launch(&l[i], &h[i], arena + h[i].off);
    if (ag__pattern_original(h[i].k) && (work = ag__fchain_block_work(h[i].k, &l[i].threads)) < 0)
      pending = 1, work = 0;
    l[i].work = (uint32_t)work;
  }
  return pending;
}

/* Records which parameters of node i differ between the graph's copy and the new bytes. */
static void note_varied(chunk_t *g, int i, const ag_kinfo_t *k, const uint8_t *old,
                        const uint8_t *new) {
  uint32_t np = k->nparams < 64 ? k->nparams : 64;
  for (uint32_t j = 0; j < np; j++) {
    const ag_kparam_t *p = &k->params[j];
    if (!memcmp(old + p->offset, new + p->offset, p->size)) continue;
    g->varied[2 * i] |= 1ull << j;
    uint64_t a = 0, b = 0;
    if (p->size == 8) memcpy(&a, old + p->offset, 8), memcpy(&b, new + p->offset, 8);
    if (p->size != 8 || !ag__dump_looks_like_address(a) || !ag__dump_looks_like_address(b))
      g->varied[2 * i + 1] |= 1ull << j;
  }
}

/* The chunk holding entry i, or -1. */
static int chunk_of(const ag_graph_t *g, int i) {
  if (!g || i < 0 || i >= g->n) return -1;
  int lo = 0, hi = g->nchunks;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (g->start[mid] <= i) lo = mid; else hi = mid;
  }
  return lo;
}

void ag__graph_varied(const ag_graph_t *g, int i, uint64_t *changed, uint64_t *value) {
  int j = chunk_of(g, i);
  *changed = *value = 0;
  if (j < 0 || !g->c[j]->varied) return;
  i -= g->start[j];
  *changed = g->c[j]->varied[2 * i], *value = g->c[j]->varied[2 * i + 1];
}

/* Brings the graph's copy `mine` of one launch's arguments up to `now`: the parameters that
 * differ only (a large by-value struct whose scalar neighbour changed is not copied again), or
 * every byte when the copy was invalidated (a failed update) and no parameter matches. */
static void copy_changed(uint8_t *mine, const uint8_t *now, const ag_kinfo_t *k) {
  for (uint32_t j = 0; j < k->nparams; j++) {
    const ag_kparam_t *p = &k->params[j];
    if (memcmp(mine + p->offset, now + p->offset, p->size))
      memcpy(mine + p->offset, now + p->offset, p->size);
  }
  /* Bytes outside every parameter (padding) are never compared again once equal. */
  if (memcmp(mine, now, k->param_bytes)) memcpy(mine, now, k->param_bytes);
}

static void fill_ptrs(void **ptrs, const ag_kinfo_t *k, const uint8_t *base) {
  for (uint32_t j = 0; j < k->nparams; j++) ptrs[j] = (void *)(base + k->params[j].offset);
}

static void node_params(CUDA_KERNEL_NODE_PARAMS_v2 *p, const ag_held_t *h, void **ptrs) {
  memset(p, 0, sizeof *p);
  p->func = (CUfunction)h->k->fn;
  p->gridDimX = h->grid[0], p->gridDimY = h->grid[1], p->gridDimZ = h->grid[2];
  p->blockDimX = h->block[0], p->blockDimY = h->block[1], p->blockDimZ = h->block[2];
  p->sharedMemBytes = h->shmem;
  p->kernelParams = ptrs;
}

/* ---- held stream operations (src/graph.h) -------------------------------------------------- */

static inline int is_op(const ag_held_t *h) { return h->k->fkind >= AG_OP_MEMSET; }

/* A held operation decoded from its bytes into what the driver takes. */
typedef struct op {
  int kind;
  union {
    ag_op_memset_t m;
    ag_op_memcpy_t c;
    ag_op_event_t e;
  } b;
  CUDA_MEMSET_NODE_PARAMS set;
  CUDA_MEMCPY3D copy;
  CUevent ev;
} op_t;

static void op_decode(op_t *o, const ag_held_t *h, const uint8_t *bytes) {
  memset(o, 0, sizeof *o);
  o->kind = h->k->fkind;
  memcpy(&o->b, bytes, h->k->param_bytes);
  if (o->kind == AG_OP_MEMSET) {
    o->set.dst = (CUdeviceptr)o->b.m.dst, o->set.value = o->b.m.value;
    o->set.elementSize = o->b.m.elem, o->set.width = (size_t)o->b.m.bytes, o->set.height = 1;
  } else if (o->kind == AG_OP_MEMCPY) {
    const ag_op_memcpy_t *m = &o->b.c;
    CUDA_MEMCPY3D *p = &o->copy;
    p->srcMemoryType = (CUmemorytype)m->stype, p->dstMemoryType = (CUmemorytype)m->dtype;
    if (m->stype == CU_MEMORYTYPE_HOST) p->srcHost = (const void *)(uintptr_t)m->src;
    else p->srcDevice = (CUdeviceptr)m->src;
    if (m->dtype == CU_MEMORYTYPE_HOST) p->dstHost = (void *)(uintptr_t)m->dst;
    else p->dstDevice = (CUdeviceptr)m->dst;
    p->WidthInBytes = (size_t)m->bytes, p->Height = 1, p->Depth = 1;
  } else {
    o->ev = (CUevent)(uintptr_t)o->b.e.ev;
  }
}

static CUcontext current(void) {
  CUcontext c = NULL;
  if (ag__real.cuCtxGetCurrent) ag__real.cuCtxGetCurrent(&c);
  return c;
}

/* Performs a held operation as the call it was. */
static CUresult op_submit(const ag_held_t *h, const uint8_t *bytes, void *stream) {
  op_t o;
  op_decode(&o, h, bytes);
  switch (o.kind) {
  case AG_OP_MEMCPY:
    return ag__real.cuMemcpyAsync((CUdeviceptr)o.b.c.dst, (CUdeviceptr)o.b.c.src,
                                  (size_t)o.b.c.bytes, (CUstream)stream);
  case AG_OP_MEMSET:
    return ag__real.cuMemsetD8Async(o.set.dst, (unsigned char)o.set.value, o.set.width,
                                    (CUstream)stream);
  case AG_OP_EVENT_RECORD:
    return ag__real.cuEventRecord(o.ev, (CUstream)stream);
  }
  return ag__real.cuStreamWaitEvent((CUstream)stream, o.ev, o.b.e.flags);
}

/* Adds a held operation's node after `dep` (NULL: a root). */
static CUresult op_add(CUgraphNode *node, CUgraph g, CUgraphNode *dep, const ag_held_t *h,
                       const uint8_t *bytes) {
  op_t o;
  size_t n = dep ? 1 : 0;
  op_decode(&o, h, bytes);
  switch (o.kind) {
  case AG_OP_MEMCPY: return ag__real.cuGraphAddMemcpyNode(node, g, dep, n, &o.copy, current());
  case AG_OP_MEMSET: return ag__real.cuGraphAddMemsetNode(node, g, dep, n, &o.set, current());
  case AG_OP_EVENT_RECORD: return ag__real.cuGraphAddEventRecordNode(node, g, dep, n, o.ev);
  }
  return ag__real.cuGraphAddEventWaitNode(node, g, dep, n, o.ev);
}

/* Gives an executable operation node new bytes. */
static CUresult op_update(CUgraphExec x, CUgraphNode node, const ag_held_t *h,
                          const uint8_t *bytes) {
  op_t o;
  op_decode(&o, h, bytes);
  switch (o.kind) {
  case AG_OP_MEMCPY: return ag__real.cuGraphExecMemcpyNodeSetParams(x, node, &o.copy, current());
  case AG_OP_MEMSET: return ag__real.cuGraphExecMemsetNodeSetParams(x, node, &o.set, current());
  case AG_OP_EVENT_RECORD: return ag__real.cuGraphExecEventRecordNodeSetEvent(x, node, o.ev);
  }
  return ag__real.cuGraphExecEventWaitNodeSetEvent(x, node, o.ev);
}

int ag__held_submit(const ag_held_t *h, int n, const uint8_t *arena, void *stream, int *first,
                    int *nfailed) {
  void *ptrs[256];
  int err = 0;
  *first = -1, *nfailed = 0;
  if (!ag__real.cuLaunchKernel) {
    *first = 0, *nfailed = n;
    return CUDA_ERROR_NOT_FOUND;
  }
  for (int i = 0; i < n; i++) {
    const ag_kinfo_t *k = h[i].k;
    CUresult r;
    if (AG_UNLIKELY(is_op(&h[i]))) {
      if ((r = op_submit(&h[i], arena + h[i].off, stream))) {
        if (!err) err = r, *first = i;
        ++*nfailed;
      }
      continue;
    }
    fill_ptrs(ptrs, k, arena + h[i].off);
    if (AG_UNLIKELY(h[i].nattrs))
      r = ag__lattr_launch(&h[i], arena, stream, k->nparams ? ptrs : NULL);
    else
      r = ag__real.cuLaunchKernel((CUfunction)k->fn, h[i].grid[0], h[i].grid[1], h[i].grid[2],
                                  h[i].block[0], h[i].block[1], h[i].block[2], h[i].shmem,
                                  (CUstream)stream, k->nparams ? ptrs : NULL, NULL);
    if (r) {
      if (!err) err = r, *first = i;
      ++*nfailed;
    }
  }
  return err;
}

size_t ag__graph_cost(int n) {
  size_t per_node = ag__real.driver_version && ag__real.driver_version < 12040 ? 64 << 10 : 4 << 10;
  return (size_t)n * per_node;
}

/* Handles whose destroy failed. A driver that refuses a destroy still owns the object, so the
 * handle is not dropped: it is kept here and the destroy tried again at the next release. Only
 * if even this list cannot grow is a handle given up. */
typedef struct kept {
  CUgraphExec exec;
  CUgraph g;
} kept_t;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept_t *kept;
static size_t nkept, capkept;

/* Whether a destroy that returned r leaves nothing to destroy: it succeeded, or the object's
 * context is gone, and the object with it (trying again would name a freed object). */
static int gone(CUresult r) { return r == CUDA_SUCCESS || r == CUDA_ERROR_CONTEXT_IS_DESTROYED; }

/* Destroys what it can of k; returns 1 when nothing is left. */
static int destroy(kept_t *k) {
  if (k->exec && (!ag__real.cuGraphExecDestroy || gone(ag__real.cuGraphExecDestroy(k->exec))))
    k->exec = NULL;
  /* An exec does not need the graph it was made from. */
  if (k->g && (!ag__real.cuGraphDestroy || gone(ag__real.cuGraphDestroy(k->g)))) k->g = NULL;
  return !k->exec && !k->g;
}

/* Frees what g owns and destroys (or keeps) its driver objects; not g itself. */
static void release(chunk_t *g) {
  kept_t k = {g->exec, g->g};
  for (int j = 0; g->map && j < g->nn; j++) free(g->map[j].fc);
  free(g->nodes), free(g->map), free(g->off), free(g->args), free(g->fargs), free(g->ptrs);
  free(g->grid);
  free(g->varied);
  pthread_mutex_lock(&kept_lock);
  for (size_t i = 0; i < nkept;)
    if (destroy(&kept[i])) kept[i] = kept[--nkept]; else i++;
  if (!destroy(&k)) {
    if (nkept == capkept) {
      size_t ncap = capkept ? 2 * capkept : 16;
      kept_t *grown = realloc(kept, ncap * sizeof *grown);
      if (grown) kept = grown, capkept = ncap;
    }
    if (nkept < capkept) kept[nkept++] = k;
  }
  pthread_mutex_unlock(&kept_lock);
}

static void chunk_free(chunk_t *c) {
  if (!c) return;
  release(c);
  free(c);
}

void ag__graph_free(ag_graph_t *g) {
  if (!g) return;
  for (int j = 0; j < g->nchunks; j++) chunk_free(g->c[j]);
  free(g->c), free(g->start), free(g->role);
  free(g);
}

/* A fused node's kernel parameters: fn over grid × block, its arguments at ptrs. */
static void fused_node_params(CUDA_KERNEL_NODE_PARAMS_v2 *p, CUfunction fn, const unsigned grid[3],
                              const unsigned block[3], void **ptrs) {
  memset(p, 0, sizeof *p);
  p->func = fn;
  p->gridDimX = grid[0], p->gridDimY = grid[1], p->gridDimZ = grid[2];
  p->blockDimX = block[0], p->blockDimY = block[1], p->blockDimZ = block[2];
  p->kernelParams = ptrs;
}

/* Fills node j's kernel parameters from the held launches (an original's from the graph's copy
 * of its arguments, a fused node's through its pattern's rule into fargs). */
static int gnode_params(chunk_t *g, int j, const ag_held_t *h, CUDA_KERNEL_NODE_PARAMS_v2 *p) {
  const gnode_t *m = &g->map[j];
  if (m->fc) {
    size_t n_off, a_off;
    unsigned grid[3], block[3];
    ag__fchain_params(&m->fc->desc, m->fc->params, &n_off, &a_off);
    ag__fchain_shape(&m->fc->desc, grid, block);
    g->ptrs[0] = m->fc->params + n_off, g->ptrs[1] = m->fc->params + a_off;
    fused_node_params(p, m->fn, grid, block, g->ptrs);
    return 0;
  }
  if (!m->pat) {
    const ag_held_t *hi = &h[m->first];
    fill_ptrs(g->ptrs, hi->k, g->args + g->off[m->first]);
    node_params(p, hi, hi->k->nparams ? g->ptrs : NULL);
    return 0;
  }
  ag_pat_launch_t l[AG_PAT_MAX_OPS];
  unsigned grid[3], block[3];
  int nargs;
  uint8_t *buf = g->fargs + (size_t)j * AG_PAT_MAX_ARGS * 8;
  for (int i = 0; i < m->count; i++) pat_launch(&l[i], &h[m->first + i], g->args + g->off[m->first + i]);
  if (ag__pattern_params(m->pat, l, buf, &nargs, grid, block)) return CUDA_ERROR_INVALID_VALUE;
  for (int a = 0; a < nargs; a++) g->ptrs[a] = buf + 8 * a;
  fused_node_params(p, m->fn, grid, block, g->ptrs);
  return 0;
}

/* Held entry h as src/chain.h reads it; at AUTOGRAPH_FUSE=chains, a strided launch with the
 * place of its tensors the calibration table gives (src/fchain.h). */
static void chain_view(ag_chain_launch_t *l, const ag_held_t *h, const uint8_t *arena) {
  l->k = h->k, l->args = is_op(h) ? NULL : arena + h->off, l->sdata = 0, l->snt = 0;
  memcpy(l->grid, h->grid, sizeof l->grid), memcpy(l->block, h->block, sizeof l->block);
  if (l->args && ag__config.fuse >= AG_FUSE_CHAINS) ag__fchain_view(l);
}

/* The chain of elementwise launches that begins at h[0] (of n), as src/chain.h links them: its
 * length, at most AG_FG_MAX_OPS, 1 when h[0] begins none. Launches with attributes are left out
 * (a fused node could not carry them). */
static int chain_extent(const ag_held_t *h, int n, const uint8_t *arena, ag_chain_launch_t *l) {
  int len = 1;
  if (is_op(&h[0]) || h[0].nattrs) return 1;
  chain_view(&l[0], &h[0], arena);
  while (len < n && len < AG_FG_MAX_OPS && !is_op(&h[len]) && !h[len].nattrs) {
    chain_view(&l[len], &h[len], arena);
    if (!ag__chain_links(&l[len - 1], &l[len])) break;
    len++;
  }
  return len;
}

/* The run of one-tensor launches (src/chain.h: fills, whether the table knows them or not) that
 * begins at h[0] (of n): its length, at most AG_FG_MAX_OPS, 1 when h[0] begins none. */
static int fill_extent(const ag_held_t *h, int n, const uint8_t *arena, ag_chain_launch_t *l) {
  int len = 0;
  while (len < n && len < AG_FG_MAX_OPS && !is_op(&h[len]) && !h[len].nattrs && ag__chain_single(h[len].k)) {
    chain_view(&l[len], &h[len], arena);
    len++;
  }
  return len ? len : 1;
}

/* A chain of elementwise launches or a run of fills beginning at h[0], into l: its length. */
static int fusable_extent(const ag_held_t *h, int n, const uint8_t *arena, ag_chain_launch_t *l) {
  int len = chain_extent(h, n, arena, l);
  return len >= 2 ? len : fill_extent(h, n, arena, l);
}

/* Node m stands for a chain of h[0..len) run by its generated kernel, when that is ready; counts
 * in g->waiting a chain whose kernel is not ready yet, in g->later one whose kernel was not
 * requested (`request` 0: see ag__fchain_get). Returns the number of launches the chain covers
 * (0: none can be fused): those of a chain still waiting begin no chain of their own, whose
 * kernel would be requested too and never used. */
static int chain_node(chunk_t *g, gnode_t *m, const ag_chain_launch_t *l, int len, int request) {
  ag_fg_chain_t desc;
  CUfunction fn = NULL;
  int bad, st = ag__fchain_get(l, len, &desc, &fn, &bad, request);
  /* A launch that cannot be described ends the chain there: what comes before it is fused
   * alone (what comes after is a chain of its own, found from the next node on). */
  if (st == AG_FCHAIN_NO && bad >= 2 && bad < len)
    st = ag__fchain_get(l, len = bad, &desc, &fn, &bad, request);
  if (st == AG_FCHAIN_PENDING) g->waiting++;
  if (st == AG_FCHAIN_LATER) g->later++;
  if (st == AG_FCHAIN_NO) return 0;
  if (st != AG_FCHAIN_READY || !(m->fc = malloc(sizeof *m->fc))) return len;
  m->fc->desc = desc;
  m->fn = fn, m->count = len;
  return len;
}

/* Builds the graph, substituting fused kernels where the level `fuse` (AUTOGRAPH_FUSE) allows
 * and patterns match, or generated kernels are ready for chains (those not yet requested are
 * requested when `request` says so). */
static int build(chunk_t **out, const ag_held_t *h, int n, const uint8_t *arena, int fuse,
                 int request) {
  chunk_t *g;
  size_t bytes = 0;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  fmod_t *fm = NULL;
  *out = NULL;
  if (!ag__real.cuGraphCreate || !ag__real.cuGraphAddKernelNode ||
      !ag__real.cuGraphInstantiateWithFlags || !ag__real.cuGraphLaunch ||
      !ag__real.cuGraphExecKernelNodeSetParams)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!(g = calloc(1, sizeof *g))) return r;
  g->n = n;
  g->nofuse = !fuse;
  g->maxp = AG_PAT_MAX_ARGS;
  for (int i = 0; i < n; i++) {
    bytes += h[i].k->param_bytes;
    if (h[i].k->nparams > g->maxp) g->maxp = h[i].k->nparams;
  }
  g->nodes = calloc((size_t)n, sizeof *g->nodes);
  g->map = calloc((size_t)n, sizeof *g->map);
  g->off = calloc((size_t)n, sizeof *g->off);
  g->args = malloc(bytes ? bytes : 1);
  g->ptrs = calloc(g->maxp, sizeof *g->ptrs);
  g->varied = calloc(2 * (size_t)n, sizeof *g->varied);
  g->grid = calloc((size_t)n, sizeof *g->grid);
  if (!g->nodes || !g->map || !g->off || !g->args || !g->ptrs || !g->varied || !g->grid) goto fail;
  bytes = 0;
  for (int i = 0; i < n; i++) {
    memcpy(g->grid[i], h[i].grid, sizeof g->grid[i]);
    g->off[i] = (uint32_t)bytes;
    memcpy(g->args + bytes, arena + h[i].off, h[i].k->param_bytes);
    bytes += h[i].k->param_bytes;
  }
  /* Which held launches each node stands for. */
  for (int i = 0, in_chain = 0; i < n;) {
    gnode_t *m = &g->map[g->nn++];
    const ag_pattern_t *p = NULL;
    m->first = i, m->count = 1;
    m->op = is_op(&h[i]) ? h[i].k->fkind : 0;
    if (fuse >= AG_FUSE_CHAINS && !m->op && i >= in_chain) {
      ag_chain_launch_t l[AG_FG_MAX_OPS];
      int len = fusable_extent(h + i, n - i, arena, l);
      if (len >= 2) in_chain = i + chain_node(g, m, l, len, request);
    }
    if (fuse >= AG_FUSE_EXACT && !m->op && !m->fc) {
      ag_pat_launch_t l[AG_PAT_MAX_OPS];
      int avail = n - i < AG_PAT_MAX_OPS ? n - i : AG_PAT_MAX_OPS;
      /* Patterns match runs of kernel launches only, and a launch with attributes is never
       * replaced: the fused node could not carry them. */
      for (int a = 0; a < avail; a++)
        if (is_op(&h[i + a]) || h[i + a].nattrs) avail = a;
      int pending = pat_view(l, h + i, avail, arena);
      p = avail ? ag__pattern_match(l, avail) : NULL;
      if (!p && pending) g->waiting++; /* rebuilt once the table is read */
      if (p && !fm && !(fm = fused_module())) fuse = AG_FUSE_OFF, p = NULL;
      if (p && ag__pattern_index(p) < AG_FUSED_PATTERNS && fm->fn[ag__pattern_index(p)]) {
        m->pat = p, m->fn = fm->fn[ag__pattern_index(p)], m->count = ag__pattern_len(p);
        for (int a = 0; a < m->count && a < avail; a++) m->pwork[a] = l[a].work, m->pthreads[a] = l[a].threads;
      }
    }
    i += m->count;
  }
  if (g->nn < n && !(g->fargs = calloc((size_t)g->nn, AG_PAT_MAX_ARGS * 8))) goto fail;
  if ((r = ag__real.cuGraphCreate(&g->g, 0))) goto fail;
  for (int j = 0; j < g->nn; j++) {
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    if (is_op(&h[g->map[j].first])) {
      int i = g->map[j].first;
      if ((r = op_add(&g->nodes[j], g->g, j ? &g->nodes[j - 1] : NULL, &h[i], g->args + g->off[i])))
        goto fail;
      continue;
    }
    if ((r = gnode_params(g, j, h, &p))) goto fail;
    /* A chain: each node depends on the one before, as the launches did in their stream. */
    if ((r = ag__real.cuGraphAddKernelNode(&g->nodes[j], g->g, j ? &g->nodes[j - 1] : NULL,
                                           j ? 1 : 0, &p)))
      goto fail;
    /* Its launch attributes (only an original launch has any), before instantiation. */
    if (!g->map[j].pat && !g->map[j].fc && h[g->map[j].first].nattrs &&
        (r = ag__lattr_apply_node(g->nodes[j], &h[g->map[j].first], arena)))
      goto fail;
  }
  if ((r = ag__real.cuGraphInstantiateWithFlags(&g->exec, g->g, 0))) goto fail;
  g->on_from = 0, g->on_to = g->nn;
  *out = g;
  return 0;
fail:
  chunk_free(g);
  return r ? r : CUDA_ERROR_UNKNOWN;
}

/* Whether entry i begins a run of held launches [i, *end) that a kernel pattern may replace
 * (src/pattern.h), or, at AUTOGRAPH_FUSE=chains, a chain of elementwise launches a generated
 * kernel may (whether one will is known only when the graph is built), as build() would find
 * it. */
static int pattern_at(const ag_held_t *h, int n, int i, const uint8_t *arena, int *end) {
  ag_pat_launch_t l[AG_PAT_MAX_OPS];
  int avail = n - i < AG_PAT_MAX_OPS ? n - i : AG_PAT_MAX_OPS;
  if (is_op(&h[i])) return 0;
  if (ag__config.fuse >= AG_FUSE_CHAINS) {
    ag_chain_launch_t cl[AG_FG_MAX_OPS];
    int len = fusable_extent(h + i, n - i, arena, cl);
    if (len >= 2) {
      *end = i + len;
      return 1;
    }
  }
  for (int a = 0; a < avail; a++)
    if (is_op(&h[i + a]) || h[i + a].nattrs) avail = a;
  pat_view(l, h + i, avail, arena);
  const ag_pattern_t *p = avail ? ag__pattern_match(l, avail) : NULL;
  if (!p) return 0;
  *end = i + ag__pattern_len(p);
  return 1;
}

int ag__graph_align_chunks(const ag_held_t *h, int n, const uint8_t *arena, int *starts,
                           int nchunks) {
  int k = 1;
  for (int i = 0, end; i < n && k < nchunks;) {
    if (!pattern_at(h, n, i, arena, &end)) {
      i++;
      continue;
    }
    while (k < nchunks && starts[k] <= i) k++;
    while (k < nchunks && starts[k] < end) {
      if (starts[k - 1] < i) {
        starts[k++] = i;
      } else {
        memmove(&starts[k], &starts[k + 1], (size_t)(nchunks - k) * sizeof *starts);
        nchunks--;
      }
    }
    i = end;
  }
  return nchunks;
}

/* Marks the chains of elementwise kernels among the held entries (src/chain.h), by the
 * arguments of the run the graph is built from: the statistics count the replayed launches
 * that sit in one (what a fusion of chains would replace) by this marking. */
static int scan_chains(ag_graph_t *g, const ag_held_t *h, int n, const uint8_t *arena) {
  ag_chain_launch_t *l = malloc((size_t)(n ? n : 1) * sizeof *l);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  for (int i = 0; i < n; i++) chain_view(&l[i], &h[i], arena);
  ag__chain_scan(l, n, g->role);
  free(l);
  return 0;
}

int ag__graph_build(ag_graph_t **out, const ag_held_t *h, int n, const uint8_t *arena,
                    const int *starts, int nchunks, int request) {
  ag_graph_t *g = calloc(1, sizeof *g);
  int r = CUDA_ERROR_OUT_OF_MEMORY;
  *out = NULL;
  if (!g || nchunks < 1 || !(g->start = malloc(((size_t)nchunks + 1) * sizeof *g->start)) ||
      !(g->c = calloc((size_t)nchunks, sizeof *g->c)))
    goto fail;
  g->n = n;
  if (!(g->role = calloc((size_t)n ? (size_t)n : 1, 1)) || scan_chains(g, h, n, arena)) goto fail;
  /* Read before the chunks are built: a kernel that becomes ready while they are makes the
   * graph wait for nothing, and one more rebuild at worst. */
  if (ag__config.fuse >= AG_FUSE_EXACT) g->gen = ag__fchain_generation();
  for (int j = 0; j < nchunks; j++) g->start[j] = starts[j];
  g->start[nchunks] = n;
  if (ag__config.fuse >= AG_FUSE_EXACT) nchunks = ag__graph_align_chunks(h, n, arena, g->start, nchunks);
  for (int j = 0; j < nchunks; j++) {
    int a = g->start[j], b = g->start[j + 1];
    if (a >= b || (j == 0 && a != 0)) {
      r = CUDA_ERROR_INVALID_VALUE;
      goto fail;
    }
    if ((r = build(&g->c[j], h + a, b - a, arena, ag__config.fuse, request))) goto fail;
    g->nchunks = j + 1;
    g->waiting += g->c[j]->waiting;
    g->later += g->c[j]->later;
  }
  *out = g;
  return 0;
fail:
  ag__graph_free(g);
  return r;
}

int ag__graph_waits(const ag_graph_t *g, int steady) {
  return (g->waiting || (steady && g->later)) && ag__fchain_generation() != g->gen;
}

void ag__graph_waited(ag_graph_t *g) { g->gen = ag__fchain_generation(); }

int ag__graph_later(const ag_graph_t *g) { return g->later; }

int ag__graph_chunks(const ag_graph_t *g, const int **starts) {
  *starts = g->start;
  return g->nchunks;
}

/* The conditions of a fused node no longer hold on the held arguments: records what varied,
 * then replaces g's contents with a graph of the same launches without substitution. */
static int rebuild_plain(chunk_t *g, const ag_held_t *h, const uint8_t *arena) {
  chunk_t *ng;
  int r;
  for (int i = 0; i < g->n; i++) {
    const ag_kinfo_t *k = h[i].k;
    if (k->param_bytes && memcmp(g->args + g->off[i], arena + h[i].off, k->param_bytes))
      note_varied(g, i, k, g->args + g->off[i], arena + h[i].off);
  }
  if ((r = build(&ng, h, g->n, arena, 0, 0))) return r;
  memcpy(ng->varied, g->varied, 2 * (size_t)g->n * sizeof *g->varied);
  /* g keeps its address (the sequence table points to it) and takes the new graph's contents. */
  release(g);
  *g = *ng;
  free(ng);
  return 0;
}

/* Brings nodes [from, upto) of the exec up to the held launches h (updating those whose
 * arguments or grid differ, counted in *updates). With less than all nodes only a part of the
 * launches is held: a fused node whose conditions no longer hold cannot be rebuilt then
 * (AG_GRAPH_NO_PREFIX). */
static int update_nodes(chunk_t *g, const ag_held_t *h, const uint8_t *arena, int from, int upto,
                        uint64_t *updates) {
  CUresult r;
  int whole = from == 0 && upto == g->nn;
again:
  for (int j = from; j < upto; j++) {
    /* After rebuild_plain, g->map is the new graph's array (release() freed the old one and
     * the struct assignment installed the new one); the analyzer does not follow the struct
     * copy and takes the old pointer for the current one. */
    const gnode_t *m = &g->map[j];
    int changed = 0;
    for (int i = m->first; i < m->first + m->count; i++) { // NOLINT(clang-analyzer-unix.Malloc)
      const ag_kinfo_t *k = h[i].k;
      /* The grid is not part of a launch's structure (src/engine.c, struct_hash): a kernel
       * whose grid follows the data is updated like an argument; CUDA lets an update change
       * every field of a kernel node but its function. */
      if ((k->param_bytes && memcmp(g->args + g->off[i], arena + h[i].off, k->param_bytes)) ||
          memcmp(g->grid[i], h[i].grid, sizeof g->grid[i]))
        changed = 1;
    }
    if (!changed) continue;
    if (m->fc) {
      /* A later occurrence of the chain: the same kernel serves it when its shape is the same
       * (src/fchain.h); else, as for a pattern, the graph is rebuilt without substitution. */
      ag_chain_launch_t l[AG_FG_MAX_OPS];
      ag_fg_chain_t desc;
      for (int i = 0; i < m->count; i++) chain_view(&l[i], &h[m->first + i], arena);
      if (ag__fchain_redescribe(l, m->count, &m->fc->desc, &desc)) {
        if (!whole) return AG_GRAPH_NO_PREFIX;
        ag__log(AG_LOG_INFO, "a chain of %d elementwise launches has another shape on a later "
                "occurrence: graph of %d launches rebuilt without substitution", m->count, g->n);
        if ((r = rebuild_plain(g, h, arena))) return r;
        upto = g->nn;
        goto again;
      }
      m->fc->desc = desc;
    }
    if (m->pat) {
      /* The shapes it was matched with: the kernels are the same, no table is read again. */
      ag_pat_launch_t l[AG_PAT_MAX_OPS];
      for (int a = 0; a < m->count; a++) {
        pat_launch(&l[a], &h[m->first + a], arena + h[m->first + a].off);
        l[a].work = m->pwork[a], l[a].threads = m->pthreads[a];
      }
      if (!ag__pattern_check(m->pat, l)) {
        if (!whole) return AG_GRAPH_NO_PREFIX;
        ag__log(AG_LOG_INFO, "the conditions of %s no longer hold on a later occurrence: graph "
                "of %d launches rebuilt without substitution", ag__pattern_name(m->pat), g->n);
        if ((r = rebuild_plain(g, h, arena))) return r;
        /* The plain graph has no fused node: this comparison cannot be reached again. */
        upto = g->nn;
        goto again;
      }
    }
    /* Parameters are copied by the driver at the call, so the graph's own copies may be
     * overwritten first and pointed to. */
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    for (int i = m->first; i < m->first + m->count; i++) {
      const ag_kinfo_t *k = h[i].k;
      uint8_t *mine = g->args + g->off[i];
      if (!k->param_bytes || !memcmp(mine, arena + h[i].off, k->param_bytes)) continue;
      note_varied(g, i, k, mine, arena + h[i].off);
      copy_changed(mine, arena + h[i].off, k);
    }
    if (is_op(&h[m->first]))
      r = op_update(g->exec, g->nodes[j], &h[m->first], g->args + g->off[m->first]);
    else if (!(r = gnode_params(g, j, h, &p)))
      r = ag__real.cuGraphExecKernelNodeSetParams(g->exec, g->nodes[j], &p);
    if (r) {
      /* The exec may now hold either version of this node: force an update next time. */
      for (int i = m->first; i < m->first + m->count; i++) {
        uint8_t *mine = g->args + g->off[i];
        g->grid[i][0] = ~h[i].grid[0];
        if (!h[i].k->param_bytes) continue;
        memset(mine, 0, h[i].k->param_bytes);
        mine[0] = (uint8_t)~arena[h[i].off];
      }
      return r;
    }
    for (int i = m->first; i < m->first + m->count; i++)
      memcpy(g->grid[i], h[i].grid, sizeof g->grid[i]);
    (*updates)++;
  }
  return 0;
}

/* Makes nodes [from, to) enabled and the others disabled in the exec, changing only what
 * differs from the present state. A failed change leaves the state unknown: the caller drops
 * the graph (the engine demotes its sequence). */
static int set_enabled(chunk_t *g, int from, int to) {
  CUresult r;
  for (int j = 0; j < g->nn; j++) {
    int was = j >= g->on_from && j < g->on_to, now = j >= from && j < to;
    if (was != now && (r = ag__real.cuGraphNodeSetEnabled(g->exec, g->nodes[j], (unsigned)now)))
      return r;
  }
  g->on_from = from, g->on_to = to;
  return 0;
}

/* Counts one more run of each fused node among nodes [from, upto). */
static void count_fused(const chunk_t *g, int from, int upto) {
  if (g->nn == g->n) return;
  uint64_t runs[AG_FUSED_PATTERNS] = {0}, chains = 0, chained = 0, groups = 0, fills = 0;
  for (int j = from; j < upto; j++) {
    if (g->map[j].pat) runs[ag__pattern_index(g->map[j].pat)]++;
    if (g->map[j].fc && g->map[j].fc->desc.fills) groups++, fills += (uint64_t)g->map[j].count;
    else if (g->map[j].fc) chains++, chained += (uint64_t)g->map[j].count;
  }
  for (int i = 0; i < AG_FUSED_PATTERNS; i++)
    if (runs[i]) ag__stats_fused(ag__pattern_name(ag__pattern_at(i)), runs[i]);
  if (chains) {
    ag__stats_fused("elementwise_chain", chains);
    AG_STAT_ADD(ag__stats.chained_fused, chained);
  }
  if (groups) {
    ag__stats_fused("fill_group", groups);
    AG_STAT_ADD(ag__stats.fills_fused, fills);
  }
}

/* The nodes [*nfrom, *nto) of chunk c that stand for its entries [from, to), which must begin
 * and end at nodes (not inside a fused node); every other node must be a kernel node. CUDA
 * documents kernel, memset and memcpy nodes as ones it can disable, but on an H200 (driver
 * 580.159.04, CUDA 13.0) a step replayed with its memset node disabled showed the memset's
 * effect (tests/progs/e-steps partial in tools/gpu-check): a prefix that would disable a stream
 * operation's node is not served this way. Returns 1 when so. */
static int window(const chunk_t *c, int from, int to, int *nfrom, int *nto) {
  int a = 0, b;
  if (from < 0 || to > c->n || from >= to) return 0;
  if (from == 0 && to == c->n) return *nfrom = 0, *nto = c->nn, 1;
  if (!ag__real.cuGraphNodeSetEnabled) return 0;
  while (a < c->nn && c->map[a].first < from) a++;
  if (a == c->nn || c->map[a].first != from) return 0;
  for (b = a; b < c->nn && c->map[b].first < to; b++) {
  }
  if (c->map[b - 1].first + c->map[b - 1].count != to) return 0;
  for (int j = 0; j < c->nn; j++)
    if ((j < a || j >= b) && c->map[j].op) return 0;
  *nfrom = a, *nto = b;
  return 1;
}

int ag__graph_can_run(const ag_graph_t *g, int j, int from, int to) {
  int a, b;
  return j >= 0 && j < g->nchunks && window(g->c[j], from, to, &a, &b);
}

int ag__graph_prepare_chunk(ag_graph_t *g, int j, const ag_held_t *h, int from, int to,
                            const uint8_t *arena, uint64_t *updates) {
  chunk_t *c = g->c[j];
  int a, b, r;
  h += g->start[j];
  if (!window(c, from, to, &a, &b)) return AG_GRAPH_NO_PREFIX;
  if ((r = update_nodes(c, h, arena, a, b, updates))) return r;
  /* A whole chunk whose fused node no longer matched was rebuilt without it: more nodes. */
  if (from == 0 && to == c->n) a = 0, b = c->nn;
  if ((c->on_from != a || c->on_to != b) && (r = set_enabled(c, a, b))) return r;
  return 0;
}

int ag__graph_launch_chunk(ag_graph_t *g, int j, void *stream) {
  chunk_t *c = g->c[j];
  int r;
  if ((r = ag__real.cuGraphLaunch(c->exec, (CUstream)stream))) return r;
  /* Each fused node that ran (those enabled by the preparation) is counted per pattern, and the
   * elementwise launches of the nodes that ran, by whether they sit in a chain. */
  count_fused(c, c->on_from, c->on_to);
  if (c->on_from < c->on_to) {
    uint64_t ew = 0, linked = 0;
    int from = c->map[c->on_from].first, to = c->map[c->on_to - 1].first + c->map[c->on_to - 1].count;
    for (int i = from; i < to; i++) {
      uint8_t role = g->role[g->start[j] + i];
      ew += role != AG_CHAIN_NONE, linked += role == AG_CHAIN_LINKED;
    }
    if (ew) AG_STAT_ADD(ag__stats.elementwise, ew);
    if (linked) AG_STAT_ADD(ag__stats.chained, linked);
  }
  return 0;
}
