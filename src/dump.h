/* dump.h — AUTOGRAPH_DUMP: a JSON document describing every sequence the engine detected.
 *
 * When AUTOGRAPH_DUMP=<path> is set the library writes, to path.tmp and then renamed to path,
 * a document of schema "autograph-dump" version 3 (docs/dump-and-report.md describes every field): at exit,
 * after a SIGUSR1 (a handler that only sets a flag is installed when the program has none; the
 * document is written by the next intercepted call, never inside the handler), and every
 * AUTOGRAPH_DUMP_INTERVAL seconds (checked on intercepted calls; no thread of its own).
 *
 * Writing never disturbs the program: the state is copied under the engine lock
 * (ag__engine_snapshot), formatted and written outside it, and a failure to write costs one
 * warning for the life of the process. At most AUTOGRAPH_DUMP_MAX_SEQ sequences (those with the
 * largest estimated saving) and AG_DUMP_MAX_KERNELS kernels per sequence are written; what was
 * left out is counted in the document.
 *
 * The hooks below are called by the engine under its lock, only where a sequence ends, is
 * replayed, demoted or evicted, where a kernel shape is seen for the first time, and for denied
 * launches: never on the pass-through path of an ordinary launch. When AUTOGRAPH_DUMP is unset
 * ag__dump_armed is zero and none of them is called.
 */
#ifndef AG_DUMP_H
#define AG_DUMP_H

#include <stdint.h>

#include "engine.h"
#include "kinfo.h"
#include "segment.h"

/* Kernels written per sequence at most (the rest is counted in "kernels_omitted"). */
#define AG_DUMP_MAX_KERNELS 256
/* Distinct kernel shapes (and denied kernels) remembered at most; beyond that a sequence's
 * kernel is written with an empty name. */
#define AG_DUMP_MAX_SHAPES 65536

/* Runs of launches (src/stats.h) written at most, the latest. */
#define AG_DUMP_RUNS 1024

enum ag_dump_why { AG_DUMP_EXIT, AG_DUMP_SIGNAL, AG_DUMP_INTERVAL };

/* Nonzero once ag__dump_init found AUTOGRAPH_DUMP set. */
extern int ag__dump_armed;

/* Arms the dump when AUTOGRAPH_DUMP is set (after ag__config_load): SIGUSR1 handler, interval
 * clock. */
void ag__dump_init(void);

/* From intercepted calls, outside the engine lock and not nested: writes the dump when a
 * SIGUSR1 arrived or the interval elapsed. `ordering`: an ordering call (the interval clock is
 * read on every one, on launches only every 64th). */
void ag__dump_poll(int ordering);

/* Writes the dump now (outside the engine lock). */
void ag__dump_write(int why);

/* ---- hooks, engine lock held ------------------------------------------------------------ */

/* A launch of kernel k got structural hash h for the first time with this shape. `lib_call`:
 * the cuDNN call it came from, or NULL. */
void ag__dump_shape(uint64_t h, const ag_kinfo_t *k, const ag_launch_t *l, int path,
                    const char *lib_call);
/* A launch of kernel k was passed through because it is denied (AUTOGRAPH_DENY or NCCL). */
void ag__dump_denied(const ag_kinfo_t *k, const ag_launch_t *l, int path, const char *lib_call);
/* A graph of s was launched on `stream`: the stream the dump names for its nodes. */
void ag__dump_replayed(const ag_seq_t *s, void *stream);
/* Sequence s was demoted for `why`. */
void ag__dump_demoted(const ag_seq_t *s, const char *why);
/* The graph of s is about to be released (`evicted`: pushed out of the graph cache): keeps
 * which parameters its replays updated. */
void ag__dump_graph_gone(const ag_seq_t *s, int evicted);
/* Sequence s is about to be freed (forgotten long ago, src/segment.h): drops what was noted. */
void ag__dump_seq_freed(const ag_seq_t *s);

/* ---- provided by the engine (engine.c) ------------------------------------------------------ */

/* Calls fn(table, launch_ns, arg) under the engine lock; table is NULL before the first launch.
 * launch_ns: the running mean host time of one ordinary launch, 0 when not measured yet. */
void ag__engine_snapshot(void (*fn)(ag_seqtab_t *t, double launch_ns, void *arg), void *arg);

/* ---- for tests ------------------------------------------------------------------------------ */

/* Builds the document from table t (no lock taken) into a malloc'd string. Returns its length,
 * 0 when memory ran out (then *out is NULL). */
size_t ag__dump_render(ag_seqtab_t *t, double launch_ns, int why, char **out);

/* The "pointer" heuristic for a changed 8-byte parameter: both values are nonzero, 16-byte
 * aligned and inside the canonical user half of a 64-bit address space above the first 64 KiB
 * (device allocations, UVA and host pointers all are). Seeds, offsets, counts and the bits of a
 * double rarely satisfy all three for both values. */
static inline int ag__dump_looks_like_address(uint64_t v) {
  return v >= (1ull << 16) && v < (1ull << 47) && (v & 15) == 0;
}

#endif
