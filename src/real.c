/* real.c — the table of real functions the engine calls (see real.h).
 *
 * Resolution runs at the first launch rather than at load time: libcudart dlopens libcuda only
 * when it initialises, so at our constructor there is usually no driver to ask. A failed
 * resolution is retried on the next call; once it succeeded the table never changes.
 */
#include "real.h"

#include <stddef.h>

ag_real_t ag__real;
static ag_real_resolver_t resolver;
static int ready;

void ag__real_set_resolver(ag_real_resolver_t fn) { __atomic_store_n(&resolver, fn, __ATOMIC_RELEASE); }

void ag__real_mark_ready(void) { __atomic_store_n(&ready, 1, __ATOMIC_RELEASE); }

int ag__real_ready(void) {
  ag_real_resolver_t fn;
  if (AG_LIKELY(__atomic_load_n(&ready, __ATOMIC_ACQUIRE))) return 1;
  fn = __atomic_load_n(&resolver, __ATOMIC_ACQUIRE);
  /* Callers hold the engine lock, so two resolutions never run at once. */
  if (!fn || fn(&ag__real) != 0) return 0;
  if (ag__real.cuDriverGetVersion && ag__real.cuDriverGetVersion(&ag__real.driver_version))
    ag__real.driver_version = 0;
  __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
  return 1;
}
