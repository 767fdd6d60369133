#!/usr/bin/env bash
# engine-attrs.sh — a repeated sequence whose launches carry launch attributes (cudaLaunchKernelExC
# with cluster, priority, sync-domain, access-policy and other attributes; a cooperative
# cuLaunchKernelEx and cudaLaunchCooperativeKernel), pass their arguments in an `extra` buffer,
# or take a 24,804-byte struct by value (tests/progs/attrs.cu). Identical output with and without the library under three
# simulator schedules; the steady state is replayed with every launch held (no fallback for
# attributes or cooperative launches). The kernels see their attributes (the simulator tells the
# twins), so the output also shows that
#   - a replayed graph carries each launch's attributes (its kernel nodes have them);
#   - in the iteration where the last launch gains an attribute, the five launches held before
#     it are performed one by one with their own attributes (5 fallbacks counted "mismatch");
#   - once the first launch's attributes change mid-run, the graph built for the old ones is not
#     replayed: the new sequence is learned and gets a graph of its own (2 graphs).
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog attrs -- launch copy
# Where the segmenter cuts depends on the hashes, which include the access policy window's
# address (another one in every run): an iteration may be one graph or two.
ag_expect "$AG_STATS" "fb['attributes'] == 0" "fb['cooperative'] == 0" "graphs >= 2" \
  "replayed >= 140" "updates > 0"
# With sequences of at least 6 launches each iteration is one sequence, and the counts are exact:
# 40 iterations; each of the two sequences passes through once while it is learned
# (AUTOGRAPH_REPEATS=1), the diverging iteration passes through: 37 graph launches of 6. Each
# sequence is one graph launched at its end (AUTOGRAPH_CHUNK_US=0): chunks end where the host's
# real pace says, which varies from run to run. A loaded machine may stall the program inside
# an iteration past the bound of its hold (hold_timeouts): the held part then goes as a graph
# launch of its own, and the rest as another, all still replayed.
export AUTOGRAPH_MIN_SEQ=6 AUTOGRAPH_CHUNK_US=0
for seed in 1 2 3; do
  SIM_SEED=$seed AG_EXPECT_REPLAY=1 ag_rerun attrs "seed$seed" -- launch copy
  ag_expect "$AG_STATS" "fb['attributes'] == 0" "fb['cooperative'] == 0" "fb['mismatch'] == 5" \
    "graphs == 2" "replayed == 222" "37 <= graph_launches <= 37 + st['hold_timeouts']" "updates > 0"
done
