#!/usr/bin/env bash
# rel-config.sh — launches and memsets the driver refuses, where a repeated sequence would hold
# them, and launches after a device fault (tests/progs/r-config.cu): a zero grid left unchecked,
# grid.y above 65,535, an oversized cooperative grid and its fallback, a cluster that does not
# divide the grid, dynamic shared memory above a lowered limit, memsets of freed memory or past
# an allocation's end, and a sticky fault followed by a device reset. Each must fail at the
# call, as without the library (identical output, every status printed), while the rest of
# each iteration is still replayed; after the reset, sequences are replayed again.
. "$(dirname "$0")/lib.sh"
for mode in zerogrid gridyz coop cluster smem memset sticky; do
  AG_EXPECT_REPLAY=1 ag_compare_prog r-config "$mode" -- launch
  ag_expect "$AG_STATS" "failed_submissions == 0" "fb['graph_error'] == 0" "demotions == 0"
done
# After the reset the sticky mode's second pass is replayed like the first: more launches are
# replayed than the first pass (before the fault) alone has.
ag_expect "$AG_STATS" "replayed > 40"
echo "rel-config: every refused call failed at the call, as without the library"
