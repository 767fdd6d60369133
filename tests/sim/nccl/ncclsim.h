/* ncclsim.h — the parts of NCCL's public API the simulated libnccl.so.2 implements, and the
 * argument block of its kernels, shared by nccl.c (host side and CPU twins) and kernels.cu
 * (the device code the driver loads).
 *
 * The types and values are NCCL's (nccl.h of NCCL 2.30, whose ABI PyTorch's wheel was built
 * against); they are repeated here so that the simulator builds without NCCL installed.
 */
#ifndef SIM_NCCLSIM_H
#define SIM_NCCLSIM_H

#include <stddef.h>
#include <stdint.h>

#define NCCLSIM_VERSION_CODE 23007 /* NCCL 2.30.7, the version of the wheel's nvidia-nccl */
#define NCCLSIM_UNIQUE_ID_BYTES 128
#define NCCLSIM_API_MAGIC 0xcafebeefu

typedef struct {
  char internal[NCCLSIM_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5 } ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* The head of ncclConfig_t: only its size, magic, version and `blocking` are read. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
} ncclsim_config_head_t;

typedef struct ncclComm *ncclComm_t;

/* ---- the kernels ---- */

/* What a kernel does (ncclsim_args_t.coll). */
enum { NCCLSIM_ALLREDUCE, NCCLSIM_BROADCAST, NCCLSIM_REDUCE, NCCLSIM_ALLGATHER,
       NCCLSIM_REDUCESCATTER, NCCLSIM_SENDRECV };

#define NCCLSIM_MAX_P2P 64

/* One send or receive of a group's point-to-point kernel. */
typedef struct {
  uint64_t buf;   /* device address */
  uint64_t bytes;
  int32_t peer;
  int32_t recv;   /* 0: send to peer, 1: receive from peer */
} ncclsim_p2p_t;

/* The argument block every simulated NCCL kernel takes by value, as NCCL's kernels take theirs
 * (ncclDevKernelArgs): everything the operation needs, so that the launch is self-contained. */
typedef struct {
  uint64_t comm;      /* the ncclComm (host address) */
  uint64_t send, recv;
  uint64_t count;     /* elements: per rank for AllGather and ReduceScatter (the output's count
                       * for ReduceScatter, the input's for AllGather) */
  uint32_t coll, op, dtype;
  int32_t root;
  uint32_t np2p;
  uint32_t pad;
  ncclsim_p2p_t p2p[NCCLSIM_MAX_P2P];
} ncclsim_args_t;

/* The kernels, by NCCL's names: X(name) for the reductions (collective × operation family ×
 * type, the operation itself in the arguments) and the others. */
#define NCCLSIM_TYPES(X, coll, op)                                                          \
  X(coll, op, i8) X(coll, op, u8) X(coll, op, i32) X(coll, op, u32) X(coll, op, i64)        \
  X(coll, op, u64) X(coll, op, f16) X(coll, op, f32) X(coll, op, f64) X(coll, op, bf16)
#define NCCLSIM_OPS(X, coll)                                                                \
  NCCLSIM_TYPES(X, coll, Sum) NCCLSIM_TYPES(X, coll, Prod) NCCLSIM_TYPES(X, coll, MinMax)    \
  NCCLSIM_TYPES(X, coll, PreMulSum) NCCLSIM_TYPES(X, coll, SumPostDiv)
#define NCCLSIM_REDUCING_KERNELS(X)                                                         \
  NCCLSIM_OPS(X, AllReduce) NCCLSIM_OPS(X, ReduceScatter) NCCLSIM_OPS(X, Reduce)
#define NCCLSIM_OTHER_KERNELS(Y)                                                            \
  Y(ncclDevKernel_Broadcast_RING_LL) Y(ncclDevKernel_AllGather_RING_LL) Y(ncclDevKernel_SendRecv)

#endif
