#!/usr/bin/env bash
# engine-repeat.sh — does the library learn a block repeated back to back within a step as one
# sequence? tests/progs/e-repeat runs, in every step, the same body of 24 launches once per
# layer (8 layers, each on its own buffer), then a fold, a copy and a synchronisation. The
# segmenter cuts every body at the same places, so without learning the repetitions each step
# is some 24 pieces, each a graph launch with its pointer arguments updated. Learned as one
# sequence of several bodies, a step is a few graph launches and its nodes keep their
# arguments. Every fourth step runs 5 layers only (the third argument): the run held for 8 goes
# out as replays of its pieces, and nothing is lost or changed.
#
# Asserted, with whole sequences (AUTOGRAPH_CHUNK_US=0, so that the counts do not depend on the
# host's pace): identical output and statistics as in every preload case; at least 90% of the
# launches replayed; at most 6 graph launches and 30 node updates a step on average (each
# piece one by one: about 23 graph launches and 170 updates a step); the dump holds a
# sequence learned as 4 or more repetitions of the 24-launch body and replayed in at least half
# the steps. With the default chunks:
# identical output, at least 90% replayed.
. "$(dirname "$0")/lib.sh"
ag_need e-repeat
d=$AG_TMP/e-repeat
STEPS=30
AUTOGRAPH_CHUNK_US=0 AG_EXPECT_REPLAY=1 ag_compare_prog e-repeat "$STEPS" 8 5 -- launch sync copy
ag_expect "$AG_STATS" "replayed >= 0.9 * launches" "graph_launches <= 6 * $STEPS" "updates <= 30 * $STEPS"
AUTOGRAPH_CHUNK_US=0 AUTOGRAPH_DUMP=$d/sequences.json AG_EXPECT_REPLAY=1 \
  ag_rerun e-repeat dump "$STEPS" 8 5 -- launch sync copy
ag_expect "$d/sequences.json" \
  "max(s['replays'] for s in st['sequences'] if s['repeats'] and s['repeats']['cycle_length'] == 24 and s['repeats']['times'] >= 4) >= $STEPS // 2"
AG_EXPECT_REPLAY=1 ag_rerun e-repeat chunks "$STEPS" 8 5 -- launch sync copy
ag_expect "$AG_STATS" "replayed >= 0.9 * launches"
echo "engine-repeat: ok"
