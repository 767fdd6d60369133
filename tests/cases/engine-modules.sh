#!/usr/bin/env bash
# engine-modules.sh — kernel layouts from images loaded through the driver
# (tests/progs/e-modules.cu). The program loads a cubin (cuModuleLoadData) and a
# zstd-compressed fatbin (cuLibraryLoadData), frees both buffers before launching, unloads and
# reloads the cubin midway, and loads one kernel from PTX text (cuModuleLoadDataEx).
#   - With a driver that describes parameters (12.4 and later): everything may be replayed and
#     no launch lacks a layout.
#   - Under SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+ (a driver before 12.4) the
#     library knows the cubin's and the fatbin's layouts only because it read the images when
#     they were loaded: their launches are replayed, with identical output. The 40 launches of
#     the PTX kernel (no cubin to read; only the driver, which compiled it, knows its layout)
#     pass through as layout_unknown, exactly those.
. "$(dirname "$0")/lib.sh"
for f in prog-driver.cubin prog-driver.z.fatbin; do
  [ -f "$BUILD/tests/kernels/$f" ] || ag_skip "skipped: $BUILD/tests/kernels/$f is not built"
done
AG_EXPECT_REPLAY=1 ag_compare_prog e-modules "$BUILD/tests/kernels" -- launch copy
ag_expect "$AG_STATS" "fb['layout_unknown'] == 0" "replayed >= 96" "graphs >= 3"
export SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+
# With sequences of at least 4 launches, each iteration of 4 is one sequence (no content-defined
# cut inside it), so the count is exact.
AUTOGRAPH_MIN_SEQ=4 AG_EXPECT_REPLAY=1 ag_rerun e-modules pre-12.4 "$BUILD/tests/kernels" -- launch copy
# Phase 1 and its rerun after the reload: 2 x 10 iterations of 4 launches, of which the first
# AUTOGRAPH_REPEATS (1) of each phase are learnt and the remaining 9 replayed.
ag_expect "$AG_STATS" "fb['layout_unknown'] == 40" "replayed == 72" "passthrough == launches - 72"
