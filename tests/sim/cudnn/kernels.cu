/* kernels.cu — device code of the simulated cuDNN, built by nvcc into the fatbin that
 * libcudnn.so.9 embeds (fatbin.S) and loads with cuModuleLoadData on each handle.
 *
 * One thread per output element; the per-element arithmetic is cudnnsim.h's, shared with the
 * CPU twins in twins.c that the simulated driver runs in place of these kernels. Built with
 * -fmad=false so that a GPU rounds the same products and sums the twins do.
 */
#include "cudnnsim.h"
#include "rnnsim.h"
#include "opgraph.h"

__device__ __forceinline__ long long cudnnsim_tid(void) {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

extern "C" __global__ void cudnnsim_conv2d_fwd(cudnnsim_conv_t p, float alpha, float beta,
                                               const void *x, const void *f, void *y) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_count(&p.y)) cudnnsim_conv_elem(&p, alpha, beta, x, f, y, i);
}

extern "C" __global__ void cudnnsim_add_tensor(cudnnsim_t4_t a, cudnnsim_t4_t c, float alpha,
                                               float beta, const float *A, float *C) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_count(&c)) cudnnsim_add_elem(&a, &c, alpha, beta, A, C, i);
}

extern "C" __global__ void cudnnsim_act_fwd(cudnnsim_t4_t xd, cudnnsim_t4_t yd, cudnnsim_act_t act,
                                            float alpha, float beta, const float *x, float *y) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_count(&yd)) cudnnsim_act_elem(&xd, &yd, &act, alpha, beta, x, y, i);
}

extern "C" __global__ void cudnnsim_conv_bias_act_fwd(cudnnsim_conv_t p, cudnnsim_t4_t zd,
                                                      cudnnsim_t4_t bd, cudnnsim_act_t act,
                                                      float alpha1, float alpha2, const float *x,
                                                      const float *f, const float *z,
                                                      const float *bias, float *y) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_count(&p.y))
    cudnnsim_cba_elem(&p, &zd, &bd, &act, alpha1, alpha2, x, f, z, bias, y, i);
}

extern "C" __global__ void cudnnsim_conv2d_bwd_data(cudnnsim_conv_t p, float alpha, float beta,
                                                    const void *dy, const void *f, void *dx) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_count(&p.x)) cudnnsim_conv_bwd_data_elem(&p, alpha, beta, dy, f, dx, i);
}

extern "C" __global__ void cudnnsim_conv2d_bwd_filter(cudnnsim_conv_t p, float alpha, float beta,
                                                      const void *x, const void *dy, void *dw) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_count(&p.f)) cudnnsim_conv_bwd_filter_elem(&p, alpha, beta, x, dy, dw, i);
}

extern "C" __global__ void cudnnsim_bn_fwd_train(cudnnsim_bn_t b, float alpha, float beta,
                                                 const float *x, float *y, const float *scale,
                                                 const float *bias, float factor, float *rmean,
                                                 float *rvar, float *smean, float *sinv) {
  long long j = cudnnsim_tid();
  if (j < cudnnsim_bn_groups(&b))
    cudnnsim_bn_fwd_train_group(&b, alpha, beta, x, y, scale, bias, factor, rmean, rvar, smean,
                                sinv, j);
}

extern "C" __global__ void cudnnsim_bn_fwd_infer(cudnnsim_bn_t b, float alpha, float beta,
                                                 const float *x, float *y, const float *scale,
                                                 const float *bias, const float *emean,
                                                 const float *evar) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_count(&b.y))
    cudnnsim_bn_fwd_infer_elem(&b, alpha, beta, x, y, scale, bias, emean, evar, i);
}

extern "C" __global__ void cudnnsim_bn_bwd(cudnnsim_bn_t b, float alpha_d, float beta_d,
                                           float alpha_p, float beta_p, const float *x,
                                           const float *dy, float *dx, const float *scale,
                                           float *dscale, float *dbias, const float *smean,
                                           const float *sinv) {
  long long j = cudnnsim_tid();
  if (j < cudnnsim_bn_groups(&b))
    cudnnsim_bn_bwd_group(&b, alpha_d, beta_d, alpha_p, beta_p, x, dy, dx, scale, dscale, dbias,
                          smean, sinv, j);
}

/* Recurrent layers (rnnsim.h): one thread per (direction, sequence) for the sequential passes,
 * one per output element for the input and weight gradients. */
extern "C" __global__ void cudnnsim_rnn_fwd(cudnnsim_rnn_t p, const void *x, const void *hx,
                                            const void *cx, const void *w, float *st, void *y,
                                            void *hy, void *cy, unsigned *states) {
  long long i = cudnnsim_tid();
  if (i < (long long)p.D * p.B) cudnnsim_rnn_fwd_thread(&p, x, hx, cx, w, st, y, hy, cy, states, i);
}

extern "C" __global__ void cudnnsim_rnn_bwd_gate(cudnnsim_rnn_t p, const void *dy, const void *hx,
                                                 const void *cx, const void *dhy, const void *dcy,
                                                 const void *w, float *st, float *ws, void *dhx,
                                                 void *dcx) {
  long long i = cudnnsim_tid();
  if (i < (long long)p.D * p.B)
    cudnnsim_rnn_bwd_gate_thread(&p, dy, hx, cx, dhy, dcy, w, st, ws, dhx, dcx, i);
}

extern "C" __global__ void cudnnsim_rnn_bwd_dx(cudnnsim_rnn_t p, const void *w, float *st,
                                               float *ws, void *dx) {
  long long i = cudnnsim_tid();
  if (i < (long long)p.T * p.B * cudnnsim_rnn_in(&p, p.layer))
    cudnnsim_rnn_bwd_dx_elem(&p, w, st, ws, dx, i);
}

extern "C" __global__ void cudnnsim_rnn_bwd_w(cudnnsim_rnn_t p, const void *x, const void *hx,
                                              float *st, void *dw) {
  long long i = cudnnsim_tid();
  if (i < cudnnsim_rnn_wcount(&p)) cudnnsim_rnn_bwd_w_elem(&p, x, hx, st, dw, i);
}

extern "C" __global__ void cudnnsim_rnn_drop_init(unsigned *states, unsigned seed_lo,
                                                  unsigned seed_hi) {
  if (cudnnsim_tid() == 0) states[0] = seed_lo, states[1] = seed_hi, states[2] = 0, states[3] = 0;
}

/* A backend operation graph (opgraph.h): one block, thread 0 runs every operation in order. */
extern "C" __global__ void cudnnsim_opgraph(og_graph_t g, float *ws) {
  if (cudnnsim_tid() == 0) og_run(&g, ws);
}
