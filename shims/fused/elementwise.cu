/* elementwise.cu — the fused kernels the library substitutes for chains of PyTorch's eager
 * elementwise kernels (src/pattern.c names the originals and builds these kernels' arguments).
 *
 * Contract: bit-identical results to the originals run one after the other, by construction.
 * Each kernel performs, per element, the same float operations in the same order as the
 * originals, with explicit rounding intrinsics so that nvcc cannot contract a multiply and an
 * add that were two kernels (two roundings, the intermediate stored to memory) into one FMA.
 * Every intermediate tensor is still written, since the program may read it later. Element i
 * of every operand is handled by one thread in program order (read the inputs, write the
 * intermediate, read the second kernel's other input, write the output): pattern.c only
 * substitutes when any two buffers are identical or disjoint, so this is what the two kernels
 * in sequence compute. The loops are grid-stride over all n elements, whatever the launch
 * shape: pattern.c substitutes only originals whose own shape computes exactly their n elements
 * (PyTorch's (ceil(n/512), 1, 1) blocks of (128, 1, 1); docs/fused-patterns-conditions.md).
 *
 * To confirm on a GPU (tools/gpu-check runs the patterns): that PyTorch's add with alpha == 1
 * (self + alpha*other, an FMA or not) equals __fadd_rn(self, other) — it must, as fma(1, b, a)
 * is exactly rounded a + b — and that ::max(v, 0.0f) in PyTorch's clamp_min lambda compiles to
 * the same max.f32 as fmaxf here (for -0.0 inputs both give +0.0).
 *
 * Built by nvcc -fatbin into $(BUILD)/gen/fused.fatbin and embedded in libautograph.so
 * (shims/build.mk); loaded on first use per context (src/graph.c).
 */

/* relu as PyTorch 2.5's clamp_min(v, 0) lambda: NaN passes through unchanged, else
 * ::max(v, 0.0f) (max.f32). */
__device__ __forceinline__ static float ag_relu(float v) {
  return isnan(v) ? v : fmaxf(v, 0.0f);
}

/* t = a + b (add with alpha == 1), out = relu(t). out may be t (in place). */
extern "C" __global__ void ag_fused_add_relu(long long n, const float *a, const float *b,
                                             float *t, float *out) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float s = __fadd_rn(a[i], b[i]);
    t[i] = s;
    out[i] = ag_relu(s);
  }
}

/* t = x * y, out = t + c (t_first) or c + t (alpha == 1). c is read after t is written, so
 * that c == t reads the product, as the second kernel would. */
extern "C" __global__ void ag_fused_mul_add(long long n, const float *x, const float *y,
                                            float *t, const float *c, float *out,
                                            long long t_first) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float p = __fmul_rn(x[i], y[i]);
    t[i] = p;
    float q = c[i];
    out[i] = t_first ? __fadd_rn(p, q) : __fadd_rn(q, p);
  }
}
