/* multiout.c — CPU twins of PyTorch's kernels of several outputs: batch_norm_update_stats_and_invert's
 * lambda in unrolled_elementwise_kernel_for_multi_outputs (Normalization.cuh), which batch norm in
 * training runs for float16 and bfloat16 inputs with running statistics.
 *
 * unrolled_elementwise_kernel_for_multi_outputs<3, F, std::array<char*, 7>,
 *   TrivialOffsetCalculator<4>, TrivialOffsetCalculator<3>>(int N, F f, array data, ic, oc):
 *   data[0..2] the outputs, data[3..6] the inputs, all contiguous; element i of each.
 * The lambda [=](float mean, float var, T running_mean, T running_var) -> tuple<T, T, float>
 * captures, in the order its body names them, bessel_correction_factor, momentum and eps (opmath
 * floats); it returns the new running mean and running variance and rsqrt(var + eps), computed
 * in float with nvcc's contraction of a * b + c * d into fmaf(a, b, c * d), each rounded once at
 * its store. Only the contiguous (trivial offset) instantiation has a twin.
 */
#include <math.h>
#include <string.h>

#include "twins.h"

#define BN_STATS_PREFIX                                                                           \
  "void at::native::(anonymous namespace)::unrolled_elementwise_kernel_for_multi_outputs<3, "    \
  "at::native::(anonymous namespace)::batch_norm_update_stats_and_invert(at::Tensor const&, "    \
  "at::Tensor const&, at::Tensor const&, at::Tensor const&, double, double, long)::{lambda()#1}" \
  "::operator()() const::{lambda()#"
#define BN_STATS_TAIL \
  ", std::array<char*, 7ul>, TrivialOffsetCalculator<4, unsigned int>, TrivialOffsetCalculator<3, unsigned int> >(int, "

static void run_bn_update_stats(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block;
  simtw_dt_t t = (simtw_dt_t)k->p[0];
  int n = *(const int *)args[0];
  const char *f = args[1];
  char *data[7];
  memcpy(data, args[2], sizeof data);
  float bessel, momentum, eps;
  memcpy(&bessel, f, 4);
  memcpy(&momentum, f + 4, 4);
  memcpy(&eps, f + 8, 4);
  size_t ts = simtw_dt_size(t);
  for (int i = 0; i < n; i++) {
    float mean = (float)simtw_load(DT_F32, data[3] + 4 * (size_t)i).f;
    float var = (float)simtw_load(DT_F32, data[4] + 4 * (size_t)i).f;
    float rm = (float)simtw_load(t, data[5] + ts * (size_t)i).f;
    float rv = (float)simtw_load(t, data[6] + ts * (size_t)i).f;
    float unbiased = var * bessel;
    simtw_store(t, data[0] + ts * (size_t)i, simtw_fval(fmaf(mean, momentum, (1.0f - momentum) * rm)));
    simtw_store(t, data[1] + ts * (size_t)i, simtw_fval(fmaf(unbiased, momentum, (1.0f - momentum) * rv)));
    simtw_store(DT_F32, data[2] + 4 * (size_t)i, simtw_fval(1.0f / sqrtf(var + eps)));
  }
}

int simtw_multiout_resolve(const char *dm, simtw_nn_t *k) {
  static const struct {
    const char *lam; /* the dispatch's lambda and the operation's */
    simtw_dt_t t;
  } V[] = {
      {"2}::operator()() const::{lambda(float, float, float, float)#1}", DT_F32},
      {"3}::operator()() const::{lambda(float, float, c10::Half, c10::Half)#1}", DT_F16},
      {"4}::operator()() const::{lambda(float, float, c10::BFloat16, c10::BFloat16)#1}", DT_BF16},
  };
  size_t pl = strlen(BN_STATS_PREFIX);
  if (strncmp(dm, BN_STATS_PREFIX, pl) != 0) return 0;
  for (size_t i = 0; i < sizeof V / sizeof V[0]; i++) {
    size_t ll = strlen(V[i].lam);
    if (strncmp(dm + pl, V[i].lam, ll) == 0 && strncmp(dm + pl + ll, BN_STATS_TAIL, strlen(BN_STATS_TAIL)) == 0) {
      k->run = run_bn_update_stats;
      k->p[0] = (int)V[i].t;
      return 1;
    }
  }
  return 0;
}
