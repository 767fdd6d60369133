/* ag-jit.c — the run-time compiler (src/jit.h) on the simulator, with the simulated NVRTC
 * (tests/sim/README.md, "NVRTC"), which compiles with the toolkit's real NVRTC.
 *
 * The checks that need a process of their own run as this program again (/proc/self/exe PHASE),
 * each a fresh process with its own environment, so that "the next run of the program" is a
 * real new process and the one-time search for NVRTC starts from nothing each time:
 *   compile     a kernel is compiled, loaded through the driver table, launched, and its
 *               results equal the host's arithmetic bit for bit; one compile, no cache hit; the
 *               cache file and folder are private; a compile error ends FAILED with NVRTC's log,
 *               and an option that would round differently is refused
 *   hit         the same request in a new process: no compile, one cache hit, the same image,
 *               which loads (it is not launched: on the simulator a generated kernel runs
 *               through the host build the simulated NVRTC makes when it compiles, and a hit
 *               does not compile)
 *   recompile   after the cache file was truncated, after one byte of it was changed, and after
 *               bytes were appended to it, and when it holds a whole entry of another key: each
 *               is detected (rejected 1, no hit), the kernel compiled again, the file replaced
 *               by a whole one (a later `hit` hits)
 *   nonvrtc     AUTOGRAPH_NVRTC naming a missing file: FAILED with the reason, the service
 *               off, and one line in the log however many requests follow
 *   newer       an NVRTC newer than the driver (SIM_DRIVER_VERSION=12080): refused
 *   unwritable  a cache folder that cannot be made: compiles anyway (twice: nothing kept), one
 *               line in the log
 *   fork        a fork while a request is compiled: in the child it is no longer pending
 *   disabled    AUTOGRAPH_DISABLE=1: no request is taken
 * and, in this process, the cache's bound (ag__jit_cache_trim) on made-up files.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "jit.h"
#include "real.h"
#include "stats.h"

extern char **environ;

static const char source[] =
    "extern \"C\" __global__ void agjit_affine(float *x, float a, float b, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] = x[i] * a + b;\n"
    "}\n";
static const char bad_source[] =
    "extern \"C\" __global__ void agjit_bad(float *x) { x[0] = agjit_undeclared_name; }\n";
static const char *const options[] = {"-DAGJIT_UNUSED=1", NULL};
#define TAG "ag-jit test build"
#define N 1000

/* ---- the phases (child processes) ---- */

static void setup(void) {
  CUcontext ctx;
  ag__config_load();
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK_CU(cuCtxSetCurrent(ctx));
  /* What shims/cuda.c would resolve through the driver's getter. */
  ag__real.cuCtxGetDevice = cuCtxGetDevice;
  ag__real.cuDeviceGetAttribute = cuDeviceGetAttribute;
  ag__real.cuModuleLoadData = cuModuleLoadData;
  ag__real.cuModuleGetFunction = cuModuleGetFunction;
  ag__real.cuModuleUnload = cuModuleUnload;
  CHECK_CU(cuDriverGetVersion(&ag__real.driver_version));
  ag__real_mark_ready();
}

/* Polls until h is no longer PENDING: a bounded number of short sleeps, generous enough for a
 * compilation on a loaded machine (the runner's own limit is the real bound). */
static int wait_done(ag_jit_t *h) {
  struct timespec ms50 = {0, 50 * 1000000L};
  for (int i = 0; i < 3400; i++) {
    int st = ag__jit_poll(h, NULL, NULL, NULL);
    if (st != AG_JIT_PENDING) return st;
    nanosleep(&ms50, NULL);
  }
  CHECK_FAIL_("the request is still pending after 170 s");
}

static void *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  long len = ftell(f);
  CHECK(len >= 0 && fseek(f, 0, SEEK_SET) == 0);
  void *p = malloc((size_t)len + 1);
  CHECK(p && fread(p, 1, (size_t)len, f) == (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return p;
}

static void write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(p, 1, n, f) == n);
  CHECK(fclose(f) == 0);
}

