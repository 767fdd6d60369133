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

SIM_KERNEL(cudnnsim_conv2d_fwd) {
  cudnnsim_conv_t p = SIM_ARG(0, cudnnsim_conv_t);
  float alpha = SIM_ARG(1, float), beta = SIM_ARG(2, float);
  const float *x = SIM_ARG(3, const float *), *f = SIM_ARG(4, const float *);
  float *y = SIM_ARG(5, float *);
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
