/* elf-cublaslt.c — smoke test of the parser over a large real library: every kernel in the
 * .nv_fatbin section of libcublasLt.so.13 ($CUDA_HOME/lib64; skipped when absent), whose cubins
 * are all zstd-compressed. Prints the counts and the time, which must stay within seconds.
 * Checks that each kernel has a name, a plausible parameter block (CUDA 13 allows at most
 * 32 764 bytes) and parameters inside it, in order and not overlapping.
 */
#include "elf.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

typedef struct tally {
  long kernels, params, big;
  int archs[256];
} tally_t;

static int on_kernel(const ag_kernel_desc_t *k, void *ctx) {
  tally_t *t = ctx;
  t->kernels++;
  t->params += k->nparams;
  if (k->arch > 0 && k->arch < 256) t->archs[k->arch]++;
  if (k->param_bytes > 4096) t->big++;
  if (!k->name[0] || k->param_bytes > 32764)
    CHECK_FAIL_("kernel %s: %u parameter bytes", k->name, k->param_bytes);
  uint32_t end = 0;
  for (uint32_t i = 0; i < k->nparams; i++) {
    const ag_kparam_t *p = &k->params[i];
    if (p->offset < end || p->offset + p->size > k->param_bytes || p->size == 0)
      CHECK_FAIL_("kernel %s param %u: %u+%u (previous end %u, block %u)", k->name, i,
                  p->offset, p->size, end, k->param_bytes);
    end = p->offset + p->size;
  }
  return 0;
}

int main(void) {
  const char *cuda = getenv("CUDA_HOME");
  char path[4096];
  snprintf(path, sizeof(path), "%s/lib64/libcublasLt.so.13", cuda ? cuda : "/usr/local/cuda");
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    printf("skip: no %s\n", path);
    return 77;
  }
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  CHECK(p != MAP_FAILED);
  close(fd);

  tally_t t = {0};
  ag_image_err_t err = {0};
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int rc = ag__elf_fatbins(p, (size_t)st.st_size, on_kernel, &t, &err);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  if (rc) printf("error %d at 0x%zx: %s\n", rc, err.offset, err.msg);
  CHECK_INT(rc, ==, 0);
  printf("%s: %ld kernels, %ld parameters, %ld with blocks over 4 KiB, in %.2f s\n", path,
         t.kernels, t.params, t.big, secs);
  printf("kernels per arch:");
  for (int i = 0; i < 256; i++)
    if (t.archs[i]) printf(" sm_%d=%d", i, t.archs[i]);
  printf("\n");
  /* CUDA 13.0's libcublasLt.so.13 holds about 42 000; a much smaller count means entries were
   * skipped. */
  CHECK_INT(t.kernels, >, 20000);
  CHECK(secs < 30);
  munmap(p, (size_t)st.st_size);
  return 0;
}
