#!/usr/bin/env bash
# engine-faults-long.sh — graph-API failures injected with SIM_FAIL into tests/progs/e-long-loop.cu
# (4000 launches, no synchronisation until the end) at several points of the run: identical
# output every time and the failure reported (see ag_fault_sweep in lib.sh).
. "$(dirname "$0")/lib.sh"
ag_fault_sweep e-long-loop
