#!/usr/bin/env bash
# life-reset.sh — cudaDeviceReset forgets everything of the context
# (tests/progs/l-reset.cu). Four rounds of graphed steps with a reset between rounds: with the
# library the output must be identical under three seeds, and each reset must make it forget
# the context's kernels, sequences and graphs and learn them again: per round two graphs (the
# kernels' sequence and a sequence of stream operations only, an event wait and a memset), none
# demoted, no graph launch failed. A library that kept what it learnt past a reset replayed the
# first round's graph after it (in a destroyed context: the simulator says so, and the sequence
# was demoted); one that kept the graph of operations only, which names no kernel, did the same.
. "$(dirname "$0")/lib.sh"
expect() {
  ag_expect "$AG_STATS" "graphs == 8" "demotions == 0" "fb['graph_error'] == 0" \
    "st['forgotten']['graphs'] == 6" "st['kernels'] == 12" "replayed >= 36" "ops_replayed > 0"
}
d=$AG_TMP/l-reset
SIM_SEED=1 AG_EXPECT_REPLAY=1 ag_compare_prog l-reset -- launch copy device
expect
for seed in 2 3; do
  SIM_SEED=$seed ag_run "$d/plain-seed$seed" env LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/l-reset"
  ag_same "$d/plain1" "$d/plain-seed$seed"
  SIM_SEED=$seed AG_EXPECT_REPLAY=1 ag_rerun l-reset "seed$seed" -- launch copy device
  expect
done
