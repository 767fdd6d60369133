#!/usr/bin/env bash
# engine-timeline.sh — does the library leave the GPU idler than a run without it? On the
# simulator's modelled clock (tests/sim/README.md, "The modelled clock"), tests/progs/e-timeline
# runs steps of 40 launches whose host time per launch (4000 ns of declared host work, plus the
# 2000 ns a launch costs without the library) is close to the GPU time of a kernel (5000 ns),
# each step ending in a copy of a small result and a stream synchronisation (`loss.item()`).
#
# Without the library each kernel starts as soon as it is launched. The library holds launches
# and submits them later as a graph, which delays the GPU's work: the steady-state steps (after
# SKIP steps of learning) must still
#   (a) leave the device no idler than without the library (per-step idle_ns), and
#   (b) start the step's first GPU work no later than without the library plus the host time of
#       the library's first chunk: FIRST_CHUNK launches of HOST_NS each (a held launch has no
#       modelled launch cost).
# A library that holds a whole learned step and submits it as one graph at its end fails both:
# the GPU then waits for the whole step's host time before it starts. Also checked, and
# expected to hold whatever the engine does: identical output and statistics as in every preload
# case, the modelled figures of the run without the library are deterministic (two runs under
# other SIM_SEEDs give byte-identical reports) and are exactly what the settings imply, and the
# library runs the same GPU work (busy time) in every step.
. "$(dirname "$0")/lib.sh"
ag_need e-timeline

STEPS=30 PER_STEP=40 HOST_NS=4000
KERNEL_NS=5000 LAUNCH_NS=2000 GRAPH_LAUNCH_NS=2500
SKIP=3          # steps the library may spend learning
FIRST_CHUNK=4   # launches the library may hold before the first submission of a step
HELD_LAUNCH_NS=0 # modelled host cost of a held launch (the library's own time is not modelled)

export SIM_KERNEL_NS="et_*:$KERNEL_NS" SIM_LAUNCH_NS=$LAUNCH_NS SIM_GRAPH_LAUNCH_NS=$GRAPH_LAUNCH_NS
unset SIM_LAUNCH_LATENCY_NS SIM_MEMOP_NS SIM_GRAPH_NODE_GAP_NS SIM_GRAPH_NODE_NS SIM_NODE_UPDATE_NS
args=("$STEPS" "$PER_STEP" "$HOST_NS")
AG_EXPECT_REPLAY=1 ag_compare_prog e-timeline "${args[@]}" -- launch sync copy

d=$AG_TMP/e-timeline
prog=$BUILD/tests/progs/e-timeline
for run in a:1 b:2; do
  ag_run "$d/clock-plain-${run%%:*}" env LD_PRELOAD="$AG_PRELOAD_BASE" SIM_SEED="${run#*:}" \
    SIM_CLOCK_REPORT="$d/report-plain-${run%%:*}.json" "$prog" "${args[@]}"
  ag_same "$d/plain1" "$d/clock-plain-${run%%:*}"
done
cmp -s "$d/report-plain-a.json" "$d/report-plain-b.json" || {
  diff "$d/report-plain-a.json" "$d/report-plain-b.json" | head -n 20 >&2
  ag_fail "the modelled clock's report differs between two runs without the library"
}
echo "e-timeline: the modelled clock is deterministic without the library"
SIM_CLOCK_REPORT=$d/report-lib.json AG_EXPECT_REPLAY=1 ag_rerun e-timeline clock-lib "${args[@]}" \
  -- launch sync copy

python3 - "$d/report-plain-a.json" "$d/report-lib.json" "$STEPS" "$PER_STEP" "$HOST_NS" \
  "$KERNEL_NS" "$LAUNCH_NS" "$SKIP" "$FIRST_CHUNK" "$HELD_LAUNCH_NS" <<'EOF'
import json, sys

plain_path, lib_path = sys.argv[1], sys.argv[2]
steps, per_step, host, kernel, launch, skip, chunk, held = map(int, sys.argv[3:])
plain, lib = json.load(open(plain_path)), json.load(open(lib_path))
keys = ("start_ns", "host_ns", "busy_ns", "idle_ns", "first_op_delay_ns", "ops")

