// Kernels for the simulated driver's tests (tests/unit/drv-*.c): loaded as cubin, fatbin and
// compressed fatbin with cuModuleLoadData. Their CPU twins live in the tests.
extern "C" __global__ void drv_add(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += a;
}

extern "C" __global__ void drv_mixed(char c, double d, int *out, short s) {
  if (threadIdx.x == 0) { out[0] = c; out[1] = (int)d; out[2] = s; }
}

extern "C" __global__ void drv_slow_set(int *p, int v) { *p = v; }

extern "C" __global__ void drv_fault(int *p) { *p = 0; }

extern "C" __global__ void drv_no_twin(int *p) { *p = 1; }
