/* graph.h — held launches, and graphs built from them (build, update, launch, release).
 *
 * A held launch is a kernel (ag_kinfo_t), its dimensions and a copy of its argument bytes in the
 * engine's arena, packed by the kernel's layout. The functions here perform held launches
 * through the real driver (ag__real): one by one as ordinary launches, or as a graph built
 * explicitly with cuGraphCreate + cuGraphAddKernelNode (each node depending on the previous
 * one, so stream order is kept) + cuGraphInstantiateWithFlags. A sequence's graph is cut into
 * chunks, each a CUDA graph of its own that the engine launches as soon as the chunk's last
 * entry is held, so that the GPU starts on a sequence before the host has issued all of it.
 * Replaying a chunk first applies the arguments that differ from the graph's with
 * cuGraphExecKernelNodeSetParams; a proper prefix of a chunk is replayed with its later nodes
 * disabled. The caller makes the right context current. Functions return 0 or a CUresult (never an AG_E… code:
 * the engine only needs to know that the graph path failed).
 */
#ifndef AG_GRAPH_H
#define AG_GRAPH_H

#include <pthread.h>
#include <stdint.h>

#include "kinfo.h"

typedef struct ag_held {
  ag_kinfo_t *k;
  uint64_t t;   /* when it was held (ag__now_ns): the host's pace, which chunks follow */
  unsigned grid[3], block[3], shmem;
  uint32_t off; /* argument bytes at arena + off, k->param_bytes long */
  /* Launch attributes kept for it (src/launch-attrs.h): nattrs CUlaunchAttribute records at
   * arena + aoff; nattrs is 0 for a launch without any. */
  uint32_t aoff, nattrs;
  pthread_t owner; /* the thread that made the launch (a failure is reported to it) */
} ag_held_t;

/* Stream operations held as graph nodes. Their held entries name a pseudo-kernel
 * record (the engine's) whose fkind is one of these, whose parameter layout describes the
 * operation's bytes in the arena, and whose fn is NULL: the bytes are compared and updated like
 * kernel arguments, and the node is a memset node (one-dimensional, bytes), an event record
 * node, an event wait node, or a memcpy node (one-dimensional, between device memory and device
 * or pinned host memory). */
enum { AG_OP_MEMSET = 16, AG_OP_EVENT_RECORD, AG_OP_EVENT_WAIT, AG_OP_MEMCPY };
typedef struct ag_op_memset {
  uint64_t dst, bytes;
  uint32_t value, elem; /* elem: 1 (cudaMemsetAsync sets bytes) */
} ag_op_memset_t;
typedef struct ag_op_memcpy {
  uint64_t dst, src, bytes;
  uint32_t dtype, stype; /* CUmemorytype of each side: device, or host memory the driver knows
                          * (pinned or registered) */
} ag_op_memcpy_t;
typedef struct ag_op_event {
  uint64_t ev;
  uint32_t flags, pad;
} ag_op_event_t;

typedef struct ag_graph ag_graph_t;

/* Submits held launches as ordinary launches on `stream` (those with attributes through
 * cuLaunchKernelEx, with the same attributes); returns the first failure (all are
 * attempted: each is independent work the program asked for), with its index in *first and
 * the number of launches that failed in *nfailed. */
int ag__held_submit(const ag_held_t *h, int n, const uint8_t *arena, void *stream, int *first,
                    int *nfailed);

/* Builds and instantiates the graphs of the n held launches, one per chunk: chunk j holds
 * entries [starts[j], starts[j + 1]) (starts[0] is 0, ascending; the last chunk ends at n).
 * At AUTOGRAPH_FUSE=chains, `request` nonzero requests the generated kernels of chains whose
 * shape was never requested (src/fchain.h); with 0 only those already known are used. */
int ag__graph_build(ag_graph_t **out, const ag_held_t *h, int n, const uint8_t *arena,
                    const int *starts, int nchunks, int request);

/* Moves the chunk boundaries starts[1 .. nchunks - 1] (starts[nchunks] is n) out of every run of
 * held launches a kernel pattern (src/pattern.h) or a generated chain kernel (src/fchain.h) may
 * replace: a boundary inside one moves to the run's first launch, or goes when its chunk began
 * there. A fused node never spans two graphs.
 * Returns the number of chunks left. (ag__graph_build does it when AUTOGRAPH_FUSE allows.) */
int ag__graph_align_chunks(const ag_held_t *h, int n, const uint8_t *arena, int *starts,
                           int nchunks);

/* The number of chunks; *starts gets their first entries (nchunks + 1 values, the last n). */
int ag__graph_chunks(const ag_graph_t *g, const int **starts);

/* Nonzero when g was built while generated kernels of its chains were not ready (or the
 * calibration table was being read), or, for a `steady` sequence, not requested (the compiler's
 * queue was full), and one of them has since become ready or failed (src/fchain.h): building it
 * again from a run of its sequence substitutes what is ready, and requests what was not. */
int ag__graph_waits(const ag_graph_t *g, int steady);
/* g waits for the next change only (its rebuild failed). */
void ag__graph_waited(ag_graph_t *g);
/* The chains of g whose generated kernel was not requested when it was built (request 0). */
int ag__graph_later(const ag_graph_t *g);

/* Prepares chunk j to run for the held run h (from the sequence's first entry): its entries
 * h[start_j + from .. start_j + to). All of them: updates the nodes whose arguments differ
 * (adding their number to *updates); ag__graph_launch_chunk then launches the chunk on a
 * stream (two steps, so that what a replay updated is known before its launch). A part (a step that
 * ended early, at a call that observes its stream; or a run whose first entries went in the
 * graph of another sequence that begins the same way): the same, with the nodes outside it
 * disabled (cuGraphNodeSetEnabled; a disabled node runs as an empty node). Nodes stay as they
 * are until a later replay needs them otherwise, so toggles are paid only when parts and whole
 * chunks alternate. Returns AG_GRAPH_NO_PREFIX, having launched nothing, when the part cannot be
 * served: the driver lacks cuGraphNodeSetEnabled, the part begins or ends inside a fused node,
 * a node outside it is an event record or wait (CUDA cannot disable those), or a fused node in
 * it no longer matches (rebuilding it needs the whole chunk). */
#define AG_GRAPH_NO_PREFIX (-1)
int ag__graph_prepare_chunk(ag_graph_t *g, int j, const ag_held_t *h, int from, int to,
                            const uint8_t *arena, uint64_t *updates);
/* Launches chunk j, as the last ag__graph_prepare_chunk of it left it, on `stream`. Returns 0 or
 * the CUDA error. */
int ag__graph_launch_chunk(ag_graph_t *g, int j, void *stream);

/* Whether entries [from, to) of chunk j can run alone (the conditions above, but for a fused
 * node that no longer matches, which only a replay finds). */
int ag__graph_can_run(const ag_graph_t *g, int j, int from, int to);

/* Estimated device memory of a graph of n kernel nodes (bytes). */
size_t ag__graph_cost(int n);

/* Which parameters of held launch i (of the sequence) replays have changed (bit j: parameter j,
 * the first 64 only) and which of those changes did not look like an address (src/dump.h).
 * Zero for a NULL graph. */
void ag__graph_varied(const ag_graph_t *g, int i, uint64_t *changed, uint64_t *value);

/* Context `ctx` (NULL: every context) is ending: forgets the embedded module loaded there.
 * Engine lock held. */
void ag__graph_ctx_gone(void *ctx);

/* Destroys the graphs and their execs; a handle whose destroy fails is kept and retried later. */
void ag__graph_free(ag_graph_t *g);

#endif
