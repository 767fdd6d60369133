/* nvrtc.c — the simulated NVRTC, libnvrtc.so.13 (tests/sim/README.md, "NVRTC").
 *
 * A program that generates CUDA C at run time compiles it with NVRTC and loads the PTX or CUBIN
 * with cuModuleLoadData. On the simulator a kernel runs as its CPU twin sim_<name>, and a
 * generated kernel has no hand-written one, so this library makes one:
 *
 *   1. Every call is forwarded to the toolkit's real NVRTC (dlopen by the absolute path fixed at
 *      build time, SIM_NVRTC_REAL; NVRTC runs without a GPU), so the PTX, the CUBIN, the log,
 *      the lowered names and the compile errors are the real ones.
 *   2. When the real compilation succeeds, nvrtcCompileProgram also compiles the same source as
 *      host C++ (`c++ -std=c++17 -O1 -ffp-contract=off -shared -fPIC`, after prelude.h and
 *      tests/sim/common/halfconv.h), with one wrapper `sim_<name>` per kernel of the PTX: it
 *      runs every block and thread of the grid one after another, and unpacks the arguments
 *      by the kernel's own parameter types (sim_nvrtc_run in prelude.h). The result is loaded
 *      with RTLD_GLOBAL, where the simulated driver's dlsym(RTLD_DEFAULT, "sim_<name>") finds it
 *      when the program loads the CUBIN or PTX and launches the kernel.
 *
 * Host builds are cached by a hash of the generated source and the compiler's options in
 * $SIM_NVRTC_CACHE, else ${TMPDIR:-/tmp}/sim-nvrtc-<uid>, and each kernel's name is linked to
 * its build there (twin-<name>.so), where the simulated driver looks for the twin of a kernel
 * whose image was loaded without being compiled in the process (read from a disk cache). What the host build refuses (threads
 * of a block that cooperate: __syncthreads, __shared__, warp shuffles and votes; a kernel name
 * that another twin in the process already has) fails the compilation with
 * NVRTC_ERROR_COMPILATION and a line in the log that starts with "sim-nvrtc:".
 */
#define _GNU_SOURCE
#include <nvrtc.h>

#include "common/nvrtccache.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SIM_NVRTC_REAL
#define SIM_NVRTC_REAL "/usr/local/cuda/lib64/libnvrtc.so.13"
#endif

#define EXPORT __attribute__((visibility("default")))

extern char **environ;
char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status);

/* The host prelude and the half-precision conversions, embedded (prelude.h says what they are). */
__asm__(".section .rodata\n"
        ".global sim_nvrtc_halfconv\n"
        ".hidden sim_nvrtc_halfconv\n"
        "sim_nvrtc_halfconv:\n"
        ".incbin \"tests/sim/common/halfconv.h\"\n"
        ".byte 0\n"
        ".global sim_nvrtc_prelude\n"
        ".hidden sim_nvrtc_prelude\n"
        "sim_nvrtc_prelude:\n"
        ".incbin \"tests/sim/nvrtc/prelude.h\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char sim_nvrtc_halfconv[], sim_nvrtc_prelude[];

/* The indices of the thread a host build's wrapper runs (threadIdx, blockIdx, blockDim,
 * gridDim in prelude.h): here, in one static TLS block, which the host builds link against. */
typedef struct {
  unsigned x, y, z;
} sim_u3;
EXPORT __thread struct {
  sim_u3 thread, block, bdim, gdim;
} simnvrtc_index;

/* This library's own path, for the host builds to link against. */
static const char *self_path(void) {
  Dl_info di;
  return dladdr((void *)self_path, &di) && di.dli_fname ? di.dli_fname : "libnvrtc.so.13";
}

/* ---- the real NVRTC ---- */

static struct {
  const char *(*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int *, int *);
  nvrtcResult (*GetNumSupportedArchs)(int *);
  nvrtcResult (*GetSupportedArchs)(int *);
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                               const char *const *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetPTX)(nvrtcProgram, char *);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char *);
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char *, const char **);
} real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static int real_ok;