/* Submits the kernel and waits; checks READY and returns the handle. */
static ag_jit_t *compile_affine(void) {
  const char *why = NULL;
  ag_jit_t *h = ag__jit_submit(source, "agjit_affine", options, TAG);
  CHECK(h);
  int st = wait_done(h);
  if (st != AG_JIT_READY) {
    ag__jit_poll(h, NULL, NULL, &why);
    CHECK_FAIL_("the kernel did not compile: %s", why ? why : "?");
  }
  CHECK_INT(ag__jit_kind(h), ==, AG_JIT_CUBIN); /* NVRTC 13 knows the device's sm_90 */
  return h;
}

/* The image of h equals the file `path`. */
static void check_same_image(ag_jit_t *h, const char *path) {
  const void *img = NULL;
  size_t n = 0, want_n;
  void *want = read_file(path, &want_n);
  CHECK_INT(ag__jit_poll(h, &img, &n, NULL), ==, AG_JIT_READY);
  CHECK_INT(n, ==, want_n);
  CHECK(memcmp(img, want, n) == 0);
  free(want);
}

static void check_stats(uint64_t compiles, uint64_t hits, uint64_t rejected, uint64_t failures) {
  CHECK_INT(ag__stats.jit_compiles, ==, compiles);
  CHECK_INT(ag__stats.jit_cache_hits, ==, hits);
  CHECK_INT(ag__stats.jit_cache_rejected, ==, rejected);
  CHECK_INT(ag__stats.jit_failures, ==, failures);
}

