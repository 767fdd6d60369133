/* prog-driver.cu — device code for tests/progs/driver-api.cu, built into cubins and fatbins
 * (plain and zstd-compressed) that the program loads with the driver API.
 *
 * The parameter lists are chosen for their layouts: 4- and 8-byte scalars with padding between
 * them, a char and a short, a 16-byte-aligned float4, and a struct passed by value. The CPU
 * twins live in driver-api.cu (the executable the simulator searches for sim_<name>); both
 * copies must compute the same thing.
 */

struct pd_pair {
  float a;
  double b;
};

/* y = a * x + y */
extern "C" __global__ void pd_axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

/* out = 3 * out + c + d + s + (v.x + v.y + v.z + v.w) + i */
extern "C" __global__ void pd_mixed(char c, double d, short s, float4 v, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3 * out[i] + c + (int)d + s + (int)(v.x + v.y + v.z + v.w) + i;
}

/* y = y * p.a + p.b + (k mod 5) */
extern "C" __global__ void pd_pair(struct pd_pair p, unsigned long long k, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * p.a + (float)p.b + (float)((k + i) % 5);
}
