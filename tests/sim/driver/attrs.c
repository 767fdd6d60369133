/* attrs.c — launch attributes of launches (cuLaunchKernelEx) and kernel nodes
 * (cuGraphKernelNodeSetAttribute / GetAttribute), and what the running kernel's twin can see.
 *
 * Where each id is valid follows the CUDA 13 header's notes on CUlaunchAttributeID ("Valid for
 * streams, graph nodes, launches"): a kernel node takes the access policy window, cooperative,
 * cluster dimension, cluster scheduling policy preference, priority, memory sync domain and map,
 * preferred cluster dimension and NVLink-centric scheduling; the programmatic attributes, the
 * launch completion event and the shared-memory carveout are valid for launches only, the
 * synchronization policy for streams only. Values are checked as documented:
 *   - cluster dimension: every dimension at least 1 and dividing the grid's, at most 8 blocks
 *     (the portable cluster size) → else CUDA_ERROR_INVALID_CLUSTER_SIZE;
 *   - preferred cluster dimension: dividing the grid, a multiple of the cluster dimension when
 *     one is set, z equal to it → else CUDA_ERROR_INVALID_CLUSTER_SIZE;
 *   - cooperative: the grid must be co-resident, at most drv_blocks_per_sm (below) × 132 SMs
 *     blocks → CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
 *   - priority: clamped to the context's range [-5, 0], as stream priorities are;
 *   - memory sync domain 0 or 1, scheduling policy 0..2, NVLink-centric 0 or 1, window hit and
 *     miss properties valid, hit ratio in [0, 1] → else CUDA_ERROR_INVALID_VALUE.
 * Device-updatable kernel nodes are not simulated (CUDA_ERROR_NOT_SUPPORTED).
 *
 * The simulated device runs kernels one at a time, so no attribute changes how a kernel runs;
 * instead the twin of the running kernel can ask for the attributes it was launched with
 * (simctl_launch_attr), which is how the tests see that a replayed graph carries the
 * attributes of the launches it stands for.
 */
#include "drv.h"

#include <string.h>

#define NVLINK_CENTRIC 16 /* CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING */

const drv_kattrs_t drv_kattrs_none;

static __thread const drv_kattrs_t *running;

void drv_kattr_running(const drv_kattrs_t *ka) { running = ka; }

/* The simulator's control for twins: the value of attribute `id` the running kernel was
 * launched with (its default when not given) in *out. Returns 1 when it was given, 0 when not,
 * -1 outside a kernel's twin or for an id out of range. */
int simctl_launch_attr(int id, CUlaunchAttributeValue *out) {
  if (!running || id < 0 || id >= DRV_KATTR_IDS || !out) return -1;
  *out = running->v[id];
  return (running->set >> id) & 1;
}

static int valid_at(int id, int where) {
  switch (id) {
  case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
  case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
  case CU_LAUNCH_ATTRIBUTE_PRIORITY:
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
  case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
  case NVLINK_CENTRIC:
    return 1;
  case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
  case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    return where == DRV_KATTR_LAUNCH;
  default:
    return 0;
  }
}

