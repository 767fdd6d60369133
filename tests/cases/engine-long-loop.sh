#!/usr/bin/env bash
# engine-long-loop.sh — 4000 launches with no synchronisation until the end (tests/progs/e-long-loop.cu).
# Identical output with the library, at least 80% of the launches replayed, and node updates for
# the argument that changes every iteration. Would catch: a sequence never cut inside a long run
# (nothing replayed), a replay with a stale argument (wrong checksums), dropped or duplicated
# launches at the final flush.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-long-loop -- launch sync copy
ag_expect "$AG_STATS" "replayed >= 0.8 * launches" "updates > 0" "graphs > 0"
