/* prog.h — helpers shared by the CUDA C test programs in tests/progs.
 *
 * Every program prints only deterministic results: checksums of its outputs over the exact
 * bits of each value (never a rounded decimal, a pointer or a time), and on its last line
 *
 *   launches: runtime=R driver=D cudnn=0            (programs without cuDNN)
 *   launches: runtime=R driver=D cudnn_calls=K      (programs calling cuDNN)
 *
 * where R and D are the kernel launches the program made itself through the runtime and the
 * driver API, counted by the program, and K the number of cuDNN compute calls it made (how many
 * kernels one cuDNN call launches is cuDNN's business). The preload tests compare this line with
 * the library's statistics. Counters are atomic because several programs launch from several
 * threads.
 *
 * The header is plain C++ host code: the same program runs on a GPU, where the CPU twins of the
 * kernels are unused, and on the CPU simulator.
 */
#ifndef AG_TESTS_PROG_H
#define AG_TESTS_PROG_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"

static unsigned long prog_runtime_launches_, prog_driver_launches_, prog_cudnn_calls_;

/* Count one launch made through the runtime API / the driver API / one cuDNN compute call. */
#define PROG_RT() __atomic_add_fetch(&prog_runtime_launches_, 1, __ATOMIC_RELAXED)
#define PROG_DRV() __atomic_add_fetch(&prog_driver_launches_, 1, __ATOMIC_RELAXED)
#define PROG_DNN() __atomic_add_fetch(&prog_cudnn_calls_, 1, __ATOMIC_RELAXED)

/* Runtime launch with <<<>>> that checks the launch status and counts it. */
#define PROG_LAUNCH(kernel, grid, block, shmem, stream, ...)                              \
  do {                                                                                    \
    kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__);                          \
    CHECK_CUDA(cudaGetLastError());                                                       \
    PROG_RT();                                                                            \
  } while (0)

/* CLOCK_MONOTONIC in nanoseconds: for bounded waits and durations (never for the output). */
static inline uint64_t prog_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ns nanoseconds of host work (preparing a step, the Python between two launches): the thread
 * busy-spins ns of real time, and on the simulator the work is also declared to the driver's
 * modelled clock (simctl_host_work), which advances by exactly ns whatever the machine's speed.
 * The spin keeps the real pace of the program what the model says (a library that follows the
 * pace at which launches come, as libautograph's chunks do, sees the same program the clock
 * charges), and lets the same program run unchanged on a GPU. The control is looked up once
 * the driver is loaded (the runtime loads it at the first CUDA call), and the answer kept from
 * then on. */
typedef void (*prog_host_work_fn)(unsigned long long ns);
static inline void prog_host_work(uint64_t ns) {
  static prog_host_work_fn fn;
  static int known; /* 1: fn is the simulator's control; 2: there is none */
  int k = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
  if (k == 0) {
    prog_host_work_fn f = (prog_host_work_fn)dlsym(RTLD_DEFAULT, "simctl_host_work");
    void *h = f ? NULL : dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
      f = (prog_host_work_fn)dlsym(h, "simctl_host_work");
      dlclose(h);
    }
    if (f || h) { /* decided: the driver is loaded, with or without the control */
      __atomic_store_n(&fn, f, __ATOMIC_RELAXED);
      __atomic_store_n(&known, k = f ? 1 : 2, __ATOMIC_RELEASE);
    }
  }
  if (k == 1) __atomic_load_n(&fn, __ATOMIC_RELAXED)(ns);
  for (uint64_t t0 = prog_now_ns(); prog_now_ns() - t0 < ns;) {
  }
}

/* FNV-1a over raw bytes: a checksum that sees every bit of a float. */
static inline uint64_t prog_hash(const void *p, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static inline uint32_t prog_fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Prints `label: <hash> first=<bits> last=<bits>` for n floats. */
static inline void prog_print_floats(const char *label, const float *v, size_t n) {
  printf("%s: %016llx first=%08x last=%08x\n", label, (unsigned long long)prog_hash(v, n * 4),
         prog_fbits(v[0]), prog_fbits(v[n - 1]));
}

static inline void prog_print_launches(void) {
  printf("launches: runtime=%lu driver=%lu cudnn=0\n", prog_runtime_launches_,
         prog_driver_launches_);
}

static inline void prog_print_launches_cudnn(void) {
  printf("launches: runtime=%lu driver=%lu cudnn_calls=%lu\n", prog_runtime_launches_,
         prog_driver_launches_, prog_cudnn_calls_);
}

/* Index of this thread in a 1-D launch (device code). */
#define PROG_TID() ((unsigned long)blockIdx.x * blockDim.x + threadIdx.x)

#endif
