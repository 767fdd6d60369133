/* rnn.c — recurrent layers of the simulated cuDNN: the cuDNN 9 RNN API that PyTorch's cuDNN RNN
 * path calls (RNN, RNN data and dropout descriptors, the weight-space queries, cudnnRNNForward,
 * cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8).
 *
 * As ops.c: each compute call validates on the calling thread, copies what the kernels need
 * into their arguments (rnnsim.h's cudnnsim_rnn_t, by value), launches its kernels on the
 * handle's stream and returns. The forward launches one kernel per layer, backward data two per
 * layer (top layer first), backward weights one. Intermediate values live in the caller's
 * reserve space (training) or workspace (inference), laid out as rnnsim.h describes; backward
 * data writes the gates' gradients into the reserve space, which backward weights then reads,
 * as cuDNN documents (backward weights must follow backward data).
 *
 * Offered: RNN_RELU, RNN_TANH, LSTM, GRU; uni- and bidirectional; any number of layers;
 * CUDNN_RNN_DOUBLE_BIAS (what PyTorch always asks for; its bias=False leaves zero biases) and
 * CUDNN_RNN_NO_BIAS; CUDNN_LINEAR_INPUT; every algorithm (the same arithmetic); projection size
 * equal to the hidden size; float, half and bfloat16 data with float math (half values widened
 * exactly, every stored value rounded once); the three data layouts, with sequences of
 * different lengths (up to 256 sequences of up to 256 steps: the lengths travel in the kernels'
 * arguments; devSeqLengths is not read). Valid requests beyond these (skip input, single biases,
 * projections, larger batches of different lengths, empty sequences) answer
 * CUDNN_STATUS_NOT_SUPPORTED. Dropout between layers applies in training (masks drawn from the
 * descriptor's states, rnnsim.h), not in inference, as in cuDNN.
 */
#include "dnn.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DNN_MAGIC_RNN 0x726e6e64u
#define DNN_MAGIC_RNNDATA 0x726e6461u
#define DNN_MAGIC_DROPOUT 0x64726f70u

/* Bytes of dropout state cudnnDropoutGetStatesSize asks for; the simulator uses the first 16
 * (rnnsim.h's dropout record: the seed and a counter of the forward passes that drew masks). */
#define DNN_DROPOUT_STATES 4096

struct cudnnDropoutStruct {
  unsigned magic;
  int set;
  float dropout;
  void *states;
  size_t states_size;
  unsigned long long seed;
};

struct cudnnRNNStruct {
  unsigned magic;
  int set;
  cudnnRNNAlgo_t algo;
  cudnnRNNMode_t mode;
  cudnnRNNBiasMode_t bias;
  cudnnDirectionMode_t dir;
  cudnnRNNInputMode_t input_mode;
  cudnnDataType_t dtype, math_prec;
  cudnnMathType_t math;
  int input, hidden, proj, layers;
  cudnnDropoutDescriptor_t dropout;
  unsigned aux;
};

struct cudnnRNNDataStruct {
  unsigned magic;
  int set;
  cudnnDataType_t dtype;
  cudnnRNNDataLayout_t layout;
  int max_len, batch, vec;
  int full;   /* every sequence has max_len steps */
  int *lens;  /* each sequence's steps (batch of them) */
  float pad;  /* paddingFill, or 0 */
};

static void *rnn_new(size_t size, unsigned magic) {
  unsigned *d = calloc(1, size);
  if (d) *d = magic;
  return d;
}

