/* l-image.cu — device code for tests/progs/l-images.cu, built into a cubin that the program
 * loads with cuModuleLoadData from places that do not outlive the load: the read-only data of a
 * plugin it then dlcloses (tests/plugins/l-image.c), and a static buffer it reuses.
 *
 * l_tick has no parameters: a driver that describes parameters (12.4 and later) answers
 * CUDA_ERROR_INVALID_VALUE for its parameter 0, and one that cannot leaves only the image. The
 * CPU twins live in l-images.cu; both copies must compute the same thing.
 */

__device__ unsigned l_ticks;

/* Counts its runs (one thread). */
extern "C" __global__ void l_tick(void) {
  if (blockIdx.x == 0 && threadIdx.x == 0) l_ticks++;
}

/* y = y * a + 1 */
extern "C" __global__ void l_scale(float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * a + 1.0f;
}