static void real_load(void) {
  void *h = dlopen(SIM_NVRTC_REAL, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "sim-nvrtc: cannot load the real NVRTC %s: %s\n", SIM_NVRTC_REAL, dlerror());
    return;
  }
  int ok = 1;
#define REAL(f)                                         \
  do {                                                  \
    void *p = dlsym(h, "nvrtc" #f);                     \
    if (!p) ok = 0;                                     \
    memcpy(&real.f, &p, sizeof p);                      \
  } while (0)
  REAL(GetErrorString);
  REAL(Version);
  REAL(GetNumSupportedArchs);
  REAL(GetSupportedArchs);
  REAL(CreateProgram);
  REAL(DestroyProgram);
  REAL(CompileProgram);
  REAL(GetPTXSize);
  REAL(GetPTX);
  REAL(GetCUBINSize);
  REAL(GetCUBIN);
  REAL(GetProgramLogSize);
  REAL(GetProgramLog);
  REAL(AddNameExpression);
  REAL(GetLoweredName);
#undef REAL
  if (!ok) fprintf(stderr, "sim-nvrtc: %s lacks a function of the NVRTC API\n", SIM_NVRTC_REAL);
  real_ok = ok;
}

static int have_real(void) {
  pthread_once(&real_once, real_load);
  return real_ok;
}

/* ---- programs ---- */

#define PROG_MAGIC 0x4E565254u

typedef struct sim_prog {
  uint32_t magic;
  nvrtcProgram real;
  char *src;
  int nheaders;
  char **headers, **names;
  char *log; /* the log as the program sees it: the real one, plus the simulator's lines */
} sim_prog_t;

static sim_prog_t *prog_of(nvrtcProgram p) {
  sim_prog_t *s = (sim_prog_t *)p;
  return s && s->magic == PROG_MAGIC ? s : NULL;
}

EXPORT const char *nvrtcGetErrorString(nvrtcResult r) {
  if (have_real()) return real.GetErrorString(r);
  return "NVRTC_ERROR unknown";
}

EXPORT nvrtcResult nvrtcVersion(int *major, int *minor) {
  return have_real() ? real.Version(major, minor) : NVRTC_ERROR_INTERNAL_ERROR;
}

EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int *n) {
  return have_real() ? real.GetNumSupportedArchs(n) : NVRTC_ERROR_INTERNAL_ERROR;
}

EXPORT nvrtcResult nvrtcGetSupportedArchs(int *a) {
  return have_real() ? real.GetSupportedArchs(a) : NVRTC_ERROR_INTERNAL_ERROR;
}

static void prog_free(sim_prog_t *s) {
  if (!s) return;
  free(s->src);
  for (int i = 0; i < s->nheaders; i++) free(s->headers[i]), free(s->names[i]);
  free(s->headers);
  free(s->names);
  free(s->log);
  s->magic = 0;
  free(s);
}

EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
                                      int numHeaders, const char *const *headers,
                                      const char *const *includeNames) {
  if (!have_real()) return NVRTC_ERROR_INTERNAL_ERROR;
  nvrtcProgram rp;
  nvrtcResult r = real.CreateProgram(&rp, src, name, numHeaders, headers, includeNames);
  if (r != NVRTC_SUCCESS) return r;
  sim_prog_t *s = calloc(1, sizeof *s);
  if (!s || !(s->src = strdup(src))) goto oom;
  if (numHeaders > 0) {
    s->headers = calloc((size_t)numHeaders, sizeof *s->headers);
    s->names = calloc((size_t)numHeaders, sizeof *s->names);
    if (!s->headers || !s->names) goto oom;
    s->nheaders = numHeaders;
    for (int i = 0; i < numHeaders; i++)
      if (!(s->headers[i] = strdup(headers[i])) || !(s->names[i] = strdup(includeNames[i])))
        goto oom;
  }
  s->magic = PROG_MAGIC;
  s->real = rp;
  *prog = (nvrtcProgram)s;
  return NVRTC_SUCCESS;
oom:
  prog_free(s);
  real.DestroyProgram(&rp);
  return NVRTC_ERROR_OUT_OF_MEMORY;
}

EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
  sim_prog_t *s = prog ? prog_of(*prog) : NULL;
  if (!s) return NVRTC_ERROR_INVALID_PROGRAM;
  nvrtcResult r = real.DestroyProgram(&s->real);
  prog_free(s);
  *prog = NULL;
  return r;
}

#define FORWARD(call, ...)                               \
  do {                                                   \
    sim_prog_t *s = prog_of(prog);                       \
    if (!s) return NVRTC_ERROR_INVALID_PROGRAM;          \
    return real.call(s->real, __VA_ARGS__);              \
  } while (0)

EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *n) { FORWARD(GetPTXSize, n); }
EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx) { FORWARD(GetPTX, ptx); }
EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *n) { FORWARD(GetCUBINSize, n); }
EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *c) { FORWARD(GetCUBIN, c); }
EXPORT nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char *e) {
  FORWARD(AddNameExpression, e);
}
EXPORT nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char *e, const char **lowered) {
  FORWARD(GetLoweredName, e, lowered);
}

EXPORT nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *n) {
  sim_prog_t *s = prog_of(prog);
  if (!s) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!n) return NVRTC_ERROR_INVALID_INPUT;
  if (!s->log) return real.GetProgramLogSize(s->real, n);
  *n = strlen(s->log) + 1;
  return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log) {
  sim_prog_t *s = prog_of(prog);
  if (!s) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!log) return NVRTC_ERROR_INVALID_INPUT;
  if (!s->log) return real.GetProgramLog(s->real, log);
  strcpy(log, s->log);
  return NVRTC_SUCCESS;
}

/* ---- a growing string ---- */

typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} buf_t;