static cudnnStatus_t rnn_free(void *d, unsigned magic) {
  if (!d || *(unsigned *)d != magic) return CUDNN_STATUS_BAD_PARAM;
  *(unsigned *)d = 0;
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

static int dropout_ok(cudnnDropoutDescriptor_t d) { return d && d->magic == DNN_MAGIC_DROPOUT; }
static int rnn_ok(cudnnRNNDescriptor_t d) { return d && d->magic == DNN_MAGIC_RNN && d->set; }
static int data_ok(cudnnRNNDataDescriptor_t d) {
  return d && d->magic == DNN_MAGIC_RNNDATA && d->set;
}

/* The kernels' element type of a cuDNN data type; -1 when not offered. */
static int sim_dtype(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_FLOAT: return CUDNNSIM_F32;
  case CUDNN_DATA_HALF: return CUDNNSIM_F16;
  case CUDNN_DATA_BFLOAT16: return CUDNNSIM_BF16;
  default: return -1;
  }
}

static size_t elem_size(cudnnDataType_t t) { return t == CUDNN_DATA_FLOAT ? 4 : 2; }

/* ---- Dropout descriptors ---- */

cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t *dropoutDesc) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!dropoutDesc) return CUDNN_STATUS_BAD_PARAM;
  *dropoutDesc = rnn_new(sizeof **dropoutDesc, DNN_MAGIC_DROPOUT);
  return *dropoutDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dropoutDesc) return CUDNN_STATUS_SUCCESS; /* cuDNN accepts NULL */
  return rnn_free(dropoutDesc, DNN_MAGIC_DROPOUT);
}

cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t *sizeInBytes) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_handle_ok(handle) || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  *sizeInBytes = DNN_DROPOUT_STATES;
  return CUDNN_STATUS_SUCCESS;
}

/* Set and Restore: the probability, the states' buffer and the seed are recorded. Set also
 * initializes the states on the device, as cuDNN does (a kernel on the handle's stream writes the
 * seed and a zero counter); Restore takes states initialized before, as they are. */
static cudnnStatus_t dropout_set(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float dropout,
                                 void *states, size_t size, unsigned long long seed, int init) {
  if (!dropout_ok(d) || !dnn_handle_ok(handle) || !(dropout >= 0.0f && dropout <= 1.0f))
    return CUDNN_STATUS_BAD_PARAM;
  if (dropout > 0.0f && (!states || size < DNN_DROPOUT_STATES)) return CUDNN_STATUS_BAD_PARAM;
  d->dropout = dropout;
  d->states = states;
  d->states_size = size;
  d->seed = seed;
  d->set = 1;
  if (init && states && size >= DNN_DROPOUT_STATES) {
    unsigned lo = (unsigned)seed, hi = (unsigned)(seed >> 32);
    void *args[] = {&states, &lo, &hi};
    return dnn_launch(handle, DNN_K_RNN_DROP_INIT, 1, args);
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle,
                                        float dropout, void *states, size_t stateSizeInBytes,
                                        unsigned long long seed) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  return dropout_set(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed, 1);
}

cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc,
                                            cudnnHandle_t handle, float dropout, void *states,
                                            size_t stateSizeInBytes, unsigned long long seed) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  return dropout_set(dropoutDesc, handle, dropout, states, stateSizeInBytes, seed, 0);
}

cudnnStatus_t cudnnGetDropoutDescriptor(cudnnDropoutDescriptor_t dropoutDesc, cudnnHandle_t handle,
                                        float *dropout, void **states,
                                        unsigned long long *seed) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dropout_ok(dropoutDesc) || !dropoutDesc->set || !dnn_handle_ok(handle) || !dropout ||
      !states || !seed)
    return CUDNN_STATUS_BAD_PARAM;
  *dropout = dropoutDesc->dropout;
  *states = dropoutDesc->states;
  *seed = dropoutDesc->seed;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- RNN descriptors ---- */

cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t *rnnDesc) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!rnnDesc) return CUDNN_STATUS_BAD_PARAM;
  *rnnDesc = rnn_new(sizeof **rnnDesc, DNN_MAGIC_RNN);
  return *rnnDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t rnnDesc) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!rnnDesc) return CUDNN_STATUS_SUCCESS;
  return rnn_free(rnnDesc, DNN_MAGIC_RNN);
}

cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t rnnDesc, cudnnRNNAlgo_t algo,
                                       cudnnRNNMode_t cellMode, cudnnRNNBiasMode_t biasMode,
                                       cudnnDirectionMode_t dirMode, cudnnRNNInputMode_t inputMode,
                                       cudnnDataType_t dataType, cudnnDataType_t mathPrec,
                                       cudnnMathType_t mathType, int32_t inputSize,
                                       int32_t hiddenSize, int32_t projSize, int32_t numLayers,
                                       cudnnDropoutDescriptor_t dropoutDesc, uint32_t auxFlags) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!rnnDesc || rnnDesc->magic != DNN_MAGIC_RNN) return CUDNN_STATUS_BAD_PARAM;
  if ((unsigned)algo >= CUDNN_RNN_ALGO_COUNT || (unsigned)cellMode > CUDNN_GRU ||
      (unsigned)biasMode > CUDNN_RNN_SINGLE_REC_BIAS || (unsigned)dirMode > CUDNN_BIDIRECTIONAL ||
      (unsigned)inputMode > CUDNN_SKIP_INPUT || (unsigned)mathType > CUDNN_FMA_MATH ||
      inputSize <= 0 || hiddenSize <= 0 || projSize <= 0 || projSize > hiddenSize ||
      numLayers <= 0 || (auxFlags & ~(uint32_t)CUDNN_RNN_PADDED_IO_ENABLED) ||
      (dropoutDesc && (!dropout_ok(dropoutDesc) || !dropoutDesc->set)))
    return CUDNN_STATUS_BAD_PARAM;
  if (sim_dtype(dataType) < 0 && dataType != CUDNN_DATA_DOUBLE) return CUDNN_STATUS_BAD_PARAM;
  rnnDesc->algo = algo, rnnDesc->mode = cellMode, rnnDesc->bias = biasMode;
  rnnDesc->dir = dirMode, rnnDesc->input_mode = inputMode;
  rnnDesc->dtype = dataType, rnnDesc->math_prec = mathPrec, rnnDesc->math = mathType;
  rnnDesc->input = inputSize, rnnDesc->hidden = hiddenSize, rnnDesc->proj = projSize;
  rnnDesc->layers = numLayers, rnnDesc->dropout = dropoutDesc, rnnDesc->aux = auxFlags;
  rnnDesc->set = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetRNNDescriptor_v8(cudnnRNNDescriptor_t rnnDesc, cudnnRNNAlgo_t *algo,
                                       cudnnRNNMode_t *cellMode, cudnnRNNBiasMode_t *biasMode,
                                       cudnnDirectionMode_t *dirMode,
                                       cudnnRNNInputMode_t *inputMode, cudnnDataType_t *dataType,
                                       cudnnDataType_t *mathPrec, cudnnMathType_t *mathType,
                                       int32_t *inputSize, int32_t *hiddenSize, int32_t *projSize,
                                       int32_t *numLayers, cudnnDropoutDescriptor_t *dropoutDesc,
                                       uint32_t *auxFlags) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!rnn_ok(rnnDesc)) return CUDNN_STATUS_BAD_PARAM;
  /* NULL pointers are allowed: those values are not returned. */
  if (algo) *algo = rnnDesc->algo;
  if (cellMode) *cellMode = rnnDesc->mode;
  if (biasMode) *biasMode = rnnDesc->bias;
  if (dirMode) *dirMode = rnnDesc->dir;
  if (inputMode) *inputMode = rnnDesc->input_mode;
  if (dataType) *dataType = rnnDesc->dtype;
  if (mathPrec) *mathPrec = rnnDesc->math_prec;
  if (mathType) *mathType = rnnDesc->math;
  if (inputSize) *inputSize = rnnDesc->input;
  if (hiddenSize) *hiddenSize = rnnDesc->hidden;
  if (projSize) *projSize = rnnDesc->proj;
  if (numLayers) *numLayers = rnnDesc->layers;
  if (dropoutDesc) *dropoutDesc = rnnDesc->dropout;
  if (auxFlags) *auxFlags = rnnDesc->aux;
  return CUDNN_STATUS_SUCCESS;
}

