/* bn.c — batch normalization in the simulated cuDNN: the legacy calls PyTorch's BatchNorm uses
 * on CUDA (cudnnBatchNormalizationForwardTrainingEx, cudnnBatchNormalizationBackwardEx,
 * cudnnBatchNormalizationForwardInference, their size queries) and the plain
 * cudnnBatchNormalizationForwardTraining/Backward they extend.
 *
 * 4-d float tensors of any strides; modes SPATIAL and SPATIAL_PERSISTENT (the same arithmetic
 * here) and PER_ACTIVATION; operations CUDNN_BATCHNORM_OPS_BN only (the fused activation and
 * addition → NOT_SUPPORTED). No workspace and no reserve space are needed (both sizes are 0).
 * Each call validates on the calling thread and launches one kernel of kernels.cu on the
 * handle's stream; the training forward and the backward run one thread per statistics group
 * (a channel), which sums its elements in a fixed order (cudnnsim.h), so results do not depend
 * on scheduling.
 */
#include "dnn.h"

#include <string.h>

static int same_dims(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b) {
  return a->nbdims == b->nbdims && memcmp(a->dims, b->dims, sizeof(int) * (size_t)a->nbdims) == 0;
}

/* Validates x, y (dx) and the parameter tensor for `mode`, and fills b. */
static cudnnStatus_t bn_check(cudnnBatchNormMode_t mode, cudnnTensorDescriptor_t xd,
                              cudnnTensorDescriptor_t yd, cudnnTensorDescriptor_t pd, double eps,
                              cudnnsim_bn_t *b) {
  if (!dnn_tensor_ok(xd) || !dnn_tensor_ok(yd) || !dnn_tensor_ok(pd)) return CUDNN_STATUS_BAD_PARAM;
  if ((int)mode < CUDNN_BATCHNORM_PER_ACTIVATION || (int)mode > CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
    return CUDNN_STATUS_BAD_PARAM;
  if (!same_dims(xd, yd) || xd->dtype != yd->dtype || eps < CUDNN_BN_MIN_EPSILON)
    return CUDNN_STATUS_BAD_PARAM;
  if (xd->nbdims != 4) return CUDNN_STATUS_NOT_SUPPORTED;
  int per_act = mode == CUDNN_BATCHNORM_PER_ACTIVATION;
  /* The parameters: 1xCx1x1 (spatial) or 1xCxHxW (per activation), float for float data. */
  if (pd->nbdims != 4 || pd->dims[0] != 1 || pd->dims[1] != xd->dims[1] ||
      pd->dims[2] != (per_act ? xd->dims[2] : 1) || pd->dims[3] != (per_act ? xd->dims[3] : 1))
    return CUDNN_STATUS_BAD_PARAM;
  if (xd->dtype != CUDNN_DATA_FLOAT || pd->dtype != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  memset(b, 0, sizeof *b);
  b->x = dnn_t4(xd);
  b->y = dnn_t4(yd);
  b->d2 = b->y;
  b->prm = dnn_t4(pd);
  b->per_act = per_act;
  b->eps = (float)eps;
  return CUDNN_STATUS_SUCCESS;
}

/* Only the plain normalization: with CUDNN_BATCHNORM_OPS_BN cuDNN ignores the z tensor and the
 * activation (PyTorch passes x's descriptor as zDesc to the size queries). */
static int ops_ok(cudnnBatchNormOps_t ops) { return ops == CUDNN_BATCHNORM_OPS_BN; }

cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t zDesc,
    const cudnnTensorDescriptor_t yDesc, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
    const cudnnActivationDescriptor_t activationDesc, size_t *sizeInBytes) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  cudnnsim_bn_t b;
  (void)zDesc, (void)activationDesc;
  if (!dnn_handle_ok(handle) || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = bn_check(mode, xDesc, yDesc, bnScaleBiasMeanVarDesc, CUDNN_BN_MIN_EPSILON, &b);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!ops_ok(bnOps)) return CUDNN_STATUS_NOT_SUPPORTED;
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t yDesc,
    const cudnnTensorDescriptor_t dyDesc, const cudnnTensorDescriptor_t dzDesc,
    const cudnnTensorDescriptor_t dxDesc, const cudnnTensorDescriptor_t dBnScaleBiasDesc,
    const cudnnActivationDescriptor_t activationDesc, size_t *sizeInBytes) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  cudnnsim_bn_t b;
  (void)yDesc, (void)dzDesc, (void)activationDesc;
  if (!dnn_handle_ok(handle) || !sizeInBytes || !dnn_tensor_ok(dyDesc)) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = bn_check(mode, xDesc, dxDesc, dBnScaleBiasDesc, CUDNN_BN_MIN_EPSILON, &b);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!ops_ok(bnOps)) return CUDNN_STATUS_NOT_SUPPORTED;
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t xDesc,
    size_t *sizeInBytes) {
  DNN_FAULT(CUDNN_STATUS_BAD_PARAM);
  (void)activationDesc;
  if (!dnn_handle_ok(handle) || !sizeInBytes || !dnn_tensor_ok(xDesc) ||
      (int)mode < CUDNN_BATCHNORM_PER_ACTIVATION || (int)mode > CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
    return CUDNN_STATUS_BAD_PARAM;
  if (!ops_ok(bnOps)) return CUDNN_STATUS_NOT_SUPPORTED;
  *sizeInBytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

/* The training forward shared by both calls. */
static cudnnStatus_t bn_fwd_train(cudnnHandle_t handle, cudnnBatchNormMode_t mode,
                                  const void *alpha, const void *beta,
                                  cudnnTensorDescriptor_t xDesc, const void *x,
                                  cudnnTensorDescriptor_t yDesc, void *y,
                                  cudnnTensorDescriptor_t pDesc, const void *scale,
                                  const void *bias, double factor, void *rmean, void *rvar,
                                  double eps, void *smean, void *sinv) {
  cudnnsim_bn_t b;
  if (!dnn_handle_ok(handle) || !alpha || !beta || !x || !y || !scale || !bias)
    return CUDNN_STATUS_BAD_PARAM;
  /* Running statistics come both or neither, and so do the saved ones. */
  if (!rmean != !rvar || !smean != !sinv) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = bn_check(mode, xDesc, yDesc, pDesc, eps, &b);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  /* One element per group leaves the unbiased variance undefined. */
  if (cudnnsim_bn_count(&b) < 2) return CUDNN_STATUS_BAD_PARAM;
  float a = *(const float *)alpha, bt = *(const float *)beta, f = (float)factor;
  void *args[] = {&b, &a, &bt, &x, &y, &scale, &bias, &f, &rmean, &rvar, &smean, &sinv};
  return dnn_launch(handle, DNN_K_BN_TRAIN, cudnnsim_bn_groups(&b), args);
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc,
    void *y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale,
    const void *bnBias, double exponentialAverageFactor, void *resultRunningMean,
    void *resultRunningVariance, double epsilon, void *resultSaveMean,
    void *resultSaveInvVariance) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  return bn_fwd_train(handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc,
                      bnScale, bnBias, exponentialAverageFactor, resultRunningMean,
                      resultRunningVariance, epsilon, resultSaveMean, resultSaveInvVariance);
}

cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void *alpha,
    const void *beta, const cudnnTensorDescriptor_t xDesc, const void *xData,
    const cudnnTensorDescriptor_t zDesc, const void *zData, const cudnnTensorDescriptor_t yDesc,
    void *yData, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale,
    const void *bnBias, double exponentialAverageFactor, void *resultRunningMean,
    void *resultRunningVariance, double epsilon, void *resultSaveMean,
    void *resultSaveInvVariance, cudnnActivationDescriptor_t activationDesc, void *workspace,
    size_t workSpaceSizeInBytes, void *reserveSpace, size_t reserveSpaceSizeInBytes) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  (void)workspace, (void)workSpaceSizeInBytes, (void)reserveSpace, (void)reserveSpaceSizeInBytes;
  (void)zDesc, (void)zData, (void)activationDesc;
  if (!ops_ok(bnOps)) return CUDNN_STATUS_NOT_SUPPORTED;
  return bn_fwd_train(handle, mode, alpha, beta, xDesc, xData, yDesc, yData,
                      bnScaleBiasMeanVarDesc, bnScale, bnBias, exponentialAverageFactor,
                      resultRunningMean, resultRunningVariance, epsilon, resultSaveMean,
                      resultSaveInvVariance);
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc,
    void *y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale,
    const void *bnBias, const void *estimatedMean, const void *estimatedVariance, double epsilon) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  cudnnsim_bn_t b;
  if (!dnn_handle_ok(handle) || !alpha || !beta || !x || !y || !bnScale || !bnBias ||
      !estimatedMean || !estimatedVariance)
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = bn_check(mode, xDesc, yDesc, bnScaleBiasMeanVarDesc, epsilon, &b);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  float a = *(const float *)alpha, bt = *(const float *)beta;
  void *args[] = {&b, &a, &bt, &x, &y, &bnScale, &bnBias, &estimatedMean, &estimatedVariance};
  return dnn_launch(handle, DNN_K_BN_INFER, cudnnsim_count(&b.y), args);
}

