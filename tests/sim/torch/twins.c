#include <stdio.h>
#include <cuda_runtime_api.h>
int simtw_twin(const char *name, dim3 grid, dim3 block, void **args);
int simtw_twin(const char *name, dim3 grid, dim3 block, void **args) {
  (void)grid, (void)block, (void)args, (void)name;
  return 0;
}
