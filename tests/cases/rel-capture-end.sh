#!/usr/bin/env bash
# rel-capture-end.sh — a capture whose end fails still ended
# (tests/progs/r-capfail.cu): after cudaStreamEndCapture returned
# cudaErrorStreamCaptureInvalidated, the library must hold and replay again (replayed > 0);
# and the kernel first launched inside the capture is learned only after it (see below).
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog r-capfail -- launch capture
ag_expect "$AG_STATS" "fb['capturing'] == 1"

# The first launch of cf_mad comes inside the capture: the library must not learn the kernel
# there (its queries of the driver and the runtime invalidated a global capture on a GPU), only
# at a launch after the capture. Line-buffered stdout keeps the program's lines and the
# library's debug lines in the order they were written.
out=$AG_TMP/order.txt
env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_LOG=debug timeout "$AG_PROG_TIMEOUT" \
  stdbuf -oL "$BUILD/tests/progs/r-capfail" >"$out" 2>&1 || ag_fail "r-capfail failed: $(tail -n 5 "$out")"
learned=$(grep -n 'kernel cf_mad: ' "$out" | head -n 1 | cut -d: -f1)
ended=$(grep -n '^capturing after the end' "$out" | cut -d: -f1)
[ -n "$learned" ] && [ -n "$ended" ] || ag_fail "no learning line or no end of capture: $(grep -v 'not in the table' "$out" | head -n 12)"
[ "$learned" -gt "$ended" ] || ag_fail "cf_mad was learned on line $learned, inside the capture (it ended on line $ended)"
echo "cf_mad learned on line $learned, after the capture ended (line $ended)"
