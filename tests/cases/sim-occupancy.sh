#!/usr/bin/env bash
# sim-occupancy.sh — occupancy and cooperative launches (tests/progs/s-occupancy.cu,
# tests/sim/README.md "Modules and launches"): cudaOccupancyMaxActiveBlocksPerMultiprocessor
# and cuOccupancyMaxActiveBlocksPerMultiprocessor (and their WithFlags forms) answer from the
# documented model of an H100-class SM, and a cooperative grid of exactly that many blocks per
# SM × 132 runs while one block more is refused with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
# through cudaLaunchCooperativeKernel, the cooperative launch attribute and kernel nodes: for
# 128 threads (16 blocks per SM), 400 threads (13 warps: 4) and 128 threads with 40 KiB of
# dynamic shared memory (228 KiB / 41 KiB: 5). Bad input is cudaErrorInvalidValue. The output
# is the same under SIM_SEED=1, 2, 3, then the same with the library.
. "$(dirname "$0")/lib.sh"
prog=s-occupancy
ag_seed_stable $prog
ref=$AG_REF
want() { grep -qxF -- "$1" <<<"$ref" || ag_fail "$prog: expected the line: $1"; }
want 'sms=132'
shape() { # THREADS SHMEM PER_SM
  local most=$(($3 * 132)) how
  want "threads=$1 shmem=$2: blocks/SM=$3 cooperative grid at most $most"
  for how in cudaLaunchCooperativeKernel cudaLaunchKernelExC; do
    want "  $how: grid $most=cudaSuccess ran=ok, grid $((most + 1))=cudaErrorCooperativeLaunchTooLarge"
  done
  want "  node threads=$1 shmem=$2: grid $most attribute=CUDA_SUCCESS, params grid $((most + 1))=cudaErrorCooperativeLaunchTooLarge, attribute on grid $((most + 1))=CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, ran=ok"
}
shape 128 0 16
shape 400 0 4
shape 128 40960 5
want 'null result: runtime=cudaErrorInvalidValue driver=CUDA_ERROR_INVALID_VALUE'
want 'block size 0: runtime=cudaErrorInvalidValue driver=CUDA_ERROR_INVALID_VALUE'
want 'unknown flags: runtime=cudaErrorInvalidValue driver=CUDA_ERROR_INVALID_VALUE'
ag_compare_prog $prog
echo "sim-occupancy: occupancy answers and the cooperative limit agree"
