/* fusedopt.c — CPU twins of PyTorch's fused optimizers: torch.optim.SGD, Adam and AdamW with
 * fused=True (FusedSgdKernel.cu, fused_adam_impl.cu, fused_adamw_impl.cu, fused_adam_utils.cuh),
 * for float, float16 and bfloat16 parameters, with the learning rate as a double or as a float
 * tensor on the device, and with GradScaler's grad_scale and found_inf.
 *
 * The kernels are multi_tensor_apply_kernel<Metadata, Functor, args…>(Metadata, Functor (one empty
 * byte), args…) (MultiTensorApply.cuh), the functor called with kChunkSize = 65536:
 *   FusedSgdMathFunctor<T, depth> on TensorListMetadata<depth> (depth 2: params and grads; 3: with
 *     the momentum buffers), args (double weight_decay, double momentum, float *lr_ptr, double lr,
 *     double dampening, bool nesterov, bool maximize, bool is_first_step, float *grad_scale,
 *     float *found_inf);
 *   FusedAdamMathFunctor<T, depth, ADAM_MODE mode, bool amsgrad> on
 *     FusedOptimizerTensorListMetadata<depth> (params, grads, exp_avg, exp_avg_sq and, with
 *     amsgrad, max_exp_avg_sq), args (const float *lr_ptr, double lr, double beta1, double beta2,
 *     double weight_decay, double eps, bool maximize, const float *grad_scale,
 *     const float *found_inf); mode 0 is Adam (weight decay added to the gradient), 1 AdamW
 *     (decoupled: the parameter scaled first).
 * The metadata (32 KB kernel-parameter layout): const void *addresses[depth][T]; int64
 * numel[T]; for the fused-optimizer kind const void *state_steps[T] (each a float step count);
 * uint16 block_to_tensor[2240]; int block_to_chunk[2240]; int start_tensor_this_launch. T (the
 * most tensors of a launch) is recovered from the metadata's size, and a block table that is not
 * well formed stops the twin rather than be guessed at. Block b updates elements
 * [chunk * 65536, min(numel, (chunk + 1) * 65536)) of its tensor's lists; with found_inf set and
 * *found_inf == 1 no block updates anything.
 *
 * The arithmetic is the wheel's, all in the opmath type float (its SASS has no double
 * arithmetic: the double scalars are converted to float once): each element is loaded and
 * widened to float, and each output rounded once to T at its store.
 *   SGD: g = grad (/ *grad_scale, stored back then); maximize: -g; weight decay (when != 0):
 *     g = fmaf(p, wd, g); with momentum, buf = is_first_step ? g : fmaf(1 - dampening, g,
 *     momentum * buf) (the contraction the SASS shows), stored; nesterov: g = fmaf(buf, momentum,
 *     g), else g = buf; p = fmaf(g, -lr, p).
 *   Adam: bias_correction1 = 1 - powf(beta1, step), bias_correction2_sqrt = sqrtf(1 -
 *     powf(beta2, step)) from the tensor's float step count; g = grad (/ *grad_scale, this
 *     unscaled value stored back then, before maximize negates it); weight decay (when != 0):
 *     Adam g = fmaf(p, wd, g), AdamW p = fmaf(-(lr * wd), p, p); exp_avg = fmaf(beta1, exp_avg,
 *     fmaf(-beta1, g, g)); exp_avg_sq = fmaf(beta2, exp_avg_sq, fmaf(-beta2, g * g, g * g));
 *     amsgrad: max = max < exp_avg_sq ? exp_avg_sq : max (std::max), used in the denominator;
 *     denom = sqrtf(v) / bias_correction2_sqrt + eps; p -= (lr / bias_correction1) * exp_avg /
 *     denom. The grads list is written only with grad_scale (GradScaler's note in
 *     fused_adam_utils.cuh).
 * Division and square root are IEEE-rounded on both sides (nvcc's defaults); the one known
 * difference is powf: CUDA's is accurate to 2 ulp and the C library's (nearly) correctly
 * rounded, so a bias correction, and through it an update, may differ in the last place.
 * This file is built with -ffp-contract=off so that every fused multiply-add is the fmaf
 * written here and no other.
 *
 * Not covered (no twin): double parameters, the mixed-precision FusedAdamMathFunctorMP (float
 * parameters with bfloat16 states) and the 4 KB kernel-parameter layout.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "twins.h"

#define FO_CHUNK 65536
#define FO_BLOCKS 2240

enum { FO_SGD, FO_ADAM };

#define FO_KERNEL "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
#define FO_NS "at::native::(anonymous namespace)::"

static float ld(simtw_dt_t dt, const char *p, int64_t i) {
  return (float)simtw_load(dt, p + simtw_dt_size(dt) * (size_t)i).f;
}
static void st(simtw_dt_t dt, char *p, int64_t i, float v) {
  simtw_store(dt, p + simtw_dt_size(dt) * (size_t)i, simtw_fval(v));
}
static float arg_f64(void **args, int i) {
  double d;
  memcpy(&d, args[i], 8);
  return (float)d;
}
static const float *arg_ptr(void **args, int i) {
  const float *p;
  memcpy(&p, args[i], sizeof p);
  return p;
}
static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* The launch's metadata: T from its size (args[1] is the functor right after it), the offsets of
 * its arrays, and a check of the block table. Returns T, 0 when the layout is not this one. */
