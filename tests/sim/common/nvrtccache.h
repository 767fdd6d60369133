/* nvrtccache.h — the folder of the simulated NVRTC's host builds, for the NVRTC that writes it and
 * the driver that looks a kernel's twin up there: $SIM_NVRTC_CACHE, else
 * ${TMPDIR:-/tmp}/sim-nvrtc-<uid>. */
#ifndef SIM_NVRTC_CACHE_H
#define SIM_NVRTC_CACHE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void sim_nvrtc_cache_dir(char *out, size_t n) {
  const char *c = getenv("SIM_NVRTC_CACHE"), *t = getenv("TMPDIR");
  if (c && *c) snprintf(out, n, "%s", c);
  else snprintf(out, n, "%s/sim-nvrtc-%u", t && *t ? t : "/tmp", (unsigned)getuid());
}

#endif
