/* validity.h — whether the driver would refuse a launch or operation that is about to be held.
 *
 * A held launch is acknowledged with success before it runs, so holding one is only right when
 * its submission will succeed. Its structure (kernel, block, dynamic shared memory, attributes)
 * is part of the sequence's hash and succeeded when the sequence was learned; what the hash
 * leaves out is checked here, against the rules the driver applies at launch
 * (docs/launch-safety.md):
 *   - the grid: every dimension at least 1, x at most 2^31-1, y and z at most 65,535;
 *   - dynamic shared memory at most the kernel's current limit (a setting may have lowered it
 *     since the sequence was learned);
 *   - clusters: the cluster dimensions of the launch's attributes, and those the kernel itself
 *     requires, divide the grid; a preferred cluster dimension too;
 *   - cooperative launches: no more blocks than can be co-resident (the driver's occupancy for
 *     the kernel, block and shared memory, times the device's multiprocessors);
 *   - memsets and copies: every byte in one allocation the driver knows;
 *   - the context has not reported a device fault (a sticky error): from then on every launch
 *     returns that error, and so must the launches the library would have held.
 * Whatever cannot be read from the driver counts as refused: the launch passes through and
 * the driver decides, as without the library.
 */
#ifndef AG_VALIDITY_H
#define AG_VALIDITY_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "kinfo.h"
#include "launch-attrs.h"

/* The settings generation (bumped by ag__valid_settings_changed) and the number of contexts
 * marked faulted (see below). */
extern uint32_t ag__valid_gen;
extern int ag__valid_nfaulted;

/* Nonzero when launch l of k passes every check below with k's limits read at the current
 * generation, and no context has faulted: the common case, tested inline on every launch about
 * to be held. Zero means "ask ag__valid_launch". */
static inline int ag__valid_plain(const ag_kinfo_t *k, const ag_launch_t *l) {
  /* Bitwise, not logical, and: no branch per check (each is an int, 0 or 1). */
  int ok = l->grid[0] - 1u <= 0x7ffffffeu;
  ok &= l->grid[1] - 1u <= 65534u;
  ok &= l->grid[2] - 1u <= 65534u;
  ok &= k->lim_gen == __atomic_load_n(&ag__valid_gen, __ATOMIC_RELAXED);
  ok &= l->shmem <= k->smem_max;
  ok &= !k->cluster_req;
  ok &= !ag__lattr_any(l);
  ok &= !__atomic_load_n(&ag__valid_nfaulted, __ATOMIC_RELAXED);
  return ok;
}

/* Why the driver would refuse launch l of kernel k (a short text for the trace), or NULL when
 * it would accept it. k's limits are read again when a setting changed since they were read.
 * Engine lock held (the driver is called quietly). */
const char *ag__valid_launch(ag_kinfo_t *k, const ag_launch_t *l);

/* Nonzero when [p, p + bytes) lies in one allocation the driver knows. With `type` (then
 * `managed` too) not NULL, the same query also gives the allocation's memory type
 * (CU_MEMORYTYPE_*, 0 when unknown) and whether it is managed memory. Any lock. */
int ag__valid_range(const void *p, size_t bytes, unsigned *type, int *managed);

/* A setting that may change a launch's validity succeeded with a new value: limits read before
 * are stale. */
void ag__valid_settings_changed(void);

/* A call returned `status` (a CUresult or cudaError_t: the device faults share their values)
 * in context `ctx` (NULL: the calling thread's current one, for a call the program made). When
 * it is a device fault, that context is marked faulted. Cheap when `status` is 0. */
void ag__valid_status(int status, const void *ctx);

/* Nonzero when `ctx` has reported a device fault. One load when none has. */
int ag__valid_faulted_slow(const void *ctx);
static inline int ag__valid_faulted(const void *ctx) {
  return __atomic_load_n(&ag__valid_nfaulted, __ATOMIC_ACQUIRE) && ag__valid_faulted_slow(ctx);
}

/* A context ends (NULL: every one), or every context of device `dev` (AG_DEV_CURRENT: the
 * calling thread's) is reset: a fault it carried is gone with it. */
void ag__valid_ctx_gone(const void *ctx);
void ag__valid_dev_gone(int dev);

#endif