typedef struct {
  const char *m, *numel, *steps, *b2t, *b2c;
  size_t T;
} fo_meta_t;

static size_t fo_meta(fo_meta_t *mt, void **args, unsigned blocks, int depth, int has_steps) {
  const char *m = args[0];
  size_t size = (size_t)((const char *)args[1] - m);
  size_t per = 8 * (size_t)depth + 8 + (has_steps ? 8 : 0), tail = 2 * FO_BLOCKS + 4 * FO_BLOCKS + 4;
  size_t T = 0;
  for (size_t c = 1; c < 4096 && !T; c++)
    if (round_up(per * c + tail, 8) == size) T = c;
  mt->m = m;
  mt->numel = m + 8 * (size_t)depth * T;
  mt->steps = mt->numel + 8 * T;
  mt->b2t = mt->steps + (has_steps ? 8 * T : 0);
  mt->b2c = mt->b2t + 2 * FO_BLOCKS;
  for (unsigned b = 0; T && b < blocks; b++) {
    uint16_t ti, prev = 0;
    int chunk;
    int64_t n = 0;
    memcpy(&ti, mt->b2t + 2 * b, 2);
    if (b) memcpy(&prev, mt->b2t + 2 * (b - 1), 2);
    memcpy(&chunk, mt->b2c + 4 * b, 4);
    if (ti < T) memcpy(&n, mt->numel + 8 * ti, 8);
    if (blocks > FO_BLOCKS || ti >= T || (b == 0 ? ti != 0 : ti < prev || ti > prev + 1) || chunk < 0 ||
        (int64_t)chunk * FO_CHUNK >= n)
      T = 0;
  }
  return mt->T = T;
}

static char *fo_list(const fo_meta_t *mt, int k, uint16_t ti) {
  char *p;
  memcpy(&p, mt->m + 8 * ((size_t)k * mt->T + ti), 8);
  return p;
}

static void fo_bad(const simtw_nn_t *k) {
  fprintf(stderr, "sim: %s: multi-tensor metadata of an unknown layout; not run\n", k->name);
  abort();
}

