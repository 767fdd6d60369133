/* dt-mod.cu — device code the differential test programs load with cuModuleLoadData
 * (tests/difftest/gen.py; CPU twins in tests/difftest/dt.h). dtm_tick has no parameters. */
__device__ unsigned long long dtm_tick_count;

extern "C" __global__ void dtm_tick(void) { atomicAdd(&dtm_tick_count, 1ull); }

extern "C" __global__ void dtm_axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fminf(4.0f, fmaxf(-4.0f, y[i] - a * x[i]));
}
