/* ag-chain — chains of elementwise kernels (src/chain.h) on made-up kernels and arguments: the
 * two contiguous frameworks are recognised by name and layout (other kernels and other layouts
 * are not), the strided one only where its caller names its data array, inside its parameters;
 * consecutive launches chain only when the later reads what the earlier wrote over the same
 * element count; a stream operation, another kernel, another count or an unrelated input ends a
 * chain. */
#include <string.h>

#include "chain.h"
#include "check.h"

#define NS "_ZN2at6native"
static const char vec_add[] = NS "29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
static const char unr_abs[] = NS "27unrolled_elementwise_kernelINS0_10AbsFunctorIfEESt5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjES7_NS0_6memory12LoadWithCastILi1EEENS8_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_";
static const char strided[] = NS "18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_10AbsFunctorIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_";
static const char gemm[] = "ampere_sgemm_128x64_nn";

static ag_kparam_t p_add[3] = {{0, 4}, {4, 4}, {8, 24}};                 /* N, functor, 3 tensors */
static ag_kparam_t p_abs[7] = {{0, 4}, {4, 1}, {8, 16}, {24, 4}, {28, 4}, {32, 1}, {40, 8}};
static ag_kparam_t p_wide[3] = {{0, 8}, {8, 4}, {16, 24}};               /* N of 8 bytes */

static ag_kinfo_t kadd = {.name = (char *)vec_add, .nparams = 3, .param_bytes = 32, .params = p_add};
static ag_kinfo_t kabs = {.name = (char *)unr_abs, .nparams = 7, .param_bytes = 48, .params = p_abs};
static ag_kinfo_t kstrided = {.name = (char *)strided, .nparams = 3, .param_bytes = 32, .params = p_add};
/* The strided framework as it is: N, then the lambda (a calculator of 2 tensors, whose data
 * array is at 512, then the functor). */
static ag_kparam_t p_lambda[2] = {{0, 4}, {8, 528}};
static ag_kinfo_t klambda = {.name = (char *)strided, .nparams = 2, .param_bytes = 536, .params = p_lambda};
static uint8_t sargs[4][536];
static ag_kinfo_t kgemm = {.name = (char *)gemm, .nparams = 3, .param_bytes = 32, .params = p_add};
static ag_kparam_t p_fill[3] = {{0, 4}, {4, 4}, {8, 8}};                 /* N, value, 1 tensor */
static ag_kinfo_t kfill = {.name = (char *)vec_add, .nparams = 3, .param_bytes = 16, .params = p_fill};
static ag_kinfo_t kwide = {.name = (char *)vec_add, .nparams = 3, .param_bytes = 40, .params = p_wide};

static uint8_t args[16][48];

/* Launch i of kernel k over n elements writing `out` from inputs a and b (b unused by a unary
 * kernel's two-tensor array). */
static ag_chain_launch_t L(int i, const ag_kinfo_t *k, int n, uint64_t out, uint64_t a, uint64_t b) {
  uint8_t *p = args[i];
  memset(p, 0, sizeof args[i]);
  memcpy(p, &n, 4);
  uint32_t at = k->params[2].offset;
  memcpy(p + at, &out, 8), memcpy(p + at + 8, &a, 8);
  if (k->params[2].size >= 24) memcpy(p + at + 16, &b, 8);
  ag_chain_launch_t l = {.k = k, .args = p};
  return l;
}

/* Strided launch i (of klambda) over n elements writing `out` from `a`, its data array named at
 * `sdata` (0: not named). */
static ag_chain_launch_t S(int i, int n, uint64_t out, uint64_t a, uint16_t sdata) {
  uint8_t *p = sargs[i];
  memset(p, 0, sizeof sargs[i]);
  memcpy(p, &n, 4);
  memcpy(p + 512, &out, 8), memcpy(p + 520, &a, 8);
  ag_chain_launch_t l = {.k = &klambda, .args = p, .sdata = sdata, .snt = sdata ? 2 : 0};
  return l;
}

static void expect(const ag_chain_launch_t *l, int n, const char *want, int chains) {
  uint8_t role[16];
  char got[17] = {0};
  CHECK_INT(ag__chain_scan(l, n, role), ==, chains);
  for (int i = 0; i < n; i++) got[i] = "-ec"[role[i]];
  CHECK_STR(got, want);
}

