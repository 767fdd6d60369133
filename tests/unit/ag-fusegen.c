/* ag-fusegen — the generator of fused elementwise kernels (src/fusegen.h) on made-up kernels, a
 * small calibration table and made-up argument bytes: the table's operations and scalar places
 * are read, a chain is described (kinds, types, operands, scalars read from the functors, which
 * tensors are loaded and which written), every refusal has its reason, and the emitted source
 * has the expected structure: one load per outside tensor, one store per operation, the
 * roundings where a result is stored in 16 bits, the scalars as parameters, one key per shape.
 * Strided launches: each tensor's walk read from the OffsetCalculator and merged, a contiguous
 * walk no walk at all, sizes and strides as parameters, and the refusals of a value read back
 * through another walk than it was written with or of a walk that shares memory with a write. */
#include <string.h>

#include "ag.h"
#include "check.h"
#include "fusegen.h"

#define NS "_ZN2at6native"
#define VEC NS "29vectorized_elementwise_kernelI"
static const char n_add[] = VEC "Li4E8k_add_f";      /* float32 CUDAFunctor_add */
static const char n_clamp[] = VEC "Li4E10k_clamp_f"; /* float32 launch_clamp_scalar */
static const char n_tobf[] = VEC "Li4E9k_tobf_f";    /* float32 to bfloat16 */
static const char n_muls[] = VEC "Li8E9k_muls_b";    /* bfloat16 multiplication by a scalar */
static const char n_silu[] = VEC "Li8E9k_silu_b";    /* bfloat16 silu */
static const char n_n2n[] = VEC "Li4E10k_n2n_f"; /* float32 nan_to_num (not generated) */
static const char n_pow[] = VEC "Li4E8k_pow_d";      /* float32 pow, exponent held as a double */
static const char n_fill[] = VEC "Li8E9k_fill_h";    /* float16 fill */
static const char n_fillf[] = VEC "Li4E9k_fill_f";   /* float32 fill */
static const char n_exph[] = VEC "Li8E9k_exp_h";     /* float16 exp */
static const char n_cast[] = NS "27unrolled_elementwise_kernelI7k_copy12LoadWithCastILi1EEE";
static const char n_other[] = VEC "Li4E9k_other_f";  /* not in the table */
static const char n_odd[] = VEC "Li4E8k_odd_f";      /* float32 add, with no known launch shape */
static const char n_cube[] = VEC "Li8E9k_cube_b";    /* bfloat16 pow with the exponent 3 */
static const char n_sq[] = VEC "Li4E7k_sq_f";        /* float32 pow with the exponent 2 */
#define STR NS "18elementwise_kernelILi128ELi4E"
static const char n_smul[] = STR "9k_smul_f";        /* float32 multiplication, strided */
static const char n_sabs[] = STR "9k_sabs_f";        /* float32 abs, strided */

