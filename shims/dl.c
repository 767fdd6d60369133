/* dl.c — the dlsym override and the lookup of real functions.
 *
 * Why dlsym: libcudart, cuBLAS(Lt), cuDNN and Triton dlopen libcuda.so.1 and fetch
 * cuGetProcAddress_v2 (and, for cuBLASLt, ~32 driver functions) with dlsym on that handle; a
 * symbol defined in the preload library is never found that way. So the library exports dlsym
 * and hands out its own getter and driver wrappers for those names.
 *
 * dlsym(RTLD_NEXT, …) and dlsym(RTLD_DEFAULT, …) are resolved relative to the caller's object,
 * which glibc finds from its own return address. The exported `dlsym` is therefore a few
 * instructions of assembly that ask ag__dl_route where to go and then *jump* there: the real
 * dlsym runs with the original caller's return address, so every lookup the library does not
 * intercept keeps its exact meaning. Only lookups of driver names (cu*) on a real handle go
 * through the interception path.
 *
 * The real dlsym comes from dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5") (glibc 2.34 and later
 * have no __libc_dlsym); "GLIBC_2.34" is tried as well for ports without the old node.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "log.h"
#include "shim.h"

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym;

/* A sanitizer runtime preloaded before the library looks up its real functions with dlsym,
 * i.e. through ag__dl_route, while it starts and cannot yet check a memory access: that path
 * must not be instrumented (an errno access there crashed every ASan run). */
#define AG_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

static void *no_dlsym(void *handle, const char *name) {
  (void)handle, (void)name;
  return NULL;
}

AG_NO_SANITIZE static dlsym_fn get_real_dlsym(void) {
  dlsym_fn f = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);
  if (AG_LIKELY(f)) return f;
  /* Idempotent, so a race only repeats the same lookup. */
  f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (!f) f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!f) f = no_dlsym; /* a broken libc; nothing can be looked up */
  __atomic_store_n(&real_dlsym, f, __ATOMIC_RELEASE);
  return f;
}

void *ag__real_dlsym(void *handle, const char *name) { return get_real_dlsym()(handle, name); }

void *ag__real_lookup(const char *const *sonames, const char *name) {
  void *p = get_real_dlsym()(RTLD_NEXT, name);
  for (; !p && sonames && *sonames; sonames++) {
    void *h = dlopen(*sonames, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    p = get_real_dlsym()(h, name);
    dlclose(h); /* balances RTLD_NOLOAD's reference; the library stays loaded */
  }
  return p;
}

int ag__is_ours(const void *p) {
  static void *base;
  Dl_info self, it;
  void *b = __atomic_load_n(&base, __ATOMIC_RELAXED);
  if (!b) {
    if (!dladdr((void *)ag__is_ours, &self)) return 0;
    b = self.dli_fbase;
    __atomic_store_n(&base, b, __ATOMIC_RELAXED);
  }
  return dladdr(p, &it) && it.dli_fbase == b;
}

/* The interception path: resolve with the real dlsym, then swap in a wrapper. */
static void *dlsym_hooked(void *handle, const char *name) {
  void *p = get_real_dlsym()(handle, name);
  if (p) {
    int saved = errno;
    p = ag__cu_dlsym_swap(name, p);
    errno = saved;
  }
  return p;
}

/* Called by the assembly stub with the caller's arguments; returns the function to jump to. */
__attribute__((visibility("hidden"), used)) dlsym_fn ag__dl_route(void *handle, const char *name);
AG_NO_SANITIZE dlsym_fn ag__dl_route(void *handle, const char *name) {
  int saved = errno;
  dlsym_fn real = get_real_dlsym(), to = real;
  if (handle != RTLD_NEXT && handle != RTLD_DEFAULT && name && name[0] == 'c' && name[1] == 'u' &&
      ag__active())
    to = dlsym_hooked;
  errno = saved;
  return to;
}

/* dlsym itself: save the arguments, ask ag__dl_route, restore them, jump. The stack is 16-byte
 * aligned at the call (entry rsp ≡ 8 mod 16, two pushes, 8 more bytes). */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  call ag__dl_route\n"
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  jmp *%rax\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