/* The network as the kernels see it (no data dimensions yet); NOT_SUPPORTED outside the offered
 * configurations. */
static cudnnStatus_t rnn_args(cudnnRNNDescriptor_t r, cudnnsim_rnn_t *p) {
  if (!rnn_ok(r)) return CUDNN_STATUS_BAD_PARAM;
  int dt = sim_dtype(r->dtype);
  if (dt < 0 || r->math_prec != CUDNN_DATA_FLOAT ||
      r->input_mode != CUDNN_LINEAR_INPUT || r->proj != r->hidden ||
      (r->bias != CUDNN_RNN_DOUBLE_BIAS && r->bias != CUDNN_RNN_NO_BIAS))
    return CUDNN_STATUS_NOT_SUPPORTED;
  memset(p, 0, sizeof *p);
  p->mode = (int)r->mode;
  p->I = r->input, p->H = r->hidden, p->L = r->layers;
  p->D = r->dir == CUDNN_BIDIRECTIONAL ? 2 : 1;
  p->bias = r->bias == CUDNN_RNN_DOUBLE_BIAS;
  p->dtype = dt;
  p->T = p->B = 1;
  if (cudnnsim_rnn_wcount(p) > 0x7fffffffLL) return CUDNN_STATUS_NOT_SUPPORTED;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                         size_t *weightSpaceSize) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  cudnnsim_rnn_t p;
  if (!dnn_handle_ok(handle) || !weightSpaceSize) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = rnn_args(rnnDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  *weightSpaceSize = (size_t)cudnnsim_rnn_wcount(&p) * elem_size(rnnDesc->dtype);
  return CUDNN_STATUS_SUCCESS;
}

/* Writes a 3-d tensor descriptor {1, rows, cols}, packed, of type dt. */
static cudnnStatus_t set_desc3(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int rows, int cols) {
  if (!d || d->magic != DNN_MAGIC_TENSOR) return CUDNN_STATUS_BAD_PARAM;
  d->dtype = dt;
  d->nbdims = 3;
  d->dims[0] = 1, d->dims[1] = rows, d->dims[2] = cols;
  d->strides[0] = rows * cols, d->strides[1] = cols, d->strides[2] = 1;
  d->set = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                      int32_t pseudoLayer, size_t weightSpaceSize,
                                      const void *weightSpace, int32_t linLayerID,
                                      cudnnTensorDescriptor_t mDesc, void **mAddr,
                                      cudnnTensorDescriptor_t bDesc, void **bAddr) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  cudnnsim_rnn_t p;
  if (!dnn_handle_ok(handle)) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = rnn_args(rnnDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  int G = cudnnsim_rnn_g(&p), H = p.H;
  if (pseudoLayer < 0 || pseudoLayer >= p.L * p.D || linLayerID < 0 || linLayerID >= 2 * G ||
      weightSpaceSize < (size_t)cudnnsim_rnn_wcount(&p) * elem_size(rnnDesc->dtype))
    return CUDNN_STATUS_BAD_PARAM;
  if ((mDesc && !mAddr) || (bDesc && !bAddr)) return CUDNN_STATUS_BAD_PARAM;
  int l = pseudoLayer / p.D, d = pseudoLayer % p.D, rec = linLayerID >= G, g = linLayerID % G;
  long long in = cudnnsim_rnn_in(&p, l), gh = (long long)G * H;
  long long base = cudnnsim_rnn_woff(&p, l, d), moff, boff;
  moff = rec ? base + gh * in + (long long)g * H * H : base + (long long)g * H * in;
  boff = base + gh * in + gh * H + (rec ? gh : 0) + (long long)g * H;
  uintptr_t w = (uintptr_t)weightSpace, es = elem_size(rnnDesc->dtype);
  if (mAddr) {
    *mAddr = (void *)(w + (uintptr_t)moff * es);
    if (mDesc && (st = set_desc3(mDesc, rnnDesc->dtype, H, rec ? H : (int)in)) != CUDNN_STATUS_SUCCESS)
      return st;
  }
  if (bAddr) {
    /* Without biases there are none to point at, as cuDNN answers. */
    *bAddr = p.bias ? (void *)(w + (uintptr_t)boff * es) : NULL;
    if (bDesc && p.bias && (st = set_desc3(bDesc, rnnDesc->dtype, H, 1)) != CUDNN_STATUS_SUCCESS)
      return st;
  }
  return CUDNN_STATUS_SUCCESS;
}

