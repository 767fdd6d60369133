#!/usr/bin/env bash
# tools-predict.sh — autograph-predict on synthetic torch.profiler traces (tests/cases/make-trace.py)
# of a training-like loop: N steps of the same K kernels, one cudaStreamSynchronize per step.
#
# Expectations come from the engine's rules, not from a previous run: with the sequence bounded
# below by K (--min-seq K, so no content-defined cut falls inside a step) the step's K launches
# are one sequence, seen at steps 0 .. R-1 (R = --repeats) and replayed from step R on, so
# replayed = (N - R) * K; launches per step are exactly K; with whole sequences (--chunk-us 0)
# the saved host time is the sum of the replayed launches' own durations in the trace minus one
# modelled graph launch per replay, and with chunks there are as many graph launches per replay
# as the chunk rule makes of the host's pace under the library;
# a trace whose grid changes every step replays nothing; .json.gz gives the same answer as
# .json; the text report says what --json says; --dump writes a dump autograph-report reads.
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
mt=$AG_ROOT/tests/cases/make-trace.py
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
d=$AG_TMP
python3 "$mt" train "$d/t.json" --steps 10 --kernels 8 --launch-us 5.25 || ag_fail "make-trace.py failed"
python3 "$mt" train "$d/t.json.gz" --steps 10 --kernels 8 --launch-us 5.25 --gz || ag_fail "make-trace.py failed"
python3 "$mt" train "$d/vary.json" --steps 10 --kernels 8 --vary || ag_fail "make-trace.py failed"
python3 "$mt" train "$d/vgrid.json" --steps 10 --kernels 8 --vary-grid || ag_fail "make-trace.py failed"

