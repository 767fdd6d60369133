/* desc.c — tensor, filter, convolution and activation descriptors of the simulated cuDNN.
 *
 * Descriptors are plain host objects, validated as cuDNN documents: BAD_PARAM for a NULL or
 * destroyed descriptor, a non-positive dimension or stride, or an out-of-range enumerant;
 * NOT_SUPPORTED for what cuDNN does not offer (more than 2^31 elements, tensors outside
 * [3, CUDNN_DIM_MAX] dimensions, a group count other than 1 here). Any valid data type is
 * stored; the compute calls accept only CUDNN_DATA_FLOAT.
 */
#include "dnn.h"

#include <stdlib.h>

#define DNN_MAX_ELEMS 0x7fffffffLL

static int dtype_ok(cudnnDataType_t t) {
  return (int)t >= CUDNN_DATA_FLOAT && (int)t <= CUDNN_DATA_COMPLEX_FP64;
}

/* Allocates a zeroed descriptor of `size` bytes with its magic set; the caller's fault check
 * comes first. */
static void *desc_new(size_t size, unsigned magic) {
  unsigned *d = calloc(1, size);
  if (d) *d = magic;
  return d;
}

static cudnnStatus_t desc_free(void *d, unsigned magic) {
  if (!d) return CUDNN_STATUS_SUCCESS; /* cuDNN accepts destroying NULL */
  if (*(unsigned *)d != magic) return CUDNN_STATUS_BAD_PARAM;
  *(unsigned *)d = 0;
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Tensors ---- */

int dnn_tensor_ok(cudnnTensorDescriptor_t d) { return d && d->magic == DNN_MAGIC_TENSOR && d->set; }

cudnnsim_t4_t dnn_t4(cudnnTensorDescriptor_t d) {
  cudnnsim_t4_t t = {d->dims[0], d->dims[1], d->dims[2], d->dims[3],
                     d->strides[0], d->strides[1], d->strides[2], d->strides[3]};
  return t;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!tensorDesc) return CUDNN_STATUS_BAD_PARAM;
  *tensorDesc = desc_new(sizeof **tensorDesc, DNN_MAGIC_TENSOR);
  return *tensorDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  return desc_free(tensorDesc, DNN_MAGIC_TENSOR);
}

/* The common part of every tensor setter: validates, then stores. */
static cudnnStatus_t tensor_set(cudnnTensorDescriptor_t d, cudnnDataType_t dtype, int nbdims,
                                const int *dims, const int *strides) {
  if (!d || d->magic != DNN_MAGIC_TENSOR || !dims || !strides || !dtype_ok(dtype))
    return CUDNN_STATUS_BAD_PARAM;
  if (nbdims < 3 || nbdims > CUDNN_DIM_MAX) return CUDNN_STATUS_NOT_SUPPORTED;
  long long elems = 1;
  for (int i = 0; i < nbdims; i++) {
    if (dims[i] <= 0 || strides[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
    elems *= dims[i];
    if (elems > DNN_MAX_ELEMS) return CUDNN_STATUS_NOT_SUPPORTED;
  }
  d->dtype = dtype;
  d->nbdims = nbdims;
  for (int i = 0; i < nbdims; i++) {
    d->dims[i] = dims[i];
    d->strides[i] = strides[i];
  }
  d->set = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                         cudnnTensorFormat_t format, cudnnDataType_t dataType,
                                         int n, int c, int h, int w) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  int dims[4] = {n, c, h, w}, strides[4];
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  long long hw = (long long)h * w, chw = hw * c;
  if (chw * n > DNN_MAX_ELEMS) return CUDNN_STATUS_NOT_SUPPORTED;
  switch (format) {
  case CUDNN_TENSOR_NCHW:
    strides[0] = (int)chw, strides[1] = (int)hw, strides[2] = w, strides[3] = 1;
    break;
  case CUDNN_TENSOR_NHWC:
    strides[0] = (int)chw, strides[1] = 1, strides[2] = w * c, strides[3] = c;
    break;
  case CUDNN_TENSOR_NCHW_VECT_C: /* vectorised integer layouts only */
    return CUDNN_STATUS_NOT_SUPPORTED;
  default:
    return CUDNN_STATUS_BAD_PARAM;
  }
  return tensor_set(tensorDesc, dataType, 4, dims, strides);
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc,
                                           cudnnDataType_t dataType, int n, int c, int h, int w,
                                           int nStride, int cStride, int hStride, int wStride) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  int dims[4] = {n, c, h, w}, strides[4] = {nStride, cStride, hStride, wStride};
  return tensor_set(tensorDesc, dataType, 4, dims, strides);
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                         cudnnDataType_t dataType, int nbDims, const int dimA[],
                                         const int strideA[]) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  return tensor_set(tensorDesc, dataType, nbDims, dimA, strideA);
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                         cudnnDataType_t *dataType, int *n, int *c, int *h,
                                         int *w, int *nStride, int *cStride, int *hStride,
                                         int *wStride) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_tensor_ok(tensorDesc) || tensorDesc->nbdims != 4 || !dataType || !n || !c || !h ||
      !w || !nStride || !cStride || !hStride || !wStride)
    return CUDNN_STATUS_BAD_PARAM;
  const int *d = tensorDesc->dims, *s = tensorDesc->strides;
  *dataType = tensorDesc->dtype;
  *n = d[0], *c = d[1], *h = d[2], *w = d[3];
  *nStride = s[0], *cStride = s[1], *hStride = s[2], *wStride = s[3];
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Filters ---- */

