/* dt-mod2.cu — a second module for the differential test programs (tests/difftest/gen.py),
 * loaded after tests/kernels/dt-mod.cu is unloaded: another kernel, another parameter layout. */
extern "C" __global__ void dtm2_mix(int n, float a, float *y, const float *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fminf(4.0f, fmaxf(-4.0f, x[i] * a - y[i] * 0.5f));
}
