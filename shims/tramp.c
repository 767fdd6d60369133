/* tramp.c — ordering trampolines for driver functions the table does not describe.
 *
 * The getter can return functions that no prototype in cudaTypedefs.h describes: GL, EGL and
 * VDPAU interop (cudaGLTypedefs.h and friends need the window-system headers), old ABIs such as
 * cuDevicePrimaryCtxReset at 7000, and whatever a newer driver adds. The library knows nothing
 * of their arguments, but "what is not known to be harmless is ordering" still holds: each is
 * handed out as a trampoline that flushes held work, counts the call (family "unclassified",
 * under the name it was requested by), and then jumps to the real function with every argument
 * register and the stack exactly as the caller left them, so the real function returns straight
 * to the caller. The real function runs outside the library's nesting bracket; what it calls
 * through wrapped entry points is seen as the program's own calls, which is safe (at worst a
 * second flush).
 *
 * The trampolines are a fixed table of AG_TRAMPS entries of 16 bytes in .text (no writable code
 * at run time): entry i loads i into %r11 and jumps to a common stub, which saves the argument
 * registers (rdi, rsi, rdx, rcx, r8, r9, rax for variadic calls, xmm0–7), calls
 * ag__tramp_enter(i), restores them and tail-jumps to the real pointer it returned. Slots are
 * allocated under a lock, once per distinct real function, and published with a release store
 * before the trampoline's address is handed out. x86-64 only (as is the dlsym stub in dl.c);
 * elsewhere ag__tramp_for returns NULL and the getter hands the function back unwrapped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "shim.h"
#include "stats.h"

#define AG_TRAMPS 256

static struct tramp {
  void *real; /* NULL: free */
} tramps[AG_TRAMPS];
static ag_call_t tramp_calls[AG_TRAMPS]; /* names filled when a slot is taken */
static int ntramps;
static pthread_mutex_t tramp_lock = PTHREAD_MUTEX_INITIALIZER;

#if defined(__x86_64__)

__attribute__((visibility("hidden"), used)) void *ag__tramp_enter(unsigned i);
void *ag__tramp_enter(unsigned i) {
  int saved = errno;
  void *real = __atomic_load_n(&tramps[i].real, __ATOMIC_ACQUIRE);
  if (ag__active()) {
    ag__order_enter(&tramp_calls[i], NULL);
    ag__order_leave();
  }
  errno = saved;
  return real;
}

/* Stack at the call of ag__tramp_enter: entry rsp ≡ 8 mod 16, then rbp and 7 registers pushed
 * (64 bytes) and 136 reserved (xmm0–7 and 8 bytes of padding): 16-byte aligned. */
__asm__(".text\n"
        ".p2align 4\n"
        "ag__tramp_common:\n"
        "  .cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %rbp, 0\n"
        "  movq %rsp, %rbp\n"
        "  .cfi_def_cfa_register %rbp\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  pushq %rdx\n"
        "  pushq %rcx\n"
        "  pushq %r8\n"
        "  pushq %r9\n"
        "  pushq %rax\n"
        "  subq $136, %rsp\n"
        "  movdqu %xmm0, 0(%rsp)\n"
        "  movdqu %xmm1, 16(%rsp)\n"
        "  movdqu %xmm2, 32(%rsp)\n"
        "  movdqu %xmm3, 48(%rsp)\n"
        "  movdqu %xmm4, 64(%rsp)\n"
        "  movdqu %xmm5, 80(%rsp)\n"
        "  movdqu %xmm6, 96(%rsp)\n"
        "  movdqu %xmm7, 112(%rsp)\n"
        "  movl %r11d, %edi\n"
        "  call ag__tramp_enter@PLT\n"
        "  movq %rax, %r11\n"
        "  movdqu 0(%rsp), %xmm0\n"
        "  movdqu 16(%rsp), %xmm1\n"
        "  movdqu 32(%rsp), %xmm2\n"
        "  movdqu 48(%rsp), %xmm3\n"
        "  movdqu 64(%rsp), %xmm4\n"
        "  movdqu 80(%rsp), %xmm5\n"
        "  movdqu 96(%rsp), %xmm6\n"
        "  movdqu 112(%rsp), %xmm7\n"
        "  addq $136, %rsp\n"
        "  popq %rax\n"
        "  popq %r9\n"
        "  popq %r8\n"
        "  popq %rcx\n"
        "  popq %rdx\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  popq %rbp\n"
        "  .cfi_def_cfa %rsp, 8\n"
        "  jmp *%r11\n"
        "  .cfi_endproc\n"
        ".size ag__tramp_common, .-ag__tramp_common\n"
        ".p2align 4\n"
        ".globl ag__tramps\n"
        ".hidden ag__tramps\n"
        "ag__tramps:\n"
        "  .set ag__tramp_i, 0\n"
        "  .rept " AG_STR(AG_TRAMPS) "\n"
        "  .p2align 4\n"
        "  movl $ag__tramp_i, %r11d\n"
        "  jmp ag__tramp_common\n"
        "  .set ag__tramp_i, ag__tramp_i + 1\n"
        "  .endr\n"
        ".size ag__tramps, .-ag__tramps\n");

extern const unsigned char ag__tramps[];

void *ag__tramp_for(const char *name, void *real) {
  void *t = NULL;
  int i;
  if (!real || !name) return NULL;
  pthread_mutex_lock(&tramp_lock);
  for (i = 0; i < ntramps; i++)
    if (tramps[i].real == real) break;
  if (i == ntramps && ntramps < AG_TRAMPS) {
    char *copy = strdup(name);
    if (copy) {
      tramp_calls[i].name = copy;
      tramp_calls[i].family = AG_FAM_UNCLASSIFIED;
      __atomic_store_n(&tramps[i].real, real, __ATOMIC_RELEASE);
      ntramps++;
    }
  }
  if (i < ntramps) t = (void *)(ag__tramps + 16 * i);
  pthread_mutex_unlock(&tramp_lock);
  if (!t) ag__log(AG_LOG_WARN, "no ordering trampoline left for %s: handed out unwatched", name);
  return t;
}

#else

void *ag__tramp_for(const char *name, void *real) {
  (void)name, (void)real;
  return NULL;
}

#endif

__attribute__((constructor)) static void tramp_register(void) {
  ag__stats_register(tramp_calls, AG_TRAMPS);
}
