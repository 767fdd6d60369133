/* clock.c — the modelled clock: when a GPU would run each piece of work, computed from the
 * sequence of API calls and the cost settings alone, never from wall time, so that tests can
 * compare the device's idle time with and without the library exactly.
 *
 * The host clock (one per process, nanoseconds from 0) advances by the modelled cost of each call
 * that has one (drv_cost: launches, graph launches, exec-node updates), by the host work a program
 * declares (simctl_host_work), and, when a call makes the host wait for the device
 * (drv_clock_block_locked), to the modelled end of the work it waited for. Queries do not move it.
 *
 * Each op gets its modelled start and end when it is submitted, from values already known then:
 * start = max(host clock + SIM_LAUNCH_LATENCY_NS, end of the previous op of its stream, end of
 * what it depends on: legacy-stream implicit dependencies, recorded events waited for); end =
 * start + duration. Durations: kernels by SIM_KERNEL_NS (name and grid), copies and memsets
 * SIM_MEMOP_NS, everything else 0. A graph launch runs its nodes one after another in creation
 * order (the simulator runs them in dependency order, which the model, fixed at the launch, does
 * not follow): the first enabled node starts as a stream op would, each next one
 * SIM_GRAPH_NODE_GAP_NS after the previous one's end; disabled nodes are skipped (no time, no
 * gap); an event wait node holds the sequence until the record it waits for ends, and an event
 * record node completes at its place in the sequence.
 *
 * Accounting counts work: kernels, copies, memsets and host functions, queued alone or as enabled
 * graph nodes. Ordering ops (event records and waits, frees in stream order, empty and event
 * nodes) take part in the ordering but are not work. Busy time is the measure of the union of
 * the work intervals; the device end is the latest end of any work; idle time is device end
 * minus busy time. A step is the span between two consecutive returns of calls that waited (the
 * host clock moved); the first starts at 0, the last ends at exit, at max(host clock, device
 * end). Nothing submitted in a step can start before it (the host clock never goes back), so a
 * step's figures are final when it ends: its busy time is the union clipped to the step, its
 * idle time the rest of the span from its start to the latest work inside it, its ops and first
 * op delay those of the work that starts in it.
 *
 * All state is guarded by drv_lock. One host clock serves every thread: the figures are
 * deterministic when one thread makes the CUDA calls, or when threads call in a fixed order.
 */
#include "drv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pieces of work, [start, end) in modelled nanoseconds, `count` of them with the same interval
 * (with the variables unset all work lies at 0, and no step ever ends to release it: one entry
 * holds it all). */
typedef struct span {
  uint64_t start, end, count;
} span_t;

typedef struct step {
  uint64_t start, len, busy, idle, first_delay, ops;
} step_t;

static uint64_t host;        /* the modelled host clock */
static uint64_t device_end;  /* the latest end of any work */
static uint64_t ops_total;
static uint64_t busy_closed; /* busy time of the steps already closed */
static uint64_t step_start;

/* Work that may still lie (partly) in the current step or later, sorted by start. */
static span_t *spans;
static size_t nspans, cap_spans;

static step_t *steps;
static size_t nsteps, cap_steps;
static int lost; /* memory ran out: some work or a step is missing from the figures */

static const char *report_path; /* SIM_CLOCK_REPORT, read at load */
static pid_t report_pid;        /* the process that read it: a forked child writes nothing */

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Records one piece of work. When memory runs out the work is left out of the figures, which
 * the report says (a test reading it must not trust it then). */
static void add_work(uint64_t start, uint64_t end) {
  ops_total++;
  device_end = max64(device_end, end);
  if (nspans && spans[nspans - 1].start == start && spans[nspans - 1].end == end) {
    spans[nspans - 1].count++;
    return;
  }
  if (nspans == cap_spans) {
    size_t ncap = cap_spans ? cap_spans * 2 : 64;
    span_t *grown = realloc(spans, ncap * sizeof *grown);
    if (!grown) {
      lost = 1;
      return;
    }
    spans = grown;
    cap_spans = ncap;
  }
  /* Starts mostly grow: insert from the end. */
  size_t i = nspans;
  while (i > 0 && spans[i - 1].start > start) i--;
  memmove(spans + i + 1, spans + i, (nspans - i) * sizeof *spans);
  spans[i] = (span_t){start, end, 1};
  nspans++;
}

