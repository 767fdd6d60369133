#!/usr/bin/env bash
# engine-shape.sh — the last batch is smaller, so four of its launches' grids differ from every
# earlier batch's (tests/progs/e-shape.cu). Identical output: a graph replayed with the full-size
# grids for the last batch processes rows past its end and changes the last checksum. The grid
# is not part of a launch's structure, so the last batch is the same sequence: every batch after
# the first is replayed, the last with its nodes' grids updated.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-shape -- launch copy
ag_expect "$AG_STATS" "replayed == launches - 6" "updates >= 4"
