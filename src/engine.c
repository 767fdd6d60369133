/* engine.c — initialisation and the pass-through engine (see engine.h).
 *
 * This stage submits every launch at once and only counts; the entry points already hand every
 * launch and every ordering call here, so holding launches and replaying them as graphs can be
 * added behind the same four calls without touching the shims.
 *
 * Initialisation runs once, from the constructor or from the first wrapper that gets there
 * first, under an explicit state (none → running → done) rather than pthread_once: a wrapper
 * re-entered while initialisation runs (options parsing may call into a preloaded allocator
 * that launches kernels) sees "running" and forwards untouched instead of deadlocking.
 */
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "config.h"
#include "log.h"
#include "registry.h"
#include "stats.h"

__thread ag_tls_t ag__tls;
int ag__init_state = AG_INIT_NONE;
int ag__enabled;

static void at_exit(void) {
  /* The report reads counters only; launches still running on other threads at exit may or
   * may not be included, which is fine for a summary. */
  if (ag__enabled) ag__stats_report();
}

static void atfork_child(void) {
  /* The child starts with one thread: per-thread nesting of other threads is gone, and the
   * counters describe the parent's work. */
  ag__tls = (ag_tls_t){0, 0};
  ag__stats_reset();
  ag__registry_atfork_child();
}

void ag__init(void) {
  int expected = AG_INIT_NONE;
  int saved = errno;
  if (!__atomic_compare_exchange_n(&ag__init_state, &expected, AG_INIT_RUNNING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return; /* done, or running on some thread: the caller forwards untouched meanwhile */
  ag__config_load();
  if (!ag__config.disable) {
    atexit(at_exit);
    pthread_atfork(NULL, NULL, atfork_child);
    ag__log(AG_LOG_DEBUG, "initialised (stats %s)",
            ag__config.stats_summary ? "summary" : ag__config.stats_path[0] ? "json" : "off");
    __atomic_store_n(&ag__enabled, 1, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&ag__init_state, AG_INIT_DONE, __ATOMIC_RELEASE);
  errno = saved;
}

__attribute__((constructor)) static void ag_constructor(void) { ag__init(); }

static inline void count_call(ag_call_t *call, int family) {
  if (call) AG_STAT_ADD(call->count, 1);
  AG_STAT_ADD(ag__stats.families[family], 1);
}

int ag__launch(const ag_launch_t *l) {
  int r;
  if (ag__tls.quiet) return l->submit(l); /* nested: the outer launch was recorded */
  AG_STAT_ADD(ag__stats.launches, 1);
  AG_STAT_ADD(ag__stats.passthrough, 1);
  AG_STAT_ADD(ag__stats.by_path[ag__tls.lib ? AG_PATH_CUDNN : l->path], 1);
  count_call(l->call, AG_FAM_LAUNCH);
  ag__tls.quiet++;
  r = l->submit(l);
  ag__tls.quiet--;
  return r;
}

void ag__order_enter(ag_call_t *call, void *stream) {
  (void)stream; /* the flush point for held launches on `stream`: nothing is held yet */
  if (!ag__tls.quiet && !ag__tls.lib) {
    AG_STAT_ADD(ag__stats.ordering, 1);
    count_call(call, call ? call->family : AG_FAM_UNCLASSIFIED);
  }
  ag__tls.quiet++;
}

void ag__order_leave(void) { ag__tls.quiet--; }

void ag__lib_enter(ag_call_t *call) {
  if (!ag__tls.quiet && !ag__tls.lib) count_call(call, call->family);
  ag__tls.lib++;
}

void ag__lib_leave(void) { ag__tls.lib--; }

void ag__note(ag_call_t *call) {
  if (!ag__tls.quiet && !ag__tls.lib) count_call(call, call->family);
}
