/* fusegen.c — a generated kernel for a chain of elementwise kernels (see fusegen.h). */
#include "fusegen.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag.h"
#include "json.h"

/* ---- the operations computed here, by the calibration catalogue's names ----
 *
 * Each operation's formula is PyTorch's functor as the wheel's kernels compute it (opmath float
 * for float16 and bfloat16), with its fused multiply-adds where nvcc contracts them. The bytes
 * [sig_lo, sig_hi) of its functor, less the scalars' places, identify it among the operations
 * one kernel serves (alpha 1 for add, 1 or -1 for a tensor plus or minus a scalar, the clamp
 * lambda's limits selector); the rest of a functor is padding or captures that vary from run to
 * run and is not compared. */
typedef struct {
  const char *op;
  uint8_t kind, nin;
  const char *scal[2];
  uint8_t sig_lo, sig_hi;
  int8_t out; /* the result's type for a cast, else -1 (the operation's own) */
} cat_t;

static const cat_t CAT[] = {
    {"add", AG_FG_ADD, 2, {NULL, NULL}, 0, 4, -1},
    {"add_alpha", AG_FG_AXPY, 2, {"alpha", NULL}, 0, 4, -1},
    {"sub_alpha", AG_FG_AXPY, 2, {"alpha", NULL}, 0, 4, -1},
    {"mul", AG_FG_MUL, 2, {NULL, NULL}, 0, 0, -1},
    {"square", AG_FG_MUL, 2, {NULL, NULL}, 0, 0, -1},
    {"div", AG_FG_DIV, 2, {NULL, NULL}, 0, 0, -1},
    {"add_scalar", AG_FG_ADD_S, 1, {"other", NULL}, 0, 8, -1},
    {"sub_scalar", AG_FG_SUB_S, 1, {"other", NULL}, 0, 8, -1},
    {"mul_scalar", AG_FG_MUL_S, 1, {"other", NULL}, 4, 8, -1},
    {"div_scalar", AG_FG_MUL_S, 1, {"other", NULL}, 4, 8, -1},
    {"neg", AG_FG_NEG, 1, {NULL, NULL}, 0, 0, -1},
    {"abs", AG_FG_ABS, 1, {NULL, NULL}, 0, 0, -1},
    {"exp", AG_FG_EXP, 1, {NULL, NULL}, 0, 0, -1},
    {"log", AG_FG_LOG, 1, {NULL, NULL}, 0, 0, -1},
    {"sqrt", AG_FG_SQRT, 1, {NULL, NULL}, 0, 0, -1},
    {"rsqrt", AG_FG_RSQRT, 1, {NULL, NULL}, 0, 0, -1},
    {"reciprocal", AG_FG_RECIP, 1, {NULL, NULL}, 0, 0, -1},
    {"sigmoid", AG_FG_SIGMOID, 1, {NULL, NULL}, 0, 0, -1},
    {"tanh", AG_FG_TANH, 1, {NULL, NULL}, 0, 0, -1},
    {"silu", AG_FG_SILU, 1, {NULL, NULL}, 0, 0, -1},
    {"gelu", AG_FG_GELU, 1, {NULL, NULL}, 0, 0, -1},
    {"relu", AG_FG_RELU, 1, {NULL, NULL}, 0, 12, -1},
    {"clamp", AG_FG_CLAMP, 1, {"min", "max"}, 0, 12, -1},
    {"clamp_min", AG_FG_CLAMP_MIN, 1, {"min", NULL}, 0, 12, -1},
    {"pow_scalar", AG_FG_POW_S, 1, {"exponent", NULL}, 0, 0, -1},
    {"pow_2", AG_FG_SQUARE, 1, {NULL, NULL}, 0, 0, -1},
    {"pow_3", AG_FG_CUBE, 1, {NULL, NULL}, 0, 0, -1},
    {"to_float32", AG_FG_CAST, 1, {NULL, NULL}, 0, 0, AG_FG_F32},
    {"to_float16", AG_FG_CAST, 1, {NULL, NULL}, 0, 0, AG_FG_F16},
    {"to_bfloat16", AG_FG_CAST, 1, {NULL, NULL}, 0, 0, AG_FG_BF16},
    {"threshold", AG_FG_THRESHOLD, 2, {"threshold", "value"}, 0, 0, -1},
    {"masked_scale", AG_FG_MASKED_SCALE, 2, {"scale", NULL}, 0, 0, -1},
    {"fill", AG_FG_FILL, 0, {"value", NULL}, 0, 0, -1},
    /* the lambdas' captures, all compared: {0, 1/6, 3, 6}, {0, 3, -3, 1/6}, {0, 3, -3, 0.5} */
    {"hardsigmoid", AG_FG_HARDSIGMOID, 1, {NULL, NULL}, 0, 16, -1},
    {"hardswish", AG_FG_HARDSWISH, 1, {NULL, NULL}, 0, 16, -1},
    {"hardsigmoid_backward", AG_FG_HARDSIGMOID_BW, 2, {NULL, NULL}, 0, 16, -1},
    {"hardswish_backward", AG_FG_HARDSWISH_BW, 2, {NULL, NULL}, 0, 16, -1},
    {"leaky_relu", AG_FG_LEAKY_RELU, 1, {"negative_slope", NULL}, 0, 0, -1},
    {"leaky_relu_backward", AG_FG_LEAKY_RELU_BW, 2, {"negative_slope", NULL}, 0, 0, -1},
    {"sigmoid_backward", AG_FG_SIGMOID_BW, 2, {NULL, NULL}, 0, 0, -1},
    {"tanh_backward", AG_FG_TANH_BW, 2, {NULL, NULL}, 0, 0, -1},
    {"gelu_tanh", AG_FG_GELU_TANH, 1, {NULL, NULL}, 0, 0, -1},
};
#define NCAT ((int)(sizeof CAT / sizeof CAT[0]))

static const char *const KIND[AG_FG_NKINDS] = {
    "add", "axpy", "mul", "div", "add_scalar", "sub_scalar", "mul_scalar", "neg", "abs", "exp",
    "log", "sqrt", "rsqrt", "reciprocal", "sigmoid", "tanh", "silu", "gelu", "relu", "clamp",
    "clamp_min", "pow_scalar", "cast", "threshold", "masked_scale", "square", "cube", "fill",
    "hardsigmoid", "hardswish", "hardsigmoid_bw", "hardswish_bw", "leaky_relu", "leaky_relu_bw",
    "sigmoid_bw", "tanh_bw", "gelu_tanh"};

static const char *const REASON[AG_FG_NREASONS] = {
    "ok", "not-elementwise", "unknown-kernel", "unknown-op", "layout", "cast-loader", "functor",
    "scalar", "count", "dtype", "overlap", "too-big", "strides", "shape"};

const char *ag__fg_kind_name(int kind) { return kind >= 0 && kind < AG_FG_NKINDS ? KIND[kind] : "?"; }
const char *ag__fg_reason_name(int r) { return r >= 0 && r < AG_FG_NREASONS ? REASON[r] : "?"; }

/* ---- loading the table ---- */

/* A place's encoding: AG_FG_F32/F16/BF16, or -1 for one not computed here (double: the
 * kernel would then compute in double). */