# check JSON R EXTRA_ARGS… — runs the predictor and checks the exact expectations for repeats R.
check() {
  local out=$1 r=$2
  shift 2
  "$pred" --json --min-seq 8 --chunk-us 0 --repeats "$r" "$@" "$d/t.json" >"$out" || ag_fail "autograph-predict failed (repeats $r)"
  python3 - "$out" "$d/t.json" "$r" <<'PY' || ag_fail "predicted figures do not follow the engine's rules (repeats $r)"
import json, sys
p = json.load(open(sys.argv[1]))
tr = json.load(open(sys.argv[2]))["traceEvents"]
R, N, K = int(sys.argv[3]), 10, 8
ns = lambda v: int(round(v * 1000))
steps = sorted((ns(e["ts"]), ns(e["dur"])) for e in tr
               if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
launch = sorted((ns(e["ts"]), ns(e["dur"])) for e in tr
                if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel")
def step_of(ts):
    return next(i for i, (s, d) in enumerate(steps) if s <= ts < s + d)
replayed_dur = sum(d for ts, d in launch if step_of(ts) >= R)
model = (N - R) * (2500 + 1 * K)   # --graph-launch-us 2.5, --graph-node-ns 1 (defaults)
want = {"launches": N * K, "replayed": (N - R) * K, "passthrough": R * K, "graphs": 1,
        "graph_launches": N - R, "updates": 0,
        "host_launch_ns": sum(d for _, d in launch), "replayed_launch_ns": replayed_dur,
        "graph_launch_cost_ns": model, "saved_ns": replayed_dur - model}
bad = [f"{k}: got {p.get(k)}, want {v}" for k, v in want.items() if p.get(k) != v]
if p["launches_per_step"] != {"min": K, "max": K, "mean": K}:
    bad.append(f"launches_per_step {p['launches_per_step']}")
if [s["launches"] for s in p["steps"]] != [K] * N:
    bad.append("per-step launches " + str([s["launches"] for s in p["steps"]]))
if [s["replayed"] for s in p["steps"]] != [0] * R + [K] * (N - R):
    bad.append("per-step replayed " + str([s["replayed"] for s in p["steps"]]))
if sum(s["saved_ns"] for s in p["steps"]) + p["outside_steps"]["saved_ns"] != p["saved_ns"]:
    bad.append("per-step savings do not add up")
# Steady state: the last min(3, N - 1) steps.
last = min(3, N - 1)
want_st = {"basis": "last_steps", "steps": last, "launches": last * K,
           "replayed": sum(K for i in range(N - last, N) if i >= R)}
want_st["share"] = want_st["replayed"] / want_st["launches"]
if p.get("steady_state") != want_st:
    bad.append(f"steady_state: got {p.get('steady_state')}, want {want_st}")
if abs(p["replayed_share"] - (N - R) / N) > 1e-6:
    bad.append(f"replayed_share {p['replayed_share']}")
if not p["assumptions"] or p["schema"] != "autograph-predict" or p["version"] != 1:
    bad.append("schema, version or assumptions missing")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}
check "$d/r1.json" 1
check "$d/r2.json" 2
check "$d/r3.json" 3
# The defaults are the library's (AUTOGRAPH_REPEATS=1): the same prediction as --repeats 1.
"$pred" --json --min-seq 8 --chunk-us 0 "$d/t.json" >"$d/def8.json" || ag_fail "autograph-predict failed (defaults)"
cmp -s "$d/def8.json" "$d/r1.json" || ag_fail "the default prediction is not that of --repeats 1"

# Chunks. Under the library a held launch costs --hold-us (0.5 us) instead of its duration, so
# the host holds one every (the trace's time between a launch's end and the next launch) + 0.5
# us. A chunk ends before the entry that would put more than its budget between its first entry
# and its last; budgets start at a quarter of --chunk-us and double up to it, and a last chunk
# that fits in its budget with the one before joins it (src/segment.h).
# The expected number of chunks per replay follows from that rule; what is replayed does not
# change. 30 us is the default.
for c in 30 50 10 5 0; do
  "$pred" --json --min-seq 8 --chunk-us "$c" "$d/t.json" >"$d/chunks-$c.json" || ag_fail "autograph-predict failed (chunks $c)"
  python3 - "$d/chunks-$c.json" "$d/t.json" "$c" <<'PY' || ag_fail "chunks do not follow the rule (--chunk-us $c)"
import json, sys
p, tr, budget = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["traceEvents"], int(sys.argv[3]) * 1000
ns = lambda v: int(round(float(v) * 1000))
l = sorted((ns(e["ts"]), ns(e["dur"])) for e in tr if e.get("name") == "cudaLaunchKernel")[:8]
t = [0]
for (a, da), (b, _) in zip(l, l[1:]):
    t.append(t[-1] + (b - a - da) + 500)
chunks, starts, b = 1, [0], budget // 4 or budget
for i in range(1, 8):
    if budget and t[i] - t[starts[-1]] > b:
        chunks, b = chunks + 1, min(2 * b, budget)
        starts.append(i)
# A last chunk that fits in its own budget with the chunk before joins it.
if chunks > 1 and t[7] - t[starts[-2]] <= b:
    chunks -= 1
want = {"replayed": 72, "graphs": 1, "graph_launches": chunks * 9}
bad = {k: (p[k], v) for k, v in want.items() if p[k] != v}
print(f"--chunk-us {sys.argv[3]}: {chunks} chunks a replay; got", {k: p[k] for k in want})
sys.exit(1 if bad else 0)
PY
done
cmp -s <("$pred" --json --min-seq 8 "$d/t.json") "$d/chunks-30.json" || ag_fail "the default chunk budget is not 30 us"

# Steady state of a short trace: 3 steps, repeats 2: the first step is left out, so the last 2
# steps count, one learning and one replayed (8 of 16); with no step markers at all, the last
# quarter of the launches counts.
python3 "$mt" train "$d/short.json" --steps 3 --kernels 8 || ag_fail "make-trace.py failed"
"$pred" --json --min-seq 8 --repeats 2 "$d/short.json" >"$d/short.out" || ag_fail "autograph-predict failed (short)"
ag_expect "$d/short.out" "st['steady_state'] == {'basis': 'last_steps', 'steps': 2, 'launches': 16, 'replayed': 8, 'share': 0.5}"
python3 - "$d/t.json" "$d/nosteps.json" <<'PY' || ag_fail "could not strip the step markers"
import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"] if not e.get("name", "").startswith("ProfilerStep#")]
json.dump(t, open(sys.argv[2], "w"))
PY
"$pred" --json --min-seq 8 --repeats 2 "$d/nosteps.json" >"$d/nosteps.out" || ag_fail "autograph-predict failed (no steps)"
ag_expect "$d/nosteps.out" "st['steps'] == []" \
  "st['steady_state'] == {'basis': 'last_quarter', 'steps': 0, 'launches': 20, 'replayed': 20, 'share': 1.0}"
"$pred" --min-seq 8 --repeats 2 "$d/short.json" | grep -q "steady state  *8 of 16 launches (50.0%) in the last 2 steps" ||
  ag_fail "the text report does not give the steady state"

# Default options: content-defined cuts may split a step, but most launches still replay.
"$pred" --json "$d/t.json" >"$d/def.json" || ag_fail "autograph-predict failed (defaults)"
ag_expect "$d/def.json" "launches == 80" "replayed >= 0.5 * launches" "replayed <= 72"

# Blocks that change every step never repeat: nothing is replayed, every launch is a mismatch
# or learning, and the share is below the fixed-shape one.
"$pred" --json --min-seq 8 "$d/vary.json" >"$d/vary.out" || ag_fail "autograph-predict failed (vary)"
ag_expect "$d/vary.out" "launches == 80" "replayed == 0" "graphs == 0" "st['sequences'] == 10"
# Grids that change every step are not structure: the step is one sequence as with fixed grids,
# built from step 1 and replayed from then on, each later replay updating its 8 nodes' grids.
"$pred" --json --min-seq 8 "$d/vgrid.json" >"$d/vgrid.out" || ag_fail "autograph-predict failed (vary grid)"
ag_expect "$d/vgrid.out" "launches == 80" "replayed == 72" "graphs == 1" "updates == 8 * 8"

# gzip: the same prediction.
"$pred" --json --min-seq 8 --chunk-us 0 "$d/t.json.gz" >"$d/gz.json" || ag_fail "autograph-predict failed on .json.gz"
python3 - "$d/r1.json" "$d/gz.json" <<'PY' || ag_fail ".json.gz and .json predictions differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert b["gzip"] is True and a["gzip"] is False
for k in ("trace", "gzip"):
    a.pop(k), b.pop(k)
assert a == b, [k for k in a if a[k] != b.get(k)]
PY

# The text report says what --json says.
"$pred" --min-seq 8 --chunk-us 0 "$d/t.json" >"$d/text" || ag_fail "autograph-predict failed (text)"
python3 - "$d/text" "$d/r1.json" <<'PY' || { cat "$d/text" >&2; ag_fail "text report and --json disagree"; }
import json, re, sys
t = open(sys.argv[1]).read()
j = json.load(open(sys.argv[2]))
m = re.search(r"replayed +(\d+) of (\d+) launches \(([\d.]+)%\)", t)
assert m and int(m[1]) == j["replayed"] and int(m[2]) == j["launches"], m
assert abs(float(m[3]) - 100 * j["replayed_share"]) < 0.05
m = re.search(r"saved +(-?[\d.]+) us", t)
assert m and abs(float(m[1]) * 1000 - j["saved_ns"]) <= 50, m
m = re.search(r"launches per step +(\d+)\n", t)
assert m and int(m[1]) == 8
assert "Assumptions" in t and "fixed" in t
per_step = t[t.index("\nPer step"):t.index("\nTop sequences")]
assert len(re.findall(r"^  #\d+ ", per_step, re.M)) == 10
times = t[t.index("\nStep time"):t.index("\nAssumptions")]
assert len(re.findall(r"^  #\d+ ", times, re.M)) == 10
m = re.search(r"with the library +([\d.]+) ms \(([\d.]+) of the time without\)", times)
assert m and abs(float(m[1]) * 1e6 - j["step_time"]["library_ns"]) <= 500, m
assert abs(float(m[2]) - j["step_time"]["ratio"]) < 0.0005
PY

# The engine's own dump of the predicted sequences, read by the report tool.
"$pred" --min-seq 8 --dump "$d/dump.json" "$d/t.json" >/dev/null || ag_fail "autograph-predict --dump failed"
ag_expect "$d/dump.json" "st['schema'] == 'autograph-dump'" "st['totals']['replayed'] == 72" \
  "st['sequences'][0]['replays'] == 9" "st['sequences'][0]['kernels'][0]['name'].startswith('void k0')"
if [ -x "$AG_ROOT/tools/autograph-report" ]; then
  "$AG_ROOT/tools/autograph-report" "$d/dump.json" >"$d/report" || ag_fail "autograph-report cannot read the predicted dump"
fi

# The source-tree wrapper runs the same binary.
BUILD=$BUILD "$AG_ROOT/tools/autograph-predict" --json --min-seq 8 --chunk-us 0 "$d/t.json" >"$d/w.json" || ag_fail "tools/autograph-predict failed"
cmp -s "$d/w.json" "$d/r1.json" || ag_fail "tools/autograph-predict output differs from the binary's"
echo "tools-predict: exact replay, savings and per-step figures for repeats 1, 2 and 3; varying blocks and grids, gzip, text, dump"