/* The table: one kernel per line, in tools/calibrate-elementwise's schema. */
static const char table[] =
    "{\"schema\": \"autograph-elementwise-calibration\", \"version\": 1, \"kernels\": {\n"
    "\"" VEC "Li4E8k_add_f\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 3, \"functor_offset\": 4, \"functor_size\": 4,"
    " \"ops\": {\"add\": {\"functor_bytes\": \"0000803f\", \"scalars\": {}},"
    " \"add_alpha\": {\"functor_bytes\": \"00002040\", \"scalars\": {\"alpha\": {\"value\": 2.5, \"at\": [{\"offset\": 0, \"encoding\": \"float\", \"form\": \"as given\"}]}}}}},\n"
    "\"" VEC "Li4E10k_clamp_f\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 8, \"functor_size\": 24,"
    " \"ops\": {\"clamp\": {\"functor_bytes\": \"020000000000e0bf0000204000000000a05d089b24560000\", \"scalars\": {"
    "\"max\": {\"value\": 2.5, \"at\": [{\"offset\": 8, \"encoding\": \"float\", \"form\": \"as given\"}]},"
    " \"min\": {\"value\": -1.75, \"at\": [{\"offset\": 4, \"encoding\": \"float\", \"form\": \"as given\"}]}}},"
    " \"relu\": {\"functor_bytes\": \"000000000000000000000000000000006019079b24560000\", \"scalars\": {}}}},\n"
    "\"" VEC "Li4E9k_tobf_f\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 4, \"functor_size\": 1,"
    " \"ops\": {\"to_bfloat16\": {\"functor_bytes\": \"b0\", \"scalars\": {}}}},\n"
    "\"" VEC "Li8E9k_muls_b\": {\"dtype\": \"bfloat16\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 4, \"functor_size\": 8,"
    " \"ops\": {\"div_scalar\": {\"functor_bytes\": \"004756f9cdcccc3e\", \"scalars\": {\"other\": {\"value\": 2.5, \"at\": [{\"offset\": 4, \"encoding\": \"float\", \"form\": \"reciprocal\"}]}}}}},\n"
    "\"" VEC "Li8E9k_silu_b\": {\"dtype\": \"bfloat16\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 4, \"functor_size\": 1,"
    " \"ops\": {\"silu\": {\"functor_bytes\": \"00\", \"scalars\": {}}}},\n"
    "\"" VEC "Li4E10k_n2n_f\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 4, \"functor_size\": 1,"
    " \"ops\": {\"nan_to_num\": {\"functor_bytes\": \"00\", \"scalars\": {}}}},\n"
    "\"" VEC "Li4E8k_pow_d\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 8, \"functor_size\": 16,"
    " \"ops\": {\"pow_scalar\": {\"functor_bytes\": \"0000000000000440fe7f000024560000\", \"scalars\": {\"exponent\": {\"value\": 2.5, \"at\": [{\"offset\": 0, \"encoding\": \"double\", \"form\": \"as given\"}]}}}}},\n"
    "\"" VEC "Li8E9k_fill_h\": {\"dtype\": \"float16\", \"threads\": 128, \"block_work\": 512, \"tensors\": 1, \"functor_offset\": 4, \"functor_size\": 2,"
    " \"ops\": {\"fill\": {\"functor_bytes\": \"0041\", \"scalars\": {\"value\": {\"value\": 2.5, \"at\": [{\"offset\": 0, \"encoding\": \"half\", \"form\": \"as given\"}]}}}}},\n"
    "\"" VEC "Li4E9k_fill_f\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 1, \"functor_offset\": 4, \"functor_size\": 4,"
    " \"ops\": {\"fill\": {\"functor_bytes\": \"00002040\", \"scalars\": {\"value\": {\"value\": 2.5, \"at\": [{\"offset\": 0, \"encoding\": \"float\", \"form\": \"as given\"}]}}}}},\n"
    "\"" VEC "Li8E9k_exp_h\": {\"dtype\": \"float16\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 4, \"functor_size\": 1,"
    " \"ops\": {\"exp\": {\"functor_bytes\": \"00\", \"scalars\": {}}}},\n"
    "\"" NS "27unrolled_elementwise_kernelI7k_copy12LoadWithCastILi1EEE\": {\"dtype\": \"float16\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 4, \"functor_size\": 1,"
    " \"ops\": {\"to_bfloat16\": {\"functor_bytes\": \"ff\", \"scalars\": {}}}},\n"
    "\"" VEC "Li8E9k_cube_b\": {\"dtype\": \"bfloat16\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 8, \"functor_size\": 8,"
    " \"ops\": {\"pow_3\": {\"functor_bytes\": \"0000000000000000\", \"scalars\": {}}}},\n"
    "\"" VEC "Li4E7k_sq_f\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2, \"functor_offset\": 8, \"functor_size\": 8,"
    " \"ops\": {\"pow_2\": {\"functor_bytes\": \"0000000000000000\", \"scalars\": {}}}},\n"
    "\"" STR "9k_smul_f\": {\"framework\": \"elementwise_kernel\", \"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 3,"
    " \"calc_offset\": 8, \"data_offset\": 616, \"functor_offset\": 640, \"functor_size\": 1,"
    " \"ops\": {\"mul\": {\"functor_bytes\": \"00\", \"scalars\": {}}}},\n"
    "\"" STR "9k_sabs_f\": {\"framework\": \"elementwise_kernel\", \"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2,"
    " \"calc_offset\": 8, \"data_offset\": 512, \"functor_offset\": 528, \"functor_size\": 1,"
    " \"ops\": {\"abs\": {\"functor_bytes\": \"00\", \"scalars\": {}}}},\n"
    /* a calculator of another size (another PyTorch's MAX_DIMS): left out */
    "\"" STR "9k_sbad_f\": {\"framework\": \"elementwise_kernel\", \"dtype\": \"float32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 2,"
    " \"calc_offset\": 8, \"data_offset\": 400, \"functor_offset\": 416, \"functor_size\": 1,"
    " \"ops\": {\"abs\": {\"functor_bytes\": \"00\", \"scalars\": {}}}},\n"
    /* a shape that is no framework's (elements per block not a power of two): unknown */
    "\"" VEC "Li4E8k_odd_f\": {\"dtype\": \"float32\", \"threads\": 128, \"block_work\": 1000, \"tensors\": 3,"
    " \"functor_offset\": 4, \"functor_size\": 4, \"ops\": {\"add\": {\"functor_bytes\": \"0000803f\", \"scalars\": {}}}},\n"
    "\"" VEC "Li4E8k_int_i\": {\"dtype\": \"int32\", \"threads\": 128, \"block_work\": 512, \"tensors\": 3, \"functor_offset\": 4, \"functor_size\": 4, \"ops\": {}}\n"
    "}}";

/* Kernels: N at 0, the functor, then the tensors at the next multiple of 8. */
#define KINFO(var, nm, foff, fsize, t)                                                           \
  static ag_kparam_t var##_p[3] = {{0, 4}, {foff, fsize}, {((foff) + (fsize) + 7) / 8 * 8, 8 * (t)}}; \
  static ag_kinfo_t var = {.name = (char *)nm, .nparams = 3, .params = var##_p,                \
                           .param_bytes = ((foff) + (fsize) + 7) / 8 * 8 + 8 * (t)}
