#!/usr/bin/env bash
# engine-capture.sh — a program that captures, instantiates and launches a graph of its own
# (tests/progs/e-capture.cu), after running the same launches eagerly so the library knows them.
# Identical output: launches held during the capture and submitted after it would run once,
# eagerly, and leave the captured graph empty. The 5 captured launches must pass through
# (fallbacks.capturing) or at least not be counted as replayed; the eager steps must replay.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-capture -- launch capture graph copy sync
ag_expect "$AG_STATS" "fb['capturing'] > 0 or replayed <= launches - 5" "replayed > 0"
