#!/usr/bin/env bash
# rel-ptsz-getter.sh — per-thread getter requests (tests/progs/r-ptsz-getter.cu): below the
# per-thread entry's version the driver hands out no per-thread form of cuLaunchKernel; at it,
# cuLaunchKernel_ptsz. The library must wrap that as the per-thread entry (every launch seen,
# none held: the per-thread default stream is never held), not as the legacy one (which would
# hold the launches and submit them to the legacy stream).
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=0 ag_compare_prog r-ptsz-getter -- launch
ag_expect "$AG_STATS" "st['by_path']['driver'] == launches" "launches > 0"