KINFO(k_add, n_add, 4, 4, 3);
KINFO(k_clamp, n_clamp, 8, 24, 2);
KINFO(k_tobf, n_tobf, 4, 1, 2);
KINFO(k_muls, n_muls, 4, 8, 2);
KINFO(k_silu, n_silu, 4, 1, 2);
KINFO(k_n2n, n_n2n, 4, 1, 2);
KINFO(k_pow, n_pow, 8, 16, 2);
KINFO(k_fill, n_fill, 4, 2, 1);
KINFO(k_fillf, n_fillf, 4, 4, 1);
KINFO(k_exph, n_exph, 4, 1, 2);
KINFO(k_cast, n_cast, 4, 1, 2);
KINFO(k_other, n_other, 4, 4, 3);
KINFO(k_odd, n_odd, 4, 4, 3);
KINFO(k_cube, n_cube, 8, 8, 2);
KINFO(k_sq, n_sq, 8, 8, 2);
KINFO(k_wide, n_add, 4, 8, 3); /* the add kernel with another functor size */

static uint8_t args[24][64];

/* The strided kernels: N, then the lambda (calculator at 8, data array, functor) */
static ag_kparam_t smul_p[2] = {{0, 4}, {8, 640}};
static ag_kinfo_t k_smul = {.name = (char *)n_smul, .nparams = 2, .params = smul_p, .param_bytes = 648};
static ag_kparam_t sabs_p[2] = {{0, 4}, {8, 528}};
static ag_kinfo_t k_sabs = {.name = (char *)n_sabs, .nparams = 2, .params = sabs_p, .param_bytes = 536};
static uint8_t sargs[4][648];

/* Strided launch i of k (nt tensors, data array at sdata) over the dims sizes `size`, tensor j
 * at ptr[j] with byte strides stride[j][d]. */
static ag_chain_launch_t S(int i, const ag_kinfo_t *k, int nt, uint16_t sdata, int dims, const uint32_t *size,
                           const uint32_t (*stride)[3], const uint64_t *ptr) {
  uint8_t *p = sargs[i];
  int32_t n = 1;
  memset(p, 0, sizeof sargs[i]);
  memcpy(p + 8, &dims, 4);
  for (int d = 0; d < dims; d++) {
    n *= (int32_t)size[d];
    memcpy(p + 8 + 4 + 12 * d, &size[d], 4);
    for (int j = 0; j < nt; j++) memcpy(p + 8 + 304 + 4 * (d * nt + j), &stride[j][d], 4);
  }
  memcpy(p, &n, 4);
  memcpy(p + sdata, ptr, 8 * (size_t)nt);
  return (ag_chain_launch_t){.k = k, .args = p, .sdata = sdata, .snt = (uint8_t)nt,
                             .grid = {((unsigned)n + 511) / 512, 1, 1}, .block = {128, 1, 1}};
}

/* Launch i of k over n elements: functor bytes f (fsize of them), tensors out, in0, in1. */
static ag_chain_launch_t L(int i, const ag_kinfo_t *k, int n, const void *f, uint64_t out, uint64_t a, uint64_t b) {
  uint8_t *p = args[i];
  memset(p, 0xa5, sizeof args[i]); /* padding that is none of the table's bytes */
  memcpy(p, &n, 4);
  memcpy(p + k->params[1].offset, f, k->params[1].size);
  uint64_t d[3] = {out, a, b};
  memcpy(p + k->params[2].offset, d, k->params[2].size);
  return (ag_chain_launch_t){.k = k, .args = p, .grid = {((unsigned)n + 511) / 512, 1, 1}, .block = {128, 1, 1}};
}

static const float one = 1.0f, two = 2.0f;
/* Functor bytes for the kernels whose functor is wider than one value: a double exponent's
 * (16 bytes), and the add kernel's with an 8-byte functor (alpha 1, then padding). */
static const uint8_t pow_f[16] = {0};
static const float one_wide[2] = {1.0f, 0.0f};
static const uint8_t empty[1] = {0x11};
/* clamp(-1, 2): selector 2 (MinMax), limits, then padding and a pointer that vary */
static const uint8_t clamp_f[24] = {2, 0, 0, 0, 0, 0, 0x80, 0xbf, 0, 0, 0, 0x40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const uint8_t clamp_max_f[24] = {1, 0, 0, 0, 0, 0, 0x80, 0xbf, 0, 0, 0, 0x40};
static const uint8_t relu_f[24] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9};
/* the empty MulFunctor and its padding, then 1 / 4 */
static const uint8_t muls_f[8] = {0x77, 0x66, 0x55, 0x44, 0, 0, 0x80, 0x3e};