/* Loads h through the driver table, launches it, compares with the host's float arithmetic. */
static void load_and_run(ag_jit_t *h) {
  CUmodule m;
  CUfunction f;
  int cu = -1;
  CHECK_INT(ag__jit_load(h, &m, &f, &cu), ==, 0);
  CHECK_INT(cu, ==, CUDA_SUCCESS);
  float host[N], out[N], a = 1.5f, b = 0.1f;
  int n = N;
  for (int i = 0; i < N; i++) host[i] = (float)i * 0.37f - 11.0f;
  CUdeviceptr d;
  CHECK_CU(cuMemAlloc(&d, sizeof host));
  CHECK_CU(cuMemcpyHtoD(d, host, sizeof host));
  void *args[] = {&d, &a, &b, &n};
  CHECK_CU(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
  CHECK_CU(cuCtxSynchronize());
  CHECK_CU(cuMemcpyDtoH(out, d, sizeof out));
  for (int i = 0; i < N; i++) {
    volatile float p = host[i] * a; /* rounded once, then the sum: as --fmad=false compiles it */
    float want = p + b;
    if (memcmp(&want, &out[i], sizeof want) != 0)
      CHECK_FAIL_("x[%d] = %a, expected %a", i, (double)out[i], (double)want);
  }
  CHECK_CU(cuMemFree(d));
  CHECK_CU(cuModuleUnload(m));
}

static void phase_compile(const char *image_out) {
  setup();
  ag_jit_t *h = compile_affine();
  check_stats(1, 0, 0, 0);
  load_and_run(h);

  const void *img;
  size_t size;
  CHECK_INT(ag__jit_poll(h, &img, &size, NULL), ==, AG_JIT_READY);
  write_file(image_out, img, size);
  ag__jit_release(h);

  /* A compile error: FAILED, with NVRTC's log naming the culprit; nothing cached. */
  const char *why = NULL;
  h = ag__jit_submit(bad_source, "agjit_bad", NULL, TAG);
  CHECK(h);
  CHECK_INT(wait_done(h), ==, AG_JIT_FAILED);
  CHECK_INT(ag__jit_poll(h, NULL, NULL, &why), ==, AG_JIT_FAILED);
  printf("compile error: %s\n", why);
  CHECK(strstr(why, "NVRTC_ERROR_COMPILATION"));
  CHECK(strstr(why, "agjit_undeclared_name"));
  CUmodule m;
  CUfunction f;
  CHECK_INT(ag__jit_load(h, &m, &f, NULL), ==, -AG_EBUSY);
  ag__jit_release(h);
  check_stats(1, 0, 0, 1);

  /* Options that would change the rounding are refused, before NVRTC sees them. */
  static const char *const fast[] = {"--use_fast_math", NULL};
  h = ag__jit_submit(source, "agjit_affine", fast, TAG);
  CHECK(h);
  CHECK_INT(wait_done(h), ==, AG_JIT_FAILED);
  ag__jit_poll(h, NULL, NULL, &why);
  CHECK(strstr(why, "--use_fast_math"));
  ag__jit_release(h);
  check_stats(1, 0, 0, 2);
}

static void phase_hit(const char *image) {
  setup();
  ag_jit_t *h = compile_affine();
  check_stats(0, 1, 0, 0);
  check_same_image(h, image);
  /* Nothing was compiled in this process: on the simulator the kernel runs through the host
   * build its NVRTC linked by name when another process compiled it. */
  load_and_run(h);
  ag__jit_release(h);
  /* A request dropped at once: abandoned or served, whichever comes first, never leaked (the
   * sanitizer runs check that). */
  ag__jit_release(ag__jit_submit(source, "agjit_affine", options, TAG));
}

static void phase_recompile(const char *image) {
  setup();
  ag_jit_t *h = compile_affine();
  check_stats(1, 0, 1, 0);
  check_same_image(h, image);
  ag__jit_release(h);
}

static void phase_nonvrtc(void) {
  const char *why = NULL;
  setup();
  ag_jit_t *h = ag__jit_submit(source, "agjit_affine", options, TAG);
  CHECK(h);
  CHECK_INT(wait_done(h), ==, AG_JIT_FAILED);
  ag__jit_poll(h, NULL, NULL, &why);
  printf("reason: %s\n", why);
  CHECK(strstr(why, "AUTOGRAPH_NVRTC="));
  CHECK(strstr(why, "no-such-libnvrtc.so"));
  CHECK_INT(ag__jit_available(), ==, 0);
  ag__jit_release(h);
  /* Known off: the next requests fail at once, and say nothing more. */
  for (int i = 0; i < 3; i++) {
    h = ag__jit_submit(source, "agjit_affine", options, TAG);
    CHECK(h);
    CHECK_INT(ag__jit_poll(h, NULL, NULL, &why), ==, AG_JIT_FAILED);
    CHECK(strstr(why, "AUTOGRAPH_NVRTC="));
    ag__jit_release(h);
  }
  check_stats(0, 0, 0, 4);
}

static void phase_newer(void) {
  const char *why = NULL;
  setup();
  CHECK_INT(ag__real.driver_version, ==, 12080);
  ag_jit_t *h = ag__jit_submit(source, "agjit_affine", options, TAG);
  CHECK(h);
  CHECK_INT(wait_done(h), ==, AG_JIT_FAILED);
  ag__jit_poll(h, NULL, NULL, &why);
  printf("reason: %s\n", why);
  CHECK(strstr(why, "newer than the driver"));
  ag__jit_release(h);
  check_stats(0, 0, 0, 1);
}

static void phase_unwritable(void) {
  setup();
  for (int i = 1; i <= 2; i++) { /* each compiles: nothing was kept */
    ag_jit_t *h = compile_affine();
    check_stats(i, 0, 0, 0);
    ag__jit_release(h);
  }
}

/* A fork while a request is being compiled: the child has no compiler thread, so what it
 * inherited pending must end there at once (FAILED, "abandoned: the process forked"), unless it
 * was done before the fork. The cache is off (AUTOGRAPH_CACHE_DIR=off), so the request is
 * compiled, not read, and still pending when the fork comes but on an extremely fast compiler.
 * The parent's own request completes as if nothing happened. */
static void phase_fork(void) {
  setup();
  ag_jit_t *h = ag__jit_submit(source, "agjit_affine", options, TAG);
  CHECK(h);
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    const char *why = NULL;
    int st = ag__jit_poll(h, NULL, NULL, &why);
    printf("child: %s%s\n", st == AG_JIT_READY ? "ready" : st == AG_JIT_FAILED ? "failed: " : "pending",
           st == AG_JIT_FAILED ? why : "");
    fflush(stdout);
    /* _exit: a child of a process that used CUDA must not run its exit handlers (the simulated
     * driver stops such a child, as a real one can hang there). */
    _exit(st == AG_JIT_READY || (st == AG_JIT_FAILED && strstr(why, "forked")) ? 0 : 1);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_INT(wait_done(h), ==, AG_JIT_READY);
  check_stats(1, 0, 0, 0);
  ag__jit_release(h);
}

/* Exit while NVRTC compiles: after one compilation (NVRTC's destructors are all registered by
 * then, src/jit.c), requests of distinct sources (no cache: each is compiled) and the process
 * returns from main once the first has been taken. Exit destroys NVRTC's own objects; the exit
 * handler waits for the compilation running, so the process exits 0 instead of crashing inside
 * NVRTC. */
static ag_jit_t *exit_handles[4];

/* Registered before the service's own handlers, so it runs after them (exit runs handlers in the
 * reverse order): the compilation running has ended, and the handles are released (the leak
 * checker of the sanitizer runs sees nothing lost). */
static void release_exit_handles(void) {
  for (int i = 0; i < 4; i++) ag__jit_release(exit_handles[i]);
}

static void phase_exit(void) {
  char src[sizeof source + 64];
  setup();
  atexit(release_exit_handles);
  ag__jit_release(compile_affine());
  for (int i = 0; i < 4; i++) {
    snprintf(src, sizeof src, "%s// variant %d\n", source, i);
    CHECK(exit_handles[i] = ag__jit_submit(src, "agjit_affine", options, TAG));
  }
  struct timespec ms20 = {0, 20 * 1000000L};
  nanosleep(&ms20, NULL);
}

static void phase_disabled(void) {
  setup();
  CHECK(ag__config.disable);
  CHECK_PTR(ag__jit_submit(source, "agjit_affine", options, TAG), ==, NULL);
  CHECK_INT(ag__jit_available(), ==, 0);
}

/* ---- the parent ---- */

static char tmp[2048];

/* Runs PHASE [ARG] as a new process with the environment as it is now, stderr into `err` (when
 * given); checks that it exits 0. */
static void run(const char *phase, const char *arg, const char *err) {
  posix_spawn_file_actions_t fa;
  char *argv[] = {(char *)"ag-jit", (char *)phase, (char *)arg, NULL};
  pid_t pid;
  int status;
  CHECK(posix_spawn_file_actions_init(&fa) == 0);
  if (err) CHECK(posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644) == 0);
  printf("--- phase %s\n", phase);
  fflush(stdout);
  CHECK(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  CHECK(waitpid(pid, &status, 0) == pid);
  if (err) {
    size_t n;
    char *text = read_file(err, &n);
    text[n] = 0;
    fputs(text, stdout);
    free(text);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) CHECK_FAIL_("phase %s failed (status %#x)", phase, status);
}

/* Lines of the file that contain `what`. */
static int count_lines(const char *path, const char *what) {
  size_t n;
  char *text = read_file(path, &n), *line, *save = NULL;
  int k = 0;
  text[n] = 0;
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    k += strstr(line, what) != NULL;
  free(text);
  return k;
}

/* The one cache file of `dir` (a compile writes exactly one), into path. */
static void only_cache_file(const char *dir, char *path, size_t size) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
  FILE *p = popen(cmd, "r");
  char name[256];
  int k = 0;
  CHECK(p);
  while (fgets(name, sizeof name, p)) {
    name[strcspn(name, "\n")] = 0;
    CHECK(strlen(name) == 32 + strlen(".agjit") && strstr(name, ".agjit"));
    snprintf(path, size, "%s/%s", dir, name);
    k++;
  }
  pclose(p);
  CHECK_INT(k, ==, 1);
}

