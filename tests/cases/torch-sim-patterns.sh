#!/usr/bin/env bash
# torch-sim-patterns.sh — every original kernel of the fusion patterns (src/pattern.c's op
# table: a glob over the mangled name, the functor's size range, the data array's pointer count)
# matches kernels of the installed wheel's libtorch_cuda.so, read with autograph-inspect: at
# least one kernel per op whose name matches and whose layout is (int N, functor, pointers) of
# those sizes, for sm_90. Fails, naming the op, when a pattern matches no kernel of the wheel.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
inspect=$BUILD/autograph-inspect
[ -x "$inspect" ] || ag_skip "skipped: $inspect is not built"
lib=$(echo "$BUILD"/torch-venv/lib/python3*/site-packages/torch/lib/libtorch_cuda.so)
[ -f "$lib" ] || ag_fail "no libtorch_cuda.so in the torch environment"
timeout -k 5 "$AG_PROG_TIMEOUT" "$inspect" --json "$lib" >"$AG_TMP/kernels.json" ||
  ag_fail "autograph-inspect failed on $lib"
python3 - "$AG_ROOT/src/pattern.c" "$AG_TMP/kernels.json" <<'PY' || ag_fail "a pattern matches no kernel of the wheel"
import fnmatch, json, re, sys
src = open(sys.argv[1]).read()
macros = dict(re.findall(r'#define (\w+) "([^"]*)"', src))
ops = re.findall(r'\[(OP_\w+)\] = \{((?:\w+ )?"[^"]*")\s*,\s*(\d+),\s*(\d+),\s*(\d+),', src)
if not ops:
    sys.exit("no op entries found in src/pattern.c")
kernels = [k for k in json.load(open(sys.argv[2])) if k["arch"] == 90]
bad = 0
for name, glob, fmin, fmax, nt in ops:
    m = re.match(r'(?:(\w+) )?"([^"]*)"', glob)
    pat = macros.get(m.group(1), "") + m.group(2) if m.group(1) else m.group(2)
    fmin, fmax, nt = int(fmin), int(fmax), int(nt)
    hits = [k for k in kernels if len(k["params"]) == 3 and k["params"][0]["size"] == 4
            and fmin <= k["params"][1]["size"] <= fmax and k["params"][2]["size"] == 8 * nt
            and fnmatch.fnmatchcase(k["name"], pat)]
    print(f"{name}: {len(hits)} kernels of the wheel match {pat}")
    for k in hits[:3]:
        print("   ", k["demangled"][:160])
    bad += not hits
sys.exit(1 if bad else 0)
PY
echo "torch-sim-patterns: every pattern op matches kernels of the installed wheel"
