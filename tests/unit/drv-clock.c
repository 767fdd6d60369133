/* drv-clock.c — the simulated driver's modelled clock (tests/sim/driver/clock.c): exact modelled
 * times of kernels on one stream with host work between launches, synchronisations moving the
 * host clock, an event wait across two streams, a graph of three kernel nodes with a gap between
 * nodes and with a disabled node, the legacy stream's implicit dependencies, durations per block
 * and by name pattern, copies, and the report's steps (written at exit, so checked in child
 * processes with their own settings, as is the warning for a malformed SIM_KERNEL_NS and the
 * behaviour with nothing set).
 *
 * Every expected figure below is derived in its comment from the settings in main, so that each
 * check fails when one rule of the model changes. */
#include "drv-common.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

void simctl_host_work(unsigned long long ns);
int simctl_clock(unsigned long long *host_ns, unsigned long long *busy_ns,
                 unsigned long long *idle_ns);

SIM_KERNEL(drv_add) {
  float *x = SIM_ARG(0, float *);
  float a = SIM_ARG(1, float);
  int n = SIM_ARG(2, int);
  for (unsigned long i = 0; i < (unsigned long)sim_grid.x * sim_block.x; i++)
    if ((int)i < n) x[i] += a;
}

SIM_KERNEL(drv_slow_set) {
  (void)sim_grid, (void)sim_block;
  *SIM_ARG(0, int *) = SIM_ARG(1, int);
}

SIM_KERNEL(drv_mixed) {
  (void)sim_grid, (void)sim_block;
  int *out = SIM_ARG(2, int *);
  out[0] = SIM_ARG(0, char);
}

static CUfunction add, slow_set, mixed;
static CUdeviceptr buf;

static void load(void) {
  void *img = drv_test_read_kernel("drv-kernels.cubin");
  CUmodule m;
  CHECK_CU(cuModuleLoadData(&m, img));
  CHECK_CU(cuModuleGetFunction(&add, m, "drv_add"));
  CHECK_CU(cuModuleGetFunction(&slow_set, m, "drv_slow_set"));
  CHECK_CU(cuModuleGetFunction(&mixed, m, "drv_mixed"));
  free(img);
  CHECK_CU(cuMemAlloc_v2(&buf, 4096));
}

/* drv_add over a grid of gx × gy blocks of 32 threads. */
static void launch_add(unsigned gx, unsigned gy, CUstream s) {
  float a = 1;
  int n = 32;
  void *args[] = {&buf, &a, &n};
  CHECK_CU(cuLaunchKernel(add, gx, gy, 1, 32, 1, 1, 0, s, args, NULL));
}

