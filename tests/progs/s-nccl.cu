/* s-nccl.cu — NCCL's operations between two ranks (two processes, one device each: SIM_DEVICES=2),
 * checked against the host's own computation of what NCCL documents.
 *
 * The process forks before any CUDA call; the parent is rank 0, the child rank 1, each on the
 * device of its rank, with one communicator made from a unique id taken before the fork. libnccl
 * is found with dlopen (libnccl.so.2, the simulated one on the simulator). In order:
 *   1. all-reduce of floats (sum, avg, max), 32-bit integers (min), 8-bit unsigned (prod), half
 *      and bfloat16 (sum), one of them in place and larger than SIM_NCCL_BUFFER_BYTES;
 *   2. broadcast from rank 1, reduce to rank 1, all-gather, reduce-scatter;
 *   3. a group of a send and a receive each way, larger than a mailbox;
 *   4. rank 1 alone launches one more all-reduce: with SIM_NCCL_TIMEOUT_S=1 its kernel gives up,
 *      and its communicator reports ncclRemoteError.
 * Each rank compares every result with the expected bits; rank 0 prints one line per operation
 * (`op: ok` or the first difference) and rank 1's exit status. Exits 0 when both ranks agree
 * with the host everywhere.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nccl/ncclsim.h"

enum { N = 3000, BIG = 5000, P2P_BYTES = 10000 };

static struct {
  ncclResult_t (*get_id)(ncclUniqueId *);
  ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                             ncclComm_t, cudaStream_t);
  ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                         ncclComm_t, cudaStream_t);
  ncclResult_t (*all_gather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t);
  ncclResult_t (*reduce_scatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                 ncclComm_t, cudaStream_t);
  ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*group_start)(void);
  ncclResult_t (*group_end)(void);
  ncclResult_t (*async_error)(ncclComm_t, ncclResult_t *);
  ncclResult_t (*destroy)(ncclComm_t);
} nc;

static void load(void) {
  /* Global: the simulated driver finds the kernels' CPU twins with dlsym(RTLD_DEFAULT). */
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    fprintf(stderr, "s-nccl: %s\n", dlerror());
    exit(2);
  }
#define SYM(field, name) CHECK((*(void **)&nc.field = dlsym(h, name)) != NULL)
  SYM(get_id, "ncclGetUniqueId");
  SYM(init, "ncclCommInitRank");
  SYM(all_reduce, "ncclAllReduce");
  SYM(broadcast, "ncclBroadcast");
  SYM(reduce, "ncclReduce");
  SYM(all_gather, "ncclAllGather");
  SYM(reduce_scatter, "ncclReduceScatter");
  SYM(send, "ncclSend");
  SYM(recv, "ncclRecv");
  SYM(group_start, "ncclGroupStart");
  SYM(group_end, "ncclGroupEnd");
  SYM(async_error, "ncclCommGetAsyncError");
  SYM(destroy, "ncclCommDestroy");
#undef SYM
}

#define CHECK_NCCL(call) CHECK_STATUS_EQ_(0, (int)(call), #call)

static int rank;
static int failures;
static cudaStream_t stream;

/* Copies n bytes of device memory d back and compares them with want; rank 0 prints. */
static void expect(const char *what, const void *d, const void *want, size_t n) {
  char *got = (char *)malloc(n);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(got, d, n, cudaMemcpyDeviceToHost));
  size_t i = 0;
  while (i < n && got[i] == ((const char *)want)[i]) i++;
  if (i < n) failures++;
  if (rank == 0) {
    if (i < n)
      printf("%s: differs at byte %zu (%02x, expected %02x)\n", what, i, (unsigned char)got[i],
             ((const unsigned char *)want)[i]);
    else printf("%s: ok\n", what);
  }
  free(got);
}

