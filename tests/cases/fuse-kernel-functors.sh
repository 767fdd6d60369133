#!/usr/bin/env bash
# fuse-kernel-functors.sh — the functor, element-count, operand and overlap conditions of the
# kernel patterns (AUTOGRAPH_FUSE=exact), broken one at a time by a mode of tests/progs/k-fuse.cu,
# as fuse-kernel-conditions.sh does for the launch shapes (same checks: output byte-identical to
# the run without the library, the broken pattern's fused count 0, the other pattern fused at
# every replay; each baseline the same under SIM_SEED=1, 2, 3):
#   torch_add_relu: clamp-max, clamp-neg0, clamp-lim0, clamp-lim1 (relu is not clamp_min(t, +0)),
#                   overlap-relu (relu writes the add's input shifted by one element);
#   torch_mul_add:  add2-other (the add does not read the product), add2-alpha (alpha 0.5),
#                   add2-count (N-1), overlap-add2 (its other operand one element into the
#                   product). fuse-kernel.sh covers relu-other, count, sub, alpha, div and alias.
. "$(dirname "$0")/lib.sh"
# One graph launch per replay (AUTOGRAPH_CHUNK_US=0): where chunks end follows the host's real
# pace, which varies from run to run.
export AUTOGRAPH_REPEATS=2 AUTOGRAPH_MIN_SEQ=6 AUTOGRAPH_CHUNK_US=0
REPLAYS=22
ag_need k-fuse

# check MODE BROKEN OTHER [EXPR…]: the baseline under SIM_SEED=1, 2, 3 (the same output: the
# mode is race-free), then one run with AUTOGRAPH_FUSE=exact compared with it; EXPRs replace
# the default expectations on its statistics.
check() {
  local mode=$1 broken=$2 other=$3 d=$AG_TMP/k-fuse
  shift 3
  mkdir -p "$d"
  for s in 1 2 3; do
    ag_run "$d/plain$s" env SIM_SEED=$s LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/k-fuse" "$mode"
    ag_ok "$d/plain$s"
    ag_same "$d/plain1" "$d/plain$s"
  done
  AUTOGRAPH_FUSE=exact ag_rerun k-fuse "$mode-exact" "$mode"
  if [ $# -gt 0 ]; then
    ag_expect "$AG_STATS" "$@"
  else
    ag_expect "$AG_STATS" "$(ag_graph_launches $REPLAYS)" "fp['$broken'] == 0" \
      "$(ag_per_replay "fp['$other']" $REPLAYS)"
  fi
}

for mode in clamp-max clamp-neg0 clamp-lim0 clamp-lim1 overlap-relu; do
  check "$mode" torch_add_relu torch_mul_add
done
for mode in add2-other add2-alpha add2-count overlap-add2; do
  check "$mode" torch_mul_add torch_add_relu
done

echo "fuse-kernel-functors: every broken condition leaves its pattern unfused, output identical"
