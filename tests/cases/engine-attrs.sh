#!/usr/bin/env bash
# engine-attrs.sh — a repeated sequence whose launches carry launch attributes (cudaLaunchKernelExC
# with cluster, priority, sync-domain, access-policy and other attributes; a cooperative
# cuLaunchKernelEx), pass their arguments in an `extra` buffer, or take a 24,804-byte struct by
# value (tests/progs/attrs.cu). Identical output with and without the library under three
# simulator schedules; the steady state is replayed with every launch held (no fallback for
# attributes or cooperative launches); and the first launch's attributes change mid-run: its
# kernel sees them (the simulator tells the twin), so a graph replayed with the old attributes
# would change the checksums after the change, and a second graph is built for the new ones.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog attrs -- launch copy
for seed in 1 2 3; do
  SIM_SEED=$seed AG_EXPECT_REPLAY=1 ag_rerun attrs "seed$seed" -- launch copy
  # 40 iterations of 5 launches: each sequence passes through while it is learned (a few
  # iterations before and after the change), then is replayed. Where the segmenter cuts depends
  # on the hashes, which include the access policy window's address (another one in every run):
  # an iteration may be one graph or two, and learning may take a few more iterations.
  ag_expect "$AG_STATS" "fb['attributes'] == 0" "fb['cooperative'] == 0" \
    "graphs >= 2" "replayed >= 140" "updates > 0"
done
