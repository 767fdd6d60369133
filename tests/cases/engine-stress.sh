#!/usr/bin/env bash
# engine-stress.sh — four threads, two streams each, launching repeated sequences at the same
# time with events between their streams and periodic syncs (tests/progs/e-stress.cu). Identical
# output in every run (the interleaving differs from run to run, so the case runs the program
# with the library three times, with different simulator schedules), no deadlock (each run is
# bounded by AG_PROG_TIMEOUT), and replays in every run.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-stress -- launch event sync
ag_expect "$AG_STATS" "replayed > 0"
for seed in 1 2; do
  SIM_SEED=$seed AG_EXPECT_REPLAY=1 ag_rerun e-stress "seed$seed" -- launch event sync
  ag_expect "$AG_STATS" "replayed > 0"
done