static void buf_add(buf_t *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->n + n + 1) * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void buf_str(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void buf_fmt(buf_t *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Appends a line to the program's log (after the real log, which the first call copies). */
__attribute__((format(printf, 2, 3))) static void log_add(sim_prog_t *s, const char *fmt, ...) {
  buf_t b = {0};
  if (s->log) {
    buf_str(&b, s->log);
  } else {
    size_t n = 0;
    if (real.GetProgramLogSize(s->real, &n) == NVRTC_SUCCESS && n > 1) {
      char *l = malloc(n);
      if (l && real.GetProgramLog(s->real, l) == NVRTC_SUCCESS) buf_str(&b, l);
      free(l);
    }
  }
  if (b.n && b.p[b.n - 1] != '\n') buf_str(&b, "\n");
  char tmp[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  buf_str(&b, tmp);
  if (b.oom) {
    free(b.p);
    return;
  }
  free(s->log);
  s->log = b.p;
}

/* ---- what the host build refuses ---- */

/* The first identifier of the source (outside comments, strings and character literals) that
 * needs the threads of a block to run together, or NULL. */
static const char *cooperative_use(const char *src) {
  static const char *const words[] = {
      "__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
      "__syncwarp", "__shared__", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
      "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync",
      "__match_all_sync", "__activemask", "__reduce_add_sync", "cooperative_groups", NULL};
  const char *p = src;
  while (*p) {
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      p = e ? e + 2 : p + strlen(p);
    } else if (*p == '"' || *p == '\'') {
      char q = *p++;
      while (*p && *p != q) p += (*p == '\\' && p[1]) ? 2 : 1;
      if (*p) p++;
    } else if (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
      const char *w = p;
      while (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
             (*p >= '0' && *p <= '9'))
        p++;
      for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == (size_t)(p - w) && !strncmp(words[i], w, (size_t)(p - w)))
          return words[i];
    } else {
      p++;
    }
  }
  return NULL;
}

/* ---- the kernels of the PTX, and how the host names each ---- */

/* The kernel names of the PTX's .entry directives, in order. */
static int ptx_entries(const char *ptx, char ***out) {
  int n = 0;
  char **v = NULL;
  for (const char *p = ptx; (p = strstr(p, ".entry")) != NULL;) {
    p += 6;
    if (*p != ' ' && *p != '\t') continue;
    while (*p == ' ' || *p == '\t') p++;
    const char *e = p;
    while (*e && *e != '(' && *e != ' ' && *e != '\t' && *e != '\n') e++;
    if (e == p) continue;
    char **w = realloc(v, (size_t)(n + 1) * sizeof *v);
    if (!w || !(w[n] = strndup(p, (size_t)(e - p)))) {
      free(w ? w : v);
      return -1;
    }
    v = w, n++;
    p = e;
  }
  *out = v;
  return n;
}

/* The host expression of the kernel a PTX entry names, as a function pointer: the extern "C"
 * name itself, else, from the demangled name ("ns::k(float*, int)", "void k<float>(float*)"),
 * static_cast<void (*)(float*, int)>(&ns::k). NULL when it cannot be demangled. */
static char *host_expr(const char *entry) {
  if (strncmp(entry, "_Z", 2) != 0) {
    char *r = malloc(strlen(entry) + 2);
    if (r) sprintf(r, "&%s", entry);
    return r;
  }
  int st = 0;
  char *d = __cxa_demangle(entry, NULL, NULL, &st);
  if (!d || st != 0) return free(d), NULL;
  size_t len = strlen(d);
  if (!len || d[len - 1] != ')') return free(d), NULL;
  /* The parameter list: the parenthesised group that ends the name. */
  size_t open = len - 1;
  int depth = 0;
  for (size_t i = len; i-- > 0;) {
    if (d[i] == ')') depth++;
    else if (d[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  const char *fn = d;
  if (!strncmp(fn, "void ", 5)) fn += 5; /* templates' demangled names carry the return type */
  size_t fnlen = (size_t)(d + open - fn);
  size_t plen = len - 1 - open - 1;
  char *r = malloc(fnlen + plen + 64);
  if (r) sprintf(r, "static_cast<void (*)(%.*s)>(&%.*s)", (int)plen, d + open + 1, (int)fnlen, fn);
  free(d);
  return r;
}

/* ---- the host build ---- */

static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

static int mkdirs(const char *path) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0700) && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

static int write_file(const char *dir, const char *name, const char *text) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return -1;
  char *slash = strrchr(path, '/');
  *slash = 0;
  if (mkdirs(path)) return -1;
  *slash = '/';
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  size_t n = strlen(text);
  int ok = fwrite(text, 1, n, f) == n;
  return fclose(f) == 0 && ok ? 0 : -1;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  buf_t b = {0};
  char tmp[4096];
  size_t n;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) buf_add(&b, tmp, n);
  fclose(f);
  if (!b.p) buf_str(&b, "");
  return b.oom ? (free(b.p), NULL) : b.p;
}

/* The options of the real compilation that matter to the host one, as host compiler arguments
 * (include paths, macros, pre-included headers, the language standard) plus __CUDA_ARCH__ from
 * the target architecture (NVRTC's default, compute_75, when none is given). */
static int host_options(int n, const char *const *opts, char **argv, int max) {
  int k = 0, arch = 750, std = 0;
  for (int i = 0; i < n && k + 2 < max; i++) {
    const char *o = opts[i], *v;
    if (!strncmp(o, "-I", 2) && o[2]) {
      argv[k++] = strdup(o);
    } else if (!strncmp(o, "--include-path=", 15)) {
      argv[k++] = strdup("-I"), argv[k++] = strdup(o + 15);
    } else if ((!strncmp(o, "-D", 2) || !strncmp(o, "-U", 2)) && o[2]) {
      argv[k++] = strdup(o);
    } else if (!strncmp(o, "--define-macro=", 15)) {
      argv[k++] = strdup("-D"), argv[k++] = strdup(o + 15);
    } else if (!strncmp(o, "--undefine-macro=", 17)) {
      argv[k++] = strdup("-U"), argv[k++] = strdup(o + 17);
    } else if (!strncmp(o, "--pre-include=", 14) || !strncmp(o, "-include=", 9)) {
      argv[k++] = strdup("-include"), argv[k++] = strdup(strchr(o, '=') + 1);
    } else if (!strncmp(o, "-std=", 5) || !strncmp(o, "--std=", 6)) {
      char tmp[64];
      snprintf(tmp, sizeof tmp, "-std=%s", strchr(o, '=') + 1);
      argv[k++] = strdup(tmp);
      std = 1;
    } else if ((v = !strncmp(o, "-arch=", 6)                  ? o + 6
                    : !strncmp(o, "--gpu-architecture=", 19) ? o + 19
                                                              : NULL)) {
      while (*v && (*v < '0' || *v > '9')) v++;
      if (*v) arch = atoi(v) * 10;
    }
  }
  if (!std) argv[k++] = strdup("-std=c++17");
  char tmp[64];
  snprintf(tmp, sizeof tmp, "-D__CUDA_ARCH__=%d", arch);
  argv[k++] = strdup(tmp);
  return k;
}

/* Runs argv (the compiler) without LD_PRELOAD, its output to `out`; returns its exit status
 * (128 + the signal that ended it), or -1 when it could not be started. */
static int run_compiler(char **argv, const char *out) {
  int nenv = 0;
  while (environ[nenv]) nenv++;
  char **env = calloc((size_t)nenv + 1, sizeof *env);
  if (!env) return -1;
  int k = 0;
  for (int i = 0; i < nenv; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  if (rc) return -1;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Builds (or finds in the cache) the host library of a program whose real compilation
 * succeeded, loads it, and checks that the driver will find its twins. Returns NVRTC_SUCCESS,
 * or an error with the reason in the program's log. */
static nvrtcResult host_build(sim_prog_t *s, int nopts, const char *const *opts) {
  const char *coop = cooperative_use(s->src);
  if (coop) {
    log_add(s,
            "sim-nvrtc: the simulator runs NVRTC kernels on the CPU one thread after another, "
            "so it cannot run a program that uses %s (threads of a block that cooperate)\n",
            coop);
    return NVRTC_ERROR_COMPILATION;
  }
  size_t n = 0;
  if (real.GetPTXSize(s->real, &n) != NVRTC_SUCCESS || n < 2) {
    log_add(s, "sim-nvrtc: the simulator needs the program's PTX to find its kernels, and "
               "NVRTC produced none (-dlto?)\n");
    return NVRTC_ERROR_COMPILATION;
  }
  char *ptx = malloc(n);
  if (!ptx) return NVRTC_ERROR_OUT_OF_MEMORY;
  if (real.GetPTX(s->real, ptx) != NVRTC_SUCCESS) {
    free(ptx);
    return NVRTC_ERROR_INTERNAL_ERROR;
  }
  char **ents = NULL;
  int nents = ptx_entries(ptx, &ents);
  free(ptx);
  if (nents < 0) return NVRTC_ERROR_OUT_OF_MEMORY;

  nvrtcResult result = NVRTC_ERROR_OUT_OF_MEMORY;
  char *argv[300] = {0};
  buf_t src = {0};
  char dir[2048], tmpdir[2100] = "", so[2200], path[4096];
  int k = 0;
  buf_str(&src, sim_nvrtc_halfconv);
  buf_str(&src, sim_nvrtc_prelude);
  buf_str(&src, "#line 1 \"program.cu\"\n");
  buf_str(&src, s->src);
  buf_str(&src, "\n/* The kernels' CPU twins. */\n");
  for (int i = 0; i < nents; i++) {
    char *e = host_expr(ents[i]);
    if (!e) {
      log_add(s, "sim-nvrtc: cannot name kernel %s on the host\n", ents[i]);
      result = NVRTC_ERROR_COMPILATION;
      goto out;
    }
    buf_fmt(&src, "SIM_NVRTC_TWIN(%s, %s)\n", ents[i], e);
    free(e);
  }
  if (src.oom) goto out;

  /* The compiler's arguments: its own, then the program's, then the files. */
  const char *cxx = getenv("SIM_NVRTC_CXX");
  argv[k++] = strdup(cxx && *cxx ? cxx : "c++");
  static const char *const fixed[] = {"-O1", "-ffp-contract=off", "-shared", "-fPIC", "-w",
                                      "-Iinclude"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) argv[k++] = strdup(fixed[i]);
  k += host_options(nopts, opts, argv + k, 280);
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < k; i++) h = fnv(h, argv[i] ? argv[i] : "", argv[i] ? strlen(argv[i]) + 1 : 1);
  h = fnv(h, src.p, src.n);
  for (int i = 0; i < s->nheaders; i++) {
    h = fnv(h, s->names[i], strlen(s->names[i]) + 1);
    h = fnv(h, s->headers[i], strlen(s->headers[i]) + 1);
  }
  for (int i = 0; i < k; i++)
    if (!argv[i]) goto out;

  sim_nvrtc_cache_dir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/%016llx.so", dir, (unsigned long long)h);
  pthread_mutex_lock(&build_lock);
  if (access(so, R_OK) != 0) {
    /* Build in a folder of its own, then rename: a process sharing the cache sees either no
     * library or a whole one. */
    snprintf(tmpdir, sizeof tmpdir, "%s/build-XXXXXX", dir);
    if (mkdirs(dir) || !mkdtemp(tmpdir)) {
      pthread_mutex_unlock(&build_lock);
      log_add(s, "sim-nvrtc: cannot make a build folder in %s: %s\n", dir, strerror(errno));
      result = NVRTC_ERROR_INTERNAL_ERROR;
      goto out;
    }
    int bad = write_file(tmpdir, "program.cpp", src.p);
    /* CUDA's headers: their content is in the prelude. */
    static const char *const stubs[] = {"cuda_fp16.h", "cuda_bf16.h", "cuda_runtime.h",
                                        "cuda_fp16.hpp", "cuda_bf16.hpp", NULL};
    char inc[2200];
    snprintf(inc, sizeof inc, "%s/include", tmpdir);
    for (int i = 0; stubs[i]; i++) bad |= write_file(inc, stubs[i], "/* in the prelude */\n");
    for (int i = 0; i < s->nheaders; i++) bad |= write_file(inc, s->names[i], s->headers[i]);
    char *cargv[310];
    int c = 0;
    for (int i = 0; i < k; i++) cargv[c++] = argv[i];
    char inc_opt[4096], out_opt[4096], in_path[4096], log_path[4096], part[4096];
    snprintf(inc_opt, sizeof inc_opt, "-I%s", inc);
    snprintf(part, sizeof part, "%s/program.so", tmpdir);
    snprintf(out_opt, sizeof out_opt, "%s", part);
    snprintf(in_path, sizeof in_path, "%s/program.cpp", tmpdir);
    snprintf(log_path, sizeof log_path, "%s/compiler.log", tmpdir);
    cargv[6] = inc_opt; /* replaces the placeholder -Iinclude: the program's headers first */
    cargv[c++] = "-o";
    cargv[c++] = out_opt;
    cargv[c++] = in_path;
    cargv[c++] = (char *)self_path();
    cargv[c] = NULL;
    int rc = bad ? -1 : run_compiler(cargv, log_path);
    if (rc == 0 && rename(part, so) == 0) {
      result = NVRTC_SUCCESS;
    } else if (rc < 0) {
      log_add(s, "sim-nvrtc: cannot run the host compiler %s, which the simulator needs to run "
                 "NVRTC programs (SIM_NVRTC_CXX names another)\n", cargv[0]);
      result = NVRTC_ERROR_COMPILATION;
    } else {
      char *clog = read_text(log_path);
      log_add(s,
              "sim-nvrtc: the simulator compiles NVRTC programs for the host as C++ to run them, "
              "and that compilation failed (status %d):\n%s",
              rc, clog ? clog : "(no output)\n");
      free(clog);
      result = NVRTC_ERROR_COMPILATION;
    }
    /* The build folder goes; a failed build's files with it. */
    const char *files[] = {"program.cpp", "program.so", "compiler.log", NULL};
    for (int i = 0; files[i]; i++) {
      snprintf(path, sizeof path, "%s/%s", tmpdir, files[i]);
      unlink(path);
    }
    for (int i = 0; stubs[i]; i++) {
      snprintf(path, sizeof path, "%s/%s", inc, stubs[i]);
      unlink(path);
    }
    for (int i = 0; i < s->nheaders; i++) {
      snprintf(path, sizeof path, "%s/%s", inc, s->names[i]);
      unlink(path);
    }
    rmdir(inc);
    rmdir(tmpdir);
    if (result != NVRTC_SUCCESS) {
      pthread_mutex_unlock(&build_lock);
      goto out;
    }
  }
  /* Loaded for good: the kernels may run after the program is destroyed. */
  void *lib = dlopen(so, RTLD_NOW | RTLD_GLOBAL);
  pthread_mutex_unlock(&build_lock);
  if (!lib) {
    log_add(s, "sim-nvrtc: cannot load the host build %s: %s\n", so, dlerror());
    result = NVRTC_ERROR_INTERNAL_ERROR;
    goto out;
  }
  result = NVRTC_SUCCESS;
  /* Each kernel's name, linked to the build: a process that loads the program's CUBIN or PTX
   * without compiling it (a disk cache of compiled kernels) has the simulated driver find the
   * twins there (tests/sim/README.md, "NVRTC"). */
  for (int i = 0; i < nents; i++) {
    char link[4200], tmp[4300];
    snprintf(link, sizeof link, "%s/twin-%s.so", dir, ents[i]);
    snprintf(tmp, sizeof tmp, "%s.%d", link, (int)getpid());
    unlink(tmp);
    if (symlink(so, tmp) != 0 || rename(tmp, link) != 0) unlink(tmp);
  }
  for (int i = 0; i < nents; i++) {
    char sym[4096];
    snprintf(sym, sizeof sym, "sim_%s", ents[i]);
    void *mine = dlsym(lib, sym), *found = dlsym(RTLD_DEFAULT, sym);
    if (mine && found != mine) {
      /* The driver finds twins by name in the global scope: an earlier one would run instead. */
      log_add(s,
              "sim-nvrtc: kernel %s already has a CPU twin in this process (another NVRTC "
              "program with that kernel name, or the program's own), which the simulator would "
              "run instead of this one; give generated kernels distinct names\n",
              ents[i]);
      result = NVRTC_ERROR_COMPILATION;
    }
  }
out:
  for (int i = 0; i < k && i < 300; i++) free(argv[i]);
  free(src.p);
  for (int i = 0; i < nents; i++) free(ents[i]);
  free(ents);
  return result;
}

EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions,
                                       const char *const *options) {
  sim_prog_t *s = prog_of(prog);
  if (!s) return NVRTC_ERROR_INVALID_PROGRAM;
  free(s->log);
  s->log = NULL;
  nvrtcResult r = real.CompileProgram(s->real, numOptions, options);
  if (r != NVRTC_SUCCESS) return r;
  return host_build(s, numOptions, options);
}

/* ---- the rest of the real library's API: not simulated ---- */

static nvrtcResult not_simulated(const char *name) {
  fprintf(stderr, "sim-nvrtc: %s is not simulated\n", name);
  return NVRTC_ERROR_INTERNAL_ERROR;
}

#pragma GCC diagnostic ignored "-Wunused-parameter"
#define NOT_SIMULATED(name, ...) \
  EXPORT nvrtcResult name(__VA_ARGS__) { return not_simulated(#name); }
NOT_SIMULATED(nvrtcGetLTOIRSize, nvrtcProgram p, size_t *n)
NOT_SIMULATED(nvrtcGetLTOIR, nvrtcProgram p, char *c)
NOT_SIMULATED(nvrtcGetOptiXIRSize, nvrtcProgram p, size_t *n)
NOT_SIMULATED(nvrtcGetOptiXIR, nvrtcProgram p, char *c)
NOT_SIMULATED(nvrtcGetPCHHeapSize, size_t *n)
NOT_SIMULATED(nvrtcSetPCHHeapSize, size_t n)
NOT_SIMULATED(nvrtcGetPCHCreateStatus, nvrtcProgram p)
NOT_SIMULATED(nvrtcGetPCHHeapSizeRequired, nvrtcProgram p, size_t *n)
NOT_SIMULATED(nvrtcSetFlowCallback, nvrtcProgram p, int (*cb)(void *, void *), void *payload)