/* ---- RNN data descriptors ---- */

cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t *rnnDataDesc) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!rnnDataDesc) return CUDNN_STATUS_BAD_PARAM;
  *rnnDataDesc = rnn_new(sizeof **rnnDataDesc, DNN_MAGIC_RNNDATA);
  return *rnnDataDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!rnnDataDesc) return CUDNN_STATUS_SUCCESS;
  if (rnnDataDesc->magic == DNN_MAGIC_RNNDATA) free(rnnDataDesc->lens);
  return rnn_free(rnnDataDesc, DNN_MAGIC_RNNDATA);
}

cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc,
                                        cudnnDataType_t dataType, cudnnRNNDataLayout_t layout,
                                        int maxSeqLength, int batchSize, int vectorSize,
                                        const int seqLengthArray[], void *paddingFill) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!rnnDataDesc || rnnDataDesc->magic != DNN_MAGIC_RNNDATA || !seqLengthArray ||
      (unsigned)layout > CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED || maxSeqLength <= 0 ||
      batchSize <= 0 || vectorSize <= 0)
    return CUDNN_STATUS_BAD_PARAM;
  if (sim_dtype(dataType) < 0 && dataType != CUDNN_DATA_DOUBLE) return CUDNN_STATUS_BAD_PARAM;
  int full = 1;
  for (int b = 0; b < batchSize; b++) {
    if (seqLengthArray[b] < 0 || seqLengthArray[b] > maxSeqLength) return CUDNN_STATUS_BAD_PARAM;
    /* The packed layout keeps its sequences sorted longest first. */
    if (layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED && b > 0 &&
        seqLengthArray[b] > seqLengthArray[b - 1])
      return CUDNN_STATUS_BAD_PARAM;
    full &= seqLengthArray[b] == maxSeqLength;
  }
  if ((long long)maxSeqLength * batchSize * vectorSize > 0x7fffffffLL)
    return CUDNN_STATUS_NOT_SUPPORTED;
  int *lens = malloc(sizeof(int) * (size_t)batchSize);
  if (!lens) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  memcpy(lens, seqLengthArray, sizeof(int) * (size_t)batchSize);
  free(rnnDataDesc->lens);
  rnnDataDesc->lens = lens;
  /* The padding value, of the data's type (read now: cuDNN keeps it from this call on). */
  rnnDataDesc->pad = paddingFill && sim_dtype(dataType) >= 0
                         ? cudnnsim_ld(paddingFill, sim_dtype(dataType), 0)
                         : 0.0f;
  rnnDataDesc->dtype = dataType, rnnDataDesc->layout = layout;
  rnnDataDesc->max_len = maxSeqLength, rnnDataDesc->batch = batchSize, rnnDataDesc->vec = vectorSize;
  rnnDataDesc->full = full;
  rnnDataDesc->set = 1;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Validation shared by the compute calls ---- */

/* Completes p from x's and y's data descriptors: the same data type as the network, vectors of
 * its input and output sizes, the same shape, layout and sequence lengths. */
