/* registry.h — what the runtime's registration calls told us, kept for the graph engine.
 *
 * nvcc-generated constructors register each fatbin (__cudaRegisterFatBinary → handle) and each
 * kernel (__cudaRegisterFunction: host stub → device name, under a handle). The registry maps
 * a host stub to its device name and fatbin image so that a launch can later be described by
 * name and parameter layout (src/elf.c). All functions are thread-safe; names are copied.
 */
#ifndef AG_REGISTRY_H
#define AG_REGISTRY_H

#include "ag.h"

/* Records a fatbin wrapper (magic 0x466243B1) under the handle the runtime returned.
 * Returns 0 or -AG_ENOMEM. */
int ag__registry_fatbin(void **handle, const void *fatbin);

/* Records a kernel: host stub → device name, in the fatbin of `handle`. Returns 0 or -AG_E…. */
int ag__registry_function(void **handle, const void *stub, const char *device_name);

/* Forgets a fatbin and its kernels (__cudaUnregisterFatBinary). Returns the fatbin pointer
 * registered under `handle` (what ag__registry_lookup gave for its kernels), or NULL. */
const void *ag__registry_unregister(void **handle);

/* Looks a host stub up. On success copies the device name (truncated to `size`) and stores the
 * fatbin image in *fatbin (either may be NULL). Returns 0 or -AG_ENOENT. */
int ag__registry_lookup(const void *stub, char *name, size_t size, const void **fatbin);

/* Finds the fatbin that registered a kernel of device name `name` (for handles that are not
 * host stubs: cudaKernel_t). Returns 0 or -AG_ENOENT. */
int ag__registry_fatbin_of(const char *name, const void **fatbin);

/* Number of kernels registered (for tests and stats). */
size_t ag__registry_count(void);

/* Reinitialises the lock in a forked child. */
void ag__registry_atfork_child(void);

#endif