/* The backward shared by both calls. */
static cudnnStatus_t bn_bwd(cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha_d,
                            const void *beta_d, const void *alpha_p, const void *beta_p,
                            cudnnTensorDescriptor_t xDesc, const void *x,
                            cudnnTensorDescriptor_t dyDesc, const void *dy,
                            cudnnTensorDescriptor_t dxDesc, void *dx,
                            cudnnTensorDescriptor_t pDesc, const void *scale, void *dscale,
                            void *dbias, double eps, const void *smean, const void *sinv) {
  cudnnsim_bn_t b;
  if (!dnn_handle_ok(handle) || !alpha_d || !beta_d || !alpha_p || !beta_p || !x || !dy || !dx ||
      !scale || !dscale || !dbias || !dnn_tensor_ok(dyDesc))
    return CUDNN_STATUS_BAD_PARAM;
  if (!smean != !sinv) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = bn_check(mode, xDesc, dxDesc, pDesc, eps, &b);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (!same_dims(dyDesc, xDesc) || dyDesc->dtype != xDesc->dtype) return CUDNN_STATUS_BAD_PARAM;
  b.d2 = dnn_t4(dyDesc);
  float ad = *(const float *)alpha_d, bd = *(const float *)beta_d;
  float ap = *(const float *)alpha_p, bp = *(const float *)beta_p;
  void *args[] = {&b, &ad, &bd, &ap, &bp, &x, &dy, &dx, &scale, &dscale, &dbias, &smean, &sinv};
  return dnn_launch(handle, DNN_K_BN_BWD, cudnnsim_bn_groups(&b), args);
}

cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alphaDataDiff,
    const void *betaDataDiff, const void *alphaParamDiff, const void *betaParamDiff,
    const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t dyDesc,
    const void *dy, const cudnnTensorDescriptor_t dxDesc, void *dx,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScale, void *dBnScaleResult,
    void *dBnBiasResult, double epsilon, const void *savedMean, const void *savedInvVariance) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  return bn_bwd(handle, mode, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc, x,
                dyDesc, dy, dxDesc, dx, dBnScaleBiasDesc, bnScale, dBnScaleResult, dBnBiasResult,
                epsilon, savedMean, savedInvVariance);
}

cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const void *alphaDataDiff, const void *betaDataDiff, const void *alphaParamDiff,
    const void *betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void *xData,
    const cudnnTensorDescriptor_t yDesc, const void *yData, const cudnnTensorDescriptor_t dyDesc,
    const void *dyData, const cudnnTensorDescriptor_t dzDesc, void *dzData,
    const cudnnTensorDescriptor_t dxDesc, void *dxData,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScaleData,
    const void *bnBiasData, void *dBnScaleData, void *dBnBiasData, double epsilon,
    const void *savedMean, const void *savedInvVariance,
    cudnnActivationDescriptor_t activationDesc, void *workSpace, size_t workSpaceSizeInBytes,
    void *reserveSpace, size_t reserveSpaceSizeInBytes) {
  DNN_FAULT(CUDNN_STATUS_EXECUTION_FAILED);
  (void)yDesc, (void)yData, (void)bnBiasData, (void)workSpace, (void)workSpaceSizeInBytes;
  (void)reserveSpace, (void)reserveSpaceSizeInBytes, (void)dzDesc, (void)dzData, (void)activationDesc;
  if (!ops_ok(bnOps)) return CUDNN_STATUS_NOT_SUPPORTED;
  return bn_bwd(handle, mode, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc,
                xData, dyDesc, dyData, dxDesc, dxData, dBnScaleBiasDesc, bnScaleData, dBnScaleData,
                dBnBiasData, epsilon, savedMean, savedInvVariance);
}
