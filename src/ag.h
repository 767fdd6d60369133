/* ag.h — definitions shared by every file of the library.
 *
 * Internal functions return 0 on success or a negative AG_E… code; they never exit and never
 * abort except on a broken invariant (AG_ASSERT). Cross-file internals are named ag__*, the
 * few exported non-CUDA symbols ag_*, types ag_*_t, macros AG_*.
 */
#ifndef AG_AG_H
#define AG_AG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Error codes, always returned negated (-AG_EINVAL). */
#define AG_EOK      0
#define AG_EINVAL   1  /* malformed input or argument */
#define AG_ENOMEM   2  /* allocation failed */
#define AG_ENOENT   3  /* not found */
#define AG_ETRUNC   4  /* input shorter than its headers say */
#define AG_ECORRUPT 5  /* input contradicts itself (bad magic, offsets out of range) */
#define AG_EUNSUP   6  /* well-formed but not supported (unknown compression, format) */
#define AG_ELIB     7  /* a library the operation needs (libzstd) failed */
#define AG_ECUDA    8  /* a CUDA call failed */
#define AG_EBUSY    9  /* refused: the state does not allow it now */

/* Symbols the preload library exports. Everything else is hidden (-fvisibility=hidden). */
#define AG_EXPORT __attribute__((visibility("default")))

#define AG_LIKELY(x)   __builtin_expect(!!(x), 1)
#define AG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define AG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in nanoseconds: the one clock of the engine's guard, the dump's interval and
 * the trace. */
static inline uint64_t ag__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
