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
#   failsleep the same with 20 ms pauses without a CUDA call in the middle of some iterations and
#            a 2 ms bound on holds: held launches are then submitted by the helper thread, whose
#            failures (SIM_FAIL aimed at that thread with @bg) must reach the program's thread
#            too; some must have failed, and some holds must have ended by the bound.
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
# library's helper thread, and its failures must reach the program's thread. The bound is set to
# 2 ms, a tenth of the pauses, whatever the environment's (the sanitizer runs raise it to 20 ms,
# the length of the pauses themselves). Sequences of at least 4 launches: an iteration's four are
# one sequence, so the pause after its second launch always comes while two are held, however
# the content-defined cuts fall.
export AUTOGRAPH_HOLD_US=2000 AUTOGRAPH_MIN_SEQ=4
ag_compare_prog r-validity failsleep -- launch
failed=0 timeouts=0
# First the failures aimed at the helper thread (SIM_FAIL's @bg counts only calls from threads
# other than the program's): its first launch, every launch, every launch and graph launch. Each
# hold that ends by the bound has the helper thread submit what was held, so these must see
# failed submissions whatever the host's pace.
for rule in cuLaunchKernel@bg:1 cuLaunchKernel@bg:1+ cuLaunchKernel@bg:1+,cuGraphLaunch@bg:1+; do
  SIM_FAIL=$rule ag_rerun r-validity "sleep-$rule" failsleep -- launch
  read -r f t < <(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s.get("failed_submissions", 0), s.get("hold_timeouts", 0))' "$AG_STATS")
  failed=$((failed + f)) timeouts=$((timeouts + t))
done
[ "$failed" -gt 0 ] && [ "$timeouts" -gt 0 ] ||
  ag_fail "failsleep: $failed failed submissions, $timeouts holds ended by the bound, with every launch of the helper thread failing: not exercised"
# Then the K-th launch of any thread, so that failures of the program's own submissions are
# mixed in: whichever K it is, no failure may go unreported (the program checks every window).
for k in $(seq 5 14); do
  SIM_FAIL=cuLaunchKernel:$k ag_rerun r-validity "sleep-fail-$k" failsleep -- launch
done
echo "r-validity: failsleep: $failed failed submissions of the helper thread ($timeouts holds ended by the bound), every one reported"