def table():
    print(f"{'step':>4} | {'without the library':^46} | {'with the library':^46}")
    print(f"{'':>4} | {'host':>9} {'busy':>8} {'idle':>8} {'first':>8} {'ops':>5}"
          f"   | {'host':>9} {'busy':>8} {'idle':>8} {'first':>8} {'ops':>5}")
    for i in range(max(len(plain["steps"]), len(lib["steps"]))):
        row = []
        for r in (plain, lib):
            s = r["steps"][i] if i < len(r["steps"]) else None
            row.append(" ".join(f"{s[k]:>{w}}" for k, w in zip(keys[1:], (9, 8, 8, 8, 5)))
                       if s else f"{'-':>42}")
        print(f"{i:>4} | {row[0]}   | {row[1]}")
    for name, r in (("without", plain), ("with", lib)):
        print(f"{name} the library: host {r['host_ns']} device end {r['device_end_ns']} "
              f"busy {r['busy_ns']} idle {r['idle_ns']} ops {r['ops']}")

def fail(why):
    table()
    print(f"FAIL: {why}", file=sys.stderr)
    sys.exit(1)

for name, r in (("without", plain), ("with", lib)):
    if r.get("incomplete") or len(r["steps"]) < steps:
        fail(f"the report {name} the library has {len(r['steps'])} steps, expected at least "
             f"{steps} (one per synchronisation of the loop)")

# Without the library, exactly what the settings imply. A launch costs host + launch of host
# time and a kernel no more than that, so each kernel starts when it is launched, and the step
# ends when its last kernel does (the copy takes no time): the device is idle while the host
# prepares the step and launches the first kernel, and between kernels.
assert host + launch >= kernel, "the formulas below assume the host is the slower side"
step_len = 4 * host + per_step * (host + launch) + kernel
busy = per_step * kernel
want = {"host_ns": step_len, "busy_ns": busy, "idle_ns": step_len - busy,
        "first_op_delay_ns": 4 * host + host + launch, "ops": per_step + 1}
# Step 0 also holds the three memsets of the setup, at time 0.
want0 = dict(want, first_op_delay_ns=0, ops=per_step + 1 + 3)
for i in range(steps):
    w, s = want0 if i == 0 else want, plain["steps"][i]
    bad = {k: (s[k], v) for k, v in w.items() if s[k] != v}
    if bad or s["start_ns"] != i * step_len:
        fail(f"step {i} without the library: (got, expected) {bad}, start {s['start_ns']} "
             f"(expected {i * step_len})")
if plain["busy_ns"] != steps * busy:
    fail(f"busy time without the library: {plain['busy_ns']}, expected {steps * busy}")
print(f"e-timeline: each step without the library lasts {step_len} ns, {busy} busy, "
      f"{step_len - busy} idle, first GPU work after {want['first_op_delay_ns']} ns, as modelled")

# The library runs the same work.
for i in range(steps):
    if lib["steps"][i]["busy_ns"] != plain["steps"][i]["busy_ns"]:
        fail(f"step {i}: busy time {lib['steps'][i]['busy_ns']} with the library, "
             f"{plain['steps'][i]['busy_ns']} without: not the same GPU work")

allowance = chunk * (host + held)
problems = []
for i in range(skip, steps):
    p, l = plain["steps"][i], lib["steps"][i]
    if l["idle_ns"] > p["idle_ns"]:
        problems.append(f"step {i}: (a) idle {l['idle_ns']} ns with the library, "
                        f"{p['idle_ns']} without")
    if l["first_op_delay_ns"] > p["first_op_delay_ns"] + allowance:
        problems.append(f"step {i}: (b) first GPU work after {l['first_op_delay_ns']} ns with the "
                        f"library, {p['first_op_delay_ns']} without, allowed "
                        f"{p['first_op_delay_ns']} + {allowance} (first chunk of {chunk} launches)")
if problems:
    table()
    print("\n".join(problems[:8] + ([f"... and {len(problems) - 8} more"] if len(problems) > 8 else [])),
          file=sys.stderr)
    print(f"FAIL: the library leaves the GPU idler than a run without it in "
          f"{len({p.split(':')[0] for p in problems})} of the {steps - skip} steady-state steps: "
          f"it holds launches and submits them too late", file=sys.stderr)
    sys.exit(1)
print(f"e-timeline: steps {skip}..{steps - 1}: the GPU is no idler with the library, and its "
      f"first work starts within {allowance} ns of the run without it")
EOF
[ $? = 0 ] || ag_fail "the library delays the GPU's work (see above)"
echo "engine-timeline: ok"