/* The chain below, its pointers moved by d. */
static void chain6(ag_chain_launch_t *l, uint64_t d, const float *alpha, const uint8_t *clamp) {
  l[0] = L(0, &k_add, 1000, alpha, 0x10000 + d, 0xa0000 + d, 0xb0000 + d);
  l[1] = L(1, &k_clamp, 1000, clamp, 0x20000 + d, 0x10000 + d, 0);
  l[2] = L(2, &k_tobf, 1000, empty, 0x30000 + d, 0x20000 + d, 0);
  l[3] = L(3, &k_muls, 1000, muls_f, 0x40000 + d, 0x30000 + d, 0);
  l[4] = L(4, &k_silu, 1000, empty, 0x50000 + d, 0x40000 + d, 0);
  l[5] = L(5, &k_clamp, 1000, relu_f, 0x20000 + d, 0x10000 + d, 0);
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

static void refused(const ag_fg_table_t *t, const ag_chain_launch_t *l, int n, int reason, int at) {
  ag_fg_chain_t c;
  int bad = 99;
  CHECK_STR(ag__fg_reason_name(ag__fg_build(t, l, n, &c, &bad)), ag__fg_reason_name(reason));
  CHECK_INT(bad, ==, at);
}

int main(void) {
  ag_fg_table_t t;
  const ag_fg_calkernel_t *ck0;
  CHECK_INT(ag__fg_table_load(&t, "{\"schema\": \"other\", \"kernels\": {}}", 35), ==, -AG_EINVAL);
  CHECK_INT(ag__fg_table_load(&t, table, sizeof table - 2), ==, -AG_EINVAL); /* cut short */
  CHECK_INT(ag__fg_table_load(&t, table, sizeof table - 1), ==, 0);
  CHECK_INT(t.n, ==, 16); /* the int32 kernel and the other calculator are left out */
  CHECK((ck0 = ag__fg_table_find(&t, n_add)) && ck0->threads == 128 && ck0->block_work == 512);
  CHECK((ck0 = ag__fg_table_find(&t, n_odd)) && ck0->block_work == 0);
  CHECK(!ag__fg_table_find(&t, NS "18elementwise_kernelILi128ELi4E9k_sbad_f"));
  const ag_fg_calkernel_t *ck;
  CHECK((ck = ag__fg_table_find(&t, n_smul)) && ck->strided && ck->calc_off == 8 && ck->data_off == 616);
  ck = ag__fg_table_find(&t, n_clamp);
  CHECK(ck && ck->functor_off == 8 && ck->functor_size == 24 && ck->tensors == 2 && ck->nops == 2);
  CHECK(ag__fg_table_find(&t, n_n2n) && ag__fg_table_find(&t, n_n2n)->nops == 0);
  CHECK(ag__fg_table_find(&t, n_cast)->cast_loader);
  CHECK(!ag__fg_table_find(&t, n_other));

  /* float32: s = a + b; c = clamp(s, -1, 2); w = bfloat16(c); then in bfloat16 u = w / 4 (held
   * as * 0.25), v = silu(u); and in float32 again c = relu(s), rewriting c. */
  ag_chain_launch_t l[AG_FG_MAX_OPS + 2];
  chain6(l, 0, &one, clamp_f);
  ag_fg_chain_t c;
  int bad;
  CHECK_INT(ag__fg_build(&t, l, 6, &c, &bad), ==, AG_FG_OK);
  CHECK_INT(c.n, ==, 1000);
  CHECK_INT(c.nops, ==, 6);
  CHECK_INT(c.nptrs, ==, 7);
  const int kinds[6] = {AG_FG_ADD, AG_FG_CLAMP, AG_FG_CAST, AG_FG_MUL_S, AG_FG_SILU, AG_FG_RELU};
  const int outs[6] = {AG_FG_F32, AG_FG_F32, AG_FG_BF16, AG_FG_BF16, AG_FG_BF16, AG_FG_F32};
  for (int i = 0; i < 6; i++) {
    CHECK_STR(ag__fg_kind_name(c.op[i].kind), ag__fg_kind_name(kinds[i]));
    CHECK_INT(c.op[i].out_dt, ==, outs[i]);
  }
  CHECK_INT(c.op[2].in_dt, ==, AG_FG_F32);
  CHECK(c.op[0].in[0].op == -1 && c.op[0].in[1].op == -1); /* a and b from memory */
  for (int i = 1; i < 5; i++) CHECK_INT(c.op[i].in[0].op, ==, i - 1);
  CHECK_INT(c.op[5].in[0].op, ==, 0);
  CHECK_INT(c.op[5].out, ==, c.op[1].out);
  CHECK_INT(c.nscal, ==, 3);
  CHECK(c.scal[0] == -1.0f && c.scal[1] == 2.0f && c.scal[2] == 0.25f);
  int loaded = 0, written = 0;
  for (int i = 0; i < c.nptrs; i++) loaded += c.ptr_loaded[i], written += c.ptr_written[i];
  CHECK_INT(loaded, ==, 2);
  CHECK_INT(written, ==, 5);

  static char src[8192];
  char name[32];
  size_t len = ag__fg_emit(&c, src, sizeof src, name);
  CHECK_INT(len, ==, strlen(src));
  printf("%s", src);
  CHECK(!strncmp(name, "ag_fused_", 9) && strlen(name) == 25);
  CHECK(strstr(src, name) && strstr(src, "extern \"C\" __global__ void "));
  /* Self-contained: no header, the bfloat16 conversions written in (a device's, a host's). */
  CHECK(!strstr(src, "#include") && strstr(src, "cvt.rn.bf16.f32") && strstr(src, "__ushort_as_bfloat16(") &&
        !strstr(src, "ag_h2f"));
  const char *body = strstr(src, "struct ag_fused_args");
  CHECK(body != NULL);
  CHECK(strstr(src, "void *t[7];") && strstr(src, "float s[3];"));
  CHECK_INT(count(body, "[i];\n"), ==, 2);                     /* a and b, loaded once */
  CHECK_INT(count(body, ")[i] = "), ==, 6);                    /* every result stored */
  CHECK_INT(count(body, "= ag_f2bf(r"), ==, 3);                /* w, u, v rounded */
  CHECK_INT(count(body, "= ag_bf2f(h"), ==, 3);                /* and read on rounded */
  CHECK(strstr(src, "__fadd_rn(x") && strstr(src, "__fmul_rn(v2, a.s[2])"));
  CHECK(strstr(src, "fminf(fmaxf(v0, a.s[0]), a.s[1])") && strstr(src, "fmaxf(v0, 0.0f)"));
  /* No float operator a compiler could contract: the only ones are the loop's integer index. */
  CHECK_INT(count(body, " * "), ==, 2);
  CHECK_INT(count(body, " + "), ==, 1);
  char small[16];
  CHECK_INT(ag__fg_emit(&c, small, sizeof small, name), ==, len); /* measured when cut */
  CHECK_INT(strlen(small), ==, sizeof small - 1);

  /* The key: other pointers and scalars, one key and one source; another operation, another. */
  uint64_t key = ag__fg_key(&c);
  static const uint8_t clamp2_f[24] = {2, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0x80, 0x40};
  chain6(l, 0x1000, &one, clamp2_f);
  ag_fg_chain_t c2;
  CHECK_INT(ag__fg_build(&t, l, 6, &c2, &bad), ==, AG_FG_OK);
  CHECK(c2.scal[0] == -2.0f && c2.scal[1] == 4.0f);
  CHECK(ag__fg_key(&c2) == key);
  chain6(l, 0x1000, &two, clamp2_f); /* alpha 2: add with alpha */
  CHECK_INT(ag__fg_build(&t, l, 6, &c2, &bad), ==, AG_FG_OK);
  CHECK_STR(ag__fg_kind_name(c2.op[0].kind), "axpy");
  CHECK(c2.scal[0] == 2.0f);
  CHECK(ag__fg_key(&c2) != key);

  /* pow's own kernels: a bfloat16 cube rounds x * x to bfloat16 before the second product, as
   * c10::BFloat16's operator* does; a float32 square is one product. */
  static const uint8_t pow_cap[8] = {1, 2, 3, 4, 5, 6, 7, 8}; /* not compared */
  l[0] = L(0, &k_cube, 64, pow_cap, 0x90000, 0x80000, 0);
  l[1] = L(1, &k_silu, 64, empty, 0xa0000, 0x90000, 0);
  CHECK_INT(ag__fg_build(&t, l, 2, &c2, &bad), ==, AG_FG_OK);
  CHECK_STR(ag__fg_kind_name(c2.op[0].kind), "cube");
  ag__fg_emit(&c2, src, sizeof src, name);
  CHECK(strstr(src, "const float r0 = __fmul_rn(ag_bf2f(ag_f2bf(__fmul_rn(x0, x0))), x0); // cube"));
  l[0] = L(0, &k_sq, 64, pow_cap, 0x90000, 0x80000, 0);
  l[1] = L(1, &k_tobf, 64, empty, 0xa0000, 0x90000, 0);
  CHECK_INT(ag__fg_build(&t, l, 2, &c2, &bad), ==, AG_FG_OK);
  CHECK_STR(ag__fg_kind_name(c2.op[0].kind), "square");
  ag__fg_emit(&c2, src, sizeof src, name);
  CHECK(strstr(src, "const float r0 = __fmul_rn(x0, x0); // square"));

  /* A group of fills: float16 2.5 over 64 elements, float32 -0 over 1000, a float16 NaN with a
   * payload over 7: each value's bits stored as the functor holds them, a row of blocks each. */
  uint16_t h25 = 0x4100, hnan = 0x7e01;
  const float mz = -0.0f;
  l[0] = L(0, &k_fill, 64, &h25, 0x70000, 0, 0);
  l[1] = L(1, &k_fillf, 1000, &mz, 0x71000, 0, 0);
  l[2] = L(2, &k_fill, 7, &hnan, 0x72000, 0, 0);
  CHECK_INT(ag__fg_build(&t, l, 3, &c, &bad), ==, AG_FG_OK);
  CHECK(c.fills && c.nops == 3 && c.nptrs == 3 && c.n == 1000 && c.ng == 6 && c.nscal == 0);
  CHECK(c.g[0] == 64 && c.g[1] == 0x4100 && c.g[2] == 1000 && c.g[3] == 0x80000000u && c.g[4] == 7 && c.g[5] == 0x7e01);
  CHECK(c.ptr_written[0] && c.ptr_written[2] && !c.ptr_loaded[1] && c.ptr_dt[1] == AG_FG_F32);
  ag__fg_emit(&c, src, sizeof src, name);
  printf("%s", src);
  CHECK(strstr(src, "const long long m = a.g[2 * f];") && strstr(src, "unsigned g[6];"));
  CHECK(strstr(src, "case 1: ((unsigned int *)a.t[1])[i] = (unsigned int)a.g[3]; break;"));
  CHECK(strstr(src, "case 2: ((unsigned short *)a.t[2])[i] = (unsigned short)a.g[5]; break;"));
  CHECK(!strstr(src, "ag_f2h") && !strstr(src, "float"));
  uint64_t fkey = ag__fg_key(&c);
  l[1] = L(1, &k_fillf, 10, &two, 0x91000, 0, 0); /* another count and value: the same kernel */
  CHECK_INT(ag__fg_build(&t, l, 3, &c2, &bad), ==, AG_FG_OK);
  CHECK(ag__fg_key(&c2) == fkey && c2.n == 64 && c2.g[3] == 0x40000000u);
  l[1] = L(1, &k_fillf, 1000, &mz, 0x70040, 0, 0); /* inside the first */
  refused(&t, l, 3, AG_FG_OVERLAP, 1);
  l[1] = L(1, &k_exph, 64, empty, 0x71000, 0x98000, 0); /* not a fill */
  refused(&t, l, 3, AG_FG_NOT_ELEMENTWISE, 1);
  l[1] = L(1, &k_fillf, 0, &mz, 0x71000, 0, 0);
  refused(&t, l, 3, AG_FG_COUNT, 1);
  /* float16: e = exp(exp(x)), the first result rounded to float16 and read on rounded */
  l[0] = L(0, &k_exph, 64, empty, 0x90000, 0x98000, 0);
  l[1] = L(1, &k_exph, 64, empty, 0xa0000, 0x90000, 0);
  CHECK_INT(ag__fg_build(&t, l, 2, &c, &bad), ==, AG_FG_OK);
  ag__fg_emit(&c, src, sizeof src, name);
  CHECK(!strstr(src, "#include") && strstr(src, "cvt.rn.f16.f32") && !strstr(src, "ag_f2bf("));
  CHECK(strstr(src, "const unsigned short b0 = ((const unsigned short *)a.t[0])[i];"));
  CHECK(strstr(src, "const float x0 = ag_h2f(b0);"));
  CHECK(strstr(src, "= expf(x0);") && strstr(src, "= expf(v0);") && !strstr(src, "float s["));
  CHECK_INT(count(src, "= ag_f2h(r"), ==, 2);
  CHECK_INT(count(src, "= ag_h2f(h"), ==, 2);
  /* x = bfloat16 silu(x), in place, then x / 4 in place: x loaded once as it was (slot 0), the
   * results stored at the same address in a slot of their own (1), the second reading the
   * first's result and overwriting it */
  l[0] = L(0, &k_silu, 64, empty, 0x80000, 0x80000, 0);
  l[1] = L(1, &k_muls, 64, muls_f, 0x80000, 0x80000, 0);
  CHECK_INT(ag__fg_build(&t, l, 2, &c, &bad), ==, AG_FG_OK);
  CHECK(c.nptrs == 2 && c.ptr[0] == 0x80000 && c.ptr[1] == 0x80000);
  CHECK(c.ptr_loaded[0] && !c.ptr_written[0] && !c.ptr_loaded[1] && c.ptr_written[1]);
  CHECK(c.op[0].in[0].op == -1 && c.op[0].out == 1 && c.op[1].in[0].op == 0 && c.op[1].out == 1);
  /* y = silu(x), then y / 4 stored over x (a caching allocator handing the result the block of
   * an input read earlier) or into a fresh z: one kernel for both */
  l[0] = L(0, &k_silu, 64, empty, 0x90000, 0x80000, 0);
  l[1] = L(1, &k_muls, 64, muls_f, 0x80000, 0x90000, 0);
  CHECK_INT(ag__fg_build(&t, l, 2, &c, &bad), ==, AG_FG_OK);
  uint64_t over = ag__fg_key(&c);
  CHECK(c.nptrs == 3 && c.ptr[2] == 0x80000);
  l[1] = L(1, &k_muls, 64, muls_f, 0xa0000, 0x90000, 0);
  CHECK_INT(ag__fg_build(&t, l, 2, &c, &bad), ==, AG_FG_OK);
  CHECK(c.nptrs == 3 && c.ptr[2] == 0xa0000 && ag__fg_key(&c) == over);

  /* Strided: y = q * cos over [4 heads, 8 rows of 4] with q every other row of a wider buffer
   * and cos broadcast over the heads (the calculator's dimensions as PyTorch coalesces them:
   * rows of 4, 8 of them, 4 heads), then z = y + b, contiguous. y is written contiguously: no
   * walk of its own, and read on as it was written. */
  {
    static const uint32_t size[3] = {4, 8, 4};
    static const uint32_t st[3][3] = {{4, 16, 128}, {4, 32, 512}, {4, 16, 0}}; /* y, q, cos */
    static const uint64_t ptr[3] = {0x100000, 0x200000, 0x300000};
    l[0] = S(0, &k_smul, 3, 616, 3, size, st, ptr);
    l[1] = L(1, &k_add, 128, &one, 0x400000, 0x100000, 0x500000);
    CHECK_INT(ag__fg_build(&t, l, 2, &c, &bad), ==, AG_FG_OK);
    CHECK_INT(c.n, ==, 128);
    CHECK_INT(c.nacc, ==, 2);
    /* q: rows of 4 at a stride of 8 elements, heads at 128; cos: rows of 4 merged into 32, heads 0 */
    CHECK(c.acc[0].dims == 3 && c.acc[0].size[0] == 4 && c.acc[0].stride[1] == 8 && c.acc[0].stride[2] == 128);
    CHECK(c.acc[1].dims == 2 && c.acc[1].size[0] == 32 && c.acc[1].stride[0] == 1 && c.acc[1].stride[1] == 0);
    CHECK_INT(c.ng, ==, 10);
    CHECK(c.g[0] == 4 && c.g[1] == 8 && c.g[2] == 4 && c.g[3] == 1 && c.g[4] == 8 && c.g[5] == 128);
    CHECK(c.ptr_acc[0] == 1 && c.ptr_acc[1] == 2 && c.ptr_acc[2] == 0); /* q, cos, then y */
    CHECK(c.op[1].in[0].op == 0);
    ag__fg_emit(&c, src, sizeof src, name);
    printf("%s", src);
    CHECK(strstr(src, "unsigned g[10];") && strstr(src, "o0 += (unsigned long long)(r % a.g[0]) * a.g[3];"));
    CHECK(strstr(src, "o1 += (unsigned long long)r * a.g[9];"));
    CHECK(strstr(src, "((const float *)a.t[0])[o0]") && strstr(src, "((const float *)a.t[1])[o1]"));
    CHECK(strstr(src, "((float *)a.t[2])[i] = r0;"));
    uint64_t skey = ag__fg_key(&c);
    /* Other sizes and strides of the same dimensions: the same kernel. */
    static const uint32_t size2[3] = {8, 8, 2};
    static const uint32_t st2[3][3] = {{4, 32, 256}, {4, 64, 1024}, {4, 32, 0}};
    l[0] = S(0, &k_smul, 3, 616, 3, size2, st2, ptr);
    CHECK_INT(ag__fg_build(&t, l, 2, &c2, &bad), ==, AG_FG_OK);
    CHECK(ag__fg_key(&c2) == skey && c2.g[0] == 8);
    /* A contiguous walk through the calculator is no walk: the same as the contiguous kernel. */
    static const uint32_t st3[3][3] = {{4, 16, 128}, {4, 16, 128}, {4, 16, 128}};
    l[0] = S(0, &k_smul, 3, 616, 3, size, st3, ptr);
    CHECK_INT(ag__fg_build(&t, l, 2, &c2, &bad), ==, AG_FG_OK);
    CHECK(c2.nacc == 0 && c2.ng == 0);
    ag__fg_emit(&c2, src, sizeof src, name);
    CHECK(!strstr(src, "unsigned g[") && !strstr(src, "o0"));
    /* y written transposed (heads fastest), then read as element i: refused at the reader. */
    static const uint32_t st4[3][3] = {{16, 64, 4}, {4, 32, 512}, {4, 16, 0}};
    l[0] = S(0, &k_smul, 3, 616, 3, size, st4, ptr);
    refused(&t, l, 2, AG_FG_STRIDES, 1);
    /* … and read back by a strided abs through the walk it was written with: fused. */
    static const uint32_t sab[2][3] = {{4, 16, 128}, {16, 64, 4}};
    static const uint64_t pab[2] = {0x600000, 0x100000};
    l[1] = S(1, &k_sabs, 2, 512, 3, size, sab, pab);
    CHECK_INT(ag__fg_build(&t, l, 2, &c2, &bad), ==, AG_FG_OK);
    CHECK(c2.op[1].in[0].op == 0 && c2.nacc == 3);
    /* y written in the plain order, then read by the abs through the transposed walk (a dense
     * one): the product is computed in the abs's order, y stored through that walk, q and cos
     * walked from it. */
    l[0] = S(0, &k_smul, 3, 616, 3, size, st, ptr);
    l[1] = S(1, &k_sabs, 2, 512, 3, size, sab, pab);
    CHECK_INT(ag__fg_build(&t, l, 2, &c2, &bad), ==, AG_FG_OK);
    CHECK(c2.nacc == 5 && c2.acc[2].base == 0 && c2.acc[3].base == 3 && c2.acc[4].base == 3);
    CHECK(c2.ptr_acc[2] == 3 && c2.ptr_acc[0] == 4 && c2.ptr_acc[1] == 5 && c2.ptr_acc[3] == 0);
    CHECK(c2.op[1].in[0].op == 0);
    ag__fg_emit(&c2, src, sizeof src, name);
    CHECK(strstr(src, "unsigned long long o3 = 0;\n    {\n      unsigned r = (unsigned)o2;"));
    CHECK(strstr(src, "((const float *)a.t[0])[o3]") && strstr(src, "((float *)a.t[2])[o2] = r0;"));
    CHECK(strstr(src, "((float *)a.t[3])[i] = r1;"));
    /* … not when the product reads a result of the chain (its order is that one's too) */
    static const uint64_t pq[3] = {0x100000, 0x900000, 0x300000};
    static const uint32_t stq[3][3] = {{4, 16, 128}, {4, 16, 128}, {4, 16, 0}};
    l[0] = L(0, &k_sq, 128, pow_cap, 0x900000, 0x800000, 0);
    l[1] = S(1, &k_smul, 3, 616, 3, size, stq, pq);
    l[2] = S(2, &k_sabs, 2, 512, 3, size, sab, pab);
    CHECK_INT(ag__fg_build(&t, l, 2, &c2, &bad), ==, AG_FG_OK);
    refused(&t, l, 3, AG_FG_STRIDES, 2);
    /* … nor through a walk that is not dense (q's rows of 4 at a stride of 8) */
    l[0] = L(0, &k_sq, 128, pow_cap, 0x200000, 0x800000, 0);
    l[1] = S(1, &k_smul, 3, 616, 3, size, st, ptr);
    refused(&t, l, 2, AG_FG_STRIDES, 1);
    /* A write through a walk of stride 0 (elements written twice) is refused. */
    static const uint32_t st5[3][3] = {{4, 16, 0}, {4, 32, 512}, {4, 16, 0}};
    l[0] = S(0, &k_smul, 3, 616, 3, size, st5, ptr);
    l[1] = L(1, &k_sq, 128, pow_cap, 0x400000, 0x500000, 0);
    l[2] = L(2, &k_add, 128, &one, 0x700000, 0x400000, 0x100000);
    refused(&t, l, 3, AG_FG_STRIDES, 2);
    refused(&t, l, 1, AG_FG_OVERLAP, 0);
    /* q read through a walk, then written over by a later launch (its other elements read by
     * other threads) */
    l[0] = S(0, &k_smul, 3, 616, 3, size, st, ptr);
    l[1] = L(1, &k_sq, 128, pow_cap, 0x200000, 0x100000, 0);
    refused(&t, l, 2, AG_FG_OVERLAP, 1);
    /* sizes that do not multiply to N */
    l[0] = S(0, &k_smul, 3, 616, 3, size, st, ptr);
    memcpy(sargs[0], &(int32_t){127}, 4);
    refused(&t, l, 1, AG_FG_LAYOUT, 0);
    /* the strided kernel named at another place than the table's */
    l[0] = S(0, &k_smul, 3, 616, 3, size, st, ptr);
    l[0].sdata = 624;
    refused(&t, l, 1, AG_FG_LAYOUT, 0);
  }

  /* Refusals, each with the launch at fault. */
  l[0] = L(0, &k_add, 1000, &one, 0x10000, 0xa0000, 0xb0000);
  l[1] = L(1, &k_other, 1000, &one, 0x20000, 0x10000, 0xb0000);
  refused(&t, l, 2, AG_FG_UNKNOWN_KERNEL, 1);
  l[1] = L(1, &k_n2n, 1000, empty, 0x20000, 0x10000, 0); /* an operation the generator does not write */
  refused(&t, l, 2, AG_FG_UNKNOWN_OP, 1);
  l[1] = L(1, &k_pow, 1000, pow_f, 0x20000, 0x10000, 0); /* a double exponent */
  refused(&t, l, 2, AG_FG_SCALAR, 1);
  l[1] = L(1, &k_clamp, 1000, clamp_max_f, 0x20000, 0x10000, 0); /* clamp_max: not calibrated */
  refused(&t, l, 2, AG_FG_FUNCTOR, 1);
  l[1] = L(1, &k_clamp, 999, clamp_f, 0x20000, 0x10000, 0);
  refused(&t, l, 2, AG_FG_COUNT, 1);
  l[1] = L(1, &k_silu, 1000, empty, 0x20000, 0x10000, 0); /* reads float32 as bfloat16 */
  refused(&t, l, 2, AG_FG_DTYPE, 1);
  l[1] = L(1, &k_clamp, 1000, clamp_f, 0x20000, 0x10004, 0); /* one element into s */
  refused(&t, l, 2, AG_FG_OVERLAP, 1);
  l[1] = L(1, &k_cast, 1000, empty, 0x20000, 0x10000, 0);
  refused(&t, l, 2, AG_FG_CAST_LOADER, 1);
  l[1] = L(1, &k_wide, 1000, one_wide, 0x20000, 0x10000, 0xb0000);
  refused(&t, l, 2, AG_FG_LAYOUT, 1);
  /* Launch shapes other than the table's: the framework might not compute exactly [0, N). */
  l[1] = L(1, &k_clamp, 1000, clamp_f, 0x20000, 0x10000, 0);
  refused(&t, l, 2, AG_FG_OK, -1);
  l[1].grid[0] = 1; /* 1000 elements in one block of 512 */
  refused(&t, l, 2, AG_FG_SHAPE, 1);
  l[1].grid[0] = 2, l[1].grid[1] = 2;
  refused(&t, l, 2, AG_FG_SHAPE, 1);
  l[1].grid[1] = 1, l[1].block[0] = 256;
  refused(&t, l, 2, AG_FG_SHAPE, 1);
  l[1].block[0] = 128, l[1].block[2] = 2;
  refused(&t, l, 2, AG_FG_SHAPE, 1);
  l[1] = L(1, &k_odd, 1000, &one, 0x20000, 0x10000, 0xb0000); /* a shape the table does not know */
  refused(&t, l, 2, AG_FG_SHAPE, 1);
  l[1] = L(1, &k_fillf, 1000, &one, 0x20000, 0, 0), l[1].grid[0] = 3; /* a fill's too */
  refused(&t, l + 1, 1, AG_FG_SHAPE, 0);
  l[0] = (ag_chain_launch_t){.k = &k_add};
  refused(&t, l, 2, AG_FG_NOT_ELEMENTWISE, 0);
  for (int i = 0; i < AG_FG_MAX_OPS + 1; i++) l[i] = L(i, &k_clamp, 64, clamp_f, 0x20000, 0x20000, 0);
  refused(&t, l, AG_FG_MAX_OPS + 1, AG_FG_TOO_BIG, -1);
  refused(&t, l, AG_FG_MAX_OPS, AG_FG_OK, -1);
  refused(&t, l, 0, AG_FG_COUNT, -1);
  ag__fg_table_free(&t);
  CHECK(!t.k && !t.n);
  printf("ag-fusegen: ok\n");
  return 0;
}
