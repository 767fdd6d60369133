#!/usr/bin/env bash
# engine-observe.sh — held launches are submitted before exactly the calls that can observe them
# (tests/progs/e-observe.cu, one mode per rule). Each mode's output must be
# identical with and without the library (a call that observes held work and did not submit it
# first changes the values the host sees), and its statistics must show that calls which cannot
# observe the held work did not submit it: as many graph launches per step as the step has
# sequences (a call that submitted what it could not observe splits the step further), and at
# least 95% of the launches
# replayed (in `poll`, while two other threads poll, record, synchronise and destroy events).
# `ops` holds memsets, event records and waits as graph nodes (src/graph.h).
. "$(dirname "$0")/lib.sh"
ag_need e-observe
steps=120
# In `poll` the main thread waits (on the host, no CUDA call) in the middle of every step while
# the other threads make their calls; on a loaded machine that can pass the default bound on
# holds (1 ms), which would submit the held launches early (hold_timeout). No mode waits for the
# device without calling CUDA, so a longer bound changes nothing else.
export AUTOGRAPH_HOLD_US=200000
# Graph launches per step: one per sequence of the step, on every stream that repeats one. The
# segmenter cuts each stream's 7 launches once (a content-defined cut, the same in every step);
# in `legacy` the second stream's 3 launches are one sequence.
per_step_poll=2 per_step_streams=2 per_step_legacy=3 per_step_alloc=2 per_step_ops=4
# Replayed share: in `ops` the copy from pageable memory is an ordering call that leaves one
# launch a step alone, and the segmenter may cut the second stream's two launches after the
# wait and the first one (a content-defined cut), leaving another.
share_poll=0.95 share_streams=0.95 share_legacy=0.95 share_alloc=0.95 share_ops=0.6
fams_poll="launch event"
fams_streams="launch sync"
fams_legacy="launch copy sync"
fams_alloc="launch alloc sync"
fams_ops="launch memset event sync"
for mode in poll streams legacy alloc ops; do
  fams=fams_$mode per=per_step_$mode share=share_$mode
  # shellcheck disable=SC2086
  AG_EXPECT_REPLAY=1 ag_compare_prog e-observe "$mode" "$steps" -- ${!fams}
  # The first steps are learned (AUTOGRAPH_REPEATS) before any is replayed.
  ag_expect "$AG_STATS" "replayed >= ${!share} * launches"
  # Graph launches are counted with each sequence one graph launched at its end
  # (AUTOGRAPH_CHUNK_US=0): chunks end where the host's real pace says.
  # shellcheck disable=SC2086
  AUTOGRAPH_CHUNK_US=0 AG_EXPECT_REPLAY=1 ag_rerun e-observe "$mode-whole" "$mode" "$steps" -- ${!fams}
  ag_expect "$AG_STATS" "replayed >= ${!share} * launches" \
    "graph_launches <= ${!per} * $steps" "graph_launches >= ${!per} * ($steps - 5)"
done
# In `ops`, the memset, the device-to-device and device-to-pinned copies and the wait of every
# replayed step are graph nodes (a wait begins its sequence, the others end theirs; the record,
# right after a copy, is a sequence of one and is performed as it was).
ag_expect "$AG_STATS" "ops_replayed >= 4 * ($steps - 5)"
echo "engine-observe: ok"