static void trim_test(void) {
  char dir[2100], path[2200];
  struct stat st;
  snprintf(dir, sizeof dir, "%s/trim", tmp);
  CHECK(mkdir(dir, 0700) == 0);
  /* Five entries of 10 bytes, a (oldest) to e, and a file that is not an entry. */
  for (int i = 0; i < 5; i++) {
    struct timespec t[2] = {{1000000 + i * 100, 0}, {1000000 + i * 100, 0}};
    snprintf(path, sizeof path, "%s/%c.agjit", dir, 'a' + i);
    write_file(path, "0123456789", 10);
    CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
  }
  snprintf(path, sizeof path, "%s/other.txt", dir);
  write_file(path, "not an entry, older than all", 28);
  struct timespec old[2] = {{1, 0}, {1, 0}};
  CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);

  /* Temporaries: one a dead writer left long ago, one being written now. */
  snprintf(path, sizeof path, "%s/.tmp.1.0", dir);
  write_file(path, "x", 1);
  CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
  snprintf(path, sizeof path, "%s/.tmp.2.0", dir);
  write_file(path, "x", 1);

  CHECK_INT(ag__jit_cache_trim(dir, 5, 1000), ==, 0);      /* within both bounds */
  snprintf(path, sizeof path, "%s/.tmp.1.0", dir);
  CHECK(stat(path, &st) != 0);
  snprintf(path, sizeof path, "%s/.tmp.2.0", dir);
  CHECK(stat(path, &st) == 0);
  CHECK_INT(ag__jit_cache_trim(dir, 3, 1000), ==, 2);      /* by count: a and b */
  CHECK_INT(ag__jit_cache_trim(dir, 100, 25), ==, 1);      /* by bytes: c */
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%c.agjit", dir, 'a' + i);
    CHECK_INT(stat(path, &st) == 0, ==, i >= 3);
  }
  snprintf(path, sizeof path, "%s/other.txt", dir);
  CHECK(stat(path, &st) == 0);
  snprintf(path, sizeof path, "%s/missing", dir);
  CHECK_INT(ag__jit_cache_trim(path, 1, 1), ==, -AG_ENOENT);
  printf("trim: the oldest entries go first, by count and by bytes; old temporaries go\n");
}

