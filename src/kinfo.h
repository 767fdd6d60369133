/* kinfo.h — what the engine knows about each kernel: the CUfunction to launch it with, its
 * name and its parameter layout, learned once and cached.
 *
 * A kernel is identified by the handle a launch names (host stub, cudaKernel_t/CUkernel or
 * CUfunction) together with the context it was launched in, because one host stub stands for a
 * different CUfunction on each device. The layout comes from the driver where it can answer
 * (cuFuncGetParamInfo / cuKernelGetParamInfo), otherwise from the kernel's cubin: the fatbin
 * registered for a host stub (src/registry.c), or an image loaded through the driver
 * (ag__kinfo_image). A kernel whose layout cannot be learned, an NCCL kernel and a kernel the
 * deny list names are marked so and never held.
 *
 * Not thread-safe: the engine calls everything here under its lock. Lookups of known kernels
 * are one hash probe and never allocate.
 */
#ifndef AG_KINFO_H
#define AG_KINFO_H

#include <stdint.h>

#include "elf.h"

typedef struct ag_kinfo {
  const void *func; /* key: the launch's handle … */
  void *ctx;        /* … and the context */
  int fkind;        /* enum ag_func_kind */
  void *fn;         /* CUfunction to launch it with (NULL when unknown) */
  uint32_t id;      /* small, stable number: the part of structural hashes naming the kernel */
  int reason;       /* 0: may be held; else the fallback (enum ag_fallback) + 1 */
  uint32_t nparams, param_bytes;
  ag_kparam_t *params;
  char *name;       /* device name, or NULL */
} ag_kinfo_t;

/* The record for (func, ctx), learning it on first sight. Returns NULL only when memory ran
 * out (the launch then passes through). */
ag_kinfo_t *ag__kinfo_get(const void *func, int fkind, void *ctx);

/* Reads the layouts of every kernel in a device code image (cubin, fatbin, wrapper) and keeps
 * them by name, for kernels loaded through the driver. Returns 0 or -AG_E…. */
int ag__kinfo_image(const void *image);

/* Records the name a driver handle was obtained under (cuModuleGetFunction…). */
void ag__kinfo_name(const void *func, const char *name);

/* Nonzero when `name` is an NCCL kernel (never held: its progress depends on other ranks). */
int ag__kinfo_is_nccl(const char *name);

/* Forgets everything (fork child). */
void ag__kinfo_reset(void);

#endif
