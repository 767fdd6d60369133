#!/usr/bin/env bash
# engine-layout-unknown.sh — driver-API kernels whose parameter queries fail
# (tests/progs/e-nolayout.cu). SIM_FAIL makes cuFuncGetParamInfo and cuKernelGetParamInfo fail
# as on a driver older than 12.4, and the program overwrites and frees the cubin image it loaded
# with cuModuleLoadData before launching. The library reads layouts from an image when it is
# loaded, so it knows pd_axpy's layout: no launch lacks one, and the driver launches are
# replayed as well as the 40 runtime launches (whose layouts are in the executable's registered
# fatbin). Output must be identical: reading the freed image later, or a wrong layout, would
# change it (or crash).
. "$(dirname "$0")/lib.sh"
[ -f "$BUILD/tests/kernels/prog-driver.cubin" ] || ag_skip "skipped: $BUILD/tests/kernels/prog-driver.cubin is not built"
export SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+
AG_EXPECT_REPLAY=1 ag_compare_prog e-nolayout "$BUILD/tests/kernels" -- launch copy
ag_expect "$AG_STATS" "fb['layout_unknown'] == 0" "replayed > 40"
