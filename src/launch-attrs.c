/* launch-attrs.c — launch attributes, cooperative launches and `extra` buffers of held launches
 * (see launch-attrs.h and docs/launch-attributes.md).
 *
 * Every attribute is normalised into a zeroed CUlaunchAttribute holding only the bytes its id
 * means (a program may leave garbage in the rest of the 64-byte value union): the hash, the held
 * copy and the node all see the same record. Which ids a kernel node takes follows the CUDA 13
 * header's "Valid for graph nodes" notes on CUlaunchAttributeID.
 *
 * To confirm on a GPU: that a graph of kernel nodes carrying these attributes (cooperative and
 * cluster nodes among ordinary ones, in one chain) instantiates and runs as the launches did;
 * only the simulator has shown it (tests/progs/attrs.cu).
 */
#include "launch-attrs.h"

#include <string.h>

#include "real.h"
#include "segment.h"
#include "stats.h"

/* CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING (CUDA 13 headers; spelt as a number so that
 * the file builds against the CUDA 12 headers too). */
#define AG_LA_NVLINK_CENTRIC 16

/* Normalises `in` into `out`. Returns 1 when the attribute goes into the held copy, 0 when it
 * has no effect on a held launch (IGNORE, disabled cooperative, programmatic stream
 * serialization), -1 when a launch with it cannot be held. */
static int norm(const CUlaunchAttribute *in, CUlaunchAttribute *out) {
  memset(out, 0, sizeof *out);
  out->id = in->id;
  switch ((int)in->id) {
  case CU_LAUNCH_ATTRIBUTE_IGNORE:
    return 0;
  case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    /* The held launch keeps the full dependency on the one before it (stream order for the
     * launches submitted one by one, an ordinary edge in the graph's chain): the overlap it
     * allows is an allowance, never an obligation, and the kernel's grid-dependency wait then
     * returns with the previous kernel complete. */
    return 0;
  case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
    if (!in->value.cooperative) return 0;
    out->value.cooperative = 1;
    return 1;
  case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    out->value.accessPolicyWindow.base_ptr = in->value.accessPolicyWindow.base_ptr;
    out->value.accessPolicyWindow.num_bytes = in->value.accessPolicyWindow.num_bytes;
    out->value.accessPolicyWindow.hitRatio = in->value.accessPolicyWindow.hitRatio;
    out->value.accessPolicyWindow.hitProp = in->value.accessPolicyWindow.hitProp;
    out->value.accessPolicyWindow.missProp = in->value.accessPolicyWindow.missProp;
    return 1;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    out->value.clusterDim.x = in->value.clusterDim.x;
    out->value.clusterDim.y = in->value.clusterDim.y;
    out->value.clusterDim.z = in->value.clusterDim.z;
    return 1;
  case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    out->value.preferredClusterDim.x = in->value.preferredClusterDim.x;
    out->value.preferredClusterDim.y = in->value.preferredClusterDim.y;
    out->value.preferredClusterDim.z = in->value.preferredClusterDim.z;
    return 1;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    out->value.clusterSchedulingPolicyPreference = in->value.clusterSchedulingPolicyPreference;
    return 1;
  case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    out->value.priority = in->value.priority;
    return 1;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    out->value.memSyncDomainMap = in->value.memSyncDomainMap;
    return 1;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    out->value.memSyncDomain = in->value.memSyncDomain;
    return 1;
  case AG_LA_NVLINK_CENTRIC:
    memcpy(&out->value, &in->value, sizeof(unsigned));
    return 1;
  default:
    /* Programmatic events and launch-completion events (an event a node cannot record), the
     * stream-only synchronization policy, the launch-only shared-memory carveout, device-
     * updatable nodes (graphs only, refused by an ordinary launch) and ids this file does not
     * know. */
    return -1;
  }
}

/* The `extra` array's buffer and declared size; 0 when it is one the engine can unpack. */
static int extra_buffer(void *const *extra, const void **buf, size_t *size) {
  int have_buf = 0, have_size = 0;
  *buf = NULL, *size = 0;
  if (!extra) return -1;
  for (unsigned i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (i >= 64) return -1; /* not terminated within reason: the driver's business */
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      *buf = extra[i + 1], have_buf = 1;
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      if (!extra[i + 1]) return -1;
      *size = *(const size_t *)extra[i + 1], have_size = 1;
    } else {
      return -1;
    }
  }
  return have_buf && have_size && *buf ? 0 : -1;
}

/* The end of the kernel's last parameter: the bytes an `extra` buffer must hold. */
static size_t params_end(const ag_kinfo_t *k) {
  size_t end = 0;
  for (uint32_t j = 0; j < k->nparams; j++)
    if (k->params[j].offset + k->params[j].size > end) end = k->params[j].offset + k->params[j].size;
  return end;
}

int ag__lattr_reason(const ag_launch_t *l, const ag_kinfo_t *k) {
  const CUlaunchAttribute *a = l->attrs;
  CUlaunchAttribute n;
  int coop = l->coop;
  int kept = coop;
  if (l->extra) {
    /* args is the `extra` array (NULL when kernelParams came too: the driver refuses that). */
    const void *buf;
    size_t size;
    if (!l->args) return AG_FB_ATTRIBUTES + 1;
    if (k->nparams && (extra_buffer(l->args, &buf, &size) || size < params_end(k)))
      return AG_FB_ATTRIBUTES + 1;
  } else if (!l->args && k->nparams) {
    return AG_FB_ATTRIBUTES + 1;
  }
  if (l->nattrs && !a) return AG_FB_ATTRIBUTES + 1;
  for (unsigned i = 0; i < l->nattrs; i++) {
    int r = norm(&a[i], &n);
    if (r < 0) return AG_FB_ATTRIBUTES + 1;
    kept |= r;
    coop |= r && n.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  }
  /* Held attributes are performed through these two; without them the launch runs as it came
   * (counted as cooperative when it is one: the reason a driver without them could not hold). */
  if (kept && (!ag__real.cuLaunchKernelEx || !ag__real.cuGraphKernelNodeSetAttribute))
    return coop ? AG_FB_COOPERATIVE + 1 : AG_FB_ATTRIBUTES + 1;
  if (l->extra && k->nparams > 256) return AG_FB_ATTRIBUTES + 1; /* the layout cap (kinfo.c) */
  return 0;
}

