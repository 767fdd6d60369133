#!/usr/bin/env bash
# rel-capture-end.sh — a capture whose end fails still ended
# (tests/progs/r-capfail.cu): after cudaStreamEndCapture returned
# cudaErrorStreamCaptureInvalidated, the library must hold and replay again (replayed > 0).
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog r-capfail -- launch capture
ag_expect "$AG_STATS" "fb['capturing'] == 1"
