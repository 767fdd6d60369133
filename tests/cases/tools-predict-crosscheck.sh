#!/usr/bin/env bash
# tools-predict-crosscheck.sh — the prediction against the library itself.
#
# tests/progs/train-loop runs under the preload library on the simulator (AUTOGRAPH_STATS), and
# autograph-predict reads a synthetic trace (make-trace.py trainloop) with the same launches
# (kernel names, grids, blocks, one stream, the backward launches from a second thread) and the
# same ordering calls in the same order (cudaMalloc, cudaMemsetAsync, a cudaMemcpy of the loss in
# the middle of every step, the final synchronisation, copies and free). The engine is the same
# code in both, so the launches, the graphs and the launches replayed must agree; the program's
# changing arguments (learning rate, dropout seed) cost node updates in the library and none in
# the prediction (argument values are not in a trace), which must not change what is replayed.
# Both runs are made with AUTOGRAPH_REPEATS=1 (the default), 2 and 3 (--repeats the same).
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
ag_need train-loop
d=$AG_TMP
python3 "$AG_ROOT/tests/cases/make-trace.py" trainloop "$d/tl.json" --steps 50 || ag_fail "make-trace.py failed"
for r in 1 2 3; do
  AUTOGRAPH_REPEATS=$r AUTOGRAPH_STATS=$d/lib-$r.json LD_PRELOAD=$(ag_preload "$AG_LIB") \
    ag_run "$d/lib-$r" "$BUILD/tests/progs/train-loop"
  [ "$(cat "$d/lib-$r.rc")" = 0 ] || { cat "$d/lib-$r.err" >&2; ag_fail "train-loop failed under the library"; }
  "$pred" --json --repeats "$r" "$d/tl.json" >"$d/pred-$r.json" || ag_fail "autograph-predict failed"
  python3 - "$d/lib-$r.json" "$d/pred-$r.json" <<'PY' || ag_fail "prediction and library disagree (repeats $r)"
import json, sys
lib, pred = (json.load(open(f)) for f in sys.argv[1:])
print("library:   launches %d replayed %d graphs %d fallbacks %s" %
      (lib["launches"], lib["replayed"], lib["graphs"], lib.get("fallbacks")))
print("predicted: launches %d replayed %d graphs %d fallbacks %s" %
      (pred["launches"], pred["replayed"], pred["graphs"], pred.get("fallbacks")))
assert lib["launches"] == pred["launches"], "launches"
assert lib["replayed"] > 0
# The engine and the launch stream are the same; only the guard's modelled costs could differ.
assert abs(lib["replayed"] - pred["replayed"]) <= 0.02 * lib["launches"], "replayed"
assert lib["graphs"] == pred["graphs"], "graphs"
assert pred["updates"] == 0 and lib["updates"] > 0
PY
done
echo "tools-predict-crosscheck: the prediction matches the library on the simulator (repeats 1, 2 and 3)"