static CUresult check_cluster(const drv_kattrs_t *ka, dim3 grid) {
  const unsigned cl = 1u << CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  const unsigned pcl = 1u << CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION;
  unsigned x = 1, y = 1, z = 1;
  if (ka->set & cl) {
    x = ka->v[CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION].clusterDim.x;
    y = ka->v[CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION].clusterDim.y;
    z = ka->v[CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION].clusterDim.z;
    if (!x || !y || !z || grid.x % x || grid.y % y || grid.z % z || (uint64_t)x * y * z > 8)
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  if (ka->set & pcl) {
    unsigned px = ka->v[CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION].preferredClusterDim.x;
    unsigned py = ka->v[CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION].preferredClusterDim.y;
    unsigned pz = ka->v[CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION].preferredClusterDim.z;
    if (!px || !py || !pz || grid.x % px || grid.y % py || grid.z % pz || px % x || py % y ||
        pz != z)
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  return CUDA_SUCCESS;
}

/* ---- occupancy ---- */

/* The occupancy model of one SM of the simulated H100-class device (compute capability 9.0):
 * 2048 resident threads (64 warps), at most 32 resident blocks, 228 KiB of shared memory of
 * which each block that uses shared memory also takes 1 KiB reserved by the system. Registers
 * never limit more than threads do (every kernel reports 32 registers per thread:
 * 65536 / 32 = 2048 threads), and kernels have no static shared memory here. */
#define SM_MAX_THREADS 2048u
#define SM_MAX_BLOCKS 32u
#define SM_SHMEM (228u * 1024u)
#define SM_SHMEM_RESERVED 1024u

unsigned drv_blocks_per_sm(unsigned threads, size_t shmem) {
  if (threads == 0 || threads > 1024) return 0;
  unsigned warps = (threads + 31) / 32;
  unsigned n = SM_MAX_BLOCKS;
  if (SM_MAX_THREADS / 32 / warps < n) n = SM_MAX_THREADS / 32 / warps;
  if (shmem) {
    size_t per_block = shmem + SM_SHMEM_RESERVED;
    if (SM_SHMEM / per_block < n) n = (unsigned)(SM_SHMEM / per_block);
  }
  return n;
}

CUresult drv_coop_check(dim3 grid, dim3 block, size_t shmem) {
  unsigned threads = block.x * block.y * block.z;
  /* A block or shared memory size the launch refuses anyway is left to its own check
   * (CUDA_ERROR_INVALID_VALUE). */
  if (!block.x || !block.y || !block.z || (uint64_t)block.x * block.y * block.z > 1024 ||
      shmem > DRV_MAX_SHMEM_OPTIN)
    return CUDA_SUCCESS;
  uint64_t most = (uint64_t)drv_blocks_per_sm(threads, shmem) * DRV_SMS;
  return (uint64_t)grid.x * grid.y * grid.z > most ? CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
                                                    : CUDA_SUCCESS;
}

static CUresult occupancy(int *num, CUfunction f, int block_size, size_t shmem,
                          unsigned int flags) {
  drv_func_t *fn;
  CUresult r = drv_func(f, &fn);
  if (r) return r;
  if (!num || block_size <= 0 ||
      (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
    return CUDA_ERROR_INVALID_VALUE;
  /* A block or dynamic shared memory the function cannot be launched with fits 0 times. */
  *num = shmem > (size_t)fn->max_dyn_shmem ? 0
                                            : (int)drv_blocks_per_sm((unsigned)block_size, shmem);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *num, CUfunction f,
                                                             int block_size, size_t shmem) {
  DRV_FAIL("cuOccupancyMaxActiveBlocksPerMultiprocessor", CUDA_ERROR_INVALID_VALUE);
  return occupancy(num, f, block_size, shmem, 0);
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *num, CUfunction f,
                                                                      int block_size,
                                                                      size_t shmem,
                                                                      unsigned int flags) {
  DRV_FAIL("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", CUDA_ERROR_INVALID_VALUE);
  return occupancy(num, f, block_size, shmem, flags);
}

/* ---- attributes ---- */

static CUresult check_coop(const drv_kattrs_t *ka, drv_kshape_t sh) {
  if ((ka->set >> CU_LAUNCH_ATTRIBUTE_COOPERATIVE & 1) &&
      ka->v[CU_LAUNCH_ATTRIBUTE_COOPERATIVE].cooperative)
    return drv_coop_check(sh.grid, sh.block, sh.shmem);
  return CUDA_SUCCESS;
}

CUresult drv_kattr_recheck(const drv_kattrs_t *ka, drv_kshape_t sh) {
  CUresult r = check_cluster(ka, sh.grid);
  return r ? r : check_coop(ka, sh);
}

CUresult drv_kattr_set(drv_kattrs_t *ka, int where, CUlaunchAttributeID id,
                       const CUlaunchAttributeValue *v, drv_kshape_t sh) {
  CUlaunchAttributeValue n;
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  if ((int)id == CU_LAUNCH_ATTRIBUTE_IGNORE && where == DRV_KATTR_LAUNCH) return CUDA_SUCCESS;
  if ((int)id == CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE) return CUDA_ERROR_NOT_SUPPORTED;
  if (where == DRV_KATTR_LAUNCH && (int)id == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY)
    return CUDA_SUCCESS; /* accepted and without effect here, as before */
  if ((int)id < 0 || (int)id >= DRV_KATTR_IDS || !valid_at((int)id, where))
    return CUDA_ERROR_INVALID_VALUE;
  memset(&n, 0, sizeof n);
  switch ((int)id) {
  case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
    const CUaccessPolicyWindow *w = &v->accessPolicyWindow;
    if (!(w->hitRatio >= 0.0f && w->hitRatio <= 1.0f) ||
        (unsigned)w->hitProp > CU_ACCESS_PROPERTY_PERSISTING ||
        (w->missProp != CU_ACCESS_PROPERTY_NORMAL && w->missProp != CU_ACCESS_PROPERTY_STREAMING))
      return CUDA_ERROR_INVALID_VALUE;
    n.accessPolicyWindow.base_ptr = w->base_ptr;
    n.accessPolicyWindow.num_bytes = w->num_bytes;
    n.accessPolicyWindow.hitRatio = w->hitRatio;
    n.accessPolicyWindow.hitProp = w->hitProp;
    n.accessPolicyWindow.missProp = w->missProp;
    break;
  }
  case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: n.cooperative = v->cooperative != 0; break;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    n.clusterDim.x = v->clusterDim.x, n.clusterDim.y = v->clusterDim.y;
    n.clusterDim.z = v->clusterDim.z;
    break;
  case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    n.preferredClusterDim.x = v->preferredClusterDim.x;
    n.preferredClusterDim.y = v->preferredClusterDim.y;
    n.preferredClusterDim.z = v->preferredClusterDim.z;
    break;
  case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    if ((unsigned)v->clusterSchedulingPolicyPreference > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
      return CUDA_ERROR_INVALID_VALUE;
    n.clusterSchedulingPolicyPreference = v->clusterSchedulingPolicyPreference;
    break;
  case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    n.priority = v->priority > 0 ? 0 : v->priority < -5 ? -5 : v->priority;
    break;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: n.memSyncDomainMap = v->memSyncDomainMap; break;
  case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    if ((unsigned)v->memSyncDomain > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE) return CUDA_ERROR_INVALID_VALUE;
    n.memSyncDomain = v->memSyncDomain;
    break;
  case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    /* Stream order is kept anyway: the simulated device never overlaps two kernels. */
    n.programmaticStreamSerializationAllowed = v->programmaticStreamSerializationAllowed;
    break;
  case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    if (v->sharedMemCarveout > 100) return CUDA_ERROR_INVALID_VALUE;
    n.sharedMemCarveout = v->sharedMemCarveout;
    break;
  case NVLINK_CENTRIC: {
    unsigned u;
    memcpy(&u, v, sizeof u);
    if (u > 1) return CUDA_ERROR_INVALID_VALUE;
    memcpy(&n, &u, sizeof u);
    break;
  }
  }
  drv_kattrs_t t = *ka;
  t.v[id] = n;
  t.set |= 1u << id;
  CUresult r = drv_kattr_recheck(&t, sh);
  if (r) return r;
  *ka = t;
  return CUDA_SUCCESS;
}

CUresult drv_kattr_get(const drv_kattrs_t *ka, CUlaunchAttributeID id, CUlaunchAttributeValue *v) {
  if (!v || (int)id < 0 || (int)id >= DRV_KATTR_IDS || !valid_at((int)id, DRV_KATTR_NODE))
    return CUDA_ERROR_INVALID_VALUE;
  *v = ka->v[id];
  return CUDA_SUCCESS;
}
