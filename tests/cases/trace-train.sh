#!/usr/bin/env bash
# trace-train.sh — AUTOGRAPH_TRACE on tests/progs/train-loop.cu (a training-like loop that
# replays graphs): the program's output and exit status are identical with and without the
# trace; the trace is valid and agrees with the statistics of the same run (replays =
# graph_launches, builds = graphs, replayed launches, flushed launches per reason; see
# trace-lib.sh), says that each iteration's held run ended complete (it is replayed as soon as
# its last launch is held, not at the copy of the loss that ended it while it was learned) and
# puts the stream's work on a track of its own. Without AUTOGRAPH_TRACE, and with
# AUTOGRAPH_DISABLE=1, no trace file is written.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace-lib.sh"
d=$AG_TMP/train-loop

AG_EXPECT_REPLAY=1 ag_compare_prog train-loop
[ -e "$AG_TMP/t.json" ] && ag_fail "a trace file exists before any run asked for one"

AUTOGRAPH_TRACE=$AG_TMP/t.json AG_EXPECT_REPLAY=1 ag_rerun train-loop trace
ag_trace_check "$AG_TMP/t.json" "$AG_STATS" \
  "len(replays) > 0" "len(builds) >= 1" "'sequence complete' in causes" \
  "sum(1 for t in tracks if t) == 1" "all(r['args']['seq'] in {b['args']['seq'] for b in builds} for r in replays)" \
  "od['launches'] == st['launches']"
[ -e "$AG_TMP/t.json.tmp" ] && ag_fail "the temporary file $AG_TMP/t.json.tmp was left behind"
grep -q '^autograph: ' "$d/trace.err" && ag_fail "messages on stderr with the trace: $(cat "$d/trace.err")"

# The events are written in a stable order (sorted by start): a second run with the same
# decisions gives the same sequence of event names.
AUTOGRAPH_TRACE=$AG_TMP/t2.json AG_EXPECT_REPLAY=1 ag_rerun train-loop trace2
ag_trace_check "$AG_TMP/t2.json" "$AG_STATS"

AUTOGRAPH_DISABLE=1 AUTOGRAPH_TRACE=$AG_TMP/off.json AG_EXPECT_REPLAY=0 ag_run "$d/off" \
  env LD_PRELOAD="$(ag_preload "$AG_LIB")" "$BUILD/tests/progs/train-loop"
ag_same "$d/plain1" "$d/off"
[ -e "$AG_TMP/off.json" ] && ag_fail "AUTOGRAPH_DISABLE=1 still wrote a trace"
echo "trace-train: ok"
