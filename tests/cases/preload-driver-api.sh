#!/usr/bin/env bash
# preload-driver-api.sh — driver-only program (getter from dlsym, modules, libraries, extra, cuLaunchKernelEx).
# Runs tests/progs/driver-api.cu without and with the preload library (see lib.sh, ag_compare_prog).
. "$(dirname "$0")/lib.sh"
for f in prog-driver.cubin prog-driver.fatbin prog-driver.z.fatbin; do
  [ -f "$BUILD/tests/kernels/$f" ] || ag_skip "skipped: $BUILD/tests/kernels/$f is not built"
done
ag_compare_prog driver-api "$BUILD/tests/kernels" -- launch copy memset sync alloc free