static cudnnStatus_t data_args(cudnnRNNDescriptor_t r, cudnnRNNDataDescriptor_t xd,
                               cudnnRNNDataDescriptor_t yd, cudnnsim_rnn_t *p) {
  cudnnStatus_t st = rnn_args(r, p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!data_ok(xd) || (yd && !data_ok(yd))) return CUDNN_STATUS_BAD_PARAM;
  if (xd->dtype != r->dtype || xd->vec != r->input) return CUDNN_STATUS_BAD_PARAM;
  if (yd && (yd->dtype != r->dtype || yd->vec != p->D * r->proj || yd->max_len != xd->max_len ||
             yd->batch != xd->batch || yd->layout != xd->layout))
    return CUDNN_STATUS_BAD_PARAM;
  if (yd && memcmp(xd->lens, yd->lens, sizeof(int) * (size_t)xd->batch) != 0)
    return CUDNN_STATUS_BAD_PARAM;
  p->T = xd->max_len, p->B = xd->batch;
  p->batch_major = xd->layout == CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;
  p->pad = yd ? yd->pad : 0.0f;
  if (!xd->full) {
    /* Sequences of different lengths travel in the kernels' arguments: up to 256 of up to 256
     * steps, each of at least one step. */
    if (p->B > CUDNNSIM_RNN_MAXB || p->T > CUDNNSIM_RNN_MAXT) return CUDNN_STATUS_NOT_SUPPORTED;
    p->varlen = 1;
    for (int b = 0; b < p->B; b++) {
      if (xd->lens[b] < 1) return CUDNN_STATUS_NOT_SUPPORTED;
      p->lens[b] = xd->lens[b];
    }
    if (xd->layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED) {
      p->packed = 1;
      for (int t = 0; t < p->T; t++) {
        int n = 0;
        for (int b = 0; b < p->B; b++) n += p->lens[b] > t;
        p->start[t + 1] = p->start[t] + n;
      }
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

/* A hidden or cell state descriptor: {L * D, B, H} of the network's type, possibly padded with
 * trailing dimensions of 1 (PyTorch describes them with 5). */
static cudnnStatus_t state_desc(cudnnTensorDescriptor_t d, cudnnRNNDescriptor_t r,
                                const cudnnsim_rnn_t *p, long long s[3]) {
  if (!dnn_tensor_ok(d) || d->nbdims < 3 || d->dtype != r->dtype || d->dims[0] != p->L * p->D ||
      d->dims[1] != p->B || d->dims[2] != p->H)
    return CUDNN_STATUS_BAD_PARAM;
  for (int i = 3; i < d->nbdims; i++)
    if (d->dims[i] != 1) return CUDNN_STATUS_BAD_PARAM;
  s[0] = d->strides[0], s[1] = d->strides[1], s[2] = d->strides[2];
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t states_args(cudnnRNNDescriptor_t r, cudnnTensorDescriptor_t hd,
                                 cudnnTensorDescriptor_t cd, int need_c, cudnnsim_rnn_t *p) {
  long long s[3];
  cudnnStatus_t st = state_desc(hd, r, p, s);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  p->hs0 = s[0], p->hs1 = s[1], p->hs2 = s[2];
  if (p->mode == CUDNNSIM_LSTM && need_c) {
    if ((st = state_desc(cd, r, p, s)) != CUDNN_STATUS_SUCCESS) return st;
    p->cs0 = s[0], p->cs1 = s[1], p->cs2 = s[2];
  }
  return CUDNN_STATUS_SUCCESS;
}

/* Bytes of the state area (the reserve space; the layers' blocks, then the dropout record) and
 * of the backward scratch. */
static size_t state_bytes(const cudnnsim_rnn_t *p) {
  return (size_t)(p->L * cudnnsim_rnn_slayer(p) + 4) * sizeof(float);
}

/* Dropout between layers applies in training when there are layers to separate. */
static void dropout_args(cudnnRNNDescriptor_t r, cudnnsim_rnn_t *p) {
  cudnnDropoutDescriptor_t d = r->dropout;
  p->drop = p->L > 1 && d && d->magic == DNN_MAGIC_DROPOUT && d->dropout > 0.0f && d->states;
  p->drop_p = p->drop ? d->dropout : 0.0f;
}

static size_t scratch_bytes(const cudnnsim_rnn_t *p) {
  return (size_t)(cudnnsim_rnn_sy(p) + 3LL * p->D * p->B * p->H) * sizeof(float);
}

cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                        cudnnForwardMode_t fwdMode,
                                        cudnnRNNDataDescriptor_t xDesc, size_t *workSpaceSize,
                                        size_t *reserveSpaceSize) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  cudnnsim_rnn_t p;
  if (!dnn_handle_ok(handle) ||
      (fwdMode != CUDNN_FWD_MODE_INFERENCE && fwdMode != CUDNN_FWD_MODE_TRAINING))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = data_args(rnnDesc, xDesc, NULL, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  /* Inference keeps its states in the workspace; training in the reserve space, with the
   * backward passes' scratch in the workspace. */
  int train = fwdMode == CUDNN_FWD_MODE_TRAINING;
  if (workSpaceSize) *workSpaceSize = train ? scratch_bytes(&p) : state_bytes(&p);
  if (reserveSpaceSize) *reserveSpaceSize = train ? state_bytes(&p) : 0;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t weights_check(const cudnnsim_rnn_t *p, cudnnRNNDescriptor_t r, size_t size,
                                   const void *w) {
  if (!w || size < (size_t)cudnnsim_rnn_wcount(p) * elem_size(r->dtype))
    return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Compute ---- */

cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                              cudnnForwardMode_t fwdMode, const int32_t devSeqLengths[],
                              cudnnRNNDataDescriptor_t xDesc, const void *x,
                              cudnnRNNDataDescriptor_t yDesc, void *y,
                              cudnnTensorDescriptor_t hDesc, const void *hx, void *hy,
                              cudnnTensorDescriptor_t cDesc, const void *cx, void *cy,
                              size_t weightSpaceSize, const void *weightSpace,
                              size_t workSpaceSize, void *workSpace, size_t reserveSpaceSize,
                              void *reserveSpace) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  cudnnsim_rnn_t p;
  (void)devSeqLengths; /* the lengths come from the data descriptors */
  if (!dnn_handle_ok(handle) || !x || !y ||
      (fwdMode != CUDNN_FWD_MODE_INFERENCE && fwdMode != CUDNN_FWD_MODE_TRAINING))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = data_args(rnnDesc, xDesc, yDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if ((st = states_args(rnnDesc, hDesc, cDesc, cx || cy, &p)) != CUDNN_STATUS_SUCCESS) return st;
  if ((st = weights_check(&p, rnnDesc, weightSpaceSize, weightSpace)) != CUDNN_STATUS_SUCCESS)
    return st;
  int train = fwdMode == CUDNN_FWD_MODE_TRAINING;
  void *area = train ? reserveSpace : workSpace;
  size_t area_size = train ? reserveSpaceSize : workSpaceSize;
  if (!area || area_size < state_bytes(&p)) return CUDNN_STATUS_BAD_PARAM;
  if (train && (!workSpace || workSpaceSize < scratch_bytes(&p))) return CUDNN_STATUS_BAD_PARAM;
  void *states = NULL;
  if (train) {
    dropout_args(rnnDesc, &p);
    if (p.drop) states = rnnDesc->dropout->states;
  }
  if (p.mode != CUDNNSIM_LSTM) cx = NULL, cy = NULL;
  for (int l = 0; l < p.L; l++) {
    p.layer = l;
    void *args[] = {&p, &x, &hx, &cx, &weightSpace, &area, &y, &hy, &cy, &states};
    if ((st = dnn_launch(handle, DNN_K_RNN_FWD, (long long)p.D * p.B, args)) != CUDNN_STATUS_SUCCESS)
      return st;
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnRNNBackwardData_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                      const int32_t devSeqLengths[],
                                      cudnnRNNDataDescriptor_t yDesc, const void *y,
                                      const void *dy, cudnnRNNDataDescriptor_t xDesc, void *dx,
                                      cudnnTensorDescriptor_t hDesc, const void *hx,
                                      const void *dhy, void *dhx, cudnnTensorDescriptor_t cDesc,
                                      const void *cx, const void *dcy, void *dcx,
                                      size_t weightSpaceSize, const void *weightSpace,
                                      size_t workSpaceSize, void *workSpace,
                                      size_t reserveSpaceSize, void *reserveSpace) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  cudnnsim_rnn_t p;
  (void)devSeqLengths;
  (void)y; /* the outputs are in the reserve space */
  if (!dnn_handle_ok(handle) || !dy || !dx) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = data_args(rnnDesc, xDesc, yDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if ((st = states_args(rnnDesc, hDesc, cDesc, cx || dcy || dcx, &p)) != CUDNN_STATUS_SUCCESS)
    return st;
  if ((st = weights_check(&p, rnnDesc, weightSpaceSize, weightSpace)) != CUDNN_STATUS_SUCCESS)
    return st;
  if (!reserveSpace || reserveSpaceSize < state_bytes(&p) || !workSpace ||
      workSpaceSize < scratch_bytes(&p))
    return CUDNN_STATUS_BAD_PARAM;
  dropout_args(rnnDesc, &p);
  if (p.mode != CUDNNSIM_LSTM) cx = NULL, dcy = NULL, dcx = NULL;
  for (int l = p.L - 1; l >= 0; l--) {
    p.layer = l;
    const void *src = l == p.L - 1 ? dy : workSpace;
    void *gargs[] = {&p, &src, &hx, &cx, &dhy, &dcy, &weightSpace, &reserveSpace, &workSpace,
                     &dhx, &dcx};
    if ((st = dnn_launch(handle, DNN_K_RNN_BWD_GATE, (long long)p.D * p.B, gargs)) !=
        CUDNN_STATUS_SUCCESS)
      return st;
    void *xargs[] = {&p, &weightSpace, &reserveSpace, &workSpace, &dx};
    long long n = (long long)p.T * p.B * cudnnsim_rnn_in(&p, l);
    if ((st = dnn_launch(handle, DNN_K_RNN_BWD_DX, n, xargs)) != CUDNN_STATUS_SUCCESS) return st;
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                         cudnnWgradMode_t addGrad, const int32_t devSeqLengths[],
                                         cudnnRNNDataDescriptor_t xDesc, const void *x,
                                         cudnnTensorDescriptor_t hDesc, const void *hx,
                                         cudnnRNNDataDescriptor_t yDesc, const void *y,
                                         size_t weightSpaceSize, void *dweightSpace,
                                         size_t workSpaceSize, void *workSpace,
                                         size_t reserveSpaceSize, void *reserveSpace) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  cudnnsim_rnn_t p;
  (void)devSeqLengths;
  (void)y;
  (void)workSpace;
  (void)workSpaceSize;
  if (!dnn_handle_ok(handle) || !x ||
      (addGrad != CUDNN_WGRAD_MODE_ADD && addGrad != CUDNN_WGRAD_MODE_SET))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = data_args(rnnDesc, xDesc, yDesc, &p);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if ((st = states_args(rnnDesc, hDesc, NULL, 0, &p)) != CUDNN_STATUS_SUCCESS) return st;
  if ((st = weights_check(&p, rnnDesc, weightSpaceSize, dweightSpace)) != CUDNN_STATUS_SUCCESS)
    return st;
  if (!reserveSpace || reserveSpaceSize < state_bytes(&p)) return CUDNN_STATUS_BAD_PARAM;
  dropout_args(rnnDesc, &p);
  p.wgrad_add = addGrad == CUDNN_WGRAD_MODE_ADD;
  void *args[] = {&p, &x, &hx, &reserveSpace, &dweightSpace};
  return dnn_launch(handle, DNN_K_RNN_BWD_W, cudnnsim_rnn_wcount(&p), args);
}
