#!/usr/bin/env bash
# fuse-kernel-conditions.sh — the launch-shape conditions of every kernel pattern
# (AUTOGRAPH_FUSE=exact), broken one at a time by a mode of tests/progs/k-fuse.cu, for each
# original of each pattern: the output is byte-identical to the run without the library, the
# broken pattern never substitutes (fused_by_pattern 0) and the other pattern of the same program
# still does at every replay, which shows the library was active. docs/fused-patterns-conditions.md
# lists every condition and the mode that breaks it.
#
# Launch shapes: an original computes exactly its N elements only with PyTorch's own shape
# (blocks of (128,1,1), a grid of (ceil(N/512),1,1)). short-* and block-* leave elements
# unwritten, which the fused kernel would write (the output would differ); long-* and gridy-*
# compute the same elements, but are not PyTorch's launch and are not substituted either.
# grow keeps the launch shapes (the same sequence, the same graph) while N grows past what they
# cover at step 12: the replays of steps 2..11 substitute, then the conditions fail on the new
# arguments and the graph is rebuilt without substitution.
# fuse-kernel-functors.sh breaks the functor, count, operand and overlap conditions the same way.
#
# Each mode's baseline is run under SIM_SEED=1, 2 and 3: the same output (race-free).
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

for shape in short long block gridy; do
  check "$shape-add" torch_add_relu torch_mul_add
  check "$shape-relu" torch_add_relu torch_mul_add
  check "$shape-mul" torch_mul_add torch_add_relu
  check "$shape-add2" torch_mul_add torch_add_relu
done
check grow torch_add_relu torch_mul_add "$(ag_graph_launches $REPLAYS)" \
  "$(ag_per_replay "fp['torch_add_relu']" 10)" "$(ag_per_replay "fp['torch_mul_add']" 10)" "demotions == 0"

echo "fuse-kernel-conditions: every launch shape PyTorch does not make leaves its pattern unfused"
