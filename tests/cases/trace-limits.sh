#!/usr/bin/env bash
# trace-limits.sh — the trace's bounds and failure modes, on tests/progs/train-loop.cu and
# tests/progs/r-fork.cu:
#   - AUTOGRAPH_TRACE_MAX_EVENTS=5: exactly 5 events recorded, then a final "trace truncated"
#     instant whose dropped count is otherData.dropped_events, at least what the run's replays
#     and builds needed beyond the 5 (two events per replay: the held run and the replay);
#     still valid JSON;
#   - a path in a missing folder, and a path that is a folder: exactly one warning on stderr,
#     the same output and exit status as without the library;
#   - a preloaded shell that runs the program and exits after it (it makes no CUDA call) does
#     not replace the program's trace;
#   - fork: with children forked while the parent holds and replays (some leave through exit(),
#     which runs the library's exit hook, some exec a preloaded /bin/true), the file is the
#     parent's and consistent with the parent's statistics, and every run finishes. That a
#     forked child writes nothing at all is checked by the unit test (tests/unit/ag-trace.c):
#     here the parent's later write would hide it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace-lib.sh"
d=$AG_TMP/train-loop

AG_EXPECT_REPLAY=1 ag_compare_prog train-loop

AUTOGRAPH_TRACE_MAX_EVENTS=5 AUTOGRAPH_TRACE=$AG_TMP/cap.json AG_EXPECT_REPLAY=1 ag_rerun train-loop cap
ag_trace_check "$AG_TMP/cap.json" "$AG_STATS" "od['recorded_events'] == 5" "trunc is not None" \
  "od['max_events'] == 5" "trunc['args']['dropped'] >= 2 * st['graph_launches'] + st['graphs'] - 5"

mkdir -p "$AG_TMP/dir"
for bad in "$AG_TMP/no/such/folder/t.json" "$AG_TMP/dir"; do
  AUTOGRAPH_TRACE=$bad AG_EXPECT_REPLAY=1 ag_rerun train-loop unwritable
  n=$(grep -c '^autograph: cannot write the trace to ' "$d/unwritable.err")
  [ "$n" = 1 ] || ag_fail "AUTOGRAPH_TRACE=$bad: $n warnings, expected 1: $(cat "$d/unwritable.err")"
  [ "$(grep -c '^autograph: ' "$d/unwritable.err")" = 1 ] || ag_fail "other messages: $(cat "$d/unwritable.err")"
  grep '^autograph: ' "$d/unwritable.err"
done
[ -d "$AG_TMP/dir" ] || ag_fail "the folder given as the trace path was replaced"

# A preloaded shell around the program: the shell exits last and must leave the trace alone.
rm -f "$AG_TMP/sh.json" "$AG_TMP/sh-stats.json"
ag_run "$d/shell" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_TRACE="$AG_TMP/sh.json" \
  AUTOGRAPH_STATS="$AG_TMP/sh-stats.json" sh -c '"$1"; exit $?' sh "$BUILD/tests/progs/train-loop"
ag_same "$d/plain1" "$d/shell"
ag_trace_check "$AG_TMP/sh.json" "$AG_TMP/sh-stats.json" "len(replays) > 0"

AG_EXPECT_REPLAY=1 ag_compare_prog r-fork 24 -- launch
AUTOGRAPH_TRACE=$AG_TMP/fork.json AG_EXPECT_REPLAY=1 ag_rerun r-fork trace 24 -- launch
ag_trace_check "$AG_TMP/fork.json" "$AG_STATS" "len(replays) > 0"
echo "trace-limits: ok"