/* p: [0] FO_SGD or FO_ADAM, [1] the element type, [2] depth, [3] ADAM_MODE, [4] amsgrad. */
static void run_sgd(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  int depth = k->p[2];
  fo_meta_t mt;
  if (!fo_meta(&mt, args, grid.x, depth, 0)) fo_bad(k);
  const float *lr_ptr = arg_ptr(args, 4), *gs = arg_ptr(args, 10), *fi = arg_ptr(args, 11);
  if (fi && *fi == 1.0f) return;
  const float wd = arg_f64(args, 2), momentum = arg_f64(args, 3), dampening = arg_f64(args, 6);
  const float lr = lr_ptr ? *lr_ptr : arg_f64(args, 5);
  const int nesterov = *(const uint8_t *)args[7] != 0, maximize = *(const uint8_t *)args[8] != 0,
            first = *(const uint8_t *)args[9] != 0;
  const float scale = gs ? *gs : 1.0f;
  for (unsigned b = 0; b < grid.x; b++) {
    uint16_t ti;
    int chunk;
    int64_t n;
    memcpy(&ti, mt.b2t + 2 * b, 2);
    memcpy(&chunk, mt.b2c + 4 * b, 4);
    memcpy(&n, mt.numel + 8 * ti, 8);
    char *param = fo_list(&mt, 0, ti), *grad = fo_list(&mt, 1, ti), *buf = depth > 2 ? fo_list(&mt, 2, ti) : NULL;
    int64_t end = (int64_t)(chunk + 1) * FO_CHUNK < n ? (int64_t)(chunk + 1) * FO_CHUNK : n;
    for (int64_t i = (int64_t)chunk * FO_CHUNK; i < end; i++) {
      float p = ld(dt, param, i), g = ld(dt, grad, i);
      if (gs) {
        g = g / scale;
        st(dt, grad, i, g);
      }
      if (maximize) g = -g;
      if (wd != 0.0f) g = fmaf(p, wd, g);
      if (buf) {
        float mb = first ? g : fmaf(1.0f - dampening, g, momentum * ld(dt, buf, i));
        st(dt, buf, i, mb);
        g = nesterov ? fmaf(mb, momentum, g) : mb;
      }
      st(dt, param, i, fmaf(g, -lr, p));
    }
  }
}

static void run_adam(const simtw_nn_t *k, dim3 grid, dim3 block, void **args) {
  (void)block;
  simtw_dt_t dt = (simtw_dt_t)k->p[1];
  int depth = k->p[2], adamw = k->p[3] == 1, amsgrad = k->p[4];
  fo_meta_t mt;
  if (!fo_meta(&mt, args, grid.x, depth, 1)) fo_bad(k);
  const float *lr_ptr = arg_ptr(args, 2), *gs = arg_ptr(args, 9), *fi = arg_ptr(args, 10);
  if (fi && *fi == 1.0f) return;
  const float lr = lr_ptr ? *lr_ptr : arg_f64(args, 3), beta1 = arg_f64(args, 4), beta2 = arg_f64(args, 5),
              wd = arg_f64(args, 6), eps = arg_f64(args, 7);
  const int maximize = *(const uint8_t *)args[8] != 0;
  const float scale = gs ? *gs : 1.0f, lr_wd = lr * wd;
  for (unsigned b = 0; b < grid.x; b++) {
    uint16_t ti;
    int chunk;
    int64_t n;
    const float *stepp;
    memcpy(&ti, mt.b2t + 2 * b, 2);
    memcpy(&chunk, mt.b2c + 4 * b, 4);
    memcpy(&n, mt.numel + 8 * ti, 8);
    memcpy(&stepp, mt.steps + 8 * ti, 8);
    const float step = *stepp;
    const float bc1 = 1.0f - powf(beta1, step), bc2_sqrt = sqrtf(1.0f - powf(beta2, step));
    const float step_size = lr / bc1;
    char *param = fo_list(&mt, 0, ti), *grad = fo_list(&mt, 1, ti), *ea_l = fo_list(&mt, 2, ti),
         *eas_l = fo_list(&mt, 3, ti), *max_l = amsgrad ? fo_list(&mt, 4, ti) : NULL;
    int64_t end = (int64_t)(chunk + 1) * FO_CHUNK < n ? (int64_t)(chunk + 1) * FO_CHUNK : n;
    for (int64_t i = (int64_t)chunk * FO_CHUNK; i < end; i++) {
      float p = ld(dt, param, i), g = ld(dt, grad, i), ea = ld(dt, ea_l, i), eas = ld(dt, eas_l, i);
      if (gs) {
        g = g / scale;
        st(dt, grad, i, g);
      }
      if (maximize) g = -g;
      if (wd != 0.0f) {
        if (adamw) p = fmaf(-lr_wd, p, p);
        else g = fmaf(p, wd, g);
      }
      ea = fmaf(beta1, ea, fmaf(-beta1, g, g));
      const float g2 = g * g;
      eas = fmaf(beta2, eas, fmaf(-beta2, g2, g2));
      float v = eas;
      if (max_l) {
        float mx = ld(dt, max_l, i);
        v = mx < eas ? eas : mx;
        st(dt, max_l, i, v);
      }
      const float denom = sqrtf(v) / bc2_sqrt + eps;
      const float upd = step_size * ea;
      p -= upd / denom;
      st(dt, param, i, p);
      st(dt, ea_l, i, ea);
      st(dt, eas_l, i, eas);
    }
  }
}

