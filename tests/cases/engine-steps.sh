#!/usr/bin/env bash
# engine-steps.sh — learning steps that end early, steps longer than a sequence, and finding the
# place again after a divergence (tests/progs/e-steps.cu, 40 steps per mode).
# Identical output with the library in every mode, and:
#   prefix  after ten steps of 25 launches, steps end after the first 15: their end, held as a
#           prefix of a known sequence too short to be replayed from its graph (under two
#           thirds), must become a sequence of its own (a held run ending early is counted), so
#           nearly everything is replayed;
#   long    600 launches a step with AUTOGRAPH_MAX_SEQ=64: several graphs a step, replayed one
#           after another, no launch passed through once the step is learned (a few steps);
#   resync  a launch with another grid in every fifth step: each divergence costs only a few
#           launches (those held before it in its sequence, and itself), not the rest of the step;
#   grids   40 launches a step whose arguments never change but whose grids do: the grid is
#           not structure, so the step is replayed, its nodes' grids updated (a
#           replay with stale grids changes the output);
#   partial 12 launches and a memset a step, every third step from the sixth cut short after
#           10 launches by a synchronisation: the memset node cannot be disabled (on a GPU a
#           disabled memset node still ran, and the simulator models that), so the cut-short
#           steps are not replayed from the step's graph with its last nodes disabled: no prefix
#           replay, nothing demoted, the cut-short steps learned as a sequence of their own, and
#           the output stays identical (a library that disables the memset node changes the
#           checksums of the cut-short steps);
#   partial-event  the same ending in an event record, which CUDA cannot disable at all (the
#           simulator refuses, which would fail the graph path), likewise. AUTOGRAPH_MIN_SEQ=10
#           in both: a cut-short step is long enough to be learned, and no cut point falls
#           inside a step;
#   period  1000 steps of the same 9 launches with no call between them: the engine must cut
#           where the body's period closes; without that rule 74% was replayed, 2,344 launches
#           passed through and 9 graphs were built (sequences of 256 at nine phases of the
#           body), with it 97.5%, 225 and one graph (sequences of 135: the first learned, the
#           last cut short by the final synchronisation).
# Each sequence is one graph launched at its end here (AUTOGRAPH_CHUNK_US=0), so that the counts
# of graph launches and prefix replays are exact: chunks end where the host's real pace says. For
# the same reason the hold bound is raised to 1 s: a held launch the machine delays past the
# default (1 ms) would send its step out early, as a prefix replay.
# The chunked runs of every mode must give the same output (at the end).
. "$(dirname "$0")/lib.sh"
ag_need e-steps
export AUTOGRAPH_CHUNK_US=0 AUTOGRAPH_HOLD_US=1000000
AG_EXPECT_REPLAY=1 ag_compare_prog e-steps prefix 40 -- launch sync copy
ag_expect "$AG_STATS" "replayed >= 0.9 * launches" "graphs >= 2" "prefix_replays == 0"
AUTOGRAPH_MAX_SEQ=64 AG_EXPECT_REPLAY=1 ag_compare_prog e-steps long 40 -- launch sync copy
ag_expect "$AG_STATS" "replayed >= 0.95 * launches" "graph_launches >= (40 - 3) * (600 // 64)" \
  "passthrough <= 3 * 600 + fb.get('hold_timeout', 0)"
AG_EXPECT_REPLAY=1 ag_compare_prog e-steps resync 40 -- launch sync copy
# 8 divergent steps; each costs at most 16 launches (a sequence is cut every 16 on average).
ag_expect "$AG_STATS" "replayed >= 0.95 * launches" "fb.get('mismatch', 0) <= 8 * 16"
AG_EXPECT_REPLAY=1 ag_compare_prog e-steps period 1000 -- launch sync copy
ag_expect "$AG_STATS" "replayed >= 0.95 * launches" "passthrough <= 3 * 256" "graphs <= 2"
AG_EXPECT_REPLAY=1 ag_compare_prog e-steps grids 40 -- launch sync copy
ag_expect "$AG_STATS" "replayed >= 0.95 * launches" "updates >= (40 - 2) * 20"
AUTOGRAPH_MIN_SEQ=10 AG_EXPECT_REPLAY=1 ag_compare_prog e-steps partial 40 -- launch sync copy
ag_expect "$AG_STATS" "prefix_replays == 0" "graphs == 2" "demotions == 0" "sequences == 2" \
  "replayed >= 0.9 * launches"
AUTOGRAPH_MIN_SEQ=10 AG_EXPECT_REPLAY=1 ag_compare_prog e-steps partial-event 40 -- launch sync copy
ag_expect "$AG_STATS" "prefix_replays == 0" "graphs == 2" "demotions == 0" "sequences == 2" \
  "replayed >= 0.9 * launches"
# With chunks (the default budget and a tiny one, a chunk ending at nearly every launch): the same
# output, nearly everything still replayed.
for mode in prefix long resync grids partial partial-event; do
  n=40
  for us in 50 1; do
    AUTOGRAPH_CHUNK_US=$us AUTOGRAPH_MIN_SEQ=10 AG_EXPECT_REPLAY=1 ag_compare_prog e-steps "$mode" "$n" -- launch sync copy
    ag_expect "$AG_STATS" "replayed >= 0.85 * launches"
  done
done
echo "engine-steps: ok"
