/* fusegen-check LOG TABLE DIR — the fused kernels of src/fusegen.c against PyTorch, bit for bit
 * (tests/cases/torch-fusegen.sh).
 *
 * LOG is the simulated driver's launch log of tests/torch/fusegen.py (SIM_LAUNCH_LOG: each
 * launch's kernel name and parameter bytes as the wheel packed them), TABLE the calibration
 * table of the kernels it ran (tools/calibrate-elementwise --json), DIR the bytes of every tensor
 * the script made, one file per device address (the bytes from that address to the end of the
 * tensor's storage, so that a view's file holds what its strides reach). The launches' parameter
 * layouts are the table's (N, the functor at its place, the tensors after it; for the strided
 * framework N and the lambda, with the data array where the table puts it): the frameworks'
 * layout, which the library reads from the kernels' images instead.
 *
 * For each chain src/chain.c finds among the launches, it describes the chain (ag__fg_build),
 * writes the kernel (ag__fg_emit), compiles it with NVRTC for sm_90 (the simulated NVRTC: the
 * toolkit's real one, then the same source built for the host), loads the CUBIN with
 * cuModuleLoadData and launches it with cuLaunchKernel on fresh buffers holding the chain's
 * inputs (the tensors it reads before writing them) and a poison byte elsewhere, then compares
 * every element the chain writes, intermediates included, with PyTorch's bytes. Prints one line
 * per chain and a summary; exits 1 on any difference or when nothing is fused, 2 on a usage or
 * setup error (a refusal is a line of the output, which the test counts). */
#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "fusegen.h"
#include "json.h"

#define CU(call)                                                                          \
  do {                                                                                    \
    CUresult r_ = (call);                                                                 \
    if (r_ != CUDA_SUCCESS) {                                                             \
      fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, (int)r_);     \
      exit(2);                                                                            \
    }                                                                                     \
  } while (0)

enum { MAX_LAUNCHES = 512, MAX_PARAMS = 1024 };

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(s);
    return NULL;
  }
  fclose(f);
  s[n] = 0;
  *len = (size_t)n;
  return s;
}

typedef struct {
  ag_kinfo_t k;
  ag_kparam_t p[3];
  char name[1024];
  uint8_t args[MAX_PARAMS];
  uint16_t sdata;
  uint8_t snt;
  unsigned grid[3], block[3];
} launch_t;

static launch_t L[MAX_LAUNCHES];

/* Reads the log: each line's kernel name and parameter bytes, with the layout from the table.
 * Returns the number of launches. */
static int read_log(const char *path, const ag_fg_table_t *t) {
  size_t len;
  char *s = slurp(path, &len);
  if (!s) {
    fprintf(stderr, "fusegen-check: cannot read %s\n", path);
    exit(2);
  }
  int n = 0;
  ag_jtok_t tok[64];
  for (char *line = s, *end; *line && n < MAX_LAUNCHES; line = end + (*end != 0)) {
    end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    int nt = ag__json_parse(line, (size_t)(end - line), tok, 64);
    if (nt <= 0 || nt > 64) continue;
    int nm = ag__json_get(line, tok, 0, "name"), pa = ag__json_get(line, tok, 0, "params");
    if (nm < 0 || pa < 0) continue;
    launch_t *l = &L[n++];
    size_t nl = tok[nm].end - tok[nm].start, np = (tok[pa].end - tok[pa].start) / 2;
    if (nl >= sizeof l->name) {
      fprintf(stderr, "fusegen-check: launch %d's name too long\n", n);
      exit(2);
    }
    if (np > MAX_PARAMS) np = 0; /* not an elementwise launch (cat's, say): read as none */
    memcpy(l->name, line + tok[nm].start, nl), l->name[nl] = 0;
    /* The launch shape, which the generator checks against the table's. */
    int gr = ag__json_get(line, tok, 0, "grid"), bl = ag__json_get(line, tok, 0, "block");
    for (int d = 0; d < 3; d++) {
      l->grid[d] = gr >= 0 && tok[gr].size == 3 ? (unsigned)ag__json_num(line, &tok[gr + 1 + d]) : 0;
      l->block[d] = bl >= 0 && tok[bl].size == 3 ? (unsigned)ag__json_num(line, &tok[bl + 1 + d]) : 0;
    }
    for (size_t i = 0; i < np; i++) {
      unsigned b;
      sscanf(line + tok[pa].start + 2 * i, "%2x", &b);
      l->args[i] = (uint8_t)b;
    }
    l->k.name = l->name;
    l->k.param_bytes = (uint32_t)np;
    const ag_fg_calkernel_t *ck = ag__fg_table_find(t, l->name);
    if (ck && ck->strided) {
      l->p[0] = (ag_kparam_t){0, 4};
      l->p[1] = (ag_kparam_t){ck->calc_off, (uint32_t)np - ck->calc_off};
      l->k.params = l->p, l->k.nparams = 2;
      l->sdata = ck->data_off, l->snt = ck->tensors;
    } else if (ck) {
      uint32_t data = (ck->functor_off + ck->functor_size + 7u) / 8 * 8;
      l->p[0] = (ag_kparam_t){0, 4};
      l->p[1] = (ag_kparam_t){ck->functor_off, ck->functor_size};
      l->p[2] = (ag_kparam_t){data, 8u * ck->tensors};
      l->k.params = l->p, l->k.nparams = 3;
    }
  }
  free(s);
  return n;
}