int simtw_fusedopt_resolve(const char *dm, simtw_nn_t *k) {
  size_t kl = strlen(FO_KERNEL);
  if (strncmp(dm, FO_KERNEL, kl) != 0) return 0;
  const char *p = dm + kl, *e;
  int depth = 0, depth2 = 0, mode = -1, n = 0;
  simtw_dt_t dt;
  char tail[8] = "";
  static const char sgd_meta[] = "TensorListMetadata<", sgd_fn[] = FO_NS "FusedSgdMathFunctor<";
  static const char adam_meta[] = "FusedOptimizerTensorListMetadata<", adam_fn[] = FO_NS "FusedAdamMathFunctor<";
  if (strncmp(p, sgd_meta, sizeof sgd_meta - 1) == 0) {
    p += sizeof sgd_meta - 1;
    if (sscanf(p, "%d>, %n", &depth, &n) != 1 || !n || strncmp(p + n, sgd_fn, sizeof sgd_fn - 1) != 0) return 0;
    p += n + sizeof sgd_fn - 1;
    dt = simtw_dt_parse(p, &e);
    n = 0;
    if ((dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) || sscanf(e, ", %d>%n", &depth2, &n) != 1 || !n ||
        depth2 != depth || (depth != 2 && depth != 3))
      return 0;
    static const char args_sgd[] = ", double, double, float*, double, double, bool, bool, bool, float*, float*>(";
    if (strncmp(e + n, args_sgd, sizeof args_sgd - 1) != 0) return 0;
    k->run = run_sgd;
    k->p[0] = FO_SGD;
  } else if (strncmp(p, adam_meta, sizeof adam_meta - 1) == 0) {
    p += sizeof adam_meta - 1;
    if (sscanf(p, "%d>, %n", &depth, &n) != 1 || !n || strncmp(p + n, adam_fn, sizeof adam_fn - 1) != 0) return 0;
    p += n + sizeof adam_fn - 1;
    dt = simtw_dt_parse(p, &e);
    n = 0;
    if ((dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) ||
        sscanf(e, ", %d, (at::native::ADAM_MODE)%d, %5[a-z]>%n", &depth2, &mode, tail, &n) != 3 || !n ||
        depth2 != depth || (mode != 0 && mode != 1) || (depth != 4 && depth != 5))
      return 0;
    int ams = strcmp(tail, "true") == 0;
    if ((!ams && strcmp(tail, "false") != 0) || ams != (depth == 5)) return 0;
    static const char args_adam[] = ", float const*, double, double, double, double, double, bool, float const*, float const*>(";
    if (strncmp(e + n, args_adam, sizeof args_adam - 1) != 0) return 0;
    k->run = run_adam;
    k->p[0] = FO_ADAM;
    k->p[3] = mode;
    k->p[4] = ams;
  } else {
    return 0;
  }
  k->p[1] = (int)dt;
  k->p[2] = depth;
  return 1;
}
