/* ag-pattern — the kernel-pattern table (src/pattern.h) on made-up kernels and arguments:
 * names and layouts of PyTorch's kernels are recognised (both Array spellings, the anonymous
 * namespace nvcc gives launch_clamp_scalar), every condition rejects what it must (another
 * buffer, another element count, alpha != 1, a non-relu clamp, partly overlapping buffers, a
 * launch shape that does not compute exactly N elements), and the fused kernels' arguments are
 * built by the documented rule. */
#include <string.h>

#include "check.h"
#include "graph.h"
#include "pattern.h"

#define VEC "_ZN2at6native29vectorized_elementwise_kernelILi4E"
static const char add_name[] = VEC "NS0_15CUDAFunctor_addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_";
static const char add_std[] = VEC "NS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
static const char mul_name[] =
    VEC "NS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_";
static const char div_name[] =
    VEC "NS0_13BinaryFunctorIfffNS0_15binary_internal10DivFunctorIfEEEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_";
/* As nvcc names it inside libtorch: the anonymous namespace carries the file's name. */
static const char relu_name[] =
    VEC "ZZZNS0_46_GLOBAL__N__d1a8f0b2_16_TensorCompare_cu_71e1d22b19launch_clamp_scalarERNS_"
        "18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEENKUlvE_clEvENKUlvE5_clEvE"
        "UlfE_NS_6detail5ArrayIPcLi2EEEEEviT0_T1_";

static ag_kparam_t p3[3] = {{0, 4}, {4, 4}, {8, 24}};     /* add */
static ag_kparam_t pm[3] = {{0, 4}, {4, 1}, {8, 24}};     /* mul */
static ag_kparam_t pr[3] = {{0, 4}, {8, 24}, {32, 16}};   /* relu: closure, 2 pointers */

static ag_kinfo_t kadd = {.name = (char *)add_name, .nparams = 3, .param_bytes = 32, .params = p3};
static ag_kinfo_t kadd_std = {.name = (char *)add_std, .nparams = 3, .param_bytes = 32, .params = p3};
static ag_kinfo_t kmul = {.name = (char *)mul_name, .nparams = 3, .param_bytes = 32, .params = pm};
static ag_kinfo_t kdiv = {.name = (char *)div_name, .nparams = 3, .param_bytes = 32, .params = pm};
static ag_kinfo_t krelu = {.name = (char *)relu_name, .nparams = 3, .param_bytes = 48, .params = pr};

static void put32(uint8_t *b, uint32_t off, uint32_t v) { memcpy(b + off, &v, 4); }
static void put64(uint8_t *b, uint32_t off, uint64_t v) { memcpy(b + off, &v, 8); }
static void putf(uint8_t *b, uint32_t off, float v) { memcpy(b + off, &v, 4); }

static void binary(uint8_t *b, int n, float alpha, uint64_t o, uint64_t a, uint64_t c) {
  memset(b, 0, 32);
  put32(b, 0, (uint32_t)n), putf(b, 4, alpha);
  put64(b, 8, o), put64(b, 16, a), put64(b, 24, c);
}

static void relu(uint8_t *b, int n, int minmax, float lim, uint64_t o, uint64_t a) {
  memset(b, 0, 48);
  put32(b, 0, (uint32_t)n), put32(b, 8, (uint32_t)minmax), putf(b, 12, lim), putf(b, 16, lim);
  put64(b, 32, o), put64(b, 40, a);
}

/* The launch as PyTorch makes it: N (parameter 0) in blocks of 128 threads, 512 elements each. */
static ag_pat_launch_t L(const ag_kinfo_t *k, const uint8_t *a) {
  uint32_t n;
  memcpy(&n, a, 4);
  ag_pat_launch_t l = {.k = k, .args = a, .grid = {(n + 511) / 512, 1, 1}, .block = {128, 1, 1}};
  return l;
}

static const char *match_l(const ag_pat_launch_t *l) {
  const ag_pattern_t *p = ag__pattern_match(l, 2);
  return p ? ag__pattern_name(p) : "none";
}

static const char *match(ag_kinfo_t *k0, const uint8_t *a0, ag_kinfo_t *k1, const uint8_t *a1) {
  ag_pat_launch_t l[2] = {L(k0, a0), L(k1, a1)};
  const ag_pattern_t *p = ag__pattern_match(l, 2);
  return p ? ag__pattern_name(p) : "none";
}