int dnn_filter_ok(cudnnFilterDescriptor_t d) { return d && d->magic == DNN_MAGIC_FILTER && d->set; }

cudnnsim_t4_t dnn_f4(cudnnFilterDescriptor_t d) {
  long long rs = (long long)d->h * d->w;
  cudnnsim_t4_t t = {d->k, d->c, d->h, d->w, rs * d->c, rs, d->w, 1};
  if (d->format == CUDNN_TENSOR_NHWC) { /* KRSC */
    t.sc = 1;
    t.sh = (long long)d->w * d->c;
    t.sw = d->c;
  }
  return t;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!filterDesc) return CUDNN_STATUS_BAD_PARAM;
  *filterDesc = desc_new(sizeof **filterDesc, DNN_MAGIC_FILTER);
  return *filterDesc ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  return desc_free(filterDesc, DNN_MAGIC_FILTER);
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc,
                                         cudnnDataType_t dataType, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!filterDesc || filterDesc->magic != DNN_MAGIC_FILTER || !dtype_ok(dataType) || k <= 0 ||
      c <= 0 || h <= 0 || w <= 0)
    return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
    return format == CUDNN_TENSOR_NCHW_VECT_C ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
  if ((long long)k * c * h * w > DNN_MAX_ELEMS) return CUDNN_STATUS_NOT_SUPPORTED;
  filterDesc->dtype = dataType;
  filterDesc->format = format;
  filterDesc->k = k, filterDesc->c = c, filterDesc->h = h, filterDesc->w = w;
  filterDesc->set = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t filterDesc,
                                         cudnnDataType_t *dataType, cudnnTensorFormat_t *format,
                                         int *k, int *c, int *h, int *w) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_filter_ok(filterDesc) || !dataType || !format || !k || !c || !h || !w)
    return CUDNN_STATUS_BAD_PARAM;
  *dataType = filterDesc->dtype;
  *format = filterDesc->format;
  *k = filterDesc->k, *c = filterDesc->c, *h = filterDesc->h, *w = filterDesc->w;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Convolutions ---- */

int dnn_conv_ok(cudnnConvolutionDescriptor_t d) { return d && d->magic == DNN_MAGIC_CONV && d->set; }

