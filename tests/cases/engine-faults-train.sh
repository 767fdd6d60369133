#!/usr/bin/env bash
# engine-faults-train.sh — graph-API failures injected with SIM_FAIL into tests/progs/train-loop.cu
# at several points of the run: identical output every time and the failure reported as
# fallbacks.graph_error or fallbacks.demoted (see ag_fault_sweep in lib.sh).
. "$(dirname "$0")/lib.sh"
ag_fault_sweep train-loop