static int encoding(const char *s, const ag_jtok_t *t) {
  if (ag__json_is(s, t, "float")) return AG_FG_F32;
  if (ag__json_is(s, t, "half")) return AG_FG_F16;
  if (ag__json_is(s, t, "bfloat16")) return AG_FG_BF16;
  return -1;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One operation of a kernel record: 0, or -1 when the generator does not compute it (then left
 * out). A scalar the table could not place, or placed in a form not known here, is kept with
 * nplaces 0xff: the operation is known, its launches are refused with AG_FG_SCALAR. */
static int load_op(const char *s, const ag_jtok_t *tok, int key, int val, ag_fg_calop_t *o, unsigned fsize) {
  int c = 0;
  while (c < NCAT && !ag__json_is(s, &tok[key], CAT[c].op)) c++;
  if (c == NCAT) return -1;
  memset(o, 0, sizeof *o);
  o->cat = (uint8_t)c;
  int fb = ag__json_get(s, tok, val, "functor_bytes");
  if (fb < 0 || tok[fb].type != AG_JSON_STR) return -1;
  for (unsigned i = 0; i < AG_FG_SIG_BYTES && i < fsize && tok[fb].start + 2 * i + 1 < tok[fb].end; i++) {
    int hi = hexval(s[tok[fb].start + 2 * i]), lo = hexval(s[tok[fb].start + 2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    o->sig[i] = (uint8_t)(hi << 4 | lo);
  }
  int scal = ag__json_get(s, tok, val, "scalars");
  for (int j = 0; j < 2 && CAT[c].scal[j]; j++) {
    int sv = ag__json_get(s, tok, scal, CAT[c].scal[j]);
    int at = ag__json_get(s, tok, sv, "at");
    o->nplaces[j] = 0xff;
    if (at < 0 || tok[at].type != AG_JSON_ARR || tok[at].size == 0 || tok[at].size > 2) continue;
    int p = at + 1, ok = 1;
    for (uint32_t i = 0; i < tok[at].size; i++, p = (int)tok[p].next) {
      int off = ag__json_get(s, tok, p, "offset"), enc = ag__json_get(s, tok, p, "encoding");
      int form = ag__json_get(s, tok, p, "form");
      int e = enc < 0 ? -1 : encoding(s, &tok[enc]);
      double d = off < 0 ? -1 : ag__json_num(s, &tok[off]);
      /* The kernel computes with the value it holds, in whichever of these forms it holds it. */
      ok = ok && e >= 0 && form >= 0 &&
           (ag__json_is(s, &tok[form], "as given") || ag__json_is(s, &tok[form], "negated") ||
            ag__json_is(s, &tok[form], "reciprocal")) &&
           d >= 0 && d + (e == AG_FG_F32 ? 4 : 2) <= fsize;
      if (ok) o->place[j][i].off = (uint16_t)d, o->place[j][i].enc = (uint8_t)e;
    }
    if (ok) o->nplaces[j] = (uint8_t)tok[at].size;
  }
  return 0;
}

static int dtype_of(const char *s, const ag_jtok_t *t) {
  if (ag__json_is(s, t, "float32")) return AG_FG_F32;
  if (ag__json_is(s, t, "float16")) return AG_FG_F16;
  if (ag__json_is(s, t, "bfloat16")) return AG_FG_BF16;
  return -1;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const ag_fg_calkernel_t *)a)->name, ((const ag_fg_calkernel_t *)b)->name);
}

static int name_is(const void *name, const void *k) { return strcmp(name, ((const ag_fg_calkernel_t *)k)->name); }

int ag__fg_table_load(ag_fg_table_t *t, const char *json, size_t len) {
  memset(t, 0, sizeof *t);
  int ntok = ag__json_parse(json, len, NULL, 0), rc = -AG_EINVAL;
  if (ntok <= 0) return -AG_EINVAL;
  ag_jtok_t *tok = malloc((size_t)ntok * sizeof *tok); /* freed before returning */
  if (!tok) return -AG_ENOMEM;
  ag__json_parse(json, len, tok, ntok);
  int schema = ag__json_get(json, tok, 0, "schema"), ks = ag__json_get(json, tok, 0, "kernels");
  if (schema < 0 || !ag__json_is(json, &tok[schema], "autograph-elementwise-calibration") || ks < 0 ||
      tok[ks].type != AG_JSON_OBJ)
    goto out;
  size_t names = 0;
  for (int k = ks + 1, i = 0; i < (int)tok[ks].size; i++, k = (int)tok[k + 1].next) names += tok[k].end - tok[k].start + 1;
  rc = -AG_ENOMEM;
  t->k = calloc(tok[ks].size ? tok[ks].size : 1, sizeof *t->k);
  t->names = malloc(names ? names : 1);
  if (!t->k || !t->names) goto out;
  char *np = t->names;
  for (int k = ks + 1, i = 0; i < (int)tok[ks].size; i++, k = (int)tok[k + 1].next) {
    int e = k + 1, dt = ag__json_get(json, tok, e, "dtype"), ops = ag__json_get(json, tok, e, "ops");
    int fo = ag__json_get(json, tok, e, "functor_offset"), fs = ag__json_get(json, tok, e, "functor_size");
    int tn = ag__json_get(json, tok, e, "tensors"), fw = ag__json_get(json, tok, e, "framework");
    int co = ag__json_get(json, tok, e, "calc_offset"), dof = ag__json_get(json, tok, e, "data_offset");
    if (dt < 0 || ops < 0 || fo < 0 || fs < 0 || tn < 0 || tok[ops].type != AG_JSON_OBJ || dtype_of(json, &tok[dt]) < 0)
      continue; /* another element type (integers, double): nothing computed here */
    int strided = fw >= 0 && ag__json_is(json, &tok[fw], "elementwise_kernel");
    double nt = ag__json_num(json, &tok[tn]), calc = co >= 0 ? ag__json_num(json, &tok[co]) : -1;
    double data = dof >= 0 ? ag__json_num(json, &tok[dof]) : -1;
    /* The strided framework's lambda: the calculator (int dims; AG_FG_OC_DIMS sizes of 12 bytes;
     * AG_FG_OC_DIMS x tensors strides of 4), the data array at the next multiple of 8, then the
     * functor. Another layout is another PyTorch's: its kernels are not read. */
    if (strided && (calc < 0 || data < 0 || nt < 2 || nt > 8 ||
                    data - calc != (double)((4 + 12 * AG_FG_OC_DIMS + 4 * AG_FG_OC_DIMS * (int)nt + 7) & ~7) ||
                    ag__json_num(json, &tok[fo]) < data + 8 * nt || data > 0xffff))
      continue;
    ag_fg_calkernel_t *ck = &t->k[t->n++];
    size_t nl = tok[k].end - tok[k].start;
    memcpy(np, json + tok[k].start, nl), np[nl] = 0;
    ck->name = np, np += nl + 1;
    ck->functor_off = (uint16_t)ag__json_num(json, &tok[fo]);
    ck->functor_size = (uint16_t)ag__json_num(json, &tok[fs]);
    ck->tensors = (uint8_t)ag__json_num(json, &tok[tn]);
    ck->dtype = (uint8_t)dtype_of(json, &tok[dt]);
    ck->cast_loader = strstr(ck->name, "LoadWithCast") != NULL;
    ck->strided = (uint8_t)strided;
    if (strided) ck->calc_off = (uint16_t)calc, ck->data_off = (uint16_t)data;
    /* The launch shape, where calibration saw one: a power of two of elements per block. */
    int th = ag__json_get(json, tok, e, "threads"), bw = ag__json_get(json, tok, e, "block_work");
    double thv = th >= 0 ? ag__json_num(json, &tok[th]) : 0, bwv = bw >= 0 ? ag__json_num(json, &tok[bw]) : 0;
    if (thv >= 1 && thv <= 1024 && thv == (double)(int)thv && bwv >= 1 && bwv <= (double)(1u << 30) &&
        bwv == (double)(uint32_t)bwv && !((uint32_t)bwv & ((uint32_t)bwv - 1)))
      ck->threads = (uint16_t)thv, ck->block_work = (uint32_t)bwv;
    for (int o = ops + 1, j = 0; j < (int)tok[ops].size && ck->nops < AG_FG_MAX_CALOPS; j++, o = (int)tok[o + 1].next)
      if (!load_op(json, tok, o, o + 1, &ck->ops[ck->nops], ck->functor_size)) ck->nops++;
  }
  qsort(t->k, (size_t)t->n, sizeof *t->k, by_name);
  rc = 0;
out:
  free(tok);
  if (rc) ag__fg_table_free(t);
  return rc;
}

