#!/usr/bin/env bash
# fuse-kernel-faults.sh — graph-API failures injected with SIM_FAIL while fused nodes are built,
# updated and launched (tests/progs/k-fuse.cu with alternating buffers, AUTOGRAPH_FUSE=exact):
# identical output every time, the failure reported as fallbacks.graph_error or .demoted (see
# ag_fault_sweep in lib.sh). The baseline must substitute, or the sweep would not reach the
# fused nodes.
. "$(dirname "$0")/lib.sh"
export AUTOGRAPH_FUSE=exact AUTOGRAPH_REPEATS=2 AUTOGRAPH_MIN_SEQ=6
ag_fault_sweep k-fuse alt
AG_EXPECT_REPLAY=1 ag_compare_prog k-fuse alt
ag_expect "$AG_STATS" "fused > 0"
