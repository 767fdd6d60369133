/* twins.c — CPU twins of the simulated cuDNN's kernels (kernels.cu).
 *
 * The simulated driver runs kernel N of a loaded module as sim_N, found with
 * dlsym(RTLD_DEFAULT); libcudnn.so.9 exports these through its version script. Each twin runs
 * once per launch on the driver's device thread and does what every thread of the grid would
 * do, with the same per-element functions as the device code (cudnnsim.h). Argument order and
 * types match the kernels' parameters exactly.
 */
#include "sim_kernel.h"

#include "cudnnsim.h"
#include "rnnsim.h"
#include "opgraph.h"

SIM_KERNEL(cudnnsim_conv2d_fwd) {
  cudnnsim_conv_t p = SIM_ARG(0, cudnnsim_conv_t);
  float alpha = SIM_ARG(1, float), beta = SIM_ARG(2, float);
  const void *x = SIM_ARG(3, const void *), *f = SIM_ARG(4, const void *);
  void *y = SIM_ARG(5, void *);
  long long count = cudnnsim_count(&p.y);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count) cudnnsim_conv_elem(&p, alpha, beta, x, f, y, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_add_tensor) {
  cudnnsim_t4_t a = SIM_ARG(0, cudnnsim_t4_t), c = SIM_ARG(1, cudnnsim_t4_t);
  float alpha = SIM_ARG(2, float), beta = SIM_ARG(3, float);
  const float *A = SIM_ARG(4, const float *);
  float *C = SIM_ARG(5, float *);
  long long count = cudnnsim_count(&c);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count) cudnnsim_add_elem(&a, &c, alpha, beta, A, C, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_act_fwd) {
  cudnnsim_t4_t xd = SIM_ARG(0, cudnnsim_t4_t), yd = SIM_ARG(1, cudnnsim_t4_t);
  cudnnsim_act_t act = SIM_ARG(2, cudnnsim_act_t);
  float alpha = SIM_ARG(3, float), beta = SIM_ARG(4, float);
  const float *x = SIM_ARG(5, const float *);
  float *y = SIM_ARG(6, float *);
  long long count = cudnnsim_count(&yd);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count) cudnnsim_act_elem(&xd, &yd, &act, alpha, beta, x, y, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_conv_bias_act_fwd) {
  cudnnsim_conv_t p = SIM_ARG(0, cudnnsim_conv_t);
  cudnnsim_t4_t zd = SIM_ARG(1, cudnnsim_t4_t), bd = SIM_ARG(2, cudnnsim_t4_t);
  cudnnsim_act_t act = SIM_ARG(3, cudnnsim_act_t);
  float alpha1 = SIM_ARG(4, float), alpha2 = SIM_ARG(5, float);
  const float *x = SIM_ARG(6, const float *), *f = SIM_ARG(7, const float *);
  const float *z = SIM_ARG(8, const float *), *bias = SIM_ARG(9, const float *);
  float *y = SIM_ARG(10, float *);
  long long count = cudnnsim_count(&p.y);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count)
      cudnnsim_cba_elem(&p, &zd, &bd, &act, alpha1, alpha2, x, f, z, bias, y, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_conv2d_bwd_data) {
  cudnnsim_conv_t p = SIM_ARG(0, cudnnsim_conv_t);
  float alpha = SIM_ARG(1, float), beta = SIM_ARG(2, float);
  const void *dy = SIM_ARG(3, const void *), *f = SIM_ARG(4, const void *);
  void *dx = SIM_ARG(5, void *);
  long long count = cudnnsim_count(&p.x);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count) cudnnsim_conv_bwd_data_elem(&p, alpha, beta, dy, f, dx, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_conv2d_bwd_filter) {
  cudnnsim_conv_t p = SIM_ARG(0, cudnnsim_conv_t);
  float alpha = SIM_ARG(1, float), beta = SIM_ARG(2, float);
  const void *x = SIM_ARG(3, const void *), *dy = SIM_ARG(4, const void *);
  void *dw = SIM_ARG(5, void *);
  long long count = cudnnsim_count(&p.f);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count) cudnnsim_conv_bwd_filter_elem(&p, alpha, beta, x, dy, dw, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_bn_fwd_train) {
  cudnnsim_bn_t b = SIM_ARG(0, cudnnsim_bn_t);
  float alpha = SIM_ARG(1, float), beta = SIM_ARG(2, float);
  const float *x = SIM_ARG(3, const float *);
  float *y = SIM_ARG(4, float *);
  const float *scale = SIM_ARG(5, const float *), *bias = SIM_ARG(6, const float *);
  float factor = SIM_ARG(7, float);
  float *rmean = SIM_ARG(8, float *), *rvar = SIM_ARG(9, float *);
  float *smean = SIM_ARG(10, float *), *sinv = SIM_ARG(11, float *);
  long long groups = cudnnsim_bn_groups(&b);
  SIM_FOR_EACH_THREAD(j) {
    if ((long long)j < groups)
      cudnnsim_bn_fwd_train_group(&b, alpha, beta, x, y, scale, bias, factor, rmean, rvar, smean,
                                  sinv, (long long)j);
  }
}

