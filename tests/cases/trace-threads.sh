#!/usr/bin/env bash
# trace-threads.sh — the trace when several threads launch at once on streams of their own
# (tests/progs/e-stress.cu: 4 threads, 2 streams each, interleaving in an order that changes
# from run to run, and tests/progs/r-soak.cu: random sequences over several streams and threads
# with demotions). Events come from every thread, under the engine lock: each stream still gets
# its own track, timestamps are ordered and slices nested per track, every held run ends at its
# replay or flush, and the counts agree with the run's statistics (trace-lib.sh). Output
# identical with and without the trace, under two simulator schedules.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace-lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-stress
for seed in 1 2; do
  rm -f "$AG_TMP/stress.json"
  SIM_SEED=$seed AUTOGRAPH_TRACE=$AG_TMP/stress.json AG_EXPECT_REPLAY=1 ag_rerun e-stress "trace$seed"
  ag_trace_check "$AG_TMP/stress.json" "$AG_STATS" "len(tracks) >= 5" "len(replays) > 0" \
    "len({h['tid'] for h in held}) >= 4"
done
AG_EXPECT_REPLAY=1 ag_compare_prog r-soak
AUTOGRAPH_MAX_GRAPHS=4 AUTOGRAPH_TRACE=$AG_TMP/soak.json ag_rerun r-soak trace
ag_trace_check "$AG_TMP/soak.json" "$AG_STATS" "len(replays) > 0" "len(tracks) >= 3"
echo "trace-threads: ok"
