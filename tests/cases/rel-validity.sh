#!/usr/bin/env bash
# rel-validity.sh — what a held launch's submission depends on (issue 11, §2;
# tests/progs/r-validity.cu):
#   attr     the dynamic shared-memory limit raised and lowered between launches: held launches
#            are submitted before each change (identical output, and holds did happen);
#   same     the same limit set before every launch: no flush, so sequences are still replayed;
#   invalid  a launch that fails (impossible block) every fourth iteration returns its error
#            every time: it never enters a learned sequence, so it is never held;
#   failsub  the K-th driver launch fails (SIM_FAIL=cuLaunchKernel:K, K = 1..16, and from the
#            10th on): the program checks after each synchronisation that a launch that did not
#            run was reported to it; some of those failures must be failed submissions of held
#            launches (failed_submissions), or the sweep did not test the reporting.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog r-validity attr -- launch
ag_expect "$AG_STATS" "fam['device'] > 0"
AG_EXPECT_REPLAY=1 ag_compare_prog r-validity same -- launch
AG_EXPECT_REPLAY=1 ag_compare_prog r-validity invalid -- launch
ag_expect "$AG_STATS" "fb['graph_error'] == 0" "demotions == 0"

ag_compare_prog r-validity failsub -- launch
failed=0
for k in $(seq 1 16) 10+; do
  SIM_FAIL=cuLaunchKernel:$k ag_rerun r-validity "fail-$k" failsub -- launch
  failed=$((failed + $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("failed_submissions", 0))' "$AG_STATS")))
done
[ "$failed" -gt 0 ] || ag_fail "no held launch failed at submission in the sweep: the reporting was not exercised"
echo "r-validity: $failed failed submissions, every one reported to the program"
