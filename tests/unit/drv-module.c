/* drv-module.c — the simulated driver: module loading (cubin, fatbin, compressed fatbin),
 * launches by kernelParams and by `extra`, parameter info, launch validation, modelled cost,
 * graphs (nodes, parameter updates, exec update, changes while a launch is in flight), stream
 * capture rules, the end of a context, and sticky faults. */
#include "drv-common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

static CUcontext ctx;

SIM_KERNEL(drv_add) {
  float *x = SIM_ARG(0, float *);
  float a = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  for (unsigned long i = 0; i < (unsigned long)sim_grid.x * sim_block.x; i++)
    if ((int)i < n) x[i] += a;
}

SIM_KERNEL(drv_mixed) {
  (void)sim_grid, (void)sim_block;
  int *out = SIM_ARG(2, int *);
  out[0] = SIM_ARG(0, char);
  out[1] = (int)SIM_ARG(1, double);
  out[2] = SIM_ARG(3, short);
}

void simctl_kernel_fault(void);
SIM_KERNEL(drv_fault) {
  (void)sim_grid, (void)sim_block, (void)sim_args;
  simctl_kernel_fault();
}

static CUfunction add, mixed, no_twin, fault;

static CUmodule loaded; /* the module of the functions above; unloaded by the next load */

static void load(const char *file) {
  void *img = drv_test_read_kernel(file);
  CUmodule m;
  if (loaded) CHECK_CU(cuModuleUnload(loaded));
  CHECK_CU(cuModuleLoadData(&m, img));
  loaded = m;
  CHECK_CU(cuModuleGetFunction(&add, m, "drv_add"));
  CHECK_CU(cuModuleGetFunction(&mixed, m, "drv_mixed"));
  CHECK_CU(cuModuleGetFunction(&no_twin, m, "drv_no_twin"));
  CHECK_CU(cuModuleGetFunction(&fault, m, "drv_fault"));
  CHECK_STATUS_EQ(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&add, m, "nope"));
  free(img);
}

