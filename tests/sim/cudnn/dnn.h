/* dnn.h — internals of the simulated cuDNN (libcudnn.so.9) shared by its files.
 *
 * handle.c  library state, handles, reaching the driver (dlopen libcuda.so.1 and
 *           cuGetProcAddress_v2, as real cuDNN does), launching kernels
 * desc.c    tensor, filter, convolution and activation descriptors
 * ops.c     the compute calls; they validate on the calling thread, then launch one kernel of
 *           kernels.cu on the handle's stream and return: no arithmetic happens on the caller
 * bn.c      batch normalization (training forward, backward, inference), the same way
 * rnn.c     recurrent layers (RNN, data and dropout descriptors, forward, backward data and
 *           weights), the same way: one kernel of kernels.cu per layer and pass
 * backend.c the backend (graph) API: descriptors with a typed attribute store (backend.h),
 *           finalization, derived attributes, cudnnBackendExecute; single-convolution graphs
 * opgraph.c every other operation graph, compiled for the interpreter of opgraph.h and executed
 *           as one launch
 * twins.c   the kernels' CPU twins, which the simulated driver runs on its device thread
 *
 * Functions here return CUDNN_STATUS_SUCCESS or the status the public call should return.
 */
#ifndef CUDNNSIM_DNN_H
#define CUDNNSIM_DNN_H

#include <cuda.h>
#include <cudnn.h>

#include "cudnnsim.h"
#include "rnnsim.h"
#include "opgraph.h"
#include "common/simcommon.h"

/* Set in every descriptor and handle while it lives, so that a destroyed or foreign pointer is
 * refused with BAD_PARAM instead of being used. */
#define DNN_MAGIC_HANDLE 0x686e646cu
#define DNN_MAGIC_TENSOR 0x74656e73u
#define DNN_MAGIC_FILTER 0x66696c74u
#define DNN_MAGIC_CONV 0x636f6e76u
#define DNN_MAGIC_ACT 0x61637476u

typedef enum {
  DNN_K_CONV,
  DNN_K_ADD,
  DNN_K_ACT,
  DNN_K_CBA,
  DNN_K_CONV_BWD_DATA,
  DNN_K_CONV_BWD_FILTER,
  DNN_K_BN_TRAIN,
  DNN_K_BN_INFER,
  DNN_K_BN_BWD,
  DNN_K_RNN_FWD,
  DNN_K_RNN_BWD_GATE,
  DNN_K_RNN_BWD_DX,
  DNN_K_RNN_BWD_W,
  DNN_K_RNN_DROP_INIT,
  DNN_K_OPGRAPH,
  DNN_K_COUNT
} dnn_kernel_t;

struct cudnnContext {
  unsigned magic;
  CUcontext ctx;    /* context current at cudnnCreate; the module below belongs to it */
  CUmodule module;  /* the handle's copy of the device code */
  CUfunction fn[DNN_K_COUNT]; /* indexed by dnn_kernel_t */
  cudaStream_t stream;
};

struct cudnnTensorStruct {
  unsigned magic;
  int set; /* 0 until a Set call succeeds */
  cudnnDataType_t dtype;
  int nbdims;
  int dims[CUDNN_DIM_MAX];
  int strides[CUDNN_DIM_MAX];
};

struct cudnnFilterStruct {
  unsigned magic;
  int set;
  cudnnDataType_t dtype;
  cudnnTensorFormat_t format;
  int k, c, h, w;
};

struct cudnnConvolutionStruct {
  unsigned magic;
  int set;
  int pad_h, pad_w, u, v, dil_h, dil_w;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  cudnnMathType_t math;
  int groups;
};

struct cudnnActivationStruct {
  unsigned magic;
  int set;
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef;
};

/* Fault injection (SIM_FAIL, see simcommon.h): every public call that returns a status starts
 * with DNN_FAULT(status), which returns `status` when this call of the function is to fail. */
#define DNN_FAULT(status)                                                                 \
  do {                                                                                    \
    if (simc_should_fail(__func__)) return (status);                                      \
  } while (0)


/* Nonzero when h is a live handle. */
int dnn_handle_ok(cudnnHandle_t h);

/* Launches kernel `k` of handle h's module over `count` threads (1-D, CUDNNSIM_BLOCK per
 * block) on the handle's stream, with the kernel's parameters in args. */
cudnnStatus_t dnn_launch(cudnnHandle_t h, dnn_kernel_t k, long long count, void **args);

/* Descriptor checks: nonzero when d is live and has been set. */
int dnn_tensor_ok(cudnnTensorDescriptor_t d);
int dnn_filter_ok(cudnnFilterDescriptor_t d);
int dnn_conv_ok(cudnnConvolutionDescriptor_t d);
int dnn_act_ok(cudnnActivationDescriptor_t d);

/* The tensor as the kernels see it. Only 4-d tensors are supported; the caller checks
 * nbdims == 4 first. */
cudnnsim_t4_t dnn_t4(cudnnTensorDescriptor_t d);

/* The filter (K,C,R,S) as the kernels see it, strides from its format. */
cudnnsim_t4_t dnn_f4(cudnnFilterDescriptor_t d);

#endif
