#!/usr/bin/env bash
# sim-graph-events.sh — event record and wait nodes act at their own place in a graph
# (tests/progs/s-graph-events.cu, tests/sim/README.md "Graphs"): a record node records when its
# own dependencies are done, so another stream goes on while a wait node later in the same
# launch still holds up its dependents, and nodes created after a waiting node but not depending
# on it run meanwhile. Both for a graph built node by node and for one captured with external
# event records and waits. Every round must see the other stream finish before the host opens
# the gate that the wait node depends on (`s3-before-gate=yes`), with the right values, the
# same under SIM_SEED=1, 2, 3; then the same output with the library. A simulator that applied
# record and wait nodes to the whole launch leaves the other stream waiting until the program's
# own deadline (a few seconds), and the output says `no` and `MISMATCH`. The gate is a blocking
# host function, which needs a second device thread (the default is 4).
. "$(dirname "$0")/lib.sh"
prog=s-graph-events
ag_seed_stable $prog
ref=$AG_REF
for kind in built captured; do
  for r in 0 1 2; do
    grep -qE "^$kind round $r: s3-before-gate=yes d=[0-9a-f]{16} check=ok\$" <<<"$ref" ||
      ag_fail "$prog: $kind round $r: the other stream did not go on at the record node, or d is wrong"
  done
done
grep -qx 'captured nodes: 6' <<<"$ref" ||
  ag_fail "$prog: the capture should hold 6 nodes (3 kernels, 2 event records, 1 event wait)"
ag_compare_prog $prog
echo "sim-graph-events: record and wait nodes act on their own dependencies"
