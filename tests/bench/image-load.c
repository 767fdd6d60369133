/* image-load.c — what reading an image's layouts at load costs
 * (docs/module-lifetimes.md): the library's own ag__kinfo_image, timed on each fatbin container
 * of a host library's .nv_fatbin section (libcublasLt.so.13: ~42k kernels), as the runtime
 * inside that library would pass them to cuLibraryLoadData one by one.
 *
 * Usage: image-load [LIBRARY]   (default: $CUDA_HOME/lib64/libcublasLt.so.13)
 *
 * For each container it times, with CLOCK_MONOTONIC:
 *   at load, parse deferred (what the library did before it read images at load):
 *                   dladdr(container) (the check that deferred the parse of an image inside
 *                   a loaded object), then nothing; the parse was paid at the first launch
 *                   whose layout the driver did not give (drivers before 12.4, and kernels
 *                   without parameters on any driver);
 *   at load, now, driver before 12.4 (or not yet seen to describe parameters):
 *                   ag__kinfo_image(handle, container, 0): parse every cubin, keep the layouts;
 *   at load, now, driver seen to describe parameters (12.4 and later): ag__kinfo_image again,
 *                   which then only records the image.
 * It prints the count, total, median, 99th percentile and maximum per container, the kernels
 * kept and the heap they take. Host CPU time only: the driver's own load time (on a GPU) is not
 * included, and is what these figures should be compared with on the GPU check.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kinfo.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static size_t heap_bytes(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += t[i];
  qsort(t, n, sizeof *t, cmp_d);
  printf("%-34s total %9.2f ms  median %8.4f ms  p99 %8.3f ms  max %8.3f ms\n", what, sum,
         t[n / 2], t[(n * 99) / 100], t[n - 1]);
}

static int count_kernel(const ag_kernel_desc_t *d, void *ctx) {
  (void)d;
  ++*(size_t *)ctx;
  return 0;
}

int main(int argc, char **argv) {
  char def[4096];
  const char *cuda = getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda";
  snprintf(def, sizeof def, "%s/lib64/libcublasLt.so.13", cuda);
  const char *path = argc > 1 ? argv[1] : def;
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    fprintf(stderr, "image-load: cannot open %s\n", path);
    return 77;
  }
  const uint8_t *file = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (file == MAP_FAILED) return 1;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(file + eh->e_shoff);
  const char *names = (const char *)file + sh[eh->e_shstrndx].sh_offset;
  const uint8_t *sec = NULL;
  size_t secsize = 0;
  for (int i = 0; i < eh->e_shnum; i++)
    if (!strcmp(names + sh[i].sh_name, ".nv_fatbin"))
      sec = file + sh[i].sh_offset, secsize = sh[i].sh_size;
  if (!sec) {
    fprintf(stderr, "image-load: %s has no .nv_fatbin section\n", path);
    return 1;
  }
  /* The containers, one after another (16-byte header: magic, version, header size, payload). */
  size_t cap = 1024, n = 0;
  const uint8_t **c = malloc(cap * sizeof *c);
  if (!c) return 1;
  for (size_t off = 0; off + 16 <= secsize;) {
    uint32_t magic;
    uint16_t hsize;
    uint64_t payload;
    memcpy(&magic, sec + off, 4);
    memcpy(&hsize, sec + off + 6, 2);
    memcpy(&payload, sec + off + 8, 8);
    if (magic != 0xBA55ED50u) {
      off += 8;
      continue;
    }
    if (n == cap) {
      const uint8_t **more = realloc(c, (cap *= 2) * sizeof *c);
      if (!more) return 1;
      c = more;
    }
    c[n++] = sec + off;
    off += (hsize + payload + 7) & ~(size_t)7;
  }
  double *t_new = malloc(n * sizeof *t_new), *t_old = malloc(n * sizeof *t_old);
  double *t_drv = malloc(n * sizeof *t_drv);
  size_t kernels = 0;
  for (size_t i = 0; i < n; i++) (void)ag__image_kernels(c[i], 0, count_kernel, &kernels, NULL);
  size_t heap0 = heap_bytes();
  /* Before: the check that deferred the parse. */
  for (size_t i = 0; i < n; i++) {
    Dl_info info;
    double t0 = now_ms();
    volatile int r = dladdr(c[i], &info);
    (void)r;
    t_old[i] = now_ms() - t0;
  }
  /* Now: the parse, at every load. */
  for (size_t i = 0; i < n; i++) {
    double t0 = now_ms();
    (void)ag__kinfo_image((const void *)(uintptr_t)(i + 1), c[i], 0);
    t_new[i] = now_ms() - t0;
  }
  size_t heap1 = heap_bytes();
  size_t nimg = ag__kinfo_images();
  /* With a driver that describes parameters (new handles: a second set of images). */
  ag__kinfo_driver_describes();
  for (size_t i = 0; i < n; i++) {
    double t0 = now_ms();
    (void)ag__kinfo_image((const void *)(uintptr_t)(n + i + 1), c[i], 0);
    t_drv[i] = now_ms() - t0;
  }
  printf("%s: %zu fatbin containers in .nv_fatbin (%.1f MiB), %zu kernels\n", path, n,
         (double)secsize / (1 << 20), kernels);
  report("at load, parse deferred:", t_old, n);
  report("at load, now, driver < 12.4:", t_new, n);
  report("at load, now, driver >= 12.4:", t_drv, n);
  printf("first use, parse deferred, driver < 12.4 or no parameters: the parse above\n");
  printf("heap: %.1f MiB for the layouts of %zu images\n", (double)(heap1 - heap0) / (1 << 20),
         nimg);
  return 0;
}
