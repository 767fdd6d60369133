/* multi-stream.cu — work spread over several streams whose result depends on the ordering.
 *
 * Each of ROUNDS rounds runs a chain across two non-blocking streams (ordered by an event
 * recorded on one and waited on by the other), two blocking streams and the legacy default
 * stream between them (ordered only by legacy-stream semantics), an asynchronous copy back to
 * pinned memory, a host function that reduces that copy into a scalar, an asynchronous copy of
 * the scalar back to the device that a last kernel consumes, and an event the host polls with
 * cudaEventQuery. Every step reads what the previous one wrote, so an ordering the program did
 * not ask for changes the results; the program also recomputes each round on the host and
 * checks the copy bit for bit (every value is a short binary fraction, so the arithmetic is
 * exact on any device, fused multiply-add or not). Output: per-round checksums and the host
 * function's sums as exact bits, then the launch counts (see prog.h).
 */
#include <cuda_runtime.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 1024, ROUNDS = 4, BLOCK = 128 };

__host__ __device__ static inline void fill_body(unsigned long i, float *a, const float *in,
                                                 int r, int n) {
  if (i < (unsigned long)n) a[i] = in[i] + (float)((i * 7 + (unsigned long)r * 13) % 17);
}
__host__ __device__ static inline void affine_body(unsigned long i, float *b, const float *a,
                                                   float m, float c, int n) {
  if (i < (unsigned long)n) b[i] = a[i] * m + c;
}
__host__ __device__ static inline void add_body(unsigned long i, float *d, const float *p,
                                                const float *q, int n) {
  if (i < (unsigned long)n) d[i] = p[i] + q[i];
}
__host__ __device__ static inline void scale_body(unsigned long i, float *d, float s, int n) {
  if (i < (unsigned long)n) d[i] *= s;
}
__host__ __device__ static inline void add_scalar_body(unsigned long i, float *d,
                                                       const float *s, int n) {
  if (i < (unsigned long)n) d[i] = d[i] * 0.5f + *s;
}

extern "C" __global__ void ms_fill(float *a, const float *in, int r, int n) {
  fill_body(PROG_TID(), a, in, r, n);
}
extern "C" __global__ void ms_affine(float *b, const float *a, float m, float c, int n) {
  affine_body(PROG_TID(), b, a, m, c, n);
}
extern "C" __global__ void ms_add(float *d, const float *p, const float *q, int n) {
  add_body(PROG_TID(), d, p, q, n);
}
extern "C" __global__ void ms_scale(float *d, float s, int n) { scale_body(PROG_TID(), d, s, n); }
extern "C" __global__ void ms_add_scalar(float *d, const float *s, int n) {
  add_scalar_body(PROG_TID(), d, s, n);
}

SIM_KERNEL(ms_fill) {
  SIM_FOR_EACH_THREAD(i)
  fill_body(i, SIM_ARG(0, float *), SIM_ARG(1, const float *), SIM_ARG(2, int), SIM_ARG(3, int));
}
SIM_KERNEL(ms_affine) {
  SIM_FOR_EACH_THREAD(i)
  affine_body(i, SIM_ARG(0, float *), SIM_ARG(1, const float *), SIM_ARG(2, float),
              SIM_ARG(3, float), SIM_ARG(4, int));
}
SIM_KERNEL(ms_add) {
  SIM_FOR_EACH_THREAD(i)
  add_body(i, SIM_ARG(0, float *), SIM_ARG(1, const float *), SIM_ARG(2, const float *),
           SIM_ARG(3, int));
}
SIM_KERNEL(ms_scale) {
  SIM_FOR_EACH_THREAD(i) scale_body(i, SIM_ARG(0, float *), SIM_ARG(1, float), SIM_ARG(2, int));
}
SIM_KERNEL(ms_add_scalar) {
  SIM_FOR_EACH_THREAD(i)
  add_scalar_body(i, SIM_ARG(0, float *), SIM_ARG(1, const float *), SIM_ARG(2, int));
}

/* What the host function reads and writes: all pinned, all touched only in stream order. */
struct host_ctx {
  const float *e;   /* the copy of E made just before the host function */
  float *scalar;    /* its reduction, copied back to the device after the host function */
  float sums[ROUNDS];
  int round;
};

static void CUDART_CB reduce_on_host(void *arg) {
  struct host_ctx *c = (struct host_ctx *)arg;
  float s = 0.0f;
  for (int i = 0; i < N; i++) s += c->e[i];
  c->sums[c->round] = s;
  *c->scalar = s / (float)N;
}

