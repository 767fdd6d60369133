/* load-cudart.c — loads the CUDA runtime named on the command line and makes its first call
 * (cudaFree(0), which initialises it); prints the error code. Used by record-requests. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: load-cudart LIBCUDART\n"); return 2; }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  int (*cuda_free)(void *) = (int (*)(void *))dlsym(h, "cudaFree");
  if (!cuda_free) { fprintf(stderr, "no cudaFree in %s\n", argv[1]); return 2; }
  printf("cudaFree(0) = %d\n", cuda_free(NULL));
  return 0;
}
