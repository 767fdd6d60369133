/* graph.c — performing held launches, as ordinary launches or as graphs (see graph.h).
 *
 * The graph keeps, per node, the node handle and a private copy of the arguments it was last
 * given; a replay compares the held bytes with that copy and updates only the nodes that differ.
 * Parameter pointers are rebuilt from the layout for every call that needs them, into a buffer
 * on the stack or owned by the graph: nothing is allocated per replay.
 *
 * To confirm on a GPU: the cost model (ag__graph_cost: 64 KiB of device memory per kernel node
 * before driver 550 / CUDA 12.4, far less since), and that cuGraphExecKernelNodeSetParams on a
 * node of a straight-line graph is cheaper than the launches it saves.
 */
#include "graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "real.h"

struct ag_graph {
  CUgraph g;
  CUgraphExec exec;
  int n;
  CUgraphNode *nodes;
  uint32_t *off;   /* node i's arguments at args + off[i] */
  uint8_t *args;
  void **ptrs;     /* scratch: parameter pointers of one node */
  uint32_t maxp;   /* its capacity */
  /* For the dump, per node: [2i] parameters (bit j: parameter j < 64) that an update changed,
   * [2i+1] those of them whose change did not look like an address. */
  uint64_t *varied;
};

/* Records which parameters of node i differ between the graph's copy and the new bytes. */
static void note_varied(ag_graph_t *g, int i, const ag_kinfo_t *k, const uint8_t *old,
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

void ag__graph_varied(const ag_graph_t *g, int i, uint64_t *changed, uint64_t *value) {
  *changed = *value = 0;
  if (!g || !g->varied || i < 0 || i >= g->n) return;
  *changed = g->varied[2 * i], *value = g->varied[2 * i + 1];
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

int ag__held_submit(const ag_held_t *h, int n, const uint8_t *arena, void *stream) {
  void *ptrs[256];
  int first = 0;
  if (!ag__real.cuLaunchKernel) return CUDA_ERROR_NOT_FOUND;
  for (int i = 0; i < n; i++) {
    const ag_kinfo_t *k = h[i].k;
    fill_ptrs(ptrs, k, arena + h[i].off);
    CUresult r = ag__real.cuLaunchKernel((CUfunction)k->fn, h[i].grid[0], h[i].grid[1],
                                         h[i].grid[2], h[i].block[0], h[i].block[1],
                                         h[i].block[2], h[i].shmem, (CUstream)stream,
                                         k->nparams ? ptrs : NULL, NULL);
    if (r && !first) first = r;
  }
  return first;
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

/* Destroys what it can of k; returns 1 when nothing is left. */
static int destroy(kept_t *k) {
  if (k->exec && (!ag__real.cuGraphExecDestroy || !ag__real.cuGraphExecDestroy(k->exec)))
    k->exec = NULL;
  /* An exec does not need the graph it was made from. */
  if (k->g && (!ag__real.cuGraphDestroy || !ag__real.cuGraphDestroy(k->g))) k->g = NULL;
  return !k->exec && !k->g;
}

void ag__graph_free(ag_graph_t *g) {
  if (!g) return;
  kept_t k = {g->exec, g->g};
  free(g->nodes), free(g->off), free(g->args), free(g->ptrs), free(g->varied), free(g);
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

int ag__graph_build(ag_graph_t **out, const ag_held_t *h, int n, const uint8_t *arena) {
  ag_graph_t *g;
  size_t bytes = 0;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  *out = NULL;
  if (!ag__real.cuGraphCreate || !ag__real.cuGraphAddKernelNode ||
      !ag__real.cuGraphInstantiateWithFlags || !ag__real.cuGraphLaunch ||
      !ag__real.cuGraphExecKernelNodeSetParams)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!(g = calloc(1, sizeof *g))) return r;
  g->n = n;
  for (int i = 0; i < n; i++) {
    bytes += h[i].k->param_bytes;
    if (h[i].k->nparams > g->maxp) g->maxp = h[i].k->nparams;
  }
  g->nodes = calloc((size_t)n, sizeof *g->nodes);
  g->off = calloc((size_t)n, sizeof *g->off);
  g->args = malloc(bytes ? bytes : 1);
  g->ptrs = calloc(g->maxp ? g->maxp : 1, sizeof *g->ptrs);
  g->varied = calloc(2 * (size_t)n, sizeof *g->varied);
  if (!g->nodes || !g->off || !g->args || !g->ptrs || !g->varied) goto fail;
  bytes = 0;
  for (int i = 0; i < n; i++) {
    g->off[i] = (uint32_t)bytes;
    memcpy(g->args + bytes, arena + h[i].off, h[i].k->param_bytes);
    bytes += h[i].k->param_bytes;
  }
  if ((r = ag__real.cuGraphCreate(&g->g, 0))) goto fail;
  for (int i = 0; i < n; i++) {
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    fill_ptrs(g->ptrs, h[i].k, g->args + g->off[i]);
    node_params(&p, &h[i], h[i].k->nparams ? g->ptrs : NULL);
    /* A chain: each node depends on the one before, as the launches did in their stream. */
    if ((r = ag__real.cuGraphAddKernelNode(&g->nodes[i], g->g, i ? &g->nodes[i - 1] : NULL,
                                           i ? 1 : 0, &p)))
      goto fail;
  }
  if ((r = ag__real.cuGraphInstantiateWithFlags(&g->exec, g->g, 0))) goto fail;
  *out = g;
  return 0;
fail:
  ag__graph_free(g);
  return r ? r : CUDA_ERROR_UNKNOWN;
}

int ag__graph_replay(ag_graph_t *g, const ag_held_t *h, const uint8_t *arena, void *stream,
                     uint64_t *updates) {
  CUresult r;
  for (int i = 0; i < g->n; i++) {
    const ag_kinfo_t *k = h[i].k;
    uint8_t *mine = g->args + g->off[i];
    if (!k->param_bytes || !memcmp(mine, arena + h[i].off, k->param_bytes)) continue;
    /* Parameters are copied by the driver at the call, so the graph's own copy may be
     * overwritten first and pointed to. */
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    note_varied(g, i, k, mine, arena + h[i].off);
    memcpy(mine, arena + h[i].off, k->param_bytes);
    fill_ptrs(g->ptrs, k, mine);
    node_params(&p, &h[i], g->ptrs);
    if ((r = ag__real.cuGraphExecKernelNodeSetParams(g->exec, g->nodes[i], &p))) {
      /* The exec may now hold either version of this node: force an update next time. */
      memset(mine, 0, k->param_bytes);
      mine[0] = (uint8_t)~arena[h[i].off];
      return r;
    }
    (*updates)++;
  }
  return ag__real.cuGraphLaunch(g->exec, (CUstream)stream);
}