static void launch_add(CUdeviceptr x, float a, int n, CUstream s) {
  void *args[] = {&x, &a, &n};
  CHECK_CU(cuLaunchKernel(add, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
}

static float read1(CUdeviceptr x) {
  float v;
  CHECK_CU(cuMemcpyDtoH_v2(&v, x, sizeof v));
  return v;
}

static void test_modules(void) {
  const char *files[] = {"drv-kernels.cubin", "drv-kernels.fatbin", "drv-kernels.z.fatbin"};
  CUdeviceptr x;
  CHECK_CU(cuMemAlloc_v2(&x, 64 * sizeof(float)));
  for (int f = 0; f < 3; f++) {
    load(files[f]);
    CHECK_CU(cuMemsetD32_v2(x, 0, 64));
    launch_add(x, 2.5f, 64, NULL);
    CHECK_INT((int)(read1(x) * 10), ==, 25);
    /* Parameter layout of drv_mixed(char, double, int *, short). */
    size_t off, size;
    CHECK_CU(cuFuncGetParamInfo(mixed, 1, &off, &size));
    CHECK_INT(off, ==, 8);
    CHECK_INT(size, ==, 8);
    CHECK_CU(cuFuncGetParamInfo(mixed, 3, &off, &size));
    CHECK_INT(off, ==, 24);
    CHECK_INT(size, ==, 2);
    CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(mixed, 4, &off, &size));
    const char *name;
    CHECK_CU(cuFuncGetName(&name, mixed));
    CHECK_STR(name, "drv_mixed");
  }
  /* Library and kernel handles; a CUkernel works as a CUfunction. */
  void *img = drv_test_read_kernel("drv-kernels.fatbin");
  CUlibrary lib;
  CUkernel k;
  CUfunction kf;
  CHECK_CU(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
  CHECK_CU(cuLibraryGetKernel(&k, lib, "drv_add"));
  CHECK_CU(cuKernelGetFunction(&kf, k));
  size_t off, size;
  CHECK_CU(cuKernelGetParamInfo(k, 2, &off, &size));
  CHECK_INT(off, ==, 12);
  const char *kn;
  CHECK_CU(cuKernelGetName(&kn, k));
  CHECK_STR(kn, "drv_add");
  CHECK_CU(cuMemsetD32_v2(x, 0, 64));
  float a = 1;
  int n = 64;
  void *args[] = {&x, &a, &n};
  CHECK_CU(cuLaunchKernel((CUfunction)k, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
  CHECK_INT((int)read1(x), ==, 1);
  int v;
  CHECK_CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, kf));
  CHECK_INT(v, >, 0);
  CHECK_CU(cuFuncSetAttribute(kf, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
  CHECK_CU(cuLibraryUnload(lib));
  free(img);
}

static void test_launch(void) {
  CUdeviceptr out;
  CHECK_CU(cuMemAlloc_v2(&out, 16));
  /* Parameters from a buffer laid out by the kernel's layout. */
  char buf[32] = {0};
  buf[0] = 'A';
  double d = 42.0;
  short s = -7;
  memcpy(buf + 8, &d, 8);
  memcpy(buf + 16, &out, 8);
  memcpy(buf + 24, &s, 2);
  size_t bufsize = 26;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bufsize,
                   CU_LAUNCH_PARAM_END};
  CHECK_CU(cuLaunchKernel(mixed, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
  /* The launch copied the values: clobbering the buffer now changes nothing. */
  memset(buf, 0, sizeof buf);
  int res[3];
  CHECK_CU(cuMemcpyDtoH_v2(res, out, sizeof res));
  CHECK_INT(res[0], ==, 'A');
  CHECK_INT(res[1], ==, 42);
  CHECK_INT(res[2], ==, -7);
  /* Validation. */
  CUdeviceptr x = out;
  float a = 1;
  int n = 1;
  void *args[] = {&x, &a, &n};
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuLaunchKernel(add, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuLaunchKernel(add, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuLaunchKernel(add, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, NULL, args, extra));
  CHECK_STATUS_EQ(CUDA_ERROR_NO_BINARY_FOR_GPU,
                  cuLaunchKernel(no_twin, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
  /* A buffer shorter than the parameters, and one longer (a struct's trailing padding). */
  bufsize = 25;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_VALUE,
                  cuLaunchKernel(mixed, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
  bufsize = 32;
  CHECK_STATUS_EQ(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                  cuLaunchKernel(mixed, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra));
  /* cuLaunchKernelEx with accepted and rejected attributes. */
  CUlaunchAttribute at[2];
  memset(at, 0, sizeof at);
  at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  at[0].value.clusterDim.x = 2;
  at[0].value.clusterDim.y = at[0].value.clusterDim.z = 1;
  at[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  CUlaunchConfig cfg = {.gridDimX = 2, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                        .blockDimY = 1, .blockDimZ = 1, .attrs = at, .numAttrs = 2};
  CHECK_CU(cuLaunchKernelEx(&cfg, add, args, NULL));
  cfg.gridDimX = 3;
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_CLUSTER_SIZE, cuLaunchKernelEx(&cfg, add, args, NULL));
  CHECK_CU(cuLaunchCooperativeKernel(add, 1, 1, 1, 32, 1, 1, 0, NULL, args));
  CHECK_CU(cuCtxSynchronize());
}

static void test_cost(void) {
  CUdeviceptr x;
  CHECK_CU(cuMemAlloc_v2(&x, 256));
  double t0 = drv_test_now();
  launch_add(x, 1, 64, NULL);
  CHECK(drv_test_now() - t0 >= 0.002); /* SIM_LAUNCH_NS=2000000 */
  CHECK_CU(cuCtxSynchronize());
}

/* A kernel node of drv_add over one block of 64 threads, with the arguments args. */
static CUDA_KERNEL_NODE_PARAMS add_node(void **args) {
  return (CUDA_KERNEL_NODE_PARAMS){.func = add, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                   .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1,
                                   .kernelParams = args};
}

static void test_graphs(void) {
  CUdeviceptr x;
  CHECK_CU(cuMemAlloc_v2(&x, 64 * sizeof(float)));
  CHECK_CU(cuMemsetD32_v2(x, 0, 64));
  CUgraph g;
  CUgraphNode k1, k2, e, m;
  CHECK_CU(cuGraphCreate(&g, 0));
  float a = 1;
  int n = 64;
  void *args[] = {&x, &a, &n};
  CUDA_KERNEL_NODE_PARAMS p = add_node(args);
  CHECK_CU(cuGraphAddKernelNode_v2(&k1, g, NULL, 0, &p));
  a = 10; /* the node holds the value 1 */
  CHECK_CU(cuGraphAddKernelNode_v2(&k2, g, &k1, 1, &p));
  CHECK_CU(cuGraphAddEmptyNode(&e, g, &k2, 1));
  CUDA_MEMSET_NODE_PARAMS ms = {.dst = x + 63 * sizeof(float), .elementSize = 4, .width = 1,
                                .height = 1, .value = 0};
  CHECK_CU(cuGraphAddMemsetNode(&m, g, &e, 1, &ms, ctx));
  size_t count = 0;
  CHECK_CU(cuGraphGetNodes(g, NULL, &count));
  CHECK_INT(count, ==, 4);
  CUgraphNodeType t;
  CHECK_CU(cuGraphNodeGetType(m, &t));
  CHECK_INT(t, ==, CU_GRAPH_NODE_TYPE_MEMSET);
  CUDA_KERNEL_NODE_PARAMS got;
  CHECK_CU(cuGraphKernelNodeGetParams_v2(k1, &got));
  CHECK_INT((int)*(float *)got.kernelParams[1], ==, 1);
  CUgraphExec ex;
  CHECK_CU(cuGraphInstantiateWithFlags(&ex, g, 0));
  CHECK_CU(cuGraphLaunch(ex, NULL));
  CHECK_INT((int)read1(x), ==, 11);
  /* Exec parameter update: only the exec changes. */
  a = 100;
  CHECK_CU(cuGraphExecKernelNodeSetParams_v2(ex, k1, &p));
  CHECK_CU(cuGraphLaunch(ex, NULL));
  CHECK_INT((int)read1(x), ==, 121);
  /* Graph node update, then exec update from the graph. */
  a = 1000;
  CHECK_CU(cuGraphKernelNodeSetParams_v2(k1, &p));
  CHECK_CU(cuGraphLaunch(ex, NULL));
  CHECK_INT((int)read1(x), ==, 231);
  CUgraphExecUpdateResultInfo info;
  CHECK_CU(cuGraphExecUpdate_v2(ex, g, &info));
  CHECK_CU(cuGraphLaunch(ex, NULL));
  CHECK_INT((int)read1(x), ==, 1241);
  /* Topology changes are refused. */
  CUgraph g2;
  CUgraphNode extra;
  CHECK_CU(cuGraphClone(&g2, g));
  CHECK_CU(cuGraphAddEmptyNode(&extra, g2, NULL, 0));
  CHECK_STATUS_EQ(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate_v2(ex, g2, &info));
  CHECK_INT(info.result, ==, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  CHECK_CU(cuGraphExecDestroy(ex));
  CHECK_CU(cuGraphDestroy(g2));
  CHECK_CU(cuGraphDestroy(g));
}

/* A host function that holds its stream until the test releases it (or 10 s pass, so that a
 * simulator whose graph changes wait for the device fails instead of hanging). */
static atomic_int gate_open;
static atomic_int gate_released; /* set when the gate opened because the test released it */
static void CUDA_CB gate(void *arg) {
  (void)arg;
  double t0 = drv_test_now();
  while (!atomic_load(&gate_open) && drv_test_now() - t0 < 10) sched_yield();
  atomic_store(&gate_released, atomic_load(&gate_open));
}

static void gate_shut(CUstream s) {
  atomic_store(&gate_open, 0);
  atomic_store(&gate_released, 0);
  CHECK_CU(cuLaunchHostFunc(s, gate, NULL));
}

/* Changing an executable graph while a launch of it waits on the device: every change returns at
 * once, the launch runs the graph as it was when launched, the next launch the changed one, and
 * destroying the exec leaves a launch in flight intact. */
static void test_graph_changes_in_flight(void) {
  CUstream s;
  CUdeviceptr x;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuMemAlloc_v2(&x, 64 * sizeof(float)));
  CHECK_CU(cuMemsetD32Async(x, 0, 64, s)); /* on s: s does not wait for the legacy stream */
  CUgraph g;
  CUgraphNode k1, k2;
  float a = 1;
  int n = 64;
  void *args[] = {&x, &a, &n};
  CUDA_KERNEL_NODE_PARAMS p = add_node(args);
  CHECK_CU(cuGraphCreate(&g, 0));
  CHECK_CU(cuGraphAddKernelNode_v2(&k1, g, NULL, 0, &p));
  a = 10;
  CHECK_CU(cuGraphAddKernelNode_v2(&k2, g, &k1, 1, &p));
  CUgraphExec ex;
  CHECK_CU(cuGraphInstantiateWithFlags(&ex, g, 0));

  gate_shut(s);
  CHECK_CU(cuGraphLaunch(ex, s)); /* adds 1 + 10 once the gate opens */
  a = 100;
  CHECK_CU(cuGraphExecKernelNodeSetParams_v2(ex, k1, &p)); /* later launches: 100 + 10 */
  CHECK_CU(cuGraphNodeSetEnabled(ex, k2, 0));               /* later launches: 100 */
  unsigned on = 1;
  CHECK_CU(cuGraphNodeGetEnabled(ex, k2, &on));
  CHECK_INT(on, ==, 0);
  atomic_store(&gate_open, 1);
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT(atomic_load(&gate_released), ==, 1); /* nothing above waited for the launch */
  CHECK_INT((int)read1(x), ==, 11);
  CHECK_CU(cuGraphLaunch(ex, s));
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT((int)read1(x), ==, 111);

  /* Two launches in flight, then an update from the graph (whose k1 holds 1) and the exec
   * destroyed: neither reaches the launches already made. */
  gate_shut(s);
  CHECK_CU(cuGraphLaunch(ex, s)); /* 100 */
  CHECK_CU(cuGraphNodeSetEnabled(ex, k2, 1));
  CHECK_CU(cuGraphLaunch(ex, s)); /* 100 + 10 */
  CUgraphExecUpdateResultInfo info;
  CHECK_CU(cuGraphExecUpdate_v2(ex, g, &info));
  CHECK_CU(cuGraphExecDestroy(ex));
  atomic_store(&gate_open, 1);
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT(atomic_load(&gate_released), ==, 1);
  CHECK_INT((int)read1(x), ==, 111 + 100 + 110);
  CHECK_CU(cuGraphDestroy(g));
  CHECK_CU(cuMemFree_v2(x));
  CHECK_CU(cuStreamDestroy_v2(s));
}

static void test_capture(void) {
  CUstream s, s2;
  CUdeviceptr x;
  CHECK_CU(cuStreamCreate(&s, 0));
  CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuMemAlloc_v2(&x, 64 * sizeof(float)));
  CHECK_CU(cuMemsetD32_v2(x, 0, 64));
  /* Capture a fork and join, then run the graph. */
  CUevent fork, join;
  CHECK_CU(cuEventCreate(&fork, 0));
  CHECK_CU(cuEventCreate(&join, 0));
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus st;
  CHECK_CU(cuStreamIsCapturing(s, &st));
  CHECK_INT(st, ==, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  launch_add(x, 1, 64, s);
  CHECK_CU(cuEventRecord(fork, s));
  CHECK_CU(cuStreamWaitEvent(s2, fork, 0));
  launch_add(x, 2, 64, s2);
  CHECK_CU(cuEventRecord(join, s2));
  CHECK_CU(cuStreamWaitEvent(s, join, 0));
  cuuint64_t id;
  CUgraph cg;
  const CUgraphNode *deps;
  size_t nd;
  CHECK_CU(cuStreamGetCaptureInfo_v3(s, &st, &id, &cg, &deps, NULL, &nd));
  CHECK_INT(nd, ==, 2); /* the union of both sets, without transitive reduction */
  CUgraph g;
  CHECK_CU(cuStreamEndCapture(s, &g));
  size_t count = 0;
  CHECK_CU(cuGraphGetNodes(g, NULL, &count));
  CHECK_INT(count, ==, 2);
  CUgraphExec ex;
  CHECK_CU(cuGraphInstantiateWithFlags(&ex, g, 0));
  CHECK_CU(cuGraphLaunch(ex, s));
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT((int)read1(x), ==, 3);
  CHECK_CU(cuGraphExecDestroy(ex));
  CHECK_CU(cuGraphDestroy(g));
  /* Unsafe calls invalidate a global capture. */
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(s));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr y;
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAlloc_v2(&y, 16));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize());
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  /* Relaxed mode allows allocation; the legacy stream may not implicitly wait on s. */
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK_CU(cuMemAlloc_v2(&y, 16));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamIsCapturing(NULL, &st));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemsetD8Async(y, 0, 16, NULL));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
  /* Unjoined fork. */
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_CU(cuEventRecord(fork, s));
  CHECK_CU(cuStreamWaitEvent(s2, fork, 0));
  launch_add(x, 2, 64, s2);
  launch_add(x, 2, 64, s);
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cuStreamEndCapture(s, &g));
  CHECK_CU(cuStreamIsCapturing(s2, &st));
  CHECK_INT(st, ==, CU_STREAM_CAPTURE_STATUS_NONE);
  /* Captured event may not be queried; ending where it did not begin. */
  CHECK_CU(cuThreadExchangeStreamCaptureMode(&(CUstreamCaptureMode){CU_STREAM_CAPTURE_MODE_RELAXED}));
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK_CU(cuEventRecord(fork, s));
  CHECK_STATUS_EQ(CUDA_ERROR_CAPTURED_EVENT, cuEventQuery(fork));
  CHECK_CU(cuStreamWaitEvent(s2, fork, 0));
  CHECK_STATUS_EQ(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cuStreamEndCapture(s2, &g));
  CHECK_CU(cuStreamEndCapture(s, &g));
  CHECK_CU(cuGraphDestroy(g));
}

static void *end_elsewhere(void *arg) {
  CUgraph g;
  cuCtxSetCurrent(ctx);
  return (void *)(intptr_t)cuStreamEndCapture((CUstream)arg, &g);
}

static void test_wrong_thread(void) {
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, 0));
  CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  pthread_t t;
  void *ret;
  pthread_create(&t, NULL, end_elsewhere, s);
  pthread_join(t, &ret);
  CHECK_INT((intptr_t)ret, ==, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  CUgraph g;
  CHECK_CU(cuStreamEndCapture(s, &g));
  CHECK_CU(cuGraphDestroy(g));
}

/* The end of the primary context (reset): its modules and graph execs die with it, libraries
 * stay; an unloaded module's handle is invalid until the driver hands it out again. */
static void test_context_end(void) {
  void *cubin = drv_test_read_kernel("drv-kernels.cubin");
  void *fatbin = drv_test_read_kernel("drv-kernels.fatbin");
  CUmodule m, m2;
  CUlibrary lib;
  CUkernel k;
  CUfunction f;
  CHECK_CU(cuModuleLoadData(&m, cubin));
  CHECK_CU(cuModuleUnload(m));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, m, "drv_add"));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(m));
  CHECK_CU(cuModuleLoadData(&m, cubin));
  CHECK_CU(cuModuleGetFunction(&f, m, "drv_add"));
  CHECK_CU(cuLibraryLoadData(&lib, fatbin, NULL, NULL, 0, NULL, NULL, 0));
  CHECK_CU(cuLibraryGetKernel(&k, lib, "drv_add"));
  CUdeviceptr x;
  CHECK_CU(cuMemAlloc_v2(&x, 64 * sizeof(float)));
  CHECK_CU(cuMemsetD32_v2(x, 0, 64));
  CUgraph g;
  CUgraphNode node;
  CUgraphExec ex;
  float a = 1;
  int n = 64;
  void *args[] = {&x, &a, &n};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = args};
  CHECK_CU(cuGraphCreate(&g, 0));
  CHECK_CU(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &p));
  CHECK_CU(cuGraphInstantiateWithFlags(&ex, g, 0));
  CHECK_CU(cuGraphLaunch(ex, NULL));

  CHECK_CU(cuDevicePrimaryCtxReset_v2(0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, m, "drv_add"));
  CHECK_STATUS_EQ(CUDA_ERROR_INVALID_HANDLE,
                  cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
  CHECK_STATUS_EQ(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuGraphLaunch(ex, NULL));
  CHECK_CU(cuLaunchKernel((CUfunction)k, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
  CHECK_INT((int)read1(x), ==, 2);
  /* A new module may come back with the dead one's handle. */
  CHECK_CU(cuModuleLoadData(&m2, cubin));
  CHECK_CU(cuModuleUnload(m2));
  CHECK_CU(cuLibraryUnload(lib));
  CHECK_STATUS_EQ(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuGraphExecDestroy(ex));
  CHECK_CU(cuGraphDestroy(g));
  free(cubin), free(fatbin);
  loaded = NULL; /* died with the context */
  load("drv-kernels.cubin");
}

static void test_sticky_fault(void) {
  CUdeviceptr x;
  CHECK_CU(cuMemAlloc_v2(&x, 16));
  void *args[] = {&x};
  CHECK_CU(cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
  CHECK_STATUS_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  CHECK_STATUS_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(NULL));
  float a = 1;
  int n = 1;
  void *args2[] = {&x, &a, &n};
  CHECK_STATUS_EQ(CUDA_ERROR_ILLEGAL_ADDRESS,
                  cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, NULL, args2, NULL));
}

int main(void) {
  setenv("SIM_LAUNCH_NS", "2000000", 1);
  ctx = drv_test_init();
  test_modules();
  test_launch();
  test_graphs();
  test_graph_changes_in_flight();
  test_capture();
  test_wrong_thread();
  test_cost();
  test_context_end();
  test_sticky_fault(); /* last: the context is unusable afterwards */
  printf("drv-module: ok\n");
  return 0;
}