static void launch_set(CUstream s) {
  CUdeviceptr p = buf + 2048;
  int v = 7;
  void *args[] = {&p, &v};
  CHECK_CU(cuLaunchKernel(slow_set, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static void launch_mixed(CUstream s) {
  char c = 1;
  double d = 2;
  CUdeviceptr out = buf + 3072;
  short sh = 3;
  void *args[] = {&c, &d, &out, &sh};
  CHECK_CU(cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

typedef struct clk {
  unsigned long long host, busy, idle, end; /* end: the device end, idle + busy */
} clk_t;

static clk_t now(void) {
  clk_t c;
  CHECK_INT(simctl_clock(&c.host, &c.busy, &c.idle), ==, 0);
  c.end = c.idle + c.busy;
  return c;
}

/* Settings of the main process (see main):
 *   launch 1000 (host), latency 300, graph launch 1500 + 10 per node (host), node gap 50,
 *   node update 200 (host), copies and memsets 400,
 *   SIM_KERNEL_NS=drv_add:5000+100,drv_s*:2000,drv_a*:7
 * so drv_add with b blocks takes 5000 + 100 b (its first rule wins over drv_a*), drv_slow_set
 * 2000 (pattern drv_s*), drv_mixed 0 (no rule matches). */

/* One stream: each kernel starts at max(host clock + latency, the previous kernel's end). */
static void test_one_stream(void) {
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  clk_t c0 = now();
  CHECK_INT(c0.end, <=, c0.host); /* the device is idle: the tests below start from here */
  unsigned long long h = c0.host;
  simctl_host_work(10000);
  CHECK_INT(now().host, ==, h + 10000);
  launch_add(2, 1, s); /* host h+11000, runs [h+11300, h+16500) */
  CHECK_INT(now().host, ==, h + 11000);
  simctl_host_work(1000);
  launch_add(1, 2, s); /* host h+13000, waits for the first: [h+16500, h+21700) */
  simctl_host_work(20000);
  launch_set(s);       /* host h+34000, the stream is idle: [h+34300, h+36300) */
  clk_t c1 = now();
  CHECK_INT(c1.host, ==, h + 34000);
  CHECK_INT(c1.end, ==, h + 36300);
  CHECK_INT(c1.busy - c0.busy, ==, 5200 + 5200 + 2000);
  /* Idle: before the first kernel, and between the second and the third. */
  CHECK_INT(c1.idle - c0.idle, ==, (h + 11300 - c0.end) + (34300 - 21700));
  /* A query leaves the host clock alone, whatever it answers. */
  CUresult q = cuStreamQuery(s);
  CHECK(q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY);
  CHECK_INT(now().host, ==, h + 34000);
  /* A synchronisation moves the host clock to the end of the work it waited for. */
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT(now().host, ==, h + 36300);
  CHECK_CU(cuStreamSynchronize(s)); /* nothing left: no change */
  CHECK_CU(cuCtxSynchronize());
  CHECK_INT(now().host, ==, h + 36300);
  CHECK_CU(cuStreamDestroy(s));
}

/* Durations by grid and by name: drv_add over 4 × 2 blocks takes 5800, drv_mixed (no rule) 0. */
static void test_durations(void) {
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  clk_t c0 = now();
  unsigned long long h = c0.host;
  launch_add(4, 2, s); /* [h+1300, h+7100) */
  CHECK_CU(cuStreamSynchronize(s));
  clk_t c1 = now();
  CHECK_INT(c1.host, ==, h + 7100);
  CHECK_INT(c1.busy - c0.busy, ==, 5800);
  launch_mixed(s); /* host h+8100: [h+8400, h+8400) */
  CHECK_CU(cuStreamSynchronize(s));
  clk_t c2 = now();
  CHECK_INT(c2.host, ==, h + 8400);
  CHECK_INT(c2.busy, ==, c1.busy);
  CHECK_INT(c2.end, ==, h + 8400);
  /* A synchronous copy to the host waits: [h+8700, h+9100) on the legacy stream. */
  int v = 0;
  CHECK_CU(cuMemcpyDtoH_v2(&v, buf + 2048, sizeof v));
  clk_t c3 = now();
  CHECK_INT(c3.host, ==, h + 9100);
  CHECK_INT(c3.busy - c2.busy, ==, 400);
  /* An asynchronous memset does not: [h+9400, h+9800), the host stays. */
  CHECK_CU(cuMemsetD32Async(buf, 0, 16, s));
  CHECK_INT(now().host, ==, h + 9100);
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT(now().host, ==, h + 9800);
  CHECK_CU(cuStreamDestroy(s));
}

/* An event recorded on one stream and waited for on another orders the second stream's kernel
 * after the first stream's work, in modelled time too. */
static void test_event_wait(void) {
  CUstream s1, s2;
  CUevent ev;
  CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  unsigned long long h = now().host;
  launch_set(s1);       /* host h+1000: [h+1300, h+3300) */
  launch_add(1, 1, s1); /* host h+2000: [h+3300, h+8400) */
  CHECK_CU(cuEventRecord(ev, s1)); /* completes at h+8400 */
  CHECK_CU(cuStreamWaitEvent(s2, ev, 0));
  launch_set(s2);       /* host h+3000, waits for the event: [h+8400, h+10400) */
  CUresult q = cuEventQuery(ev);
  CHECK(q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY);
  CHECK_INT(now().host, ==, h + 3000);
  CHECK_CU(cuEventSynchronize(ev));
  CHECK_INT(now().host, ==, h + 8400);
  CHECK_CU(cuStreamSynchronize(s2));
  CHECK_INT(now().host, ==, h + 10400);
  CHECK_INT(now().end, ==, h + 10400);
  CHECK_CU(cuEventDestroy(ev));
  CHECK_CU(cuStreamDestroy(s1));
  CHECK_CU(cuStreamDestroy(s2));
}

static CUgraphNode add_kernel_node(CUgraph g, CUgraphNode dep, CUfunction f, unsigned gx,
                                   void **args) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.func = f;
  p.gridDimX = gx, p.gridDimY = 1, p.gridDimZ = 1;
  p.blockDimX = 32, p.blockDimY = 1, p.blockDimZ = 1;
  p.kernelParams = args;
  CUgraphNode n;
  CHECK_CU(cuGraphAddKernelNode(&n, g, dep ? &dep : NULL, dep ? 1 : 0, &p));
  return n;
}

/* A graph of three kernel nodes runs them one after another with the node gap between them;
 * a disabled node takes neither time nor a gap. */
static void test_graph(void) {
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  float a = 1;
  int n = 32, v = 9;
  CUdeviceptr p = buf + 2048;
  void *add_args[] = {&buf, &a, &n}, *set_args[] = {&p, &v};
  CUgraph g;
  CUgraphExec x;
  CHECK_CU(cuGraphCreate(&g, 0));
  CUgraphNode k1 = add_kernel_node(g, NULL, add, 3, add_args);     /* 5300 */
  CUgraphNode k2 = add_kernel_node(g, k1, slow_set, 1, set_args);  /* 2000 */
  add_kernel_node(g, k2, add, 1, add_args);                        /* 5100 */
  CHECK_CU(cuGraphInstantiateWithFlags(&x, g, 0));
  clk_t c0 = now();
  unsigned long long h = c0.host;
  /* Host h+1530 (1500 + 3 × 10); nodes [h+1830, h+7130), [h+7180, h+9180), [h+9230, h+14330). */
  CHECK_CU(cuGraphLaunch(x, s));
  CHECK_INT(now().host, ==, h + 1530);
  CHECK_CU(cuStreamSynchronize(s));
  clk_t c1 = now();
  CHECK_INT(c1.host, ==, h + 14330);
  CHECK_INT(c1.busy - c0.busy, ==, 5300 + 2000 + 5100);
  CHECK_INT(c1.idle - c0.idle, ==, (h + 1830 - c0.end) + 50 + 50);
  /* The middle node disabled (host +200): [h+2030, h+7330), [h+7380, h+12480). */
  h = c1.host;
  CHECK_CU(cuGraphNodeSetEnabled(x, k2, 0));
  CHECK_INT(now().host, ==, h + 200);
  CHECK_CU(cuGraphLaunch(x, s));
  CHECK_CU(cuStreamSynchronize(s));
  clk_t c2 = now();
  CHECK_INT(c2.host, ==, h + 12480);
  CHECK_INT(c2.busy - c1.busy, ==, 5300 + 5100);
  CHECK_INT(c2.idle - c1.idle, ==, 2030 + 50);
  CHECK_CU(cuGraphExecDestroy(x));
  CHECK_CU(cuGraphDestroy(g));
  CHECK_CU(cuStreamDestroy(s));
}

/* The legacy stream waits for earlier work of blocking streams (not of non-blocking ones), and
 * a blocking stream waits for earlier legacy work. */
static void test_legacy(void) {
  CUstream sb, sn;
  CHECK_CU(cuStreamCreate(&sb, 0));
  CHECK_CU(cuStreamCreate(&sn, CU_STREAM_NON_BLOCKING));
  unsigned long long h = now().host;
  launch_add(10, 1, sb); /* host h+1000: [h+1300, h+7300) */
  launch_set(sn);        /* host h+2000: [h+2300, h+4300), independent */
  launch_set(NULL);      /* host h+3000, after sb's kernel: [h+7300, h+9300) */
  launch_set(sb);        /* host h+4000, after the legacy kernel: [h+9300, h+11300) */
  launch_set(sn);        /* host h+5000, after sn's only: [h+5300, h+7300) */
  CHECK_CU(cuStreamSynchronize(sn));
  CHECK_INT(now().host, ==, h + 7300);
  CHECK_CU(cuStreamSynchronize(NULL));
  CHECK_INT(now().host, ==, h + 9300);
  CHECK_CU(cuStreamSynchronize(sb));
  CHECK_INT(now().host, ==, h + 11300);
  CHECK_CU(cuStreamDestroy(sb));
  CHECK_CU(cuStreamDestroy(sn));
}

/* ---- child processes: the report, and settings read once at start ---- */

/* Runs this program again as `drv-clock MODE` with only the given SIM_* settings (every SIM_*
 * variable of this process is left out), stderr to `err` when not NULL; returns its exit
 * status. The environment is built before fork: the child only redirects and execs. */
static int run_child(const char *mode, const char *const *vars, const char *err) {
  size_t n = 0, k = 0;
  while (environ[n]) n++;
  size_t nv = 0;
  while (vars[nv]) nv++;
  char **envp = calloc(n + nv + 1, sizeof *envp);
  CHECK(envp);
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "SIM_", 4) != 0) envp[k++] = environ[i];
  for (size_t i = 0; i < nv; i++) envp[k++] = (char *)vars[i];
  envp[k] = NULL;
  char *argv[] = {(char *)"drv-clock", (char *)mode, NULL};
  int fd = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
  CHECK(!err || fd >= 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (fd >= 0) dup2(fd, 2);
    execve("/proc/self/exe", argv, envp);
    _exit(127);
  }
  if (fd >= 0) close(fd);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  free(envp);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *read_text(const char *path) {
  size_t len;
  unsigned char *b = check_read_file(path, 0, &len);
  char *s = realloc(b, len + 1);
  CHECK(s);
  s[len] = '\0';
  return s;
}

/* Child "steps" (kernels 1000, drv_slow_set 5000, latency 100, no host costs):
 *   step 0: work 500, A [600, 1600), work 2000, B [2600, 3600), a memset of no length at 3600
 *           (SIM_MEMOP_NS unset), sync: host 3600; the memset, what the host waited for, is
 *           step 0's work although it starts where step 1 begins;
 *   step 1: work 100, C [3800, 4800), D [4800, 5800), F = drv_slow_set on another stream
 *           [3800, 8800), sync of the first stream: host 5800; F crosses into step 2;
 *           a synchronisation with nothing left to wait for ends no step;
 *   step 2: work 1000, E [6900, 7900), exit: the step ends at max(6800, 8800) = 8800.
 * Busy: 2000, then 2000 (F under C and D), then 3000 (F's rest covers E): 7000 of [0, 8800). */
static void child_steps(void) {
  CUstream s, s2;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  simctl_host_work(500);
  launch_add(1, 1, s);
  simctl_host_work(2000);
  launch_add(1, 1, s);
  CHECK_CU(cuMemsetD32Async(buf, 0, 4, s));
  CHECK_CU(cuStreamSynchronize(s));
  simctl_host_work(100);
  launch_add(1, 1, s);
  launch_add(1, 1, s);
  launch_set(s2);
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_CU(cuStreamSynchronize(s));
  simctl_host_work(1000);
  launch_add(1, 1, s);
  clk_t c = now();
  CHECK_INT(c.host, ==, 6800);
  CHECK_INT(c.busy, ==, 7000);
  CHECK_INT(c.idle, ==, 1800);
}

static void test_report(void) {
  const char *vars[] = {"SIM_KERNEL_NS=drv_slow*:5000,*:1000", "SIM_LAUNCH_LATENCY_NS=100",
                        "SIM_CLOCK_REPORT=clock-steps.json", NULL};
  CHECK_INT(run_child("steps", vars, NULL), ==, 0);
  char *got = read_text("clock-steps.json");
  CHECK_STR(got,
            "{\"host_ns\":6800,\"device_end_ns\":8800,\"busy_ns\":7000,\"idle_ns\":1800,"
            "\"ops\":7,\"steps\":[\n"
            "{\"start_ns\":0,\"host_ns\":3600,\"busy_ns\":2000,\"idle_ns\":1600,"
            "\"first_op_delay_ns\":600,\"ops\":3},\n"
            "{\"start_ns\":3600,\"host_ns\":2200,\"busy_ns\":2000,\"idle_ns\":200,"
            "\"first_op_delay_ns\":200,\"ops\":3},\n"
            "{\"start_ns\":5800,\"host_ns\":3000,\"busy_ns\":3000,\"idle_ns\":0,"
            "\"first_op_delay_ns\":1100,\"ops\":1}]}\n");
  free(got);
}

/* Child "plain": with nothing set every modelled time is 0, and the host work it declares is
 * the only thing that moves the clock; the device's work all lies at 0. */
static void child_plain(void) {
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  launch_add(3, 1, s);
  launch_set(s);
  CHECK_CU(cuStreamSynchronize(s));
  clk_t c = now();
  CHECK_INT(c.host, ==, 0);
  CHECK_INT(c.busy, ==, 0);
  CHECK_INT(c.idle, ==, 0);
  simctl_host_work(250);
  CHECK_INT(now().host, ==, 250);
}

static void test_plain(void) {
  const char *vars[] = {"SIM_CLOCK_REPORT=clock-plain.json", NULL};
  CHECK_INT(run_child("plain", vars, NULL), ==, 0);
  char *got = read_text("clock-plain.json");
  CHECK_STR(got, "{\"host_ns\":250,\"device_end_ns\":0,\"busy_ns\":0,\"idle_ns\":0,\"ops\":2,"
                 "\"steps\":[\n{\"start_ns\":0,\"host_ns\":250,\"busy_ns\":0,\"idle_ns\":0,"
                 "\"first_op_delay_ns\":0,\"ops\":2}]}\n");
  free(got);
}

/* Child "malformed": a malformed SIM_KERNEL_NS is ignored as a whole, with one warning. */
static void child_malformed(void) {
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  launch_add(1, 1, s);
  launch_add(1, 1, s);
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_INT(now().busy, ==, 0);
}

static void test_malformed(void) {
  const char *bad[] = {"drv_add:12x", "drv_add:5,,*:1", "drv_add", ":5", "drv_add:5+",
                       "drv_add:+5", "*:1,drv_add:-3", NULL};
  for (int i = 0; bad[i]; i++) {
    char var[128];
    snprintf(var, sizeof var, "SIM_KERNEL_NS=%s", bad[i]);
    const char *vars[] = {var, NULL};
    CHECK_INT(run_child("malformed", vars, "clock-malformed.err"), ==, 0);
    char *err = read_text("clock-malformed.err");
    const char *want = "sim: ignoring malformed SIM_KERNEL_NS=";
    char *first = strstr(err, want);
    if (!first || strstr(first + 1, want)) CHECK_FAIL_("%s: expected one warning, got: %s", var, err);
    free(err);
  }
}

int main(int argc, char **argv) {
  if (argc == 2) {
    drv_test_init();
    load();
    if (!strcmp(argv[1], "steps")) child_steps();
    else if (!strcmp(argv[1], "plain")) child_plain();
    else if (!strcmp(argv[1], "malformed")) child_malformed();
    else return 2;
    return 0; /* the report is written at exit */
  }
  /* The children first, before this process starts the simulated device's threads. */
  test_report();
  test_plain();
  test_malformed();
  setenv("SIM_LAUNCH_NS", "1000", 1);
  setenv("SIM_LAUNCH_LATENCY_NS", "300", 1);
  setenv("SIM_GRAPH_LAUNCH_NS", "1500", 1);
  setenv("SIM_GRAPH_NODE_NS", "10", 1);
  setenv("SIM_GRAPH_NODE_GAP_NS", "50", 1);
  setenv("SIM_NODE_UPDATE_NS", "200", 1);
  setenv("SIM_MEMOP_NS", "400", 1);
  setenv("SIM_KERNEL_NS", "drv_add:5000+100,drv_s*:2000,drv_a*:7", 1);
  drv_test_init();
  load();
  CHECK_CU(cuCtxSynchronize());
  test_one_stream();
  test_durations();
  test_event_wait();
  test_graph();
  test_legacy();
  printf("drv-clock: ok\n");
  return 0;
}
