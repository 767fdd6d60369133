#!/usr/bin/env bash
# rel-holds.sh — a hold never outlives its bound (tests/progs/r-holdflag.cu).
# The program launches, then spins on a flag its last kernel writes into mapped host memory,
# with no CUDA call: held launches must be submitted by the library's helper thread within
# AUTOGRAPH_HOLD_US. Without the bound the program hangs; it gives up by itself after 20 s and
# the run limit here is 40 s, so a regression fails quickly. The statistics must show that holds
# happened and ended by the bound (hold_timeouts, fallbacks.hold_timeout). A hold that reaches
# its bound submits what it holds and the run goes on, so the sequence is still built, with a
# chunk that ends where the host waits: from then on that chunk is launched before the wait and
# no hold reaches the bound (a few at most, while the sequence is learned; 24 iterations), and
# the iterations are replayed. With whole sequences (AUTOGRAPH_CHUNK_US=0) every iteration's
# hold reaches the bound, and the guard demotes the sequence.
. "$(dirname "$0")/lib.sh"
AG_PROG_TIMEOUT=40
ag_compare_prog r-holdflag -- launch copy
ag_expect "$AG_STATS" "hold_timeouts > 0" "fb['hold_timeout'] > 0" "hold_timeouts <= 6" \
  "replayed >= launches // 2" "demotions == 0"
AUTOGRAPH_CHUNK_US=0 ag_rerun r-holdflag whole -- launch
ag_expect "$AG_STATS" "hold_timeouts >= 4" "demotions > 0"
# A shorter and a longer bound behave the same way.
for us in 100 20000; do
  AUTOGRAPH_HOLD_US=$us ag_rerun r-holdflag "hold-$us" -- launch
  ag_expect "$AG_STATS" "hold_timeouts > 0" "fb['hold_timeout'] > 0"
done
# AUTOGRAPH_HOLD_US=0: nothing is ever held (and so nothing replayed, nothing timed out).
AUTOGRAPH_HOLD_US=0 AG_EXPECT_REPLAY=0 ag_rerun r-holdflag hold-0 -- launch
ag_expect "$AG_STATS" "hold_timeouts == 0" "fb['hold_timeout'] == 0" "sequences > 0"