int main(void) {
  CHECK(ag__chain_elementwise(&kadd));
  CHECK(ag__chain_elementwise(&kabs));
  CHECK(!ag__chain_elementwise(&kstrided)); /* its tensors are not in its parameters */
  CHECK(!ag__chain_elementwise(&kgemm));
  CHECK(!ag__chain_elementwise(&kwide));
  CHECK(!ag__chain_elementwise(NULL));
  CHECK(ag__chain_single(&kfill) && !ag__chain_elementwise(&kfill) && !ag__chain_single(&kadd));

  /* add → abs → add over 1000 elements, each reading the one before: one chain of 3; then a
   * GEMM, and two adds that read nothing the one before wrote. */
  ag_chain_launch_t l[8];
  l[0] = L(0, &kadd, 1000, 0x1000, 0x9000, 0x9100);
  l[1] = L(1, &kabs, 1000, 0x2000, 0x1000, 0);
  l[2] = L(2, &kadd, 1000, 0x3000, 0x9200, 0x2000);
  l[3] = L(3, &kgemm, 1000, 0x4000, 0x3000, 0);
  l[4] = L(4, &kadd, 1000, 0x5000, 0x4000, 0x9300);
  l[5] = L(5, &kadd, 1000, 0x6000, 0x9400, 0x9500);
  expect(l, 6, "ccc-ee", 1);

  /* Another element count breaks the link; so does a stream operation between the two. */
  l[0] = L(0, &kadd, 1000, 0x1000, 0x9000, 0x9100);
  l[1] = L(1, &kadd, 999, 0x2000, 0x1000, 0x9100);
  l[2] = (ag_chain_launch_t){.k = &kadd}; /* a memset, say */
  l[3] = L(3, &kadd, 999, 0x3000, 0x2000, 0x9100);
  l[4] = L(4, &kabs, 999, 0x4000, 0x3000, 0);
  expect(l, 5, "ee-cc", 1);

  /* The strided framework and an unknown layout are neither; two chains back to back. */
  l[0] = L(0, &kstrided, 64, 0x1000, 0x9000, 0);
  l[1] = L(1, &kadd, 64, 0x2000, 0x1000, 0x9100);
  l[2] = L(2, &kadd, 64, 0x3000, 0x2000, 0x9100);
  l[3] = L(3, &kadd, 32, 0x4000, 0x3000, 0x9100);
  l[4] = L(4, &kabs, 32, 0x5000, 0x4000, 0);
  l[5] = L(5, &kwide, 32, 0x6000, 0x5000, 0);
  expect(l, 6, "-cccc-", 2);

  /* The strided framework by its own layout: read once its data array is named (and only where
   * it lies inside the parameters); it then links both ways. */
  CHECK(ag__chain_strided(&klambda) && !ag__chain_strided(&kadd) && !ag__chain_strided(&kstrided));
  l[0] = S(0, 64, 0x1000, 0x9000, 0);
  l[1] = L(1, &kadd, 64, 0x2000, 0x1000, 0x9100);
  l[2] = S(2, 64, 0x3000, 0x2000, 0);
  expect(l, 3, "-e-", 0);
  CHECK(!ag__chain_member(&l[0]));
  l[0] = S(0, 64, 0x1000, 0x9000, 512);
  l[2] = S(2, 64, 0x3000, 0x2000, 512);
  CHECK(ag__chain_member(&l[0]));
  expect(l, 3, "ccc", 1);
  l[2] = S(2, 64, 0x3000, 0x2000, 536); /* past the parameters */
  expect(l, 3, "cc-", 1);
  l[2] = S(2, 32, 0x3000, 0x2000, 512);
  expect(l, 3, "cce", 1);

  /* A null output links nothing; nothing at all is no chain. */
  l[0] = L(0, &kadd, 8, 0, 0x9000, 0x9100);
  l[1] = L(1, &kadd, 8, 0x2000, 0, 0x9100);
  expect(l, 2, "ee", 0);
  expect(l, 0, "", 0);
  printf("ag-chain: ok\n");
  return 0;
}