static int conv_live(cudnnConvolutionDescriptor_t d) { return d && d->magic == DNN_MAGIC_CONV; }

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!convDesc) return CUDNN_STATUS_BAD_PARAM;
  cudnnConvolutionDescriptor_t d = desc_new(sizeof *d, DNN_MAGIC_CONV);
  if (!d) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  d->math = CUDNN_DEFAULT_MATH;
  d->groups = 1;
  *convDesc = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  return desc_free(convDesc, DNN_MAGIC_CONV);
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!conv_live(convDesc) || pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dilation_h <= 0 ||
      dilation_w <= 0 || (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) ||
      !dtype_ok(computeType))
    return CUDNN_STATUS_BAD_PARAM;
  convDesc->pad_h = pad_h, convDesc->pad_w = pad_w;
  convDesc->u = u, convDesc->v = v;
  convDesc->dil_h = dilation_h, convDesc->dil_w = dilation_w;
  convDesc->mode = mode;
  convDesc->compute = computeType;
  convDesc->set = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t convDesc,
                                              int *pad_h, int *pad_w, int *u, int *v,
                                              int *dilation_h, int *dilation_w,
                                              cudnnConvolutionMode_t *mode,
                                              cudnnDataType_t *computeType) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_conv_ok(convDesc) || !pad_h || !pad_w || !u || !v || !dilation_h || !dilation_w ||
      !mode || !computeType)
    return CUDNN_STATUS_BAD_PARAM;
  *pad_h = convDesc->pad_h, *pad_w = convDesc->pad_w;
  *u = convDesc->u, *v = convDesc->v;
  *dilation_h = convDesc->dil_h, *dilation_w = convDesc->dil_w;
  *mode = convDesc->mode;
  *computeType = convDesc->compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                          cudnnMathType_t mathType) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!conv_live(convDesc) || (int)mathType < CUDNN_DEFAULT_MATH || (int)mathType > CUDNN_FMA_MATH)
    return CUDNN_STATUS_BAD_PARAM;
  convDesc->math = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                          cudnnMathType_t *mathType) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!conv_live(convDesc) || !mathType) return CUDNN_STATUS_BAD_PARAM;
  *mathType = convDesc->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!conv_live(convDesc) || groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
  /* Grouped convolutions are beyond this simulator. */
  if (groupCount != 1) return CUDNN_STATUS_NOT_SUPPORTED;
  convDesc->groups = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int *groupCount) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!conv_live(convDesc) || !groupCount) return CUDNN_STATUS_BAD_PARAM;
  *groupCount = convDesc->groups;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Activations ---- */

int dnn_act_ok(cudnnActivationDescriptor_t d) { return d && d->magic == DNN_MAGIC_ACT && d->set; }

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *activationDesc) {
  DNN_FAULT(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
  if (!activationDesc) return CUDNN_STATUS_BAD_PARAM;
  *activationDesc = desc_new(sizeof **activationDesc, DNN_MAGIC_ACT);
  return *activationDesc ? CUDNN_STATUS_SUCCESS
                         : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  return desc_free(activationDesc, DNN_MAGIC_ACT);
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                           cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t reluNanOpt, double coef) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!activationDesc || activationDesc->magic != DNN_MAGIC_ACT ||
      (int)mode < CUDNN_ACTIVATION_SIGMOID || (int)mode > CUDNN_ACTIVATION_SWISH ||
      (reluNanOpt != CUDNN_NOT_PROPAGATE_NAN && reluNanOpt != CUDNN_PROPAGATE_NAN))
    return CUDNN_STATUS_BAD_PARAM;
  activationDesc->mode = mode;
  activationDesc->nan = reluNanOpt;
  activationDesc->coef = coef;
  activationDesc->set = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t activationDesc,
                                           cudnnActivationMode_t *mode,
                                           cudnnNanPropagation_t *reluNanOpt, double *coef) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_act_ok(activationDesc) || !mode || !reluNanOpt || !coef) return CUDNN_STATUS_BAD_PARAM;
  *mode = activationDesc->mode;
  *reluNanOpt = activationDesc->nan;
  *coef = activationDesc->coef;
  return CUDNN_STATUS_SUCCESS;
}

/* Tensor descriptors of any dimensionality, as the RNN weight queries answer them. */
cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                         int nbDimsRequested, cudnnDataType_t *dataType,
                                         int *nbDims, int dimA[], int strideA[]) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  if (!dnn_tensor_ok(tensorDesc) || nbDimsRequested < 0 || !dataType || !nbDims ||
      (nbDimsRequested > 0 && (!dimA || !strideA)))
    return CUDNN_STATUS_BAD_PARAM;
  *dataType = tensorDesc->dtype;
  *nbDims = tensorDesc->nbdims;
  for (int i = 0; i < nbDimsRequested && i < tensorDesc->nbdims; i++) {
    dimA[i] = tensorDesc->dims[i];
    strideA[i] = tensorDesc->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}
