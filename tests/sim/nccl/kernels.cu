/* kernels.cu — the device code of the simulated libnccl.so.2: one kernel per name NCCL uses
 * (ncclsim.h lists them), each taking the argument block by value. The bodies are empty: the
 * simulated driver runs each kernel's CPU twin (sim_<name> in nccl.c), which does the
 * communication through shared memory. Built by nvcc into a fatbin that fatbin.S embeds.
 */
#include "ncclsim.h"

#define NCCLSIM_RED(coll, op, ty)                                                          \
  extern "C" __global__ void ncclDevKernel_##coll##_##op##_##ty##_RING_LL(ncclsim_args_t a) {}
#define NCCLSIM_OTHER(name) extern "C" __global__ void name(ncclsim_args_t a) {}

NCCLSIM_REDUCING_KERNELS(NCCLSIM_RED)
NCCLSIM_OTHER_KERNELS(NCCLSIM_OTHER)
