#!/usr/bin/env python3
"""timeline-check.py — compares two reports of the simulator's modelled clock (SIM_CLOCK_REPORT,
tests/sim/README.md), of tests/progs/e-timeline run without and with the library, for
tests/cases/engine-timeline.sh.

Usage: timeline-check.py PLAIN.json LIB.json STEPS PER_STEP HOST_NS KERNEL_NS LAUNCH_NS SKIP
                         ALLOWANCE_NS [--expect-worse]

Checks, and explains with a per-step table when a check fails:
  - the run without the library is exactly what the settings imply (each launch costs HOST_NS +
    LAUNCH_NS of host time and a kernel no more than that, so each kernel starts when it is
    launched; four HOST_NS of host work open a step; the step ends with its last kernel);
  - the library runs the same GPU work in every step (busy time);
  - in the steady-state steps (from SKIP on) the library leaves the device no idler than the run
    without it (idle_ns), and starts a step's first GPU work no later than the run without it
    plus ALLOWANCE_NS (the host time of the library's first chunk and one graph launch).
With --expect-worse the last two must fail in the first steady-state step and in every one
until the first that passes (the policy of holding a whole learned step, which the test must be
able to tell from the library's own). The library's guard may end that policy early: it demotes
a sequence whose holds keep the GPU waiting longer than they save, sooner when a loaded machine
stretches the holds, and the steps after it are then as without the library.
"""
import json
import sys

KEYS = ("host_ns", "busy_ns", "idle_ns", "first_op_delay_ns", "ops")


def table(plain, lib):
    print(f"{'step':>4} | {'without the library':^46} | {'with the library':^46}")
    print(f"{'':>4} | {'host':>9} {'busy':>8} {'idle':>8} {'first':>8} {'ops':>5}"
          f"   | {'host':>9} {'busy':>8} {'idle':>8} {'first':>8} {'ops':>5}")
    for i in range(max(len(plain["steps"]), len(lib["steps"]))):
        row = []
        for r in (plain, lib):
            s = r["steps"][i] if i < len(r["steps"]) else None
            row.append(" ".join(f"{s[k]:>{w}}" for k, w in zip(KEYS, (9, 8, 8, 8, 5)))
                       if s else f"{'-':>42}")
        print(f"{i:>4} | {row[0]}   | {row[1]}")
    for name, r in (("without", plain), ("with", lib)):
        print(f"{name} the library: host {r['host_ns']} device end {r['device_end_ns']} "
              f"busy {r['busy_ns']} idle {r['idle_ns']} ops {r['ops']}")


def main():
    args = [a for a in sys.argv[1:] if a != "--expect-worse"]
    worse = "--expect-worse" in sys.argv
    plain, lib = (json.load(open(p)) for p in args[:2])
    steps, per_step, host, kernel, launch, skip, allowance = map(int, args[2:9])

    def fail(why):
        table(plain, lib)
        print(f"FAIL: {why}", file=sys.stderr)
        sys.exit(1)

    for name, r in (("without", plain), ("with", lib)):
        if r.get("incomplete") or len(r["steps"]) < steps:
            fail(f"the report {name} the library has {len(r['steps'])} steps, expected at least "
                 f"{steps} (one per synchronisation of the loop)")

    # Without the library, exactly what the settings imply.
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
    print(f"each step without the library lasts {step_len} ns, {busy} busy, {step_len - busy} "
          f"idle, first GPU work after {want['first_op_delay_ns']} ns, as modelled")

    for i in range(steps):
        if lib["steps"][i]["busy_ns"] != plain["steps"][i]["busy_ns"]:
            fail(f"step {i}: busy time {lib['steps'][i]['busy_ns']} with the library, "
                 f"{plain['steps'][i]['busy_ns']} without: not the same GPU work")

    problems, bad_steps = [], set()
    for i in range(skip, steps):
        p, l = plain["steps"][i], lib["steps"][i]
        if l["idle_ns"] > p["idle_ns"]:
            problems.append(f"step {i}: (a) idle {l['idle_ns']} ns with the library, "
                            f"{p['idle_ns']} without")
            bad_steps.add(i)
        if l["first_op_delay_ns"] > p["first_op_delay_ns"] + allowance:
            problems.append(f"step {i}: (b) first GPU work after {l['first_op_delay_ns']} ns with "
                            f"the library, {p['first_op_delay_ns']} without, allowed "
                            f"{p['first_op_delay_ns']} + {allowance}")
            bad_steps.add(i)
    n = steps - skip
    if worse:
        run = next((i for i in range(skip, steps) if i not in bad_steps), steps) - skip
        if not run or len(bad_steps) != run:
            fail(f"holding whole steps should leave the GPU idler in every steady-state step until "
                 f"the guard ends it; it did in {len(bad_steps)} of {n}, {run} from the first: the "
                 f"test cannot tell that policy from a good one")
        ended = " (then the guard demoted it)" if run < n else ""
        print(f"holding whole steps leaves the GPU idler in {run} of {n} steady-state steps{ended}, as expected "
              f"(step {skip}: idle {lib['steps'][skip]['idle_ns']} against "
              f"{plain['steps'][skip]['idle_ns']}, first GPU work after "
              f"{lib['steps'][skip]['first_op_delay_ns']} against "
              f"{plain['steps'][skip]['first_op_delay_ns']})")
        return
    if problems:
        table(plain, lib)
        more = [f"... and {len(problems) - 8} more"] if len(problems) > 8 else []
        print("\n".join(problems[:8] + more), file=sys.stderr)
        print(f"FAIL: the library leaves the GPU idler than a run without it in {len(bad_steps)} "
              f"of the {n} steady-state steps: it holds launches and submits them too late",
              file=sys.stderr)
        sys.exit(1)
    l = lib["steps"][skip:steps]
    print(f"steps {skip}..{steps - 1}: the GPU is idle {min(s['idle_ns'] for s in l)}.."
          f"{max(s['idle_ns'] for s in l)} ns a step with the library, {want['idle_ns']} without; "
          f"its first work starts within {allowance} ns of the run without it")


main()