void ag__lattr_geometry(const ag_launch_t *l, unsigned cluster[3], unsigned pref[3], int *coop) {
  CUlaunchAttribute n;
  memset(cluster, 0, 3 * sizeof *cluster), memset(pref, 0, 3 * sizeof *pref);
  *coop = l->coop;
  for (unsigned i = 0; l->attrs && i < l->nattrs; i++) {
    if (norm((const CUlaunchAttribute *)l->attrs + i, &n) <= 0) continue;
    if (n.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) *coop = 1;
    if (n.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      cluster[0] = n.value.clusterDim.x, cluster[1] = n.value.clusterDim.y, cluster[2] = n.value.clusterDim.z;
    if (n.id == CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION)
      pref[0] = n.value.preferredClusterDim.x, pref[1] = n.value.preferredClusterDim.y,
      pref[2] = n.value.preferredClusterDim.z;
  }
}

uint64_t ag__lattr_hash(uint64_t h, const ag_launch_t *l) {
  CUlaunchAttribute n;
  uint64_t w[sizeof n / 8];
  _Static_assert(sizeof n % 8 == 0, "CUlaunchAttribute is a whole number of words");
  if (l->coop) h = ag__mix64(h ^ 0xC00Bull);
  if (l->extra) {
    /* The declared size is part of what the driver accepted: another size is another entry. */
    const void *buf;
    size_t size;
    if (!extra_buffer(l->args, &buf, &size)) h = ag__mix64(h ^ 0xE87Aull ^ ((uint64_t)size << 16));
  }
  for (unsigned i = 0; i < l->nattrs; i++) {
    if (norm((const CUlaunchAttribute *)l->attrs + i, &n) <= 0) continue;
    memcpy(w, &n, sizeof n);
    for (size_t j = 0; j < AG_ARRAY_SIZE(w); j++) h = ag__mix64(h ^ w[j] ^ (j << 56));
  }
  return h;
}

size_t ag__lattr_bytes(const ag_launch_t *l) {
  CUlaunchAttribute n;
  size_t c = l->coop ? 1 : 0;
  for (unsigned i = 0; i < l->nattrs; i++)
    if (norm((const CUlaunchAttribute *)l->attrs + i, &n) > 0) c++;
  return c * sizeof n;
}

void ag__lattr_hold(ag_held_t *h, const ag_launch_t *l, const ag_kinfo_t *k, uint8_t *args,
                    uint8_t *arena, size_t at) {
  CUlaunchAttribute *out = (CUlaunchAttribute *)(void *)(arena + at);
  uint32_t c = 0;
  if (l->extra && k->nparams) {
    /* Unpacked by the layout, as the driver does: the bytes of each parameter at its offset
     * (padding between them stays whatever the arena held; no one reads it). */
    const void *buf;
    size_t size;
    if (extra_buffer(l->args, &buf, &size) == 0) /* checked by ag__lattr_reason */
      for (uint32_t j = 0; j < k->nparams; j++)
        memcpy(args + k->params[j].offset, (const uint8_t *)buf + k->params[j].offset,
               k->params[j].size);
  }
  if (l->coop) {
    memset(&out[c], 0, sizeof out[c]);
    out[c].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    out[c++].value.cooperative = 1;
  }
  for (unsigned i = 0; i < l->nattrs; i++) {
    CUlaunchAttribute n; /* not into out[c]: a dropped last entry must not write past the end */
    if (norm((const CUlaunchAttribute *)l->attrs + i, &n) > 0) out[c++] = n;
  }
  h->aoff = (uint32_t)at;
  h->nattrs = c;
}

int ag__lattr_apply_node(CUgraphNode node, const ag_held_t *h, const uint8_t *arena) {
  const CUlaunchAttribute *a = ag__lattr_of(h, arena);
  if (!ag__real.cuGraphKernelNodeSetAttribute) return CUDA_ERROR_NOT_SUPPORTED;
  for (uint32_t i = 0; i < h->nattrs; i++) {
    CUresult r = ag__real.cuGraphKernelNodeSetAttribute(node, a[i].id, &a[i].value);
    if (r) return r;
  }
  return 0;
}

int ag__lattr_launch(const ag_held_t *h, const uint8_t *arena, void *stream, void **params) {
  CUlaunchConfig c;
  if (!ag__real.cuLaunchKernelEx) return CUDA_ERROR_NOT_FOUND;
  memset(&c, 0, sizeof c);
  c.gridDimX = h->grid[0], c.gridDimY = h->grid[1], c.gridDimZ = h->grid[2];
  c.blockDimX = h->block[0], c.blockDimY = h->block[1], c.blockDimZ = h->block[2];
  c.sharedMemBytes = h->shmem;
  c.hStream = (CUstream)stream;
  c.attrs = (CUlaunchAttribute *)(uintptr_t)ag__lattr_of(h, arena);
  c.numAttrs = h->nattrs;
  return ag__real.cuLaunchKernelEx(&c, (CUfunction)h->k->fn, params, NULL);
}