/* Figures of the step [s, t) from the work still held: busy time (union clipped), the latest
 * work end inside it (s when none), and the count and earliest start of the work that starts in
 * it. Work of no length at t itself (a copy the step's last wait waited for, with SIM_MEMOP_NS
 * unset) belongs to this step, not to the next: it is what the host waited for. */
static void measure(uint64_t s, uint64_t t, uint64_t *busy, uint64_t *last, uint64_t *ops,
                    uint64_t *first) {
  uint64_t b = 0, l = s, n = 0, f = 0, run_s = 0, run_e = 0;
  int run = 0;
  for (size_t i = 0; i < nspans && spans[i].start <= t; i++) {
    const span_t *p = &spans[i];
    if (p->start == t && p->end > t) continue; /* starts when the step ends: the next one's */
    if (p->start >= s) {
      if (n == 0) f = p->start;
      n += p->count;
    }
    uint64_t a = max64(p->start, s), e = min64(p->end, t);
    if (p->end < s) continue;
    l = max64(l, e);
    if (run && a <= run_e) {
      run_e = max64(run_e, e);
    } else {
      if (run) b += run_e - run_s;
      run_s = a, run_e = e, run = 1;
    }
  }
  if (run) b += run_e - run_s;
  *busy = b, *last = l, *ops = n, *first = f;
}

/* Ends the current step at t (>= its start). */
static void close_step(uint64_t t) {
  uint64_t busy, last, ops, first;
  measure(step_start, t, &busy, &last, &ops, &first);
  if (nsteps == cap_steps) {
    size_t ncap = cap_steps ? cap_steps * 2 : 64;
    step_t *grown = realloc(steps, ncap * sizeof *grown);
    if (grown) {
      steps = grown;
      cap_steps = ncap;
    }
  }
  if (nsteps < cap_steps)
    steps[nsteps++] = (step_t){step_start, t - step_start, busy, last - step_start - busy,
                               ops ? first - step_start : 0, ops};
  else lost = 1;
  busy_closed += busy;
  /* Work that ends by t is fully accounted; work ending later stays for the next steps. */
  size_t k = 0;
  for (size_t i = 0; i < nspans; i++)
    if (spans[i].end > t) spans[k++] = spans[i];
  nspans = k;
  step_start = t;
}

void drv_cost(uint64_t ns) {
  simc_spin_ns(ns);
  if (ns == 0) return;
  pthread_mutex_lock(&drv_lock);
  host += ns;
  pthread_mutex_unlock(&drv_lock);
}

static uint64_t kernel_ns(const drv_launch_t *l) {
  uint64_t blocks = (uint64_t)l->grid.x * l->grid.y * l->grid.z;
  return simc_kernel_ns(l->f ? l->f->name : NULL, blocks);
}

/* The nodes of a launched graph from `start`, in creation order; returns the end of the last. A
 * wait node holds the sequence up until the record it waits for (taken at the launch) ends. */
static uint64_t graph_schedule(const drv_graph_run_t *run, uint64_t start) {
  const struct CUgraph_st *g = run->g;
  uint64_t t = start, gap = simc_cost(SIMC_GRAPH_NODE_GAP_NS);
  int first = 1;
  for (size_t i = 0; i < g->n; i++) {
    const struct CUgraphNode_st *n = g->nodes[i];
    if (n->disabled) continue; /* an empty node that costs nothing, not even a gap */
    if (!first) t += gap;
    first = 0;
    uint64_t d = 0;
    switch (n->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: d = kernel_ns(&n->u.k); break;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET: d = simc_cost(SIMC_MEMOP_NS); break;
    case CU_GRAPH_NODE_TYPE_HOST: break;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: n->u.ev->vtime = t; continue;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: t = max64(t, run->nodes[i].vwait); continue;
    default: continue; /* empty nodes: ordering only */
    }
    add_work(t, t + d);
    t += d;
  }
  return t;
}