static int elt(int dt) { return ag__fg_dt_size(dt); }

/* The elements of slot p (a group of fills: its fill's). */
static uint32_t count_of(const ag_fg_chain_t *c, int p) { return c->fills ? c->g[2 * p] : (uint32_t)c->n; }

/* Where access `acc` (ptr_acc's encoding) takes element i, in elements. */
static uint64_t walk_of(const ag_fg_chain_t *c, int acc, uint32_t i) {
  if (!acc) return i;
  const ag_fg_access_t *w = &c->acc[acc - 1];
  uint64_t o = 0;
  if (w->base) i = (uint32_t)walk_of(c, w->base, i);
  for (int d = 0; d < w->dims; d++) o += (uint64_t)(i % w->size[d]) * w->stride[d], i /= w->size[d];
  return o;
}

/* Element i of slot p, in elements from its address. */
static uint64_t offset_of(const ag_fg_chain_t *c, int p, uint32_t i) { return walk_of(c, c->ptr_acc[p], i); }

/* The bytes slot p's elements reach from its address. */
static size_t extent(const ag_fg_chain_t *c, int p) {
  uint64_t last = 0;
  for (uint32_t i = 0; i < count_of(c, p); i++) {
    uint64_t o = offset_of(c, p, i);
    if (o > last) last = o;
  }
  return (size_t)(last + 1) * (size_t)elt(c->ptr_dt[p]);
}

