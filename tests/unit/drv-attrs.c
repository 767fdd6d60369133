/* drv-attrs.c — the simulated driver's launch attributes: what cuLaunchKernelEx accepts and
 * refuses, kernel-node attributes (cuGraphKernelNodeSetAttribute / GetAttribute: which ids a
 * node takes, values checked against the node's grid, kept across parameter changes, carried
 * into the exec), what the running kernel's twin is told (simctl_launch_attr), and the limit on
 * parameter blocks (32,764 bytes). */
#include "drv-common.h"

#include <stdint.h>

int simctl_launch_attr(int id, CUlaunchAttributeValue *out);

/* What the last run of drv_add was launched with. */
static int seen_cluster_set, seen_prio_set, seen_coop_set;
static CUlaunchAttributeValue seen_cluster, seen_prio;

SIM_KERNEL(drv_add) {
  float *x = SIM_ARG(0, float *);
  float a = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  CUlaunchAttributeValue v;
  seen_cluster_set = simctl_launch_attr(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &seen_cluster);
  seen_prio_set = simctl_launch_attr(CU_LAUNCH_ATTRIBUTE_PRIORITY, &seen_prio);
  seen_coop_set = simctl_launch_attr(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) == 1 && v.cooperative;
  for (unsigned long i = 0; i < (unsigned long)sim_grid.x * sim_block.x; i++)
    if ((int)i < n) x[i] += a;
}

static CUfunction add;

static CUlaunchAttribute cluster(unsigned x, unsigned y) {
  CUlaunchAttribute a;
  memset(&a, 0, sizeof a);
  a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  a.value.clusterDim.x = x, a.value.clusterDim.y = y, a.value.clusterDim.z = 1;
  return a;
}

static void test_launch(CUdeviceptr x) {
  float a = 1;
  int n = 64;
  void *args[] = {&x, &a, &n};
  CUlaunchAttribute at[3];
  at[0] = cluster(2, 1);
  memset(&at[1], 0, sizeof at[1]);
  at[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  at[1].value.priority = -9; /* clamped to the context's greatest priority, -5 */
  memset(&at[2], 0, sizeof at[2]);
  at[2].id = CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION;
  at[2].value.preferredClusterDim.x = 4, at[2].value.preferredClusterDim.y = 1;
  at[2].value.preferredClusterDim.z = 1;
  CUlaunchConfig c = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 16,
                      .blockDimY = 1, .blockDimZ = 1, .attrs = at, .numAttrs = 3};
  CHECK_CU(cuLaunchKernelEx(&c, add, args, NULL));
  CHECK_CU(cuCtxSynchronize());
  CHECK_INT(seen_cluster_set, ==, 1);
  CHECK_INT(seen_cluster.clusterDim.x, ==, 2);
  CHECK_INT(seen_prio_set, ==, 1);
  CHECK_INT(seen_prio.priority, ==, -5);
  /* A preferred cluster must be a multiple of the cluster and divide the grid. */
  at[2].value.preferredClusterDim.x = 3;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&c, add, args, NULL));
  at[2].value.preferredClusterDim.x = 4;
  /* Clusters of more than 8 blocks are not portable. */
  c.gridDimX = 16;
  at[0] = cluster(16, 1);
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&c, add, args, NULL));
  at[0] = cluster(2, 1);
  /* Launch-only and stream-only attributes; device-updatable nodes are for graphs only. */
  at[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  at[1].value.programmaticStreamSerializationAllowed = 1;
  CHECK_CU(cuLaunchKernelEx(&c, add, args, NULL));
  at[1].id = CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(&c, add, args, NULL));
  at[1].id = (CUlaunchAttributeID)99;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(&c, add, args, NULL));
  at[1].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
  at[1].value.memSyncDomain = (CUlaunchMemSyncDomain)7;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(&c, add, args, NULL));
  /* A cooperative launch is one the twin can tell. */
  CHECK_CU(cuLaunchCooperativeKernel(add, 1, 1, 1, 16, 1, 1, 0, NULL, args));
  CHECK_CU(cuCtxSynchronize());
  CHECK_INT(seen_coop_set, ==, 1);
  CHECK_CU(cuLaunchKernel(add, 1, 1, 1, 16, 1, 1, 0, NULL, args, NULL));
  CHECK_CU(cuCtxSynchronize());
  CHECK_INT(seen_coop_set, ==, 0);
  CHECK_INT(seen_cluster_set, ==, 0);
}