int main(int argc, char **argv) {
  char cache[2100], image[2100], file[2200], err[2100], nvrtc[2100], blocker[2100];
  struct stat st;
  if (argc > 1) {
    const char *arg = argc > 2 ? argv[2] : "";
    if (!strcmp(argv[1], "compile")) phase_compile(arg);
    else if (!strcmp(argv[1], "hit")) phase_hit(arg);
    else if (!strcmp(argv[1], "recompile")) phase_recompile(arg);
    else if (!strcmp(argv[1], "nonvrtc")) phase_nonvrtc();
    else if (!strcmp(argv[1], "newer")) phase_newer();
    else if (!strcmp(argv[1], "unwritable")) phase_unwritable();
    else if (!strcmp(argv[1], "disabled")) phase_disabled();
    else if (!strcmp(argv[1], "fork")) phase_fork();
    else if (!strcmp(argv[1], "exit")) phase_exit();
    else CHECK_FAIL_("unknown phase %s", argv[1]);
    return 0;
  }

  CHECK(getcwd(tmp, sizeof tmp - 200));
  snprintf(cache, sizeof cache, "%s/cache/sub", tmp); /* the folders are made as needed */
  snprintf(image, sizeof image, "%s/image", tmp);
  snprintf(err, sizeof err, "%s/stderr", tmp);
  snprintf(file, sizeof file, "%s/sim-nvrtc", tmp);
  setenv("SIM_NVRTC_CACHE", file, 1);
  setenv("AUTOGRAPH_CACHE_DIR", cache, 1);
  unsetenv("AUTOGRAPH_NVRTC");
  unsetenv("AUTOGRAPH_DISABLE");
  setenv("AUTOGRAPH_LOG", "warn", 1);

  run("compile", image, NULL);
  CHECK(stat(cache, &st) == 0);
  CHECK_INT(st.st_mode & 0777, ==, 0700);
  only_cache_file(cache, file, sizeof file);
  CHECK(stat(file, &st) == 0);
  CHECK_INT(st.st_mode & 0777, ==, 0600);
  off_t whole = st.st_size;
  /* The options NVRTC got, as the entry's key records them in order: the device's architecture
   * (the simulated device is of compute capability 9.0), --fmad=false (no product and sum fused
   * into one rounding: on the simulator both round the same, so only the options show it), then
   * the caller's. */
  {
    static const char want[] = "\0--gpu-architecture=sm_90\0--fmad=false\0-DAGJIT_UNUSED=1\0\0";
    size_t n;
    void *p = read_file(file, &n);
    CHECK(memmem(p, n, want, sizeof want - 1) != NULL);
    free(p);
  }

  run("hit", image, NULL);

  /* Truncated: the second half of the file lost. */
  CHECK(truncate(file, whole / 2) == 0);
  run("recompile", image, NULL);
  CHECK(stat(file, &st) == 0);
  CHECK_INT(st.st_size, ==, whole);
  /* One byte of the image changed (the length still right): the checksum catches it. */
  {
    size_t n;
    unsigned char *p = read_file(file, &n);
    p[n - 1] ^= 0x40;
    write_file(file, p, n);
    free(p);
  }
  run("recompile", image, NULL);
  run("hit", image, NULL);
  setenv("AUTOGRAPH_CACHE_DIR", "off", 1); /* so that the request is compiled */
  run("fork", NULL, NULL);
  for (int i = 0; i < 3; i++) run("exit", NULL, NULL);
  setenv("AUTOGRAPH_CACHE_DIR", cache, 1);
  /* Longer than its header says (appended to): rejected too. */
  {
    FILE *f = fopen(file, "ab");
    CHECK(f && fputs("tail", f) >= 0 && fclose(f) == 0);
  }
  run("recompile", image, NULL);
  run("hit", image, NULL);
  /* A whole entry of another key under this name (what a collision of the file names would
   * give): the tag changed in its key and the checksum made right again. Rejected: the key is
   * compared in full. */
  {
    size_t n;
    unsigned char *p = read_file(file, &n), *tag = memmem(p, n, TAG, strlen(TAG));
    uint64_t h = 0xcbf29ce484222325ull;
    CHECK(tag && n > 40);
    tag[0] ^= 0x20;
    for (size_t i = 40; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull; /* FNV-1a, src/jit.c */
    memcpy(p + 32, &h, sizeof h); /* the header's checksum field */
    write_file(file, p, n);
    free(p);
  }
  run("recompile", image, NULL);
  run("hit", image, NULL);
  only_cache_file(cache, file, sizeof file);

  /* AUTOGRAPH_NVRTC naming a file that does not exist: off, said once. */
  snprintf(nvrtc, sizeof nvrtc, "%s/no-such-libnvrtc.so", tmp);
  setenv("AUTOGRAPH_NVRTC", nvrtc, 1);
  run("nonvrtc", NULL, err);
  CHECK_INT(count_lines(err, "autograph: kernels compiled at run time are off: AUTOGRAPH_NVRTC="), ==, 1);
  CHECK_INT(count_lines(err, "autograph: "), ==, 1);

  /* The simulated NVRTC 13 with a CUDA 12.8 driver: what it compiles could not load. */
  const char *build = getenv("BUILD");
  snprintf(nvrtc, sizeof nvrtc, "%s/sim/libnvrtc.so.13", build ? build : "build");
  setenv("AUTOGRAPH_NVRTC", nvrtc, 1);
  setenv("SIM_DRIVER_VERSION", "12080", 1);
  run("newer", NULL, err);
  CHECK_INT(count_lines(err, "newer than the driver"), ==, 1);
  unsetenv("SIM_DRIVER_VERSION");
  unsetenv("AUTOGRAPH_NVRTC");

  /* A cache folder that cannot be made (below a regular file, which even root cannot get
   * past): the kernel is compiled all the same, and the log says once that it is not kept. */
  snprintf(blocker, sizeof blocker, "%s/blocker", tmp);
  write_file(blocker, "", 0);
  snprintf(file, sizeof file, "%s/sub", blocker);
  setenv("AUTOGRAPH_CACHE_DIR", file, 1);
  run("unwritable", NULL, err);
  CHECK_INT(count_lines(err, "autograph: cannot write compiled kernels to "), ==, 1);

  setenv("AUTOGRAPH_DISABLE", "1", 1);
  run("disabled", NULL, err);
  CHECK_INT(count_lines(err, "autograph: "), ==, 0);
  unsetenv("AUTOGRAPH_DISABLE");

  trim_test();
  printf("ag-jit: all checks passed\n");
  return 0;
}
