#!/usr/bin/env bash
# engine-flush.sh — held launches are submitted before every call that orders work
# (tests/progs/e-flush.cu, one mode per kind of call): a synchronous copy in the middle of a
# sequence, an event recorded on one stream and waited on by another, a launch on the legacy
# default stream between blocking streams, a host function, a polled event. In each mode the
# values the host sees depend on every launch before the call, so a launch held past it changes
# the output; each mode must also replay (replayed > 0), or the flush was never exercised.
. "$(dirname "$0")/lib.sh"
fams_copy="launch copy"
fams_event="launch event"
fams_legacy="launch sync"
fams_hostfn="launch host_func"
fams_poll="launch event"
for mode in copy event legacy hostfn poll; do
  fams=fams_$mode
  # shellcheck disable=SC2086
  AG_EXPECT_REPLAY=1 ag_compare_prog e-flush "$mode" -- ${!fams}
  ag_expect "$AG_STATS" "replayed > 0"
done
