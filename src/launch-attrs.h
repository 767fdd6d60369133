/* launch-attrs.h — launches with launch attributes, cooperative launches and driver launches
 * whose arguments come in an `extra` buffer: which of them may be held, what of them enters the
 * structural hash, how a held copy keeps them and how they are performed again (docs/
 * launch-attributes.md).
 *
 * A launch attribute is held when a kernel node can express it (cuGraphKernelNodeSetAttribute):
 * cluster dimension, cluster scheduling policy preference, preferred cluster dimension,
 * cooperative, priority, memory sync domain and domain map, access policy window, NVLink-centric
 * scheduling. Programmatic stream serialization is dropped: the held launch keeps the full
 * stream dependency on the launch before it (a graph edge), which the kernel cannot tell from a
 * dependency its programmatic wait resolved. Anything else (programmatic event, launch
 * completion event, the stream-only synchronization policy, shared-memory carveout, device-
 * updatable nodes, unknown ids) makes the launch a fallback: it passes through and cuts.
 *
 * The held copy keeps the attributes in the engine's arena, normalised (no IGNORE entries, no
 * disabled cooperative or serialization entries; a cooperative entry point adds a cooperative
 * entry), as CUlaunchAttribute records 8-byte aligned; ag_held_t names them (aoff, nattrs). The
 * structural hash of the launch mixes in exactly those records (and, for an `extra` buffer, its
 * declared size), so a launch whose attributes differ is a different sequence entry: a graph
 * built with some attributes is never replayed for launches with others.
 *
 * Nothing here runs for a launch without attributes, `extra` buffer or cooperative entry point:
 * the engine tests the three fields first (ag__lattr_any).
 */
#ifndef AG_LAUNCH_ATTRS_H
#define AG_LAUNCH_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "engine.h"
#include "graph.h"
#include "kinfo.h"

/* Nonzero when the launch needs this file: attributes, a cooperative entry point, `extra`. */
static inline int ag__lattr_any(const ag_launch_t *l) {
  return (l->nattrs | l->coop | l->extra) != 0;
}

/* Why the launch cannot be held (enum ag_fallback + 1), or 0. Only for ag__lattr_any launches. */
int ag__lattr_reason(const ag_launch_t *l, const ag_kinfo_t *k);

/* What the driver checks of l's grid against its attributes (src/validity.h): the cluster
 * dimension (0s when none), the preferred cluster dimension (0s when none) and whether the
 * launch is cooperative (a cooperative entry point, or the attribute enabled). */
void ag__lattr_geometry(const ag_launch_t *l, unsigned cluster[3], unsigned pref[3], int *coop);

/* The structural hash h of a holdable ag__lattr_any launch, with its attributes mixed in. */
uint64_t ag__lattr_hash(uint64_t h, const ag_launch_t *l);

/* Arena bytes the held copy of the attributes needs (a multiple of 8, placed 8-aligned). */
size_t ag__lattr_bytes(const ag_launch_t *l);
#define AG_LATTR_ALIGN(n) (((n) + 7u) & ~(size_t)7u)

/* Fills the held copy: the argument bytes at `args` (k->param_bytes) from the `extra` buffer
 * when l->extra (else the caller copied them), and the attributes at `at` (8-aligned, with
 * ag__lattr_bytes(l) bytes free), recorded in h->aoff / h->nattrs as offsets from `arena`. */
void ag__lattr_hold(ag_held_t *h, const ag_launch_t *l, const ag_kinfo_t *k, uint8_t *args,
                    uint8_t *arena, size_t at);

/* The held launch's attributes (h->nattrs records), for a launch or a node. */
static inline const CUlaunchAttribute *ag__lattr_of(const ag_held_t *h, const uint8_t *arena) {
  return (const CUlaunchAttribute *)(const void *)(arena + h->aoff);
}

/* Sets the held launch's attributes on kernel node `node` (before instantiation). */
int ag__lattr_apply_node(CUgraphNode node, const ag_held_t *h, const uint8_t *arena);

/* Performs the held launch as an ordinary launch with its attributes (cuLaunchKernelEx);
 * `params` are its parameter pointers (NULL for a kernel without parameters). */
int ag__lattr_launch(const ag_held_t *h, const uint8_t *arena, void *stream, void **params);

#endif
