/* fuse-dnn.h — cuDNN call fusion: convolution → bias → ReLU becomes one fused call.
 *
 * Under AUTOGRAPH_FUSE=all the cuDNN entry points (shims/cudnn.c) hand the three legacy calls
 * cudnnConvolutionForward, cudnnAddTensor and cudnnActivationForward to this state machine,
 * which recognises
 *
 *   conv (beta 0, writes y) → add (bias 1×K×1×1 into y, alpha 1, beta 1) → act (ReLU, y in place)
 *
 * on one handle and replaces it by one cudnnConvolutionBiasActivationForward (pattern
 * "cudnn_conv_bias_act"), and conv → add followed by anything else (or by an activation that is
 * not in place) by the fused call with an identity activation when the convolution's algorithm
 * is IMPLICIT_PRECOMP_GEMM (pattern "cudnn_conv_bias"; the activation, if any, then runs
 * unchanged). To see the pattern, the convolution (and then the addition) is held: it returns
 * CUDNN_STATUS_SUCCESS without running, its arguments copied by value. At most one pattern is
 * held in the process. Whatever is held is submitted unchanged, in order, before any other
 * cuDNN call (ag__fdnn_before), any kernel launch, ordering call, exit or fork (ag__fdnn_flush,
 * called by the engine), when the pattern does not match, and by the engine's helper thread
 * once the hold reaches the bound every hold is under (AUTOGRAPH_HOLD_US after the last call
 * that joined it: a host that waits on memory the convolution writes, without a CUDA call,
 * gets it); where holds cannot be bounded nothing is held. A failing fused call falls back
 * to the original calls.
 *
 * A convolution is held only when a convolution with the same descriptor contents, algorithm
 * and handle has already succeeded unfused with no larger workspace requirement than the one
 * now given: the first occurrence of each layer is the check that the held call would have
 * succeeded. A fused call that fails marks its convolution so that it is never held again.
 *
 * Errors of held calls submitted later are logged (warn, once) and returned by the call that
 * caused the submission when that call is a cuDNN call on the same handle (see ag__fdnn_before).
 * Everything here is thread-safe; cuDNN is never called with the engine lock held.
 */
#ifndef AG_FUSE_DNN_H
#define AG_FUSE_DNN_H

#include <cudnn.h>

#include "ag.h"

/* The real cuDNN functions the state machine calls (filled by shims/cudnn.c, or by a test). */
typedef struct ag_fdnn_real {
  __typeof(&cudnnConvolutionForward) conv;
  __typeof(&cudnnAddTensor) add;
  __typeof(&cudnnActivationForward) act;
  __typeof(&cudnnConvolutionBiasActivationForward) cba;
  __typeof(&cudnnGetStream) get_stream;
  __typeof(&cudnnGetTensor4dDescriptor) get_tensor;
  __typeof(&cudnnGetFilter4dDescriptor) get_filter;
  __typeof(&cudnnGetConvolution2dDescriptor) get_conv;
  __typeof(&cudnnGetConvolutionMathType) get_math;
  __typeof(&cudnnGetConvolutionGroupCount) get_groups;
  __typeof(&cudnnGetActivationDescriptor) get_act;
  __typeof(&cudnnCreateActivationDescriptor) create_act;
  __typeof(&cudnnSetActivationDescriptor) set_act;
} ag_fdnn_real_t;

extern ag_fdnn_real_t ag__fdnn_real;

/* While a call is held, AG_HOOK_FDNN is set in ag__hooks (ag__fdnn_pending(), src/engine.h):
 * the one cheap check the hooks make before calling in. */

/* The three calls, with their cuDNN signatures and statuses. Call only at the outermost cuDNN
 * level with every entry of ag__fdnn_real filled. */
cudnnStatus_t ag__fdnn_conv(cudnnHandle_t handle, const void *alpha,
                            cudnnTensorDescriptor_t xDesc, const void *x,
                            cudnnFilterDescriptor_t wDesc, const void *w,
                            cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                            void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                            cudnnTensorDescriptor_t yDesc, void *y);
cudnnStatus_t ag__fdnn_add(cudnnHandle_t handle, const void *alpha, cudnnTensorDescriptor_t aDesc,
                           const void *A, const void *beta, cudnnTensorDescriptor_t cDesc, void *C);
cudnnStatus_t ag__fdnn_act(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                           const void *alpha, cudnnTensorDescriptor_t xDesc, const void *x,
                           const void *beta, cudnnTensorDescriptor_t yDesc, void *y);

/* Before any other cuDNN call (outermost level): submits what is held. Returns the first error
 * of the submitted calls when they ran on `handle` (NULL: a call without a handle), else
 * CUDNN_STATUS_SUCCESS. */
cudnnStatus_t ag__fdnn_before(const void *handle);

/* Submits what is held (kernel launches, ordering calls, exit, fork). Does nothing inside a
 * cuDNN call on this thread: that call's entry already submitted what this thread could have
 * observed, and calling back into cuDNN from inside it is not safe. */
void ag__fdnn_flush(void);

/* Forgets every learned convolution and what is held, without calling cuDNN (tests; the child
 * after fork). */
void ag__fdnn_reset(void);

#endif
