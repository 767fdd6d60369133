#!/usr/bin/env bash
# engine-shape.sh — the last batch is smaller, so its launches' grids differ from every earlier
# batch's (tests/progs/e-shape.cu). Identical output: a graph of the full-size sequence replayed
# for the last batch processes rows past its end and changes the last checksum. The full batches
# must replay; the last batch's six launches pass through.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-shape -- launch copy
ag_expect "$AG_STATS" "replayed > 0" "passthrough >= 6"
