#!/usr/bin/env bash
# engine-deny.sh — kernels the library must never hold.
#  - AUTOGRAPH_DENY: tests/progs/e-long-loop.cu with el_step (500 of its 4000 launches) denied,
#    by exact name and by a pattern in a list: fallbacks.denied counts them, none of them is
#    replayed, and the other launches still are.
#  - A kernel named like NCCL's (tests/progs/e-nccl.cu): the host waits, without any CUDA call,
#    for the collective to start on the device; a library that held it would never let it start
#    (the program then gives up after 10 s and exits 1, so the comparison fails). Its 12
#    launches must not be replayed; the launches around them must be.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-long-loop -- launch
for deny in el_step 'nothing_*,el_st?p'; do
  AUTOGRAPH_DENY=$deny AG_EXPECT_REPLAY=1 ag_rerun e-long-loop "deny-${deny//[^a-z_]/}" -- launch
  ag_expect "$AG_STATS" "fb['denied'] >= 500" "replayed <= launches - 500" "replayed > 0"
done
AG_EXPECT_REPLAY=1 ag_compare_prog e-nccl -- launch sync
ag_expect "$AG_STATS" "replayed <= launches - 12" "replayed > 0"