void drv_clock_submit_locked(drv_stream_t *s, drv_op_t *op) {
  uint64_t start = host + simc_cost(SIMC_LAUNCH_LATENCY_NS);
  start = max64(start, max64(s->vend, op->vready));
  uint64_t end = start;
  switch (op->kind) {
  case DRV_OP_KERNEL: end += kernel_ns(op->arg); break;
  case DRV_OP_MEMOP: end += simc_cost(SIMC_MEMOP_NS); break;
  case DRV_OP_GRAPH: end = graph_schedule(op->arg, start); break;
  default: break;
  }
  if (op->kind == DRV_OP_KERNEL || op->kind == DRV_OP_MEMOP || op->kind == DRV_OP_HOST)
    add_work(start, end);
  s->vend = end;
}

void drv_clock_block_locked(uint64_t t) {
  if (t <= host) return; /* nothing left to wait for: not a step boundary */
  host = t;
  close_step(t);
}

/* ---- the program's controls ---- */

/* The program declares ns of host work: the host clock advances, nothing spins (the caller may
 * spin itself when it wants real time to pass too). */
void simctl_host_work(unsigned long long ns) {
  pthread_mutex_lock(&drv_lock);
  host += ns;
  pthread_mutex_unlock(&drv_lock);
}

/* The figures so far: the host clock, the device's busy time, and its idle time before the
 * latest end of any work. Any pointer may be NULL. Returns 0. */
int simctl_clock(unsigned long long *host_ns, unsigned long long *busy_ns,
                 unsigned long long *idle_ns) {
  pthread_mutex_lock(&drv_lock);
  uint64_t busy, last, ops, first;
  measure(step_start, UINT64_MAX, &busy, &last, &ops, &first);
  busy += busy_closed;
  if (host_ns) *host_ns = host;
  if (busy_ns) *busy_ns = busy;
  if (idle_ns) *idle_ns = device_end - busy;
  pthread_mutex_unlock(&drv_lock);
  return 0;
}

/* ---- the report ---- */

__attribute__((constructor)) static void clock_load(void) {
  const char *p = getenv("SIM_CLOCK_REPORT");
  if (p && *p && (report_path = strdup(p)) != NULL) report_pid = getpid();
}

__attribute__((destructor)) static void clock_report(void) {
  if (!report_path || getpid() != report_pid) return;
  pthread_mutex_lock(&drv_lock);
  uint64_t end = max64(host, device_end);
  uint64_t busy, last, ops, first;
  measure(step_start, UINT64_MAX, &busy, &last, &ops, &first);
  /* The last step ends at exit; an empty one (the program ended right after a wait) is left
   * out. */
  if (end > step_start || ops) close_step(end);
  FILE *f = fopen(report_path, "w");
  if (!f) {
    fprintf(stderr, "sim: cannot write SIM_CLOCK_REPORT=%s: %s\n", report_path, strerror(errno));
    pthread_mutex_unlock(&drv_lock);
    return;
  }
  fprintf(f, "{\"host_ns\":%llu,\"device_end_ns\":%llu,\"busy_ns\":%llu,\"idle_ns\":%llu,"
          "\"ops\":%llu,%s\"steps\":[", (unsigned long long)host,
          (unsigned long long)device_end, (unsigned long long)busy_closed,
          (unsigned long long)(device_end - busy_closed), (unsigned long long)ops_total,
          lost ? "\"incomplete\":true," : "");
  for (size_t i = 0; i < nsteps; i++) {
    const step_t *st = &steps[i];
    fprintf(f, "%s\n{\"start_ns\":%llu,\"host_ns\":%llu,\"busy_ns\":%llu,\"idle_ns\":%llu,"
            "\"first_op_delay_ns\":%llu,\"ops\":%llu}", i ? "," : "",
            (unsigned long long)st->start, (unsigned long long)st->len,
            (unsigned long long)st->busy, (unsigned long long)st->idle,
            (unsigned long long)st->first_delay, (unsigned long long)st->ops);
  }
  fprintf(f, "]}\n");
  if (fclose(f) != 0)
    fprintf(stderr, "sim: cannot write SIM_CLOCK_REPORT=%s: %s\n", report_path, strerror(errno));
  pthread_mutex_unlock(&drv_lock);
}
