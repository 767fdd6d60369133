#!/usr/bin/env bash
# rel-ptsz-getter.sh — a per-thread getter request below the per-thread entry's version
# (tests/progs/r-ptsz-getter.cu): the driver hands out cuLaunchKernel_ptsz for
# cuLaunchKernel at version 4000 with the per-thread flag. The library must wrap it as the
# per-thread entry (every launch seen, none held: the per-thread default stream is never held),
# not as the legacy one (which would hold the launches and submit them to the legacy stream).
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=0 ag_compare_prog r-ptsz-getter -- launch
ag_expect "$AG_STATS" "st['by_path']['driver'] == launches" "launches > 0"