void ag__fg_table_free(ag_fg_table_t *t) {
  free(t->k);
  free(t->names);
  memset(t, 0, sizeof *t);
}

const ag_fg_calkernel_t *ag__fg_table_find(const ag_fg_table_t *t, const char *name) {
  if (!name || !t->n) return NULL;
  return bsearch(name, t->k, (size_t)t->n, sizeof *t->k, name_is);
}

/* ---- describing a chain ---- */

/* A float16 value, exactly, as float. */
static float half_to_float(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0x1f ? (m ? NAN : INFINITY) : e ? ldexpf((float)(m | 0x400), e - 25) : ldexpf((float)m, -24);
  return h & 0x8000 ? -v : v;
}

static float read_scalar(const uint8_t *f, ag_fg_place_t p) {
  if (p.enc == AG_FG_F32) {
    float v;
    memcpy(&v, f + p.off, 4);
    return v;
  }
  uint16_t h;
  memcpy(&h, f + p.off, 2);
  if (p.enc == AG_FG_F16) return half_to_float(h);
  uint32_t u = (uint32_t)h << 16;
  float v;
  memcpy(&v, &u, 4);
  return v;
}

/* Whether functor bytes f are operation o's: its identifying bytes, less its scalars' places. */
static int matches(const ag_fg_calop_t *o, const uint8_t *f, unsigned fsize) {
  const cat_t *c = &CAT[o->cat];
  for (unsigned b = c->sig_lo; b < c->sig_hi && b < fsize; b++) {
    int scalar = 0;
    for (int j = 0; j < 2; j++)
      for (int i = 0; o->nplaces[j] != 0xff && i < o->nplaces[j]; i++)
        scalar |= b >= o->place[j][i].off && b < o->place[j][i].off + (o->place[j][i].enc == AG_FG_F32 ? 4u : 2u);
    if (!scalar && f[b] != o->sig[b]) return 0;
  }
  return 1;
}

static int nscalars(const ag_fg_calop_t *o) { return !!CAT[o->cat].scal[0] + !!CAT[o->cat].scal[1]; }

/* Whether walk w visits each of n elements once, densely: its strides, in increasing order, are
 * 1 and each the product of the sizes before it (a permutation of a contiguous tensor's). */
static int dense(const ag_fg_access_t *w, int32_t n) {
  unsigned used = 0;
  uint64_t next = 1;
  for (int k = 0; k < w->dims; k++) {
    int f = -1;
    for (int d = 0; d < w->dims && f < 0; d++)
      if (!(used & 1u << d) && w->stride[d] == next) f = d;
    if (f < 0) return 0;
    used |= 1u << f;
    next *= w->size[f];
  }
  return next == (uint64_t)n;
}

/* Whether two walks are the same (their unused dimensions are zero). */
static int same_walk(const ag_fg_access_t *a, const ag_fg_access_t *b) {
  return a->dims == b->dims && a->base == b->base && !memcmp(a->size, b->size, sizeof a->size) &&
         !memcmp(a->stride, b->stride, sizeof a->stride);
}

/* The access (ptr_acc's encoding) that walks `ax` from the element walk `base` gives; or -reason. */
static int compose(ag_fg_chain_t *c, int ax, int base) {
  if (!ax) return base; /* the identity walked from base: base itself */
  ag_fg_access_t w = c->acc[ax - 1];
  if (w.base) return -AG_FG_STRIDES;
  w.base = (uint8_t)base;
  for (int k = 0; k < c->nacc; k++)
    if (same_walk(&c->acc[k], &w)) return k + 1;
  if (c->nacc == AG_FG_MAX_ACC) return -AG_FG_TOO_BIG;
  c->acc[c->nacc++] = w;
  return c->nacc;
}

/* Slot s, which one earlier operation wrote in the plain order, is read through the dense walk
 * `acc`: that operation is computed in this walk's order instead (see fusegen.h), when nothing
 * else depends on its order. Returns s, or -reason. */
static int remap(ag_fg_chain_t *c, int s, int acc, const int8_t *writer) {
  int p = writer[s] < 0 ? -1 : (int)(uint8_t)writer[s]; /* the operation that wrote s */
  if (p < 0 || c->ptr_acc[s] || !acc || c->acc[acc - 1].base || !dense(&c->acc[acc - 1], c->n))
    return -AG_FG_STRIDES;
  ag_fg_op_t *op = &c->op[p];
  for (int q = 0; q < c->nops; q++) {
    if (q != p && c->op[q].out == s) return -AG_FG_STRIDES; /* another writer */
    for (int j = 0; j < c->op[q].nin; j++)
      if (c->op[q].in[j].op >= 0 && c->op[q].in[j].ptr == s) return -AG_FG_STRIDES; /* read already */
  }
  for (int j = 0; j < op->nin; j++)
    if (op->in[j].op >= 0) return -AG_FG_STRIDES; /* its order is its producers' too */
  /* Its inputs, walked from its new element: a slot of their own unless only it reads them. */
  const int first = op->in[0].ptr;
  for (int j = 0; j < op->nin; j++) {
    int x = op->in[j].ptr, shared = 0;
    if (j == 1 && x == first) { /* x * x: moved with the first */
      op->in[1].ptr = op->in[0].ptr;
      continue;
    }
    for (int q = 0; q < c->nops; q++)
      for (int k = 0; k < c->op[q].nin; k++) shared |= q != p && c->op[q].in[k].ptr == x;
    int w = compose(c, c->ptr_acc[x], acc);
    if (w < 0) return w;
    if (shared) {
      if (c->nptrs == AG_FG_MAX_PTRS) return -AG_FG_TOO_BIG;
      c->ptr[c->nptrs] = c->ptr[x], c->ptr_dt[c->nptrs] = c->ptr_dt[x], c->ptr_loaded[c->nptrs] = 1;
      x = c->nptrs++;
      op->in[j].ptr = (uint8_t)x;
    }
    c->ptr_acc[x] = (uint8_t)w;
  }
  c->ptr_acc[s] = (uint8_t)acc;
  return s;
}

