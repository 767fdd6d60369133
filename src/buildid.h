/* buildid.h — which build of a shared object the process has loaded, by its GNU build ID.
 *
 * Tables that describe another library's kernels (the calibration table of a PyTorch wheel's
 * elementwise kernels: which functor a kernel holds and where its scalars sit) are facts of one
 * build of that library: a kernel of the same name in another build may keep its fields
 * elsewhere. Such a table names the build it was made from by the library's build ID (the
 * NT_GNU_BUILD_ID note that the linker writes, 20 bytes with GNU ld's default SHA-1), and is
 * used only for kernels whose code was registered from an object of the process with that ID.
 *
 * The IDs are read from the loaded objects' own program headers (dl_iterate_phdr, PT_NOTE
 * segments), so no file is opened. Thread-safe; allocates nothing.
 */
#ifndef AG_BUILDID_H
#define AG_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define AG_BUILDID_MAX 64 /* bytes of an ID at most (SHA-1: 20, MD5: 16, UUID: 16) */

/* One loaded object: its build ID and the address range its PT_LOAD segments span. */
typedef struct ag_buildid_obj {
  uint8_t id[AG_BUILDID_MAX];
  size_t idlen;            /* 0: the object has no build ID */
  uintptr_t lo, hi;        /* [lo, hi): from the lowest segment's start to the highest's end */
} ag_buildid_obj_t;

/* The loaded object that contains address `addr` (of its code or data). Returns 0 and fills *o,
 * or -AG_ENOENT when no loaded object contains it. */
int ag__buildid_of(const void *addr, ag_buildid_obj_t *o);

/* The loaded object whose build ID is id[0..len). Returns 0 and fills *o, or -AG_ENOENT. */
int ag__buildid_find(const uint8_t *id, size_t len, ag_buildid_obj_t *o);

/* Parses an ID written in hexadecimal (as `readelf -n` and `file` print it, either case) into
 * id; returns its length in bytes, or -AG_EINVAL (odd length, not hexadecimal, too long). */
int ag__buildid_parse(const char *hex, uint8_t id[AG_BUILDID_MAX]);

#endif
