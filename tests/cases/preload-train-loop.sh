#!/usr/bin/env bash
# preload-train-loop.sh — a training loop (two threads on one stream, changing scalar arguments).
# Runs tests/progs/train-loop.cu without and with the preload library (see lib.sh, ag_compare_prog).
# Each step's 20 launches repeat between the loss copies, with the learning rate and the dropout
# seed and offset changing every step: at least 90% of the launches must be served by graph
# replays, with node updates for the changing arguments, and 95% in steady state.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog train-loop -- launch copy memset alloc free sync
ag_expect "$AG_STATS" "replayed >= 0.9 * launches" "updates > 0" "graph_launches > 0"
# Steady state: of the launches in the second half of the runs the dump keeps, at
# least 95% replayed (the first steps are learned; the last run ends at the program's end).
AUTOGRAPH_DUMP=$AG_TMP/train.dump ag_rerun train-loop dump -- launch
python3 - "$AG_TMP/train.dump" <<'PY' || ag_fail "steady state below 95% (see above)"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
half = runs[len(runs) // 2:]
total = sum(r["launches"] for r in half)
replayed = sum(r["launches"] for r in half if r["outcome"] == "replayed")
print(f"steady state: {replayed} of {total} launches replayed in the last {len(half)} runs")
sys.exit(0 if total and replayed >= 0.95 * total else 1)
PY
