#!/usr/bin/env bash
# bench-launch-costs.sh — the cost probe tools/gpu-check runs on a GPU (tests/bench/launch-costs.cu)
# runs on the simulator, without and with the library: every figure it names is printed as a
# number, and its checksum of the kernels' work is the one the program expects (it checks that
# itself) and the same both ways. The figures are the simulator's and are not checked.
. "$(dirname "$0")/lib.sh"
prog=$BUILD/tests/bench/launch-costs
[ -x "$prog" ] || ag_skip "skipped: $prog is not built"
d=$AG_TMP
ag_run "$d/plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" 12
ag_run "$d/lib" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/lib.json" "$prog" 12
for r in plain lib; do
  [ "$(cat "$d/$r.rc")" = 0 ] || { tail -n 20 "$d/$r.err" >&2; ag_fail "$r: exited $(cat "$d/$r.rc")"; }
done
python3 - "$d/plain.out" "$d/lib.out" <<'PY' || ag_fail "the probe's output is not what it should be"
import re, sys
want = ["launch_ns"] + ["graph_launch_ns_%d" % n for n in (1, 2, 4, 8, 16, 32, 64)] + \
       ["update_ns", "enable_ns", "step_ns_launches", "step_ns_graph"] + \
       ["step_ns_chunks_%d" % c for c in (1, 2, 4, 8, 16, 32)] + ["step_ns_updates_8", "step_ns_updates_32"]
checks = []
for path in sys.argv[1:]:
    figures, check = {}, None
    for line in open(path):
        if not line.startswith("launch-costs: "):
            sys.exit("%s: a line that is not the probe's: %r" % (path, line))
        for k, v in re.findall(r"(\w+)=(\S+)", line):
            if k == "check":
                check = v
            else:
                figures[k] = float(v)
    missing = [k for k in want if k not in figures]
    if missing or check is None:
        sys.exit("%s: missing %s" % (path, missing or "check"))
    checks.append(check)
    print("%s: %d figures, check %s" % (path.rsplit("/", 1)[-1], len(figures), check))
sys.exit(0 if checks[0] == checks[1] else "checksums differ: %s" % checks)
PY
ag_expect "$d/lib.json" "launches > 0"
echo "ok: the probe runs, with and without the library"
