#!/usr/bin/env bash
# life-images.sh — images read after they are gone (tests/progs/l-images.cu). The
# program loads a cubin with cuModuleLoadData from a plugin's read-only data and dlcloses the
# plugin, and two more from one static buffer it then overwrites (a JIT reusing its buffer);
# one kernel has no parameters. The library must read what it needs while each load is in
# progress: reading the unmapped image later crashed it, and reading the reused buffer gave it
# the wrong image. Every launch must be replayable (layout known, none refused for its missing
# argument array), with the driver describing parameters and under SIM_FAIL as a driver before
# 12.4, under three seeds; then the JIT part alone under SIM_FAIL.
. "$(dirname "$0")/lib.sh"
k=$BUILD/tests/kernels p=$BUILD/tests/plugins
for f in "$k/prog-driver.cubin" "$k/l-image.cubin" "$p/l-image.so"; do
  [ -f "$f" ] || ag_skip "skipped: $f is not built"
done
expect() {
  ag_expect "$AG_STATS" "fb['layout_unknown'] == 0" "fb['attributes'] == 0" "replayed >= 30" \
    "graphs == 1" "demotions == 0"
}
d=$AG_TMP/l-images
SIM_SEED=1 AG_EXPECT_REPLAY=1 ag_compare_prog l-images "$k" "$p" -- launch copy
expect
for seed in 2 3; do
  SIM_SEED=$seed ag_run "$d/plain-seed$seed" env LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/l-images" "$k" "$p"
  ag_same "$d/plain1" "$d/plain-seed$seed"
  SIM_SEED=$seed AG_EXPECT_REPLAY=1 ag_rerun l-images "seed$seed" "$k" "$p" -- launch copy
  expect
  SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+ SIM_SEED=$seed AG_EXPECT_REPLAY=1 \
    ag_rerun l-images "pre-12.4-seed$seed" "$k" "$p" -- launch copy
  expect
done
# The JIT's buffer alone (no plugin): a library that read images after the load knew no layout
# of m2 or m3 here.
export SIM_FAIL=cuFuncGetParamInfo:1+,cuKernelGetParamInfo:1+
AG_EXPECT_REPLAY=1 ag_compare_prog l-images "$k" "$p" jit -- launch copy
expect