SIM_KERNEL(cudnnsim_bn_fwd_infer) {
  cudnnsim_bn_t b = SIM_ARG(0, cudnnsim_bn_t);
  float alpha = SIM_ARG(1, float), beta = SIM_ARG(2, float);
  const float *x = SIM_ARG(3, const float *);
  float *y = SIM_ARG(4, float *);
  const float *scale = SIM_ARG(5, const float *), *bias = SIM_ARG(6, const float *);
  const float *emean = SIM_ARG(7, const float *), *evar = SIM_ARG(8, const float *);
  long long count = cudnnsim_count(&b.y);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count)
      cudnnsim_bn_fwd_infer_elem(&b, alpha, beta, x, y, scale, bias, emean, evar, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_bn_bwd) {
  cudnnsim_bn_t b = SIM_ARG(0, cudnnsim_bn_t);
  float alpha_d = SIM_ARG(1, float), beta_d = SIM_ARG(2, float);
  float alpha_p = SIM_ARG(3, float), beta_p = SIM_ARG(4, float);
  const float *x = SIM_ARG(5, const float *), *dy = SIM_ARG(6, const float *);
  float *dx = SIM_ARG(7, float *);
  const float *scale = SIM_ARG(8, const float *);
  float *dscale = SIM_ARG(9, float *), *dbias = SIM_ARG(10, float *);
  const float *smean = SIM_ARG(11, const float *), *sinv = SIM_ARG(12, const float *);
  long long groups = cudnnsim_bn_groups(&b);
  SIM_FOR_EACH_THREAD(j) {
    if ((long long)j < groups)
      cudnnsim_bn_bwd_group(&b, alpha_d, beta_d, alpha_p, beta_p, x, dy, dx, scale, dscale, dbias,
                            smean, sinv, (long long)j);
  }
}

SIM_KERNEL(cudnnsim_rnn_fwd) {
  cudnnsim_rnn_t p = SIM_ARG(0, cudnnsim_rnn_t);
  const void *x = SIM_ARG(1, const void *), *hx = SIM_ARG(2, const void *);
  const void *cx = SIM_ARG(3, const void *), *w = SIM_ARG(4, const void *);
  float *st = SIM_ARG(5, float *);
  void *y = SIM_ARG(6, void *), *hy = SIM_ARG(7, void *), *cy = SIM_ARG(8, void *);
  unsigned *states = SIM_ARG(9, unsigned *);
  long long count = (long long)p.D * p.B;
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count)
      cudnnsim_rnn_fwd_thread(&p, x, hx, cx, w, st, y, hy, cy, states, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_rnn_bwd_gate) {
  cudnnsim_rnn_t p = SIM_ARG(0, cudnnsim_rnn_t);
  const void *dy = SIM_ARG(1, const void *), *hx = SIM_ARG(2, const void *);
  const void *cx = SIM_ARG(3, const void *), *dhy = SIM_ARG(4, const void *);
  const void *dcy = SIM_ARG(5, const void *), *w = SIM_ARG(6, const void *);
  float *st = SIM_ARG(7, float *), *ws = SIM_ARG(8, float *);
  void *dhx = SIM_ARG(9, void *), *dcx = SIM_ARG(10, void *);
  long long count = (long long)p.D * p.B;
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count)
      cudnnsim_rnn_bwd_gate_thread(&p, dy, hx, cx, dhy, dcy, w, st, ws, dhx, dcx, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_rnn_bwd_dx) {
  cudnnsim_rnn_t p = SIM_ARG(0, cudnnsim_rnn_t);
  const void *w = SIM_ARG(1, const void *);
  float *st = SIM_ARG(2, float *), *ws = SIM_ARG(3, float *);
  void *dx = SIM_ARG(4, void *);
  long long count = (long long)p.T * p.B * cudnnsim_rnn_in(&p, p.layer);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count) cudnnsim_rnn_bwd_dx_elem(&p, w, st, ws, dx, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_rnn_bwd_w) {
  cudnnsim_rnn_t p = SIM_ARG(0, cudnnsim_rnn_t);
  const void *x = SIM_ARG(1, const void *), *hx = SIM_ARG(2, const void *);
  float *st = SIM_ARG(3, float *);
  void *dw = SIM_ARG(4, void *);
  long long count = cudnnsim_rnn_wcount(&p);
  SIM_FOR_EACH_THREAD(i) {
    if ((long long)i < count) cudnnsim_rnn_bwd_w_elem(&p, x, hx, st, dw, (long long)i);
  }
}

SIM_KERNEL(cudnnsim_rnn_drop_init) {
  unsigned *states = SIM_ARG(0, unsigned *);
  unsigned lo = SIM_ARG(1, unsigned), hi = SIM_ARG(2, unsigned);
  SIM_FOR_EACH_THREAD(i) {
    if (i == 0) states[0] = lo, states[1] = hi, states[2] = 0, states[3] = 0;
  }
}

SIM_KERNEL(cudnnsim_opgraph) {
  og_graph_t g = SIM_ARG(0, og_graph_t);
  float *ws = SIM_ARG(1, float *);
  SIM_FOR_EACH_THREAD(i) {
    if (i == 0) og_run(&g, ws);
  }
}
