#!/usr/bin/env bash
# fuse-kernel-conditions.sh — every condition of every kernel pattern (AUTOGRAPH_FUSE=exact),
# broken alone by one mode of tests/progs/k-fuse.cu: the output is byte-identical to the run
# without the library, the broken pattern never substitutes (fused_by_pattern 0) and the other
# pattern of the same program still does at every replay, which shows the library was active.
# docs/fused-patterns-conditions.md lists the conditions; fuse-kernel.sh covers the others
# (relu-other, count, sub, alpha, div, alias).
#
# Launch shapes: an original computes exactly its N elements only with PyTorch's own shape
# (blocks of (128,1,1), a grid of (ceil(N/512),1,1)). short-* and block-* leave elements
# unwritten, which the fused kernel would write (the output would differ); long-* and gridy-*
# compute the same elements, but are not PyTorch's launch and are not substituted either.
# grow keeps the launch shapes (the same sequence, the same graph) while N grows past what they
# cover at step 12: the replays of steps 2..11 substitute, then the conditions fail on the new
# arguments and the graph is rebuilt without substitution.
#
# Each mode's baseline is first run under SIM_SEED=1, 2 and 3: the same output (race-free).
. "$(dirname "$0")/lib.sh"
export AUTOGRAPH_REPEATS=2 AUTOGRAPH_MIN_SEQ=6
REPLAYS=22
prog=$BUILD/tests/progs/k-fuse
ag_need k-fuse

seeds() {
  local ref
  ref=$(SIM_SEED=1 LD_PRELOAD="$AG_PRELOAD_BASE" timeout "$AG_PROG_TIMEOUT" "$prog" "$1") ||
    ag_fail "k-fuse $1 failed under SIM_SEED=1"
  for s in 2 3; do
    [ "$(SIM_SEED=$s LD_PRELOAD="$AG_PRELOAD_BASE" timeout "$AG_PROG_TIMEOUT" "$prog" "$1")" = "$ref" ] ||
      ag_fail "k-fuse $1: output under SIM_SEED=$s differs from SIM_SEED=1 (program races)"
  done
}

check() { # MODE BROKEN OTHER
  seeds "$1"
  AG_EXPECT_REPLAY=1 ag_compare_prog k-fuse "$1"
  AUTOGRAPH_FUSE=exact ag_rerun k-fuse "$1-exact" "$1"
  ag_expect "$AG_STATS" "graph_launches == $REPLAYS" "fp['$2'] == 0" "fp['$3'] == graph_launches"
}

for shape in short long block gridy; do
  check "$shape-add" torch_add_relu torch_mul_add
  check "$shape-relu" torch_add_relu torch_mul_add
  check "$shape-mul" torch_mul_add torch_add_relu
  check "$shape-add2" torch_mul_add torch_add_relu
done
for mode in clamp-max clamp-neg0 clamp-lim0 clamp-lim1 overlap-relu; do
  check "$mode" torch_add_relu torch_mul_add
done
for mode in add2-other add2-alpha add2-count overlap-add2; do
  check "$mode" torch_mul_add torch_add_relu
done

seeds grow
AG_EXPECT_REPLAY=1 ag_compare_prog k-fuse grow
AUTOGRAPH_FUSE=exact ag_rerun k-fuse grow-exact grow
ag_expect "$AG_STATS" "graph_launches == $REPLAYS" "fp['torch_add_relu'] == 10" \
  "fp['torch_mul_add'] == 10" "demotions == 0"

echo "fuse-kernel-conditions: every broken condition leaves its pattern unfused, output identical"
