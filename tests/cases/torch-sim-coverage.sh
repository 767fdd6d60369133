#!/usr/bin/env bash
# torch-sim-coverage.sh — the measure of what of PyTorch the simulator runs
# (tests/torch/coverage.py; `make torch-coverage` prints it): the wheel's kernels grouped into
# families with and without a twin, and the catalogue of operations in float32, float16 and
# bfloat16 against the CPU. Checks the tool, not the shares: operations the simulator is known to
# run come out ok (add, matmul, conv2d, softmax in float32), those it does not run for want of a
# twin (today embedding_bag, whose backward needs cub's select kernels) name the kernel they
# lack, every operation has a line per dtype, and the counts add up.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
d=$AG_TMP
ag_run "$d/cov" env BUILD="$BUILD" "$TORCH_SIM" "$PY" "$AG_ROOT/tests/torch/coverage.py" --json "$d/cov.json"
[ "$(cat "$d/cov.rc")" = 0 ] || { tail -n 30 "$d/cov.err" >&2; ag_fail "coverage.py exited $(cat "$d/cov.rc")"; }
grep -E '^(kernels of|families:|operations:)' "$d/cov.out"
python3 - "$d/cov.json" <<'PY' || ag_fail "the coverage results are not as expected (see above)"
import json, sys
d = json.load(open(sys.argv[1]))
k, ops = d["kernels"], d["ops"]
res = {(r["op"], r["dtype"]): r for r in ops["results"]}
errs = []
if not (k["distinct"] > 1000 and 0 < k["with_twin"] < k["distinct"] and 0 < k["families_with_twin"] <= k["families"]):
    errs.append(f"kernel counts: {k['distinct']} {k['with_twin']} {k['families']} {k['families_with_twin']}")
n_ops = len({op for op, _ in res})
if ops["total"] != 3 * n_ops or len(res) != ops["total"]:
    errs.append(f"{ops['total']} results for {n_ops} operations in 3 dtypes")
if ops["ok"] != sum(1 for r in res.values() if r["status"] == "ok"):
    errs.append("the ok count does not match the lines")
for op in ("add", "matmul", "conv2d", "softmax"):
    if res[(op, "float32")]["status"] != "ok":
        errs.append(f"{op} float32: {res[(op, 'float32')]['status']}")
missing = [r for r in res.values() if r["status"].startswith("no twin: ")]
if not missing:
    errs.append("no operation lacks a twin: nothing to check the naming of missing kernels with")
for c in missing:
    if c["status"][len("no twin: "):] not in (c["kernel"] or ""):
        errs.append(f"{c['op']} {c['dtype']} does not name its missing kernel: {c}")
for e in errs:
    print("coverage:", e)
sys.exit(1 if errs else 0)
PY
echo "torch-sim-coverage: the measure works"