/* The tensor (slot of c->ptr) that pointer p, walked by access acc (ptr_acc's encoding), stands
 * for: an operand reads the latest slot of p, and a result goes to the latest slot of p when the
 * chain wrote that slot before (an operation that overwrites what another wrote); either must
 * then walk it as it was written (-AG_FG_STRIDES otherwise). A result over a tensor the chain
 * has only read so far gets a slot of its own at the same address: every read of that slot is of
 * its value before the chain, loaded at the top of the kernel before any store, so the kernel is
 * the same whether the allocator handed the result a fresh block or the block of an input read
 * earlier (as a caching allocator does from one step to the next), and one compiled kernel
 * serves both. A tensor only read, through another walk than before, is another slot (loaded
 * twice). Returns -AG_FG_TOO_BIG when the slots are full. */
static int ptr_index(ag_fg_chain_t *c, uint64_t p, int acc, int result) {
  for (int i = c->nptrs - 1; i >= 0; i--)
    if (c->ptr[i] == p) {
      if (c->ptr_written[i]) return c->ptr_acc[i] == acc ? i : -AG_FG_STRIDES;
      if (result) break;
      if (c->ptr_acc[i] == acc) return i;
    }
  if (c->nptrs == AG_FG_MAX_PTRS) return -AG_FG_TOO_BIG;
  c->ptr[c->nptrs] = p;
  c->ptr_dt[c->nptrs] = 0xff;
  c->ptr_acc[c->nptrs] = (uint8_t)acc;
  return c->nptrs++;
}

/* The access of tensor `arg` (of nt) of a strided launch over n elements, whose calculator is at
 * oc, in elements of esize bytes (ptr_acc's encoding, a walk added to c->acc when new); or
 * -reason. */
static int walk(ag_fg_chain_t *c, const uint8_t *oc, int nt, int arg, int esize, int32_t n) {
  ag_fg_access_t w;
  int32_t dims;
  uint64_t count = 1;
  memset(&w, 0, sizeof w);
  memcpy(&dims, oc, 4);
  if (dims < 0 || dims > AG_FG_OC_DIMS) return -AG_FG_LAYOUT;
  for (int d = 0; d < dims; d++) {
    uint32_t size, stride;
    memcpy(&size, oc + 4 + 12 * d, 4); /* IntDivider's divisor */
    memcpy(&stride, oc + 4 + 12 * AG_FG_OC_DIMS + 4 * (d * nt + arg), 4);
    if (!size || (count *= size) > (uint64_t)n || stride % (uint32_t)esize) return -AG_FG_LAYOUT;
    stride /= (uint32_t)esize;
    if (size == 1) continue;
    int last = w.dims - 1;
    if (w.dims && (uint64_t)stride == (uint64_t)w.stride[last] * w.size[last]) {
      w.size[last] *= size; /* within n: count bounds it */
      continue;
    }
    if (w.dims == AG_FG_MAX_DIMS) return -AG_FG_TOO_BIG;
    w.size[w.dims] = size, w.stride[w.dims++] = stride;
  }
  if (count != (uint64_t)n) return -AG_FG_LAYOUT;
  if (w.dims == 0 || (w.dims == 1 && w.stride[0] == 1)) return 0;
  for (int k = 0; k < c->nacc; k++)
    if (same_walk(&c->acc[k], &w)) return k + 1;
  if (c->nacc == AG_FG_MAX_ACC) return -AG_FG_TOO_BIG;
  c->acc[c->nacc++] = w;
  return c->nacc;
}

/* Gives tensor i its one type; 0, or -1 when it already has another. */
static int type_ptr(ag_fg_chain_t *c, int i, int dt) {
  if (c->ptr_dt[i] == 0xff) c->ptr_dt[i] = (uint8_t)dt;
  return c->ptr_dt[i] == dt ? 0 : -1;
}

/* Nonzero when l, over n elements, has the launch shape the table records for its kernel: its
 * framework then computes exactly elements [0, n), as the fused kernel does (every framework
 * gives block b the elements [b * block_work, (b + 1) * block_work) below n, reading only
 * blockIdx.x and threadIdx.x). A kernel whose shape the table does not know is refused. */
static int shape_ok(const ag_fg_calkernel_t *ck, const ag_chain_launch_t *l, int32_t n) {
  uint64_t blocks = ck->block_work ? ((uint64_t)n + ck->block_work - 1) / ck->block_work : 0;
  return blocks && l->grid[0] == blocks && l->grid[1] == 1 && l->grid[2] == 1 && l->block[0] == ck->threads &&
         l->block[1] == 1 && l->block[2] == 1;
}

/* One fill of a group: its tensor, element count and value bits. */
static int build_fill(const ag_fg_table_t *t, const ag_chain_launch_t *l, ag_fg_chain_t *c) {
  const ag_kinfo_t *k = l->k;
  if (!l->args || !ag__chain_single(k)) return AG_FG_NOT_ELEMENTWISE;
  const ag_fg_calkernel_t *ck = ag__fg_table_find(t, k->name);
  if (!ck) return AG_FG_UNKNOWN_KERNEL;
  const ag_fg_calop_t *o = NULL;
  for (int j = 0; j < ck->nops; j++)
    if (CAT[ck->ops[j].cat].kind == AG_FG_FILL) o = &ck->ops[j];
  if (!o) return AG_FG_UNKNOWN_OP;
  const ag_kparam_t *p = k->params;
  if (ck->strided || p[1].offset != ck->functor_off || p[1].size != ck->functor_size || ck->tensors != 1)
    return AG_FG_LAYOUT;
  /* The value as the tensor's own type holds it: its bits are what every element gets. */
  int enc = ck->dtype; /* AG_FG_F32, F16, BF16: the encodings of the same names */
  if (o->nplaces[0] != 1 || o->place[0][0].enc != enc) return AG_FG_SCALAR;
  int32_t n;
  uint64_t out;
  uint32_t bits = 0;
  memcpy(&n, l->args, 4);
  memcpy(&out, l->args + p[2].offset, 8);
  memcpy(&bits, l->args + ck->functor_off + o->place[0][0].off, (size_t)ag__fg_dt_size(enc));
  if (n <= 0) return AG_FG_COUNT;
  if (!out) return AG_FG_LAYOUT;
  if (!shape_ok(ck, l, n)) return AG_FG_SHAPE;
  if (c->nops == AG_FG_MAX_OPS || c->nptrs == AG_FG_MAX_PTRS) return AG_FG_TOO_BIG;
  ag_fg_op_t *op = &c->op[c->nops];
  memset(op, 0, sizeof *op);
  op->kind = AG_FG_FILL, op->in_dt = op->out_dt = ck->dtype, op->out = (uint8_t)c->nptrs;
  c->ptr[c->nptrs] = out, c->ptr_dt[c->nptrs] = ck->dtype, c->ptr_written[c->nptrs++] = 1;
  c->g[c->ng++] = (uint32_t)n, c->g[c->ng++] = bits;
  if (n > c->n) c->n = n;
  c->nops++;
  return AG_FG_OK;
}

