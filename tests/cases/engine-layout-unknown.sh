#!/usr/bin/env bash
# engine-layout-unknown.sh — driver-API kernels whose parameter queries fail
# (tests/progs/e-nolayout.cu). SIM_FAIL makes cuFuncGetParamInfo and cuKernelGetParamInfo fail
# as on a driver older than 12.4, and the program overwrites and frees the cubin image it loaded
# with cuModuleLoadData before launching. Output must be identical, and one of two outcomes is
# right: the library did not read the image while it existed, so the 40 driver launches pass
# through (fallbacks.layout_unknown) and none is replayed; or it parsed the image at load time,
# so it knows the layout and replays some driver launches (replayed > the 40 runtime launches;
# a wrong layout would change the output). Reading the freed image later is the bug this
# catches (garbage layout: wrong output or a crash). The runtime kernels' layouts are in the
# executable's registered fatbin, so replays must happen either way.
. "$(dirname "$0")/lib.sh"
[ -f "$BUILD/tests/kernels/prog-driver.cubin" ] || ag_skip "skipped: $BUILD/tests/kernels/prog-driver.cubin is not built"
export SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+
AG_EXPECT_REPLAY=1 ag_compare_prog e-nolayout "$BUILD/tests/kernels" -- launch copy
ag_expect "$AG_STATS" "replayed > 0" \
  "(fb['layout_unknown'] > 0 and replayed <= launches - 40) or (fb['layout_unknown'] == 0 and replayed > 40)"