int main(void) {
  cudaStream_t nb1, nb2, bl1, bl2;
  CHECK_CUDA(cudaStreamCreateWithFlags(&nb1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&nb2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreate(&bl1));
  CHECK_CUDA(cudaStreamCreateWithFlags(&bl2, cudaStreamDefault));
  cudaEvent_t ev_a, ev_b, ev_done;
  CHECK_CUDA(cudaEventCreateWithFlags(&ev_a, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&ev_b, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreate(&ev_done));

  float *a_in, *a, *b, *c, *e, *scalar_dev;
  CHECK_CUDA(cudaMalloc((void **)&a_in, N * sizeof(float)));
  CHECK_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  CHECK_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  CHECK_CUDA(cudaMalloc((void **)&c, N * sizeof(float)));
  CHECK_CUDA(cudaMalloc((void **)&e, N * sizeof(float)));
  CHECK_CUDA(cudaMalloc((void **)&scalar_dev, sizeof(float)));
  CHECK_CUDA(cudaMemset(e, 0, N * sizeof(float)));

  float *host_in, *host_e, *host_scalar;
  CHECK_CUDA(cudaMallocHost((void **)&host_in, N * sizeof(float)));
  CHECK_CUDA(cudaMallocHost((void **)&host_e, N * sizeof(float)));
  CHECK_CUDA(cudaMallocHost((void **)&host_scalar, sizeof(float)));
  struct host_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.e = host_e;
  ctx.scalar = host_scalar;

  static float ref_e[N]; /* host reference for E, zero like the device's */
  const unsigned grid = (N + BLOCK - 1) / BLOCK;
  for (int r = 0; r < ROUNDS; r++) {
    /* The previous round has completed (polled below), so the pinned input is free. */
    for (int i = 0; i < N; i++) host_in[i] = (float)((i * 31 + r * 5) % 64) * 0.25f;
    CHECK_CUDA(cudaMemcpyAsync(a_in, host_in, N * sizeof(float), cudaMemcpyHostToDevice, nb1));
    PROG_LAUNCH(ms_fill, grid, BLOCK, 0, nb1, a, a_in, r, (int)N);
    CHECK_CUDA(cudaEventRecord(ev_a, nb1));

    CHECK_CUDA(cudaStreamWaitEvent(nb2, ev_a, 0));
    PROG_LAUNCH(ms_affine, grid, BLOCK, 0, nb2, b, a, 2.0f, (float)r, (int)N);
    CHECK_CUDA(cudaEventRecord(ev_b, nb2));

    CHECK_CUDA(cudaStreamWaitEvent(bl1, ev_b, 0));
    PROG_LAUNCH(ms_add, grid, BLOCK, 0, bl1, c, b, a, (int)N);
    /* Legacy default stream: waits for bl1, and bl2 then waits for it. */
    PROG_LAUNCH(ms_scale, grid, BLOCK, 0, (cudaStream_t)0, c, 0.5f, (int)N);
    PROG_LAUNCH(ms_add, grid, BLOCK, 0, bl2, e, c, e, (int)N);

    CHECK_CUDA(cudaMemcpyAsync(host_e, e, N * sizeof(float), cudaMemcpyDeviceToHost, bl2));
    ctx.round = r;
    CHECK_CUDA(cudaLaunchHostFunc(bl2, reduce_on_host, &ctx));
    CHECK_CUDA(cudaMemcpyAsync(scalar_dev, host_scalar, sizeof(float), cudaMemcpyHostToDevice,
                               bl2));
    PROG_LAUNCH(ms_add_scalar, grid, BLOCK, 0, bl2, e, scalar_dev, (int)N);
    CHECK_CUDA(cudaEventRecord(ev_done, bl2));

    cudaError_t q;
    while ((q = cudaEventQuery(ev_done)) == cudaErrorNotReady) {
      /* "Not ready" is also recorded as the thread's last error; clear it, as PyTorch does. */
      (void)cudaGetLastError();
    }
    CHECK_CUDA(q);
    /* The same round on the host, in program order. */
    for (int i = 0; i < N; i++) {
      float ra = host_in[i] + (float)((i * 7 + r * 13) % 17);
      float rb = ra * 2.0f + (float)r;
      ref_e[i] += (rb + ra) * 0.5f;
    }
    if (memcmp(ref_e, host_e, sizeof ref_e) != 0)
      CHECK_FAIL_("round %d: device result differs from the host's: ordering not respected", r);
    float rs = 0.0f;
    for (int i = 0; i < N; i++) rs += ref_e[i];
    CHECK(prog_fbits(rs) == prog_fbits(ctx.sums[r]));
    for (int i = 0; i < N; i++) ref_e[i] = ref_e[i] * 0.5f + rs / (float)N;
    printf("round %d: copy %016llx sum %08x\n", r,
           (unsigned long long)prog_hash(host_e, N * sizeof(float)), prog_fbits(ctx.sums[r]));
  }

  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(host_e, e, N * sizeof(float), cudaMemcpyDeviceToHost));
  prog_print_floats("E", host_e, N);
  CHECK_CUDA(cudaMemcpy(host_e, b, N * sizeof(float), cudaMemcpyDeviceToHost));
  prog_print_floats("B", host_e, N);

  CHECK_CUDA(cudaFreeHost(host_in));
  CHECK_CUDA(cudaFreeHost(host_e));
  CHECK_CUDA(cudaFreeHost(host_scalar));
  float *bufs[] = {a_in, a, b, c, e, scalar_dev};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) CHECK_CUDA(cudaFree(bufs[i]));
  CHECK_CUDA(cudaEventDestroy(ev_a));
  CHECK_CUDA(cudaEventDestroy(ev_b));
  CHECK_CUDA(cudaEventDestroy(ev_done));
  cudaStream_t ss[] = {nb1, nb2, bl1, bl2};
  for (size_t i = 0; i < 4; i++) CHECK_CUDA(cudaStreamDestroy(ss[i]));
  prog_print_launches();
  return 0;
}
