#!/usr/bin/env bash
# tools-predict-replan.sh — a sequence's chunks are planned again from the pace of its replays, on
# the library's engine run by autograph-predict over a hand-made trace (deterministic).
#
# 12 steps of 8 launches (5 us each, 2 us of host time after each) and a cudaStreamSynchronize.
# Under the library a held launch costs 0.5 us, so the host holds one every 2.5 us: with
# --chunk-us 50 a step's 8 entries span 17.5 us, which the chunk rule makes one chunk (12.5 us
# for the first, 25 us for a last one that joins it). Only in step 1, the run the graph is built
# from (--repeats 1: step 0 is learned), the host pauses 200 us after the fourth launch: the
# first plan has two chunks. At the fourth replay (step 4) the chunks are planned again from
# that run's pace: steps 1 to 4 take two graph launches each, steps 5 to 11 one. A plan kept
# from the build run would take two in every step (22 in all).
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
d=$AG_TMP
python3 - "$AG_ROOT/tests/cases/make-trace.py" "$d/t.json" <<'PY' || ag_fail "writing the trace failed"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mt", sys.argv[1])
mt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mt)
tr = mt.Trace()
for s in range(12):
    tr.begin_step(s)
    for k in range(8):
        gap = 200000 if s == 1 and k == 3 else 2000
        tr.launch(f"k{k}", launch_ns=5000, kernel_ns=3000, host_gap_ns=gap)
    tr.call("cudaStreamSynchronize")
    tr.end_step()
tr.write(sys.argv[2])
PY
"$pred" --json --repeats 1 --min-seq 8 --chunk-us 50 "$d/t.json" >"$d/p.json" || ag_fail "autograph-predict failed"
ag_expect "$d/p.json" "replayed == 11 * 8" "graphs == 1" "graph_launches == 4 * 2 + 7 * 1"
echo "tools-predict-replan: the chunks follow the pace of the replays, not a pause of the build run"
