#!/usr/bin/env bash
# rel-validity.sh — what a held launch's submission depends on
# (tests/progs/r-validity.cu):
#   attr     the dynamic shared-memory limit raised and lowered between launches: held launches
#            are submitted before each change (identical output, and holds did happen);
#   same     the same limit set before every launch: no flush, so sequences are still replayed;
#   invalid  a launch that fails (impossible block) every fourth iteration returns its error
#            every time: it never enters a learned sequence, so it is never held;
#   failsub  the K-th driver launch fails (SIM_FAIL=cuLaunchKernel:K, K = 1..16, and from the
#            10th on; and K = 1..8 again with every graph launch failing): the program checks
#            after each synchronisation that a launch that did not run was reported to it;
#            some of those failures must be failed submissions of held launches
#            (failed_submissions), or the sweep did not test the reporting;
#   failsleep the same with 20 ms pauses without a CUDA call in the middle of some iterations:
#            held launches are then submitted by the helper thread, whose failures must reach
#            the program's thread too (and some holds must have ended by the bound).
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog r-validity attr -- launch
ag_expect "$AG_STATS" "fam['device'] > 0"
AG_EXPECT_REPLAY=1 ag_compare_prog r-validity same -- launch
AG_EXPECT_REPLAY=1 ag_compare_prog r-validity invalid -- launch
ag_expect "$AG_STATS" "fb['graph_error'] == 0" "demotions == 0"

ag_compare_prog r-validity failsub -- launch
failed=0
# Each K also with every graph launch failing (the sequence is demoted and the launches it held
# are submitted one by one, and one of them is the K-th): held launches then fail at submission
# however the steps were cut into sequences.
for k in $(seq 1 16) 10+ $(seq -f '%g,cuGraphLaunch:1+' 1 8); do
  SIM_FAIL=cuLaunchKernel:$k ag_rerun r-validity "fail-$k" failsub -- launch
  failed=$((failed + $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("failed_submissions", 0))' "$AG_STATS")))
done
[ "$failed" -gt 0 ] || ag_fail "no held launch failed at submission in the sweep: the reporting was not exercised"
echo "r-validity: $failed failed submissions, every one reported to the program"

# The same with pauses longer than the bound on holds: held launches are submitted by the
# library's helper thread, and its failures must reach the program's thread.
ag_compare_prog r-validity failsleep -- launch
failed=0 timeouts=0
# Sequences of at least 4 launches: an iteration's four are one sequence, so the pause after
# its second launch always comes while two are held, however the content-defined cuts fall.
# Which K-th launch is held when the helper thread submits depends on the host's pace (a slow,
# loaded host makes the guard demote more): K = 5..14 always, then on until both were seen.
for k in $(seq 5 40); do
  if [ "$k" -gt 14 ] && [ "$failed" -gt 0 ] && [ "$timeouts" -gt 0 ]; then break; fi
  AUTOGRAPH_MIN_SEQ=4 SIM_FAIL=cuLaunchKernel:$k ag_rerun r-validity "sleep-fail-$k" failsleep -- launch
  read -r f t < <(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s.get("failed_submissions", 0), s.get("hold_timeouts", 0))' "$AG_STATS")
  failed=$((failed + f)) timeouts=$((timeouts + t))
done
[ "$failed" -gt 0 ] && [ "$timeouts" -gt 0 ] ||
  ag_fail "failsleep sweep: $failed failed submissions, $timeouts holds ended by the bound: not exercised"
echo "r-validity: failsleep: $failed failed submissions ($timeouts holds ended by the bound), every one reported"