static int build_one(const ag_fg_table_t *t, const ag_chain_launch_t *l, ag_fg_chain_t *c, int8_t *writer) {
  const ag_kinfo_t *k = l->k;
  if (!ag__chain_member(l)) return AG_FG_NOT_ELEMENTWISE;
  const ag_fg_calkernel_t *ck = ag__fg_table_find(t, k->name);
  if (!ck) return AG_FG_UNKNOWN_KERNEL;
  if (!ck->nops) return AG_FG_UNKNOWN_OP;
  if (ck->cast_loader) return AG_FG_CAST_LOADER;
  const ag_kparam_t *p = k->params;
  if (ck->strided != !!l->snt ||
      (ck->strided ? p[1].offset != ck->calc_off || l->sdata != ck->data_off || l->snt != ck->tensors ||
                         (uint32_t)ck->functor_off + ck->functor_size > k->param_bytes
                   : p[1].offset != ck->functor_off || p[1].size != ck->functor_size || p[2].size / 8 != ck->tensors))
    return AG_FG_LAYOUT;
  int32_t n;
  memcpy(&n, l->args, 4);
  if (n <= 0 || (c->nops && n != c->n)) return AG_FG_COUNT;
  if (!shape_ok(ck, l, n)) return AG_FG_SHAPE;
  c->n = n;
  const uint8_t *f = l->args + ck->functor_off;
  /* Of the operations whose bytes match, the one with the fewest scalars: a relu is also a
   * clamp_min at 0, an add with alpha 1 also an add with alpha (the same results). */
  const ag_fg_calop_t *o = NULL;
  for (int j = 0; j < ck->nops; j++)
    if (matches(&ck->ops[j], f, ck->functor_size) && (!o || nscalars(&ck->ops[j]) < nscalars(o))) o = &ck->ops[j];
  if (!o) return AG_FG_FUNCTOR;
  const cat_t *cat = &CAT[o->cat];
  if (ck->tensors != cat->nin + 1) return AG_FG_LAYOUT;
  if (c->nops == AG_FG_MAX_OPS) return AG_FG_TOO_BIG;
  ag_fg_op_t *op = &c->op[c->nops];
  memset(op, 0, sizeof *op);
  op->kind = cat->kind, op->nin = cat->nin;
  op->in_dt = ck->dtype, op->out_dt = (uint8_t)(cat->out >= 0 ? cat->out : ck->dtype);
  for (int j = 0; j < 2 && cat->scal[j]; j++) {
    if (o->nplaces[j] == 0xff) return AG_FG_SCALAR;
    /* Every place of a scalar holds the same value (clamp_min's two limits). */
    for (int i = 1; i < o->nplaces[j]; i++)
      if (o->place[j][i].enc != o->place[j][0].enc ||
          memcmp(f + o->place[j][i].off, f + o->place[j][0].off, o->place[j][0].enc == AG_FG_F32 ? 4 : 2))
        return AG_FG_SCALAR;
    if (c->nscal == AG_FG_MAX_SCAL) return AG_FG_TOO_BIG;
    c->scal[c->nscal] = read_scalar(f, o->place[j][0]);
    op->scal[op->nscal++] = (uint8_t)c->nscal++;
  }
  uint64_t data[3]; /* the output and at most two inputs (checked above) */
  memcpy(data, l->args + (ck->strided ? ck->data_off : p[2].offset), (size_t)ck->tensors * 8);
  if (!data[0]) return AG_FG_LAYOUT;
  for (int j = 0; j < op->nin; j++) {
    /* masked_scale's second input is its mask, whatever the operation's type */
    int dt = j == 1 && cat->kind == AG_FG_MASKED_SCALE ? AG_FG_U8 : op->in_dt;
    int acc = ck->strided ? walk(c, l->args + ck->calc_off, ck->tensors, j + 1, ag__fg_dt_size(dt), n) : 0;
    int i = acc < 0 ? acc : data[j + 1] ? ptr_index(c, data[j + 1], acc, 0) : -AG_FG_LAYOUT;
    if (i == -AG_FG_STRIDES) { /* an earlier result, read in another order */
      int k = c->nptrs - 1;
      while (c->ptr[k] != data[j + 1]) k--; /* the slot ptr_index found written */
      i = remap(c, k, acc, writer);
    }
    if (i < 0) return -i;
    if (type_ptr(c, i, dt)) return AG_FG_DTYPE;
    op->in[j].ptr = (uint8_t)i, op->in[j].op = writer[i];
    if (writer[i] < 0) c->ptr_loaded[i] = 1;
  }
  int acc = ck->strided ? walk(c, l->args + ck->calc_off, ck->tensors, 0, ag__fg_dt_size(op->out_dt), n) : 0;
  int i = acc < 0 ? acc : ptr_index(c, data[0], acc, 1);
  if (i < 0) return -i;
  if (type_ptr(c, i, op->out_dt)) return AG_FG_DTYPE;
  op->out = (uint8_t)i;
  c->ptr_written[i] = 1;
  writer[i] = (int8_t)c->nops++;
  return AG_FG_OK;
}

/* The first operation (launch) that uses slot s, which brings it into the chain. */
static int first_use(const ag_fg_chain_t *c, int s) {
  for (int q = 0; q < c->nops; q++)
    if (c->op[q].out == s || (c->op[q].nin > 0 && c->op[q].in[0].ptr == s) || (c->op[q].nin > 1 && c->op[q].in[1].ptr == s))
      return q;
  return -1;
}

int ag__fg_build(const ag_fg_table_t *t, const ag_chain_launch_t *l, int n, ag_fg_chain_t *c, int *bad) {
  int8_t writer[AG_FG_MAX_PTRS]; /* the last operation that wrote each tensor, or -1 */
  memset(c, 0, sizeof *c);
  memset(writer, -1, sizeof writer);
  *bad = -1;
  if (n > AG_FG_MAX_OPS) return AG_FG_TOO_BIG;
  c->fills = n > 0 && l[0].args && ag__chain_single(l[0].k);
  for (int i = 0; i < n; i++) {
    int r = c->fills ? build_fill(t, &l[i], c) : build_one(t, &l[i], c, writer);
    if (r) {
      *bad = i;
      return r;
    }
  }
  if (!n) return AG_FG_COUNT;
  /* The fused kernel reads and writes element i of every tensor in one thread: a tensor written
   * that shares memory with another tensor would see that one's elements in another order. Two
   * slots at one address (a tensor read, then a result stored over it: see ptr_index) are the
   * same elements when their types are as wide and their walks the same: each thread loads its
   * element before it stores it. Tensors only read may share memory (loads do not conflict); a
   * written walk must reach each element once (no dimension of stride 0). */
  uint64_t end[AG_FG_MAX_PTRS];
  for (int i = 0; i < c->nptrs; i++) {
    uint64_t last = (uint64_t)(c->fills ? (int32_t)c->g[2 * i] : c->n) - 1; /* the farthest element */
    if (c->ptr_acc[i]) {
      const ag_fg_access_t *w = &c->acc[c->ptr_acc[i] - 1];
      last = 0;
      for (int d = 0; d < w->dims; d++) {
        if (c->ptr_written[i] && !w->stride[d]) {
          *bad = first_use(c, i);
          return AG_FG_OVERLAP;
        }
        last += (uint64_t)(w->size[d] - 1) * w->stride[d];
      }
    }
    end[i] = c->ptr[i] + (last + 1) * (uint64_t)ag__fg_dt_size(c->ptr_dt[i]);
  }
  for (int i = 0; i < c->nptrs; i++)
    for (int j = i + 1; j < c->nptrs; j++) {
      uint64_t a = c->ptr[i], b = c->ptr[j];
      if (!c->ptr_written[i] && !c->ptr_written[j]) continue;
      if (a == b && end[i] == end[j] && c->ptr_acc[i] == c->ptr_acc[j] && c->ptr_written[i] != c->ptr_written[j])
        continue;
      if (a < end[j] && b < end[i]) {
        *bad = first_use(c, j); /* the chain before it may still be fused */
        return AG_FG_OVERLAP;
      }
    }
  if (c->fills) return AG_FG_OK;
  /* The walks' parameters: each one's sizes, then its strides. */
  for (int k = 0; k < c->nacc; k++) {
    memcpy(&c->g[c->ng], c->acc[k].size, 4u * c->acc[k].dims);
    memcpy(&c->g[c->ng + c->acc[k].dims], c->acc[k].stride, 4u * c->acc[k].dims);
    c->ng += 2 * c->acc[k].dims;
  }
  return AG_FG_OK;
}