static void *dev_copy(const void *h, size_t n) {
  void *d;
  CHECK_CUDA(cudaMalloc(&d, n ? n : 1));
  CHECK_CUDA(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
  /* The copy may still be queued on the legacy stream, which `stream` does not wait for. */
  CHECK_CUDA(cudaDeviceSynchronize());
  return d;
}

static float val(int r, int i) { return (float)((r + 1) * (i % 97)) * 0.25f + (float)r * 0.5f; }

static uint16_t f2h(float f) { /* exact for the small multiples of 1/4 used here */
  uint32_t u;
  memcpy(&u, &f, 4);
  if (f == 0) return (uint16_t)((u >> 16) & 0x8000);
  int e = (int)((u >> 23) & 255) - 127;
  return (uint16_t)(((u >> 16) & 0x8000) | ((e + 15) << 10) | ((u >> 13) & 1023));
}

int main(void) {
  load();
  ncclUniqueId id;
  CHECK_NCCL(nc.get_id(&id));
  fflush(stdout);
  pid_t child = fork();
  CHECK(child >= 0);
  rank = child == 0 ? 1 : 0;
  int other = 1 - rank;
  CHECK_CUDA(cudaSetDevice(rank));
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ncclComm_t comm;
  CHECK_NCCL(nc.init(&comm, 2, id, rank));

  /* 1. all-reduce */
  static float a[2][BIG], want[BIG];
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < BIG; i++) a[r][i] = val(r, i);
  float *d = (float *)dev_copy(a[rank], sizeof a[rank]), *o;
  CHECK_CUDA(cudaMalloc(&o, sizeof want));
  for (int i = 0; i < N; i++) want[i] = a[0][i] + a[1][i];
  CHECK_NCCL(nc.all_reduce(d, o, N, ncclFloat32, ncclSum, comm, stream));
  expect("allreduce sum f32", o, want, N * 4);
  for (int i = 0; i < N; i++) want[i] = a[0][i] * 0.5f + a[1][i] * 0.5f;
  CHECK_NCCL(nc.all_reduce(d, o, N, ncclFloat32, ncclAvg, comm, stream));
  expect("allreduce avg f32", o, want, N * 4);
  for (int i = 0; i < N; i++) want[i] = fmaxf(a[0][i], a[1][i]);
  CHECK_NCCL(nc.all_reduce(d, o, N, ncclFloat32, ncclMax, comm, stream));
  expect("allreduce max f32", o, want, N * 4);
  for (int i = 0; i < BIG; i++) want[i] = a[0][i] + a[1][i];
  CHECK_NCCL(nc.all_reduce(d, d, BIG, ncclFloat32, ncclSum, comm, stream));
  expect("allreduce sum f32 in place, in chunks", d, want, BIG * 4);

  static int32_t ia[N], iw[N];
  for (int i = 0; i < N; i++) ia[i] = (i % 13 - 6) * (rank ? 3 : -2), iw[i] = 0;
  for (int i = 0; i < N; i++) {
    int32_t x = (i % 13 - 6) * -2, y = (i % 13 - 6) * 3;
    iw[i] = x < y ? x : y;
  }
  int32_t *di = (int32_t *)dev_copy(ia, sizeof ia);
  CHECK_NCCL(nc.all_reduce(di, di, N, ncclInt32, ncclMin, comm, stream));
  expect("allreduce min i32", di, iw, sizeof iw);

  static uint8_t ua[N], uw[N];
  for (int i = 0; i < N; i++) ua[i] = (uint8_t)(i + rank * 7), uw[i] = (uint8_t)(i * (i + 7));
  uint8_t *du = (uint8_t *)dev_copy(ua, sizeof ua);
  CHECK_NCCL(nc.all_reduce(du, du, N, ncclUint8, ncclProd, comm, stream));
  expect("allreduce prod u8", du, uw, sizeof uw);

  static uint16_t ha[N], hw[N], ba[N], bw[N];
  for (int i = 0; i < N; i++) {
    float x = (float)(i % 50) * 0.25f, y = (float)(i % 31) * 0.5f;
    float mine = rank ? y : x;
    ha[i] = f2h(mine), hw[i] = f2h(x + y);
    uint32_t u;
    memcpy(&u, &mine, 4);
    ba[i] = (uint16_t)(u >> 16);
    float s = x + y;
    memcpy(&u, &s, 4);
    bw[i] = (uint16_t)(u >> 16);
  }
  uint16_t *dh = (uint16_t *)dev_copy(ha, sizeof ha), *db = (uint16_t *)dev_copy(ba, sizeof ba);
  CHECK_NCCL(nc.all_reduce(dh, dh, N, ncclFloat16, ncclSum, comm, stream));
  expect("allreduce sum f16", dh, hw, sizeof hw);
  CHECK_NCCL(nc.all_reduce(db, db, N, ncclBfloat16, ncclSum, comm, stream));
  expect("allreduce sum bf16", db, bw, sizeof bw);

  /* 2. rooted and gathering collectives */
  float *b = (float *)dev_copy(a[rank], N * 4);
  CHECK_NCCL(nc.broadcast(b, b, N, ncclFloat32, 1, comm, stream));
  expect("broadcast from rank 1", b, a[1], N * 4);
  CHECK_CUDA(cudaMemset(o, 0, N * 4));
  CHECK_CUDA(cudaDeviceSynchronize());
  float *src = (float *)dev_copy(a[rank], N * 4);
  CHECK_NCCL(nc.reduce(src, o, N, ncclFloat32, ncclSum, 1, comm, stream));
  static float zero[N];
  for (int i = 0; i < N; i++) want[i] = a[0][i] + a[1][i];
  expect("reduce to rank 1", o, rank == 1 ? want : zero, N * 4);
  float *g;
  CHECK_CUDA(cudaMalloc(&g, 2 * N * 4));
  CHECK_NCCL(nc.all_gather(src, g, N, ncclFloat32, comm, stream));
  static float gw[2 * N];
  memcpy(gw, a[0], N * 4);
  memcpy(gw + N, a[1], N * 4);
  expect("allgather", g, gw, 2 * N * 4);
  float *rs = (float *)dev_copy(a[rank], 2 * 1000 * 4);
  CHECK_NCCL(nc.reduce_scatter(rs, o, 1000, ncclFloat32, ncclSum, comm, stream));
  for (int i = 0; i < 1000; i++) want[i] = a[0][rank * 1000 + i] + a[1][rank * 1000 + i];
  expect("reducescatter", o, want, 1000 * 4);

  /* 3. a group of sends and receives both ways */
  static unsigned char sb[P2P_BYTES], rw[P2P_BYTES];
  for (int i = 0; i < P2P_BYTES; i++) sb[i] = (unsigned char)(i * 7 + rank), rw[i] = (unsigned char)(i * 7 + other);
  unsigned char *ds = (unsigned char *)dev_copy(sb, sizeof sb), *dr;
  CHECK_CUDA(cudaMalloc(&dr, sizeof rw));
  CHECK_NCCL(nc.group_start());
  CHECK_NCCL(nc.send(ds, P2P_BYTES, ncclUint8, other, comm, stream));
  CHECK_NCCL(nc.recv(dr, P2P_BYTES, ncclUint8, other, comm, stream));
  CHECK_NCCL(nc.group_end());
  expect("group send/recv", dr, rw, sizeof rw);

  /* 4. rank 1 alone: its peer never comes */
  ncclResult_t async = ncclSuccess;
  if (rank == 1) {
    CHECK_NCCL(nc.all_reduce(d, d, N, ncclFloat32, ncclSum, comm, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_NCCL(nc.async_error(comm, &async));
    if (async != ncclRemoteError) failures++;
  }
  CHECK_NCCL(nc.destroy(comm));
  CHECK_CUDA(cudaStreamDestroy(stream));
  if (rank == 1) exit(failures ? 1 : 0); /* exit: the child writes its own reports */
  int st = 0;
  CHECK(waitpid(child, &st, 0) == child);
  printf("rank 1: %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0
                             ? "same results, and ncclRemoteError after waiting alone"
                             : "FAILED");
  return failures || !WIFEXITED(st) || WEXITSTATUS(st) ? 1 : 0;
}
