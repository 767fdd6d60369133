/* drv-arch.c — the simulated driver loads what a real device and driver run, and refuses the rest.
 *
 * The device has compute capability 9.0. A cubin runs only on its own major architecture (an
 * sm_80 cubin: CUDA_ERROR_NO_BINARY_FOR_GPU); a fatbin loads through its best cubin, else
 * through PTX of an architecture not above the device's, which the driver compiles if it knows
 * the PTX's ISA version (else CUDA_ERROR_UNSUPPORTED_PTX_VERSION). Then the same under older
 * drivers (SIM_DRIVER_VERSION, in child processes, since the version is read once): 12.0, 12.4
 * and 12.9 refuse CUDA 13's cubins (ELF ABI 8) and its PTX (ISA 9.0), take PTX up to their own
 * ISA version (8.0, 8.4, 8.8), and load the library's fused kernels, which are built for them; a
 * value that is not a driver version stops the program with a message.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drv-common.h"

extern char **environ;

/* A kernel in PTX text of ISA `version` for `target`. */
static CUresult load_ptx(const char *version, const char *target) {
  char text[512];
  snprintf(text, sizeof text,
           ".version %s\n.target %s\n.address_size 64\n\n"
           ".visible .entry arch_k(\n\t.param .u64 arch_k_param_0\n)\n{\n\tret;\n}\n",
           version, target);
  CUmodule m;
  CUresult r = cuModuleLoadData(&m, text);
  if (r == CUDA_SUCCESS) {
    CUfunction f;
    CHECK_CU(cuModuleGetFunction(&f, m, "arch_k"));
    CHECK_CU(cuModuleUnload(m));
  }
  return r;
}

/* Loads $BUILD/tests/kernels/NAME; on success looks up one of its kernels and unloads it. */
static CUresult load_file(const char *name) {
  void *img = drv_test_read_kernel(name);
  CUmodule m;
  CUresult r = cuModuleLoadData(&m, img);
  if (r == CUDA_SUCCESS) {
    CUfunction f;
    CHECK_CU(cuModuleGetFunction(&f, m, "drv_add"));
    CHECK_CU(cuModuleUnload(m));
  }
  CUlibrary lib;
  CUresult rl = cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0);
  CHECK_INT(rl, ==, r); /* libraries load by the same rule */
  if (rl == CUDA_SUCCESS) CHECK_CU(cuLibraryUnload(lib));
  free(img);
  return r;
}

/* The library's fused kernels ($BUILD/gen/fused.fatbin, embedded in libautograph.so as it is):
 * loads, and has both kernels. */
static CUresult load_fused(void) {
  const char *build = getenv("BUILD");
  char path[4096];
  snprintf(path, sizeof path, "%s/gen/fused.fatbin", build ? build : "build");
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  static char img[1 << 20];
  size_t n = fread(img, 1, sizeof img, f);
  fclose(f);
  CHECK(n > 0 && n < sizeof img);
  CUmodule m;
  CUresult r = cuModuleLoadData(&m, img);
  if (r == CUDA_SUCCESS) {
    CUfunction fn;
    CHECK_CU(cuModuleGetFunction(&fn, m, "ag_fused_add_relu"));
    CHECK_CU(cuModuleGetFunction(&fn, m, "ag_fused_mul_add"));
    CHECK_CU(cuModuleUnload(m));
  }
  return r;
}

static void current_driver(void) {
  int v;
  CHECK_CU(cuDriverGetVersion(&v));
  CHECK_INT(v, ==, 13000);
  CHECK_INT(load_file("drv-kernels.cubin"), ==, CUDA_SUCCESS);         /* sm_90 */
  CHECK_INT(load_file("drv-kernels.sm80.cubin"), ==, CUDA_ERROR_NO_BINARY_FOR_GPU);
  CHECK_INT(load_file("drv-kernels.fatbin"), ==, CUDA_SUCCESS);        /* its compute_80 PTX */
  CHECK_INT(load_file("drv-kernels.z.fatbin"), ==, CUDA_SUCCESS);      /* the same, compressed */
  CHECK_INT(load_file("drv-kernels.ptx.fatbin"), ==, CUDA_SUCCESS);    /* PTX alone */
  CHECK_INT(load_ptx("9.0", "sm_90"), ==, CUDA_SUCCESS);
  CHECK_INT(load_ptx("8.0", "sm_75"), ==, CUDA_SUCCESS);
  CHECK_INT(load_ptx("9.0", "sm_100"), ==, CUDA_ERROR_NO_BINARY_FOR_GPU); /* above the device */
  CHECK_INT(load_ptx("9.1", "sm_80"), ==, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  CHECK_INT(load_fused(), ==, CUDA_SUCCESS);
}

static void older_driver(int version) {
  int v;
  CHECK_CU(cuDriverGetVersion(&v));
  CHECK_INT(v, ==, version);
  CHECK_INT(load_file("drv-kernels.cubin"), ==, CUDA_ERROR_NO_BINARY_FOR_GPU); /* ELF ABI 8 */
  CHECK_INT(load_file("drv-kernels.ptx.fatbin"), ==, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  CHECK_INT(load_file("drv-kernels.fatbin"), ==, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  CHECK_INT(load_ptx("8.0", "sm_75"), ==, CUDA_SUCCESS);
  const char *newest = version == 12000 ? "8.0" : version == 12040 ? "8.4" : "8.8";
  const char *newer = version == 12000 ? "8.1" : version == 12040 ? "8.5" : "9.0";
  CHECK_INT(load_ptx(newest, "sm_90"), ==, CUDA_SUCCESS);
  CHECK_INT(load_ptx(newer, "sm_90"), ==, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  /* What nvcc 13 makes by default (drv-kernels.fatbin) does not load here; the fused kernels do,
   * on every driver of CUDA 12 (shims/build.mk). */
  CHECK_INT(load_fused(), ==, CUDA_SUCCESS);
}

/* Runs this program again with SIM_DRIVER_VERSION=value and argument `mode`; its exit status,
 * its stderr in `err` (when not NULL). */
static int run_child(const char *value, const char *mode, const char *err) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (err) {
      int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(126);
      dup2(fd, 2);
    }
    setenv("SIM_DRIVER_VERSION", value, 1);
    char *argv[] = {(char *)"drv-arch", (char *)mode, NULL};
    execve("/proc/self/exe", argv, environ);
    _exit(127);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
  if (argc > 1) { /* a child: an older driver */
    drv_test_init();
    older_driver(atoi(argv[1]));
    return 0;
  }
  drv_test_init();
  current_driver();
  CHECK_INT(run_child("12000", "12000", NULL), ==, 0);
  CHECK_INT(run_child("12040", "12040", NULL), ==, 0);
  CHECK_INT(run_child("12090", "12090", NULL), ==, 0);
  CHECK_INT(run_child("12.4", "12040", "bad-version.err"), ==, 2);
  FILE *f = fopen("bad-version.err", "r");
  char line[256] = "";
  CHECK(f && fgets(line, sizeof line, f));
  fclose(f);
  CHECK(strstr(line, "SIM_DRIVER_VERSION=12.4: not a driver version") != NULL);
  printf("drv-arch: ok\n");
  return 0;
}
