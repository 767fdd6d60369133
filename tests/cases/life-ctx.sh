#!/usr/bin/env bash
# life-ctx.sh — ending a context through the driver API ends its modules, functions and graphs
# (tests/progs/l-ctx.cu). Three rounds: retain the primary context, load a cubin, run
# graphed steps, launch two more (held by the library) and end the context at once: the last
# release, then a reset, then the last release. The next round loads the same image, and the
# simulated driver hands out the same handles. With the library the output must be identical
# under three seeds; the launches held when each context ended ran before it ended (2 of the
# step's 3, replayed from the round's graph with its last node disabled: one prefix replay per
# round, nothing passed through); every round is learnt afresh: three graphs, none demoted,
# no graph launch failed. A library that kept what it learnt past the end of a context replayed
# the first round's graph in the second round's context (the simulator refuses it: destroyed
# context) and demoted the sequence.
. "$(dirname "$0")/lib.sh"
[ -f "$BUILD/tests/kernels/prog-driver.cubin" ] || ag_skip "skipped: $BUILD/tests/kernels/prog-driver.cubin is not built"
expect() {
  ag_expect "$AG_STATS" "graphs == 3" "demotions == 0" "fb['graph_error'] == 0" \
    "st['prefix_replays'] == 3" "fb.get('flushed', 0) == 0" "st['kernels'] == 6" "st['forgotten']['graphs'] == 3" "replayed >= 36"
}
d=$AG_TMP/l-ctx
# Whole sequences (one chunk each) and a hold bound of 1 s: the counts above (prefix replays
# included) do not then depend on the host's pace.
export AUTOGRAPH_CHUNK_US=0 AUTOGRAPH_HOLD_US=1000000
SIM_SEED=1 AG_EXPECT_REPLAY=1 ag_compare_prog l-ctx "$BUILD/tests/kernels" -- launch copy device
expect
for seed in 2 3; do
  SIM_SEED=$seed ag_run "$d/plain-seed$seed" env LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/l-ctx" "$BUILD/tests/kernels"
  ag_same "$d/plain1" "$d/plain-seed$seed"
  SIM_SEED=$seed AG_EXPECT_REPLAY=1 ag_rerun l-ctx "seed$seed" "$BUILD/tests/kernels" -- launch copy device
  expect
done
