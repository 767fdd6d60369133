/* rt-graph — runtime graphs and stream capture on the simulator.
 *
 * Builds a graph explicitly (kernel, memcpy, memset, host and empty nodes), instantiates,
 * uploads and launches it, reads and updates kernel-node parameters (the func read back is the
 * host stub), updates an executable graph, disables and enables its nodes; captures a stream into a graph, queries the capture,
 * and checks that a synchronisation inside a capture is rejected and invalidates it.
 */
#include <cuda_runtime.h>
#include <stdio.h>

#include "check.h"
#include "sim_kernel.h"

extern "C" __global__ void rt_g_add(int *x, int v, int n) {
  int i = threadIdx.x;
  if (i < n) x[i] += v;
}
SIM_KERNEL(rt_g_add) {
  int *x = SIM_ARG(0, int *);
  int v = SIM_ARG(1, int), n = SIM_ARG(2, int);
  for (int i = 0; i < n; i++) x[i] += v;
}

static void CUDART_CB host_node(void *arg) { *(int *)arg += 1; }

int main() {
  const int n = 16;
  int *d, *d2, h[n], hosts = 0;
  CHECK_CUDA(cudaMalloc((void **)&d, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc((void **)&d2, n * sizeof(int)));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  /* memset → kernel → memcpy → host, plus an empty node. */
  cudaGraph_t g;
  CHECK_CUDA(cudaGraphCreate(&g, 0));
  cudaGraphNode_t nset, nk, ncp, nh, ne;
  cudaMemsetParams mp = {};
  mp.dst = d;
  mp.value = 0;
  mp.elementSize = 4;
  mp.width = n;
  mp.height = 1;
  CHECK_CUDA(cudaGraphAddMemsetNode(&nset, g, NULL, 0, &mp));
  int v = 3, cnt = n;
  void *args[] = {&d, &v, &cnt};
  cudaKernelNodeParams kp = {};
  kp.func = (void *)rt_g_add;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(n);
  kp.kernelParams = args;
  CHECK_CUDA(cudaGraphAddKernelNode(&nk, g, &nset, 1, &kp));
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&ncp, g, &nk, 1, d2, d, n * sizeof(int), cudaMemcpyDeviceToDevice));
  cudaHostNodeParams hp = {host_node, &hosts};
  CHECK_CUDA(cudaGraphAddHostNode(&nh, g, &ncp, 1, &hp));
  CHECK_CUDA(cudaGraphAddEmptyNode(&ne, g, &nh, 1));
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(g, NULL, &count));
  CHECK_INT(count, ==, 5);

  cudaKernelNodeParams back = {};
  CHECK_CUDA(cudaGraphKernelNodeGetParams(nk, &back));
  CHECK_PTR(back.func, ==, (void *)rt_g_add);
  CHECK_INT(back.blockDim.x, ==, n);

  cudaGraphExec_t ge;
  CHECK_CUDA(cudaGraphInstantiate(&ge, g, 0));
  CHECK_CUDA(cudaGraphUpload(ge, s));
  CHECK_CUDA(cudaGraphLaunch(ge, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(h, d2, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) CHECK_INT(h[i], ==, 3);
  CHECK_INT(hosts, ==, 1);

  /* Update the executable node: the next launch adds 5. */
  v = 5;
  CHECK_CUDA(cudaGraphExecKernelNodeSetParams(ge, nk, &kp));
  v = 100; /* arguments were copied at the update */
  CHECK_CUDA(cudaGraphLaunch(ge, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(h, d2, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_INT(h[0], ==, 5);

  /* Change the graph's node, then update the executable graph from it. */
  v = 7;
  CHECK_CUDA(cudaGraphKernelNodeSetParams(nk, &kp));
  cudaGraphExecUpdateResultInfo info;
  CHECK_CUDA(cudaGraphExecUpdate(ge, g, &info));
  CHECK_INT(info.result, ==, cudaGraphExecUpdateSuccess);
  CHECK_CUDA(cudaGraphLaunch(ge, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(h, d2, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_INT(h[0], ==, 7);
  CHECK_INT(hosts, ==, 3);

  /* Disabled nodes run as empty nodes, their successors still after them; only kernel, memset
   * and memcpy nodes can be disabled, named by the node of the graph the exec came from. A
   * disabled memset node runs all the same, as seen on a GPU (tests/sim/driver/graph.c). */
  unsigned on = 7;
  CHECK_CUDA(cudaGraphNodeGetEnabled(ge, nk, &on));
  CHECK_INT(on, ==, 1);
  CHECK_CUDA(cudaGraphNodeSetEnabled(ge, nk, 0));
  CHECK_CUDA(cudaGraphNodeGetEnabled(ge, nk, &on));
  CHECK_INT(on, ==, 0);
  CHECK_CUDA(cudaGraphLaunch(ge, s)); /* memset, (no add), copy: zeros */
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(h, d2, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) CHECK_INT(h[i], ==, 0);
  CHECK_CUDA(cudaGraphNodeSetEnabled(ge, nk, 1));
  CHECK_CUDA(cudaGraphNodeSetEnabled(ge, ncp, 0));
  CHECK_CUDA(cudaGraphLaunch(ge, s)); /* the copy is off: d2 keeps its zeros, d gets 7 */
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(h, d2, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_INT(h[0], ==, 0);
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_INT(h[0], ==, 7);
  CHECK_CUDA(cudaGraphNodeSetEnabled(ge, ncp, 1));
  CHECK_CUDA(cudaGraphNodeSetEnabled(ge, nset, 0));
  CHECK_CUDA(cudaGraphLaunch(ge, s)); /* the memset "disabled", yet run: 0 + 7 */
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGraphNodeGetEnabled(ge, nset, &on));
  CHECK_INT(on, ==, 0);
  CHECK_CUDA(cudaMemcpy(h, d2, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_INT(h[0], ==, 7);
  CHECK_CUDA(cudaGraphNodeSetEnabled(ge, nset, 1));
  CHECK_STATUS_EQ(cudaErrorInvalidValue, cudaGraphNodeSetEnabled(ge, nh, 0));
  CHECK_STATUS_EQ(cudaErrorInvalidValue, cudaGraphNodeSetEnabled(ge, ne, 0));
  CHECK_STATUS_EQ(cudaErrorInvalidValue, cudaGraphNodeGetEnabled(ge, nk, NULL));
  (void)cudaGetLastError();
  cudaGraph_t other;
  cudaGraphNode_t onode;
  CHECK_CUDA(cudaGraphCreate(&other, 0));
  CHECK_CUDA(cudaGraphAddKernelNode(&onode, other, NULL, 0, &kp));
  CHECK_STATUS_EQ(cudaErrorInvalidValue, cudaGraphNodeSetEnabled(ge, onode, 0));
  (void)cudaGetLastError();
  CHECK_CUDA(cudaGraphDestroy(other));
  CHECK_CUDA(cudaGraphExecDestroy(ge));
  CHECK_CUDA(cudaGraphDestroy(g));

  /* Stream capture. */
  cudaStreamCaptureStatus st;
  CHECK_CUDA(cudaStreamIsCapturing(s, &st));
  CHECK_INT(st, ==, cudaStreamCaptureStatusNone);
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaStreamIsCapturing(s, &st));
  CHECK_INT(st, ==, cudaStreamCaptureStatusActive);
  CHECK_CUDA(cudaMemsetAsync(d, 0, n * sizeof(int), s));
  v = 2;
  rt_g_add<<<1, n, 0, s>>>(d, v, n);
  rt_g_add<<<1, n, 0, s>>>(d, v, n);
  unsigned long long id = 0;
  cudaGraph_t capg = NULL;
  size_t ndeps = 0;
  CHECK_CUDA(cudaStreamGetCaptureInfo(s, &st, &id, &capg, NULL, NULL, &ndeps));
  CHECK_INT(st, ==, cudaStreamCaptureStatusActive);
  CHECK(capg != NULL);
  CHECK_INT(ndeps, ==, 1);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  CHECK_INT(mode, ==, cudaStreamCaptureModeGlobal);
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  cudaGraph_t cg;
  CHECK_CUDA(cudaStreamEndCapture(s, &cg));
  CHECK_CUDA(cudaGraphGetNodes(cg, NULL, &count));
  CHECK_INT(count, ==, 3);
  CHECK_CUDA(cudaGraphInstantiateWithFlags(&ge, cg, 0));
  CHECK_CUDA(cudaGraphLaunch(ge, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) CHECK_INT(h[i], ==, 4);
  CHECK_CUDA(cudaGraphExecDestroy(ge));
  CHECK_CUDA(cudaGraphDestroy(cg));

  /* A capture rule violation: synchronising a capturing stream. */
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  rt_g_add<<<1, n, 0, s>>>(d, v, n);
  CHECK_STATUS_EQ(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s));
  CHECK_STATUS_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &cg));
  (void)cudaGetLastError();
  CHECK_CUDA(cudaStreamIsCapturing(s, &st));
  CHECK_INT(st, ==, cudaStreamCaptureStatusNone);

  CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(d));
  CHECK_CUDA(cudaFree(d2));
  printf("ok\n");
  return 0;
}