static void test_nodes(CUdeviceptr x) {
  float a = 1;
  int n = 64;
  void *args[] = {&x, &a, &n};
  CUDA_KERNEL_NODE_PARAMS p = {.func = add, .gridDimX = 4, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 16, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = args};
  CUgraph g;
  CUgraphNode k;
  CUgraphExec e;
  CUkernelNodeAttrValue v;
  CHECK_CU(cuGraphCreate(&g, 0));
  CHECK_CU(cuGraphAddKernelNode_v2(&k, g, NULL, 0, &p));
  /* Defaults: nothing set. */
  CHECK_CU(cuGraphKernelNodeGetAttribute(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
  CHECK_INT(v.clusterDim.x, ==, 0);
  /* A cluster must divide the node's grid. */
  CUlaunchAttribute c3 = cluster(3, 1), c2 = cluster(2, 1);
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                  cuGraphKernelNodeSetAttribute(k, c3.id, &c3.value));
  CHECK_CU(cuGraphKernelNodeSetAttribute(k, c2.id, &c2.value));
  memset(&v, 0, sizeof v);
  v.priority = -2;
  CHECK_CU(cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
  CHECK_CU(cuGraphKernelNodeGetAttribute(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
  CHECK_INT(v.clusterDim.x, ==, 2);
  /* Valid for launches or streams only, or not simulated. */
  memset(&v, 0, sizeof v);
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, &v));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, &v));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT, &v));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &v));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &v));
  CHECK_STATUS_EQ(CUDA_ERROR_NOT_SUPPORTED,
                  cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v));
  /* New parameters keep the attributes, and must suit them. */
  p.gridDimX = 3;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuGraphKernelNodeSetParams_v2(k, &p));
  p.gridDimX = 8;
  CHECK_CU(cuGraphKernelNodeSetParams_v2(k, &p));
  CHECK_CU(cuGraphKernelNodeGetAttribute(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
  CHECK_INT(v.clusterDim.x, ==, 2);
  /* The exec carries them; an exec node's new parameters keep them too. */
  CHECK_CU(cuGraphInstantiateWithFlags(&e, g, 0));
  seen_cluster_set = seen_prio_set = 0;
  CHECK_CU(cuGraphLaunch(e, NULL));
  CHECK_CU(cuCtxSynchronize());
  CHECK_INT(seen_cluster_set, ==, 1);
  CHECK_INT(seen_cluster.clusterDim.x, ==, 2);
  CHECK_INT(seen_prio.priority, ==, -2);
  a = 2;
  CHECK_CU(cuGraphExecKernelNodeSetParams_v2(e, k, &p));
  seen_cluster_set = 0;
  CHECK_CU(cuGraphLaunch(e, NULL));
  CHECK_CU(cuCtxSynchronize());
  CHECK_INT(seen_cluster_set, ==, 1);
  p.gridDimX = 5;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuGraphExecKernelNodeSetParams_v2(e, k, &p));
  CHECK_CU(cuGraphExecDestroy(e));
  CHECK_CU(cuGraphDestroy(g));
}

static void test_param_limit(CUdeviceptr x) {
  /* An `extra` buffer declared larger than CUDA's 32,764-byte parameter limit, then one
   * within it. */
  static char buf[40000];
  size_t size = 32768;
  memcpy(buf, &x, sizeof x);
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuLaunchKernel(add, 1, 1, 1, 16, 1, 1, 0, NULL, NULL, extra));
  /* Within the limit but larger than the kernel's parameters: refused as a GPU refuses it. */
  size = 32764;
  CHECK_STATUS_EQ(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                  cuLaunchKernel(add, 1, 1, 1, 16, 1, 1, 0, NULL, NULL, extra));
}

int main(void) {
  drv_test_init();
  void *img = drv_test_read_kernel("drv-kernels.cubin");
  CUmodule m;
  CHECK_CU(cuModuleLoadData(&m, img));
  free(img);
  CHECK_CU(cuModuleGetFunction(&add, m, "drv_add"));
  CUdeviceptr x;
  CHECK_CU(cuMemAlloc_v2(&x, 256 * sizeof(float)));
  CHECK_CU(cuMemsetD32_v2(x, 0, 256));
  CHECK_INT(simctl_launch_attr(CU_LAUNCH_ATTRIBUTE_PRIORITY, &seen_prio), ==, -1);
  test_launch(x);
  test_nodes(x);
  test_param_limit(x);
  CHECK_CU(cuMemFree_v2(x));
  printf("drv-attrs: ok\n");
  return 0;
}
