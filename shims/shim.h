/* shim.h — what the entry points (the files of shims/) share.
 *
 * The shims are the only code that exports symbols and the only code that calls dlsym. Each
 * wrapper is thin: guard (ag__active), hand the call to the engine (src/engine.h) or forward it,
 * return exactly what the real function returned. Real functions are found through
 * ag__real_lookup, which never goes through the library's own dlsym override.
 */
#ifndef AG_SHIM_H
#define AG_SHIM_H

#include "ag.h"
#include "engine.h"

#define AG_CAT_(a, b) a##b
#define AG_CAT(a, b) AG_CAT_(a, b)
#define AG_STR_(x) #x
#define AG_STR(x) AG_STR_(x)
#define AG_ARGS(...) __VA_ARGS__

/* The real dlsym (glibc's), resolved on first use. */
void *ag__real_dlsym(void *handle, const char *name);

/* The next definition of `name` after this library (RTLD_NEXT), else the one in the first of
 * `sonames` (a NULL-terminated list) that is already loaded, for libraries opened RTLD_LOCAL.
 * Returns NULL when there is none. */
void *ag__real_lookup(const char *const *sonames, const char *name);

/* Nonzero when `p` points into this library. */
int ag__is_ours(const void *p);

/* Driver side of the dlsym override (shims/cuda.c): given a driver symbol `name` that the real
 * dlsym resolved to `p`, returns the wrapper to hand out instead, or `p`. */
void *ag__cu_dlsym_swap(const char *name, void *p);

/* An ordering trampoline for a driver function the table does not describe (shims/tramp.c):
 * flushes and counts under `name`, then jumps to `real` with the caller's arguments. One per
 * distinct `real`. Returns NULL when none is left (or off x86-64). */
void *ag__tramp_for(const char *name, void *real);

#endif