int main(void) {
  enum { N = 1000 };
  const uint64_t A = 0x10000, B = 0x20000, T = 0x30000, O = 0x40000, C = 0x50000;
  uint8_t x[64], y[64];
  uint64_t s[AG_PAT_MAX_ARGS];
  unsigned grid[3], block[3];
  int nargs;

  CHECK_INT(ag__pattern_count(), ==, 2);

  /* add then relu of what it wrote. */
  binary(x, N, 1.0f, T, A, B);
  relu(y, N, 0, 0.0f, O, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "torch_add_relu");
  CHECK_STR(match(&kadd_std, x, &krelu, y), "torch_add_relu");
  {
    ag_pat_launch_t l[2] = {L(&kadd, x), L(&krelu, y)};
    const ag_pattern_t *p = ag__pattern_match(l, 2);
    uint8_t buf[AG_PAT_MAX_ARGS * 8];
    CHECK_STR(ag__pattern_kernel(p), "ag_fused_add_relu");
    CHECK_INT(ag__pattern_len(p), ==, 2);
    CHECK_INT(ag__pattern_params(p, l, buf, &nargs, grid, block), ==, 0);
    memcpy(s, buf, sizeof buf);
    CHECK_INT(nargs, ==, 5);
    CHECK_INT(s[0], ==, N);
    CHECK(s[1] == A && s[2] == B && s[3] == T && s[4] == O);
    CHECK_INT(block[0], ==, 256);
    CHECK_INT((uint64_t)grid[0] * block[0], >=, N);
    CHECK_INT(grid[1] * grid[2] * block[1] * block[2], ==, 1);
    /* Only one launch left: no match. */
    CHECK(ag__pattern_match(l, 1) == NULL);
  }
  /* In place: relu writes the add's output. */
  relu(y, N, 0, 0.0f, T, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "torch_add_relu");
  /* relu reading another buffer, another count, clamp_max, clamp_min(-0.0) and (1.0). */
  relu(y, N, 0, 0.0f, O, C);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  relu(y, N - 1, 0, 0.0f, O, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  relu(y, N, 1, 0.0f, O, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  relu(y, N, 0, -0.0f, O, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  relu(y, N, 0, 1.0f, O, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  /* alpha != 1 (sub is alpha -1). */
  relu(y, N, 0, 0.0f, O, T);
  binary(x, N, -1.0f, T, A, B);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  binary(x, N, 0.5f, T, A, B);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  /* Partly overlapping buffers: the output one element into an input. */
  binary(x, N, 1.0f, T, A, B);
  relu(y, N, 0, 0.0f, A + 4, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "none");
  /* Identical buffers are fine: t = a + a, out = relu(t) written over a. */
  binary(x, N, 1.0f, T, A, A);
  relu(y, N, 0, 0.0f, A, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "torch_add_relu");
  /* Disjoint but adjacent buffers are fine too. */
  binary(x, N, 1.0f, T, A, A + 4 * N);
  relu(y, N, 0, 0.0f, O, T);
  CHECK_STR(match(&kadd, x, &krelu, y), "torch_add_relu");

  /* Layouts: a kernel of the right name with another layout is not matched. */
  {
    ag_kparam_t bad[3] = {{0, 4}, {8, 8}, {16, 24}};
    ag_kinfo_t k = kadd;
    k.params = bad, k.param_bytes = 40;
    binary(x, N, 1.0f, T, A, B);
    relu(y, N, 0, 0.0f, O, T);
    CHECK_STR(match(&k, x, &krelu, y), "none");
    k = kadd, k.name = NULL;
    CHECK_STR(match(&k, x, &krelu, y), "none");
  }

  /* mul then add, the product as either operand. */
  binary(x, N, 0.0f, T, A, B);
  binary(y, N, 1.0f, O, T, C);
  CHECK_STR(match(&kmul, x, &kadd, y), "torch_mul_add");
  {
    ag_pat_launch_t l[2] = {L(&kmul, x), L(&kadd, y)};
    uint8_t buf[AG_PAT_MAX_ARGS * 8];
    CHECK_INT(ag__pattern_params(ag__pattern_match(l, 2), l, buf, &nargs, grid, block), ==, 0);
    memcpy(s, buf, sizeof buf);
    CHECK_INT(nargs, ==, 7);
    CHECK(s[1] == A && s[2] == B && s[3] == T && s[4] == C && s[5] == O && s[6] == 1);
    binary(y, N, 1.0f, O, C, T);
    CHECK_INT(ag__pattern_params(ag__pattern_match(l, 2), l, buf, &nargs, grid, block), ==, 0);
    memcpy(s, buf, sizeof buf);
    CHECK(s[4] == C && s[6] == 0);
  }
  binary(y, N, 1.0f, O, T, T);
  CHECK_STR(match(&kmul, x, &kadd, y), "torch_mul_add");
  binary(y, N, 1.0f, O, A, C); /* the add does not read the product */
  CHECK_STR(match(&kmul, x, &kadd, y), "none");
  binary(y, N, 2.0f, O, T, C);
  CHECK_STR(match(&kmul, x, &kadd, y), "none");
  binary(y, N / 2, 1.0f, O, T, C);
  CHECK_STR(match(&kmul, x, &kadd, y), "none");
  binary(y, N, 1.0f, O, T, T + 8); /* the other operand overlaps the product */
  CHECK_STR(match(&kmul, x, &kadd, y), "none");
  /* div is not mul. */
  binary(y, N, 1.0f, O, T, C);
  CHECK_STR(match(&kdiv, x, &kadd, y), "none");
  /* Order matters: relu then add is no pattern. */
  relu(x, N, 0, 0.0f, T, A);
  CHECK_STR(match(&krelu, x, &kadd, y), "none");
  /* The conditions alone, as a replay checks them. */
  {
    ag_pat_launch_t l[2] = {L(&kmul, x), L(&kadd, y)};
    binary(x, N, 0.0f, T, A, B);
    CHECK(ag__pattern_kernels_fit(ag__pattern_at(1), l));
    CHECK(ag__pattern_check(ag__pattern_at(1), l));
    binary(y, N, 1.0f, O, B, C);
    CHECK(!ag__pattern_check(ag__pattern_at(1), l));
  }
  /* Launch shapes: each original must compute exactly its N elements. Every field of the
   * shape of either original, changed alone, leaves both patterns unmatched. */
  {
    uint8_t m[64];
    binary(x, N, 1.0f, T, A, B);
    relu(y, N, 0, 0.0f, O, T);
    binary(m, N, 0.0f, A, B, C); /* mul: A = B * C, then x as the add reading A */
    binary(x, N, 1.0f, T, A, B);
    ag_pat_launch_t ar[2] = {L(&kadd, x), L(&krelu, y)}, ma[2] = {L(&kmul, m), L(&kadd, x)};
    CHECK_STR(match_l(ar), "torch_add_relu");
    CHECK_STR(match_l(ma), "torch_mul_add");
    ag_pat_launch_t *pats[2] = {ar, ma};
    for (int pi = 0; pi < 2; pi++)
      for (int op = 0; op < 2; op++)
        for (int f = 0; f < 6; f++) {
          /* grid.x one short (covers 512 of 1000), one more, grid.y, grid.z, block.x half,
           * block.y and block.z. */
          static const unsigned shapes[6][6] = {{1, 1, 1, 128, 1, 1}, {3, 1, 1, 128, 1, 1},
                                                {2, 2, 1, 128, 1, 1}, {2, 1, 2, 128, 1, 1},
                                                {2, 1, 1, 64, 1, 1},  {2, 1, 1, 64, 2, 1}};
          ag_pat_launch_t l[2] = {pats[pi][0], pats[pi][1]};
          memcpy(l[op].grid, shapes[f], 12), memcpy(l[op].block, shapes[f] + 3, 12);
          CHECK_STR(match_l(l), "none");
          if (f == 5) l[op].block[0] = 128, l[op].block[1] = 1, l[op].block[2] = 2;
          if (f == 5) CHECK_STR(match_l(l), "none");
        }
    /* N at a block boundary: 1024 elements are 2 blocks, 1025 are 3. */
    binary(x, 1024, 1.0f, T, A, B);
    relu(y, 1024, 0, 0.0f, O, T);
    ag_pat_launch_t e[2] = {L(&kadd, x), L(&krelu, y)};
    CHECK_INT(e[0].grid[0], ==, 2);
    CHECK_STR(match_l(e), "torch_add_relu");
    e[1].grid[0] = 3;
    CHECK_STR(match_l(e), "none");
    /* A replay re-checks the shape against the new N: the same grid of 2 blocks for 1025. */
    binary(x, 1025, 1.0f, T, A, B);
    relu(y, 1025, 0, 0.0f, O, T);
    CHECK(!ag__pattern_check(ag__pattern_at(0), e));
    e[1].grid[0] = 2;
    CHECK(!ag__pattern_check(ag__pattern_at(0), e));
    e[0].grid[0] = e[1].grid[0] = 3;
    CHECK(ag__pattern_check(ag__pattern_at(0), e));
    /* The std::array spelling may mean 1024 elements per block, whose block offsets must fit
     * in an int: 2^30 + 512 elements (2^21 + 1 blocks of 512) are fused with the
     * at::detail::Array spelling only. */
    uint32_t big = (1u << 30) + 512;
    const uint64_t G = 1ull << 40; /* buffers of 4 GiB, disjoint */
    binary(x, (int)big, 1.0f, 3 * G, G, 2 * G);
    relu(y, (int)big, 0, 0.0f, 4 * G, 3 * G);
    ag_pat_launch_t g1[2] = {L(&kadd, x), L(&krelu, y)}, g2[2] = {L(&kadd_std, x), L(&krelu, y)};
    CHECK_INT(g1[0].grid[0], ==, (1u << 21) + 1);
    CHECK_STR(match_l(g1), "torch_add_relu");
    CHECK_STR(match_l(g2), "none");
    big -= 512;
    binary(x, (int)big, 1.0f, 3 * G, G, 2 * G);
    relu(y, (int)big, 0, 0.0f, 4 * G, 3 * G);
    ag_pat_launch_t g3[2] = {L(&kadd_std, x), L(&krelu, y)};
    CHECK_STR(match_l(g3), "torch_add_relu");
    /* The calibration table's shape (1024 elements per block of 128 threads, as PyTorch 2.15
     * launches float32): 4096 elements in 4 blocks, which the fixed rule refuses, match; the
     * fixed rule's 8 blocks no longer do, nor blocks of other threads than the table's. */
    binary(x, 4096, 1.0f, T, A, B);
    relu(y, 4096, 0, 0.0f, O, T);
    ag_pat_launch_t w[2] = {L(&kadd_std, x), L(&krelu, y)};
    CHECK_INT(w[0].grid[0], ==, 8);
    CHECK_STR(match_l(w), "torch_add_relu");
    w[0].grid[0] = w[1].grid[0] = 4;
    CHECK_STR(match_l(w), "none");
    for (int i = 0; i < 2; i++) w[i].work = 1024, w[i].threads = 128;
    CHECK_STR(match_l(w), "torch_add_relu");
    w[1].grid[0] = 8;
    CHECK_STR(match_l(w), "none");
    w[1].grid[0] = 4, w[1].threads = 256;
    CHECK_STR(match_l(w), "none");
    w[1].block[0] = 256;
    CHECK_STR(match_l(w), "torch_add_relu");
    /* … and its block offsets must fit in an int: 2^31 - 1024 elements do, in 2^21 - 1 blocks,
     * since the last block begins at 2^31 - 2048. */
    binary(x, INT32_MAX - 1023, 1.0f, 3 * G, G, 2 * G);
    relu(y, INT32_MAX - 1023, 0, 0.0f, 4 * G, 3 * G);
    ag_pat_launch_t g4[2] = {L(&kadd_std, x), L(&krelu, y)};
    for (int i = 0; i < 2; i++) g4[i].work = 1024, g4[i].threads = 128, g4[i].grid[0] = (1u << 21) - 1;
    CHECK_STR(match_l(g4), "torch_add_relu");
  }
  {
    /* Chunks of a sequence never split a run a pattern replaces (ag__graph_align_chunks):
     * entries div, add, relu, div, add, relu, in an arena as the engine holds them. The pairs
     * (1, 2) and (4, 5) are patterns; boundaries at 2 and 5 fall inside them and move to 1
     * and 4; one at 3 stays; one at 4 next to a moved one at 4 goes. */
    uint8_t arena[6 * 64];
    ag_held_t h[6];
    const ag_kinfo_t *ks[6] = {&kdiv, &kadd, &krelu, &kdiv, &kadd, &krelu};
    memset(h, 0, sizeof h);
    for (int i = 0; i < 6; i++) {
      uint8_t *a = arena + 64 * i;
      if (ks[i] == &krelu) relu(a, N, 0, 0.0f, O, T);
      else binary(a, N, 1.0f, T, A, B);
      h[i].k = (ag_kinfo_t *)ks[i], h[i].off = (uint32_t)(64 * i);
      h[i].grid[0] = (N + 511) / 512, h[i].grid[1] = h[i].grid[2] = 1;
      h[i].block[0] = 128, h[i].block[1] = h[i].block[2] = 1;
    }
    int st[8] = {0, 2, 3, 5, 6}, st2[8] = {0, 2, 4, 5, 6}, st3[8] = {0, 1, 3, 6};
    CHECK_INT(ag__graph_align_chunks(h, 6, arena, st, 4), ==, 4);
    CHECK(st[0] == 0 && st[1] == 1 && st[2] == 3 && st[3] == 4 && st[4] == 6);
    CHECK_INT(ag__graph_align_chunks(h, 6, arena, st2, 4), ==, 3);
    CHECK(st2[0] == 0 && st2[1] == 1 && st2[2] == 4 && st2[3] == 6);
    /* Boundaries already outside every pattern do not move. */
    CHECK_INT(ag__graph_align_chunks(h, 6, arena, st3, 3), ==, 3);
    CHECK(st3[0] == 0 && st3[1] == 1 && st3[2] == 3 && st3[3] == 6);
  }
  printf("ag-pattern: ok\n");
  return 0;
}