/* Compiles, runs and compares one chain; returns the mismatching bytes, adds to the counts. */
static long run_chain(const ag_fg_chain_t *c, const char *dir, long *bytes, int *tensors) {
  static char src[65536];
  char name[32];
  if (ag__fg_emit(c, src, sizeof src, name) >= sizeof src) {
    fprintf(stderr, "fusegen-check: source too long\n");
    exit(2);
  }
  if (getenv("FUSEGEN_CHECK_SOURCE")) fputs(src, stdout);
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src, "fused.cu", 0, NULL, NULL) != NVRTC_SUCCESS) exit(2);
  /* No include folder: the source needs none (what NVRTC finds on a machine without a toolkit). */
  const char *opts[] = {"--gpu-architecture=sm_90"};
  nvrtcResult r = nvrtcCompileProgram(prog, 1, opts);
  size_t ptx = 0, cubin_n = 0;
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    char *log = malloc(n + 1);
    nvrtcGetProgramLog(prog, log);
    fprintf(stderr, "fusegen-check: %s does not compile: %s\n%s\n%s", name, nvrtcGetErrorString(r), log, src);
    exit(1);
  }
  nvrtcGetPTXSize(prog, &ptx);
  nvrtcGetCUBINSize(prog, &cubin_n);
  char *cubin = malloc(cubin_n);
  nvrtcGetCUBIN(prog, cubin);
  nvrtcDestroyProgram(&prog);
  if (ptx < 2 || cubin_n == 0) {
    fprintf(stderr, "fusegen-check: %s: no PTX or CUBIN\n", name);
    exit(1);
  }
  CUmodule mod;
  CUfunction fn;
  CU(cuModuleLoadData(&mod, cubin));
  CU(cuModuleGetFunction(&fn, mod, name));
  free(cubin);

  CUdeviceptr dev[AG_FG_MAX_PTRS];
  uint8_t *want[AG_FG_MAX_PTRS] = {0};
  for (int i = 0; i < c->nptrs; i++) {
    size_t sz = extent(c, i), got = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%llx.bin", dir, (unsigned long long)c->ptr[i]);
    want[i] = (uint8_t *)slurp(path, &got);
    if (!want[i] || got < sz) {
      fprintf(stderr, "fusegen-check: %s: missing or of %zu bytes, under %zu\n", path, got, sz);
      exit(2);
    }
    CU(cuMemAlloc(&dev[i], sz));
    if (c->ptr_loaded[i]) CU(cuMemcpyHtoD(dev[i], want[i], sz));
    else CU(cuMemsetD8(dev[i], 0xcd, sz)); /* whatever the kernel does not write stays wrong */
  }
  uint8_t pack[8 * AG_FG_MAX_PTRS + 4 * AG_FG_MAX_SCAL + sizeof c->g] __attribute__((aligned(8)));
  memset(pack, 0, sizeof pack);
  for (int i = 0; i < c->nptrs; i++) memcpy(pack + 8 * i, &dev[i], 8);
  memcpy(pack + 8 * c->nptrs, c->scal, 4 * (size_t)c->nscal);
  memcpy(pack + 8 * c->nptrs + 4 * c->nscal, c->g, 4 * (size_t)c->ng);
  int n = c->n;
  void *params[] = {&n, pack};
  CU(cuLaunchKernel(fn, (unsigned)(n + 127) / 128, c->fills ? (unsigned)c->nops : 1, 1, 128, 1, 1, 0, NULL, params,
                    NULL));
  CU(cuCtxSynchronize());
  long bad = 0;
  for (int i = 0; i < c->nptrs; i++) {
    size_t sz = extent(c, i), es = (size_t)elt(c->ptr_dt[i]);
    if (c->ptr_written[i]) {
      uint8_t *got = malloc(sz);
      CU(cuMemcpyDtoH(got, dev[i], sz));
      int shown = 0;
      for (uint32_t el = 0; el < count_of(c, i); el++) {
        size_t e = (size_t)offset_of(c, i, el) * es;
        if (!memcmp(got + e, want[i] + e, es)) continue;
        bad += (long)es;
        if (shown++ < 3) {
          uint32_t g = 0, w = 0;
          memcpy(&g, got + e, es);
          memcpy(&w, want[i] + e, es);
          fprintf(stderr, "fusegen-check: %s: tensor %d element %zu: 0x%x, PyTorch 0x%x\n", name, i,
                  e / es, g, w);
        }
      }
      *bytes += (long)((size_t)count_of(c, i) * es), ++*tensors;
      free(got);
    }
    free(want[i]);
    CU(cuMemFree(dev[i]));
  }
  CU(cuModuleUnload(mod));
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: fusegen-check LOG TABLE DIR\n");
    return 2;
  }
  size_t len;
  char *json = slurp(argv[2], &len);
  ag_fg_table_t t;
  if (!json || ag__fg_table_load(&t, json, len)) {
    fprintf(stderr, "fusegen-check: cannot load the table %s\n", argv[2]);
    return 2;
  }
  free(json);
  int n = read_log(argv[1], &t);
  static ag_chain_launch_t cl[MAX_LAUNCHES];
  static uint8_t role[MAX_LAUNCHES];
  for (int i = 0; i < n; i++) {
    cl[i] = (ag_chain_launch_t){.k = &L[i].k, .args = L[i].args, .sdata = L[i].sdata, .snt = L[i].snt};
    memcpy(cl[i].grid, L[i].grid, sizeof cl[i].grid), memcpy(cl[i].block, L[i].block, sizeof cl[i].block);
  }
  int chains = ag__chain_scan(cl, n, role);
  CUdevice d;
  CUcontext ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&d, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, d));
  CU(cuCtxSetCurrent(ctx));
  int fused = 0, refused = 0, ops = 0, tensors = 0;
  long bytes = 0, bad = 0;
  for (int i = 0; i < n;) {
    int j = i;
    if (role[i] != AG_CHAIN_LINKED) {
      /* a run of fills (one-tensor kernels) */
      while (j < n && cl[j].args && ag__chain_single(cl[j].k)) j++;
      if (j - i < 2) {
        i++;
        continue;
      }
      j--, chains++;
    }
    while (role[i] == AG_CHAIN_LINKED && j + 1 < n && role[j + 1] == AG_CHAIN_LINKED) {
      /* the next launch belongs to this chain only if it reads what this one wrote */
      uint8_t r2[2];
      if (ag__chain_scan(&cl[j], 2, r2) != 1) break;
      j++;
    }
    ag_fg_chain_t c;
    int at, r = ag__fg_build(&t, &cl[i], j - i + 1, &c, &at);
    if (r != AG_FG_OK) {
      printf("chain at launch %d (%d launches): refused, %s at launch %d (%.100s)\n", i, j - i + 1,
             ag__fg_reason_name(r), at < 0 ? -1 : i + at, at < 0 ? "" : L[i + at].name);
      refused++;
    } else {
      long b0 = bytes, m = run_chain(&c, argv[3], &bytes, &tensors);
      printf("chain at launch %d: %d operations (", i, c.nops);
      for (int k = 0; k < c.nops; k++) printf("%s%s", k ? " " : "", ag__fg_kind_name(c.op[k].kind));
      printf("), %ld bytes compared, %ld differ\n", bytes - b0, m);
      bad += m, fused++, ops += c.nops;
    }
    i = j + 1;
  }
  printf("fusegen-check: %d launches, %d chains and groups of fills: %d fused (%d operations), %d refused; %d tensors, "
         "%ld bytes compared, %ld differ\n", n, chains, fused, ops, refused, tensors, bytes, bad);
  ag__fg_table_free(&t);
  return bad || !fused ? 1 : 0;
}
