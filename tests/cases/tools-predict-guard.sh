#!/usr/bin/env bash
# tools-predict-guard.sh — the guard learns the time effect of holding, on the library's engine
# run by autograph-predict over a hand-made trace (deterministic: the engine's clock is the
# modelled host's, and whether the GPU is busy comes from the modelled GPU).
#
# 600 steps of two launches (5 us each, 50 us of host time between them, kernels of 100 us)
# and a cudaStreamSynchronize. The first 300 steps are learned (--repeats 300), so that the cost
# of an ordinary launch is sampled as often as the guard asks before it acts. Held as one chunk
# (--chunk-us 1000), each step's first launch waits for the second while the GPU has nothing to
# do, and the synchronisation then waits that much longer: about 50 us a step, against the
# 10 us of launches a replay saves less its graph launch. The sequence is demoted after 16
# replays, for keeping the GPU waiting. With the default chunks (a first chunk of 7.5 us: each
# launch is submitted when it comes) nothing waits and nothing is demoted.
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
for s in range(600):
    tr.begin_step(s)
    tr.launch("k0", launch_ns=5000, kernel_ns=100000, host_gap_ns=50000)
    tr.launch("k1", launch_ns=5000, kernel_ns=100000, host_gap_ns=2000)
    tr.call("cudaStreamSynchronize")
    tr.end_step()
tr.write(sys.argv[2])
PY
"$pred" --json --repeats 300 --chunk-us 1000 --dump "$d/whole.dump" "$d/t.json" >"$d/whole.json" ||
  ag_fail "autograph-predict failed (--chunk-us 1000)"
ag_expect "$d/whole.json" "demotions == 1" "replayed == 2 * 16"
ag_expect "$d/whole.dump" \
  "[s['reason'] for s in st['sequences'] if s['state'] == 'demoted'] == ['replays keep the GPU waiting longer than they save']"
"$pred" --json --repeats 300 "$d/t.json" >"$d/chunks.json" || ag_fail "autograph-predict failed (default chunks)"
ag_expect "$d/chunks.json" "demotions == 0" "replayed == 2 * 300"
echo "tools-predict-guard: replays that keep the GPU waiting longer than they save are demoted"