/* ---- the source ---- */

typedef struct {
  char *buf;
  size_t size, len;
  uint64_t hash; /* FNV-1a of everything written */
} out_t;

/* Appends the n bytes s (the size counted, the hash taken, even past the buffer's end). */
static void emit_n(out_t *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (o->len + 1 < o->size) o->buf[o->len] = s[i];
    o->len++;
    o->hash = (o->hash ^ (uint8_t)s[i]) * 0x100000001b3ull;
  }
}

/* Appends a formatted piece of at most 255 bytes (one statement). */
static void emit(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(out_t *o, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) emit_n(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* An operand's float value: an earlier result (v<op>) or a tensor loaded before the chain. */
static const char *operand(const ag_fg_operand_t *a, char *buf) {
  snprintf(buf, 16, a->op >= 0 ? "v%d" : "x%d", a->op >= 0 ? a->op : a->ptr);
  return buf;
}

/* Element i of tensor slot `ptr`, as an index into its elements: i itself, or the offset of its
 * walk (o<k>, computed at the top of the loop). */
static const char *at(const ag_fg_chain_t *c, int ptr, char *buf) {
  if (!c->ptr_acc[ptr]) return "i";
  snprintf(buf, 16, "o%d", c->ptr_acc[ptr] - 1);
  return buf;
}

/* The stored bits of operand a (b<ptr>: a tensor as loaded; h<op>: an earlier result as stored)
 * when they are of the 16-bit type dt; else NULL. */
static const char *raw_operand(const ag_fg_chain_t *c, const ag_fg_operand_t *a, int dt, char *buf) {
  int adt = a->op >= 0 ? c->op[a->op].out_dt : c->ptr_dt[a->ptr];
  if (dt == AG_FG_F32 || adt != dt) return NULL;
  snprintf(buf, 16, a->op >= 0 ? "h%d" : "b%d", a->op >= 0 ? a->op : a->ptr);
  return buf;
}

/* The bits op i stores in its 16-bit type: r<i> narrowed, except where PyTorch's lambda returns
 * its element-typed argument itself rather than a float it computed (relu and the clamps return
 * a NaN v as it came, threshold returns `other` when x <= threshold fails): there the argument's
 * own bits, so that a NaN keeps its sign and payload as the original kernel keeps them, however
 * the device's narrowing treats NaNs. For every other value narrowing the widened argument gives
 * back its bits, so only NaNs are concerned. */
static void emit_narrowed(out_t *o, const ag_fg_chain_t *c, int i, const char *cvt) {
  const ag_fg_op_t *op = &c->op[i];
  char xb[16], rb[16], sb[16];
  const char *raw = NULL;
  switch (op->kind) {
  case AG_FG_RELU:
  case AG_FG_CLAMP:
  case AG_FG_CLAMP_MIN:
    if ((raw = raw_operand(c, &op->in[0], op->out_dt, rb)) != NULL)
      emit(o, "%s != %s ? %s : ag_f2%s(r%d)", operand(&op->in[0], xb), operand(&op->in[0], xb), raw, cvt, i);
    break;
  case AG_FG_THRESHOLD:
    snprintf(sb, sizeof sb, "a.s[%d]", op->scal[0]);
    if ((raw = raw_operand(c, &op->in[1], op->out_dt, rb)) != NULL)
      emit(o, "%s <= %s ? ag_f2%s(r%d) : %s", operand(&op->in[0], xb), sb, cvt, i, raw);
    break;
  default: break;
  }
  if (!raw) emit(o, "ag_f2%s(r%d)", cvt, i);
}

/* e, a float expression of at most size - 1 bytes with its result, rounded to the type dt as
 * c10::Half's and c10::BFloat16's operators round each result (unchanged for float32). */
static void rounded(int dt, char *e, size_t size) {
  char t[256];
  if (dt == AG_FG_F32) return;
  snprintf(t, sizeof t, "%s", e);
  snprintf(e, size, dt == AG_FG_F16 ? "ag_h2f(ag_f2h(%s))" : "ag_bf2f(ag_f2bf(%s))", t);
}

static void emit_op(out_t *o, const ag_fg_chain_t *c, int i) {
  const ag_fg_op_t *op = &c->op[i];
  char xb[16], yb[16], s0[16], s1[16];
  const char *x = op->nin > 0 ? operand(&op->in[0], xb) : "", *y = op->nin > 1 ? operand(&op->in[1], yb) : "";
  snprintf(s0, sizeof s0, "a.s[%d]", op->scal[0]);
  snprintf(s1, sizeof s1, "a.s[%d]", op->scal[1]);
  emit(o, "    const float r%d = ", i);
  switch (op->kind) {
  case AG_FG_ADD: emit(o, "__fadd_rn(%s, %s)", x, y); break;
  case AG_FG_AXPY: emit(o, "__fmaf_rn(%s, %s, %s)", s0, y, x); break; /* a + alpha * b, contracted */
  case AG_FG_MUL: emit(o, "__fmul_rn(%s, %s)", x, y); break;
  case AG_FG_DIV: emit(o, "__fdiv_rn(%s, %s)", x, y); break;
  /* self + alpha * other with alpha 1 or -1: the fused multiply-add rounds once, as these do */
  case AG_FG_ADD_S: emit(o, "__fadd_rn(%s, %s)", x, s0); break;
  case AG_FG_SUB_S: emit(o, "__fsub_rn(%s, %s)", x, s0); break;
  case AG_FG_MUL_S: emit(o, "__fmul_rn(%s, %s)", x, s0); break;
  case AG_FG_NEG: emit(o, "-%s", x); break;
  case AG_FG_ABS: emit(o, "fabsf(%s)", x); break;
  case AG_FG_EXP: emit(o, "expf(%s)", x); break;
  case AG_FG_LOG: emit(o, "logf(%s)", x); break;
  case AG_FG_SQRT: emit(o, "__fsqrt_rn(%s)", x); break;
  case AG_FG_RSQRT: emit(o, "rsqrtf(%s)", x); break;
  case AG_FG_RECIP: emit(o, "__fdiv_rn(1.0f, %s)", x); break;
  case AG_FG_SIGMOID: emit(o, "__fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-%s)))", x); break;
  case AG_FG_TANH: emit(o, "tanhf(%s)", x); break;
  case AG_FG_SILU: emit(o, "__fdiv_rn(%s, __fadd_rn(1.0f, expf(-%s)))", x, x); break;
  case AG_FG_GELU: /* kAlpha = M_SQRT1_2 in float */
    emit(o, "__fmul_rn(__fmul_rn(%s, 0.5f), __fadd_rn(1.0f, erff(__fmul_rn(%s, %af))))", x, x, (double)(float)M_SQRT1_2);
    break;
  /* GeluCUDAKernelImpl's tanh lambda in opmath float: x_cube = x * x * x, inner = kBeta * (x +
   * kKappa * x_cube) with the sum contracted (the wheel's SASS: FFMA x_cube, kKappa, x), then
   * 0.5 * x * (1 + tanh(inner)); kBeta = M_SQRT2 * M_2_SQRTPI * 0.5 and kKappa = 0.044715 in float */
  case AG_FG_GELU_TANH:
    emit(o, "__fmul_rn(__fmul_rn(%s, 0.5f), __fadd_rn(1.0f, tanhf(__fmul_rn(__fmaf_rn(%af, "
            "__fmul_rn(__fmul_rn(%s, %s), %s), %s), %af))))", x, (double)0.044715f, x, x, x, x,
         (double)(float)(M_SQRT2 * M_2_SQRTPI * 0.5));
    break;
  case AG_FG_RELU: emit(o, "%s != %s ? %s : fmaxf(%s, 0.0f)", x, x, x, x); break;
  case AG_FG_CLAMP: emit(o, "%s != %s ? %s : fminf(fmaxf(%s, %s), %s)", x, x, x, x, s0, s1); break;
  case AG_FG_CLAMP_MIN: emit(o, "%s != %s ? %s : fmaxf(%s, %s)", x, x, x, x, s0); break;
  case AG_FG_POW_S: emit(o, "powf(%s, %s)", x, s0); break;
  /* x <= threshold ? value : other, in float: the Half and BFloat16 comparison widens both */
  case AG_FG_THRESHOLD: emit(o, "%s <= %s ? %s : %s", x, s0, s1, y); break;
  /* (float)mask * src * scale, in that order */
  case AG_FG_MASKED_SCALE: emit(o, "__fmul_rn(__fmul_rn(%s, %s), %s)", y, x, s0); break;
  case AG_FG_SQUARE: emit(o, "__fmul_rn(%s, %s)", x, x); break;
  /* (base * base) * base in the tensor's type: c10::Half and c10::BFloat16 multiply in float
   * and round each product to themselves, so the first product is rounded before the second. */
  case AG_FG_CUBE: {
    char d[128];
    snprintf(d, sizeof d, "__fmul_rn(%s, %s)", x, x);
    rounded(op->in_dt, d, sizeof d);
    emit(o, "__fmul_rn(%s, %s)", d, x);
    break;
  }
  /* std::min(std::max(x + 3, 0), 6), spelled out (the sum computed once by the compiler) */
  case AG_FG_HARDSIGMOID:
  case AG_FG_HARDSWISH: {
    char t[40], m[112];
    snprintf(t, sizeof t, "__fadd_rn(%s, 3.0f)", x);
    snprintf(m, sizeof m, "(%s < 0.0f ? 0.0f : %s)", t, t);
    if (op->kind == AG_FG_HARDSIGMOID)
      emit(o, "__fmul_rn(6.0f < %s ? 6.0f : %s, %af)", m, m, (double)(1.0f / 6.0f));
    else
      emit(o, "__fmul_rn(__fmul_rn(%s, 6.0f < %s ? 6.0f : %s), %af)", x, m, m, (double)(1.0f / 6.0f));
    break;
  }
  case AG_FG_HARDSIGMOID_BW:
    emit(o, "%s > -3.0f && %s < 3.0f ? __fmul_rn(%s, %af) : 0.0f", y, y, x, (double)(1.0f / 6.0f));
    break;
  case AG_FG_HARDSWISH_BW:
    /* the wheel's SASS: 0 for y <= -3, the product for y < 3, else x (a NaN y gives x) */
    emit(o, "%s <= -3.0f ? 0.0f : %s < 3.0f ? __fmul_rn(%s, __fadd_rn(__fdiv_rn(%s, 3.0f), 0.5f)) : %s", y, y, x, y, x);
    break;
  /* leaky_relu_kernel's and leaky_relu_backward_kernel's lambdas {negval} */
  case AG_FG_LEAKY_RELU: emit(o, "%s > 0.0f ? %s : __fmul_rn(%s, %s)", x, x, x, s0); break;
  case AG_FG_LEAKY_RELU_BW: emit(o, "%s > 0.0f ? %s : __fmul_rn(%s, %s)", x, y, y, s0); break;
  /* sigmoid_backward_kernel_cuda's and tanh_backward_kernel_cuda's lambdas (gradient x, output
   * y): `a * (scalar_t(1) - b) * b` and `a * (scalar_t(1) - b * b)` in the element type, which
   * in float16 and bfloat16 rounds each step to the type (c10's operators); in float32 nvcc
   * contracts tanh's 1 - y * y into one FMA (the wheel's SASS: FFMA r, -y, y, 1, then FMUL). */
  case AG_FG_SIGMOID_BW: {
    char d[128], m[256];
    snprintf(d, sizeof d, "__fsub_rn(1.0f, %s)", y);
    rounded(op->in_dt, d, sizeof d);
    snprintf(m, sizeof m, "__fmul_rn(%s, %s)", x, d);
    rounded(op->in_dt, m, sizeof m);
    emit(o, "__fmul_rn(%s, %s)", m, y);
    break;
  }
  case AG_FG_TANH_BW: {
    char d[128], e[256];
    if (op->in_dt == AG_FG_F32) {
      emit(o, "__fmul_rn(%s, __fmaf_rn(-%s, %s, 1.0f))", x, y, y);
      break;
    }
    snprintf(d, sizeof d, "__fmul_rn(%s, %s)", y, y);
    rounded(op->in_dt, d, sizeof d);
    snprintf(e, sizeof e, "__fsub_rn(1.0f, %s)", d);
    rounded(op->in_dt, e, sizeof e);
    emit(o, "__fmul_rn(%s, %s)", x, e);
    break;
  }
  default: emit(o, "%s", x); break; /* a cast: the store below rounds */
  }
  emit(o, "; // %s\n", ag__fg_kind_name(op->kind));
  /* Stored in the output's type, and read on as the stored value. */
  char ib[16];
  const char *e = at(c, op->out, ib);
  if (op->out_dt == AG_FG_F32)
    emit(o, "    ((float *)a.t[%d])[%s] = r%d;\n    const float v%d = r%d;\n", op->out, e, i, i, i);
  else {
    const char *cvt = op->out_dt == AG_FG_F16 ? "h" : "bf";
    emit(o, "    const unsigned short h%d = ", i);
    emit_narrowed(o, c, i, cvt);
    emit(o, ";\n    ((unsigned short *)a.t[%d])[%s] = h%d;\n    const float v%d = ag_%s2f(h%d);\n", op->out, e,
         i, i, cvt, i);
  }
  emit(o, "    (void)v%d;\n", i);
}

/* The conversions between float and the 16-bit types, written into the source so that it
 * needs no header (NVRTC has none of its own: cuda_fp16.h and cuda_bf16.h come with a toolkit,
 * which the wheels do not ship). On the device they are the instructions PyTorch's own types
 * use: c10::Half converts with cvt.rn.f16.f32 (cuda_fp16.h's __float2half), c10::BFloat16 with
 * cvt.rn.bf16.f32 from sm_80 on and, before, with its own rounding to nearest even that makes
 * every NaN 0x7fc0; widening is exact (a bfloat16 is a float's upper half). A compiler that
 * builds the source for a host instead (the simulator's NVRTC) defines AG_HOST_BUILD and provides
 * the cuda_fp16.h and cuda_bf16.h functions of the same meaning, which are used then. */
static const char F16_CONVERSIONS[] =
    "#ifndef AG_HOST_BUILD\n"
    "static __device__ __forceinline__ float ag_h2f(unsigned short h) {\n"
    "  float f;\n  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n  return f;\n}\n"
    "static __device__ __forceinline__ unsigned short ag_f2h(float f) {\n"
    "  unsigned short h;\n  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n  return h;\n}\n"
    "#else\n"
    "static inline float ag_h2f(unsigned short h) { return __half2float(__ushort_as_half(h)); }\n"
    "static inline unsigned short ag_f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }\n"
    "#endif\n";
static const char BF16_CONVERSIONS[] =
    "#ifndef AG_HOST_BUILD\n"
    "static __device__ __forceinline__ float ag_bf2f(unsigned short h) { return __uint_as_float((unsigned)h << 16); }\n"
    "static __device__ __forceinline__ unsigned short ag_f2bf(float f) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  unsigned short h;\n  asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n  return h;\n"
    "#else\n"
    "  if (f != f) return 0x7fc0;\n"
    "  const unsigned u = __float_as_uint(f);\n"
    "  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "#endif\n"
    "}\n"
    "#else\n"
    "static inline float ag_bf2f(unsigned short h) { return __bfloat162float(__ushort_as_bfloat16(h)); }\n"
    "static inline unsigned short ag_f2bf(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }\n"
    "#endif\n";

/* A group of fills: row blockIdx.y of the grid stores fill y's value bits over its elements. */
static void emit_fills(out_t *o, const ag_fg_chain_t *c, const char *name) {
  emit(o, "// %d PyTorch fills in one (generated by libautograph)\n", c->nops);
  emit(o, "struct ag_fused_args {\n  void *t[%d];\n  unsigned g[%d];\n};\n", c->nptrs, c->ng);
  emit(o, "extern \"C\" __global__ void %s(int n, ag_fused_args a) {\n  (void)n;\n", name);
  emit(o, "  const unsigned f = blockIdx.y;\n  const long long m = a.g[2 * f];\n");
  emit(o, "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m;\n"
          "       i += (long long)gridDim.x * blockDim.x) {\n    switch (f) {\n");
  for (int i = 0; i < c->nops; i++) {
    const char *bits = c->ptr_dt[i] == AG_FG_F32 ? "int" : "short"; /* the value's width */
    emit(o, "    case %d: ((unsigned %s *)a.t[%d])[i] = (unsigned %s)a.g[%d]; break;\n", i, bits, i, bits, 2 * i + 1);
  }
  emit(o, "    }\n  }\n}\n");
}

static void emit_all(out_t *o, const ag_fg_chain_t *c, const char *name) {
  int f16 = 0, bf16 = 0;
  if (c->fills) {
    emit_fills(o, c, name);
    return;
  }
  for (int i = 0; i < c->nptrs; i++) f16 |= c->ptr_dt[i] == AG_FG_F16, bf16 |= c->ptr_dt[i] == AG_FG_BF16;
  emit(o, "// %d PyTorch elementwise kernels in one, bit for bit (generated by libautograph)\n", c->nops);
  if (f16) emit_n(o, F16_CONVERSIONS, sizeof F16_CONVERSIONS - 1);
  if (bf16) emit_n(o, BF16_CONVERSIONS, sizeof BF16_CONVERSIONS - 1);
  emit(o, "struct ag_fused_args {\n  void *t[%d];\n", c->nptrs);
  if (c->nscal) emit(o, "  float s[%d];\n", c->nscal);
  if (c->ng) emit(o, "  unsigned g[%d];\n", c->ng);
  emit(o, "};\nextern \"C\" __global__ void %s(int n, ag_fused_args a) {\n", name);
  emit(o, "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
          "       i += (long long)gridDim.x * blockDim.x) {\n");
  /* Each walk's offset of element i (or of the element its base walk gives, computed before it):
   * its digits in the walk's mixed radix (the last one needs no remainder: i < n), times the
   * strides. */
  for (int k = 0, g = 0; k < c->nacc; g += 2 * c->acc[k].dims, k++) {
    int dims = c->acc[k].dims;
    if (c->acc[k].base)
      emit(o, "    unsigned long long o%d = 0;\n    {\n      unsigned r = (unsigned)o%d;\n", k, c->acc[k].base - 1);
    else
      emit(o, "    unsigned long long o%d = 0;\n    {\n      unsigned r = (unsigned)i;\n", k);
    for (int d = 0; d < dims; d++)
      if (d < dims - 1)
        emit(o, "      o%d += (unsigned long long)(r %% a.g[%d]) * a.g[%d];\n      r /= a.g[%d];\n", k, g + d,
             g + dims + d, g + d);
      else
        emit(o, "      o%d += (unsigned long long)r * a.g[%d];\n", k, g + dims + d);
    emit(o, "    }\n");
  }
  for (int i = 0; i < c->nptrs; i++) {
    char ib[16];
    const char *e = at(c, i, ib);
    if (!c->ptr_loaded[i]) continue;
    if (c->ptr_dt[i] == AG_FG_F32) emit(o, "    const float x%d = ((const float *)a.t[%d])[%s];\n", i, i, e);
    else if (c->ptr_dt[i] == AG_FG_U8)
      emit(o, "    const float x%d = (float)((const unsigned char *)a.t[%d])[%s];\n", i, i, e);
    else /* its bits kept too, for an operation that passes a NaN on as it came (raw_operand) */
      emit(o, "    const unsigned short b%d = ((const unsigned short *)a.t[%d])[%s];\n"
              "    const float x%d = ag_%s2f(b%d);\n    (void)b%d;\n", i, i, e, i,
           c->ptr_dt[i] == AG_FG_F16 ? "h" : "bf", i, i);
  }
  for (int i = 0; i < c->nops; i++) emit_op(o, c, i);
  emit(o, "  }\n}\n");
}

uint64_t ag__fg_key(const ag_fg_chain_t *c) {
  out_t o = {NULL, 0, 0, 0xcbf29ce484222325ull};
  emit_all(&o, c, "ag_fused");
  return o.hash;
}

size_t ag__fg_emit(const ag_fg_chain_t *c, char *buf, size_t size, char name[32]) {
  snprintf(name, 32, "ag_fused_%016llx", (unsigned long long)ag__fg_key(c));
  out_t o = {buf, size, 0, 0xcbf29ce484222325ull};
  emit_all(&o, c, name);
  if (size) buf[o.len < size ? o.len : size - 1] = 0;
  return o.len;
}
