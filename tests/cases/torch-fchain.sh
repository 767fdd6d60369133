#!/usr/bin/env bash
# torch-fchain.sh — generated kernels for chains of PyTorch elementwise kernels in replayed graphs
# (AUTOGRAPH_FUSE=chains, src/fchain.h), with real PyTorch on the simulator (tests/torch/fchain.py:
# three chains and a run of three fills a step, float32, inputs with NaN, infinities, signed
# zeros and denormals):
#   - the calibration table is made for the wheel (tools/calibrate-elementwise, the operations
#     the chains use), and given with AUTOGRAPH_FUSE_TABLES;
#   - with an empty kernel cache the output (a hash of every result's bytes, every step) is the
#     same as without the library, bit for bit: the chains ran unfused while their kernels were
#     compiled in the background, then fused; what was compiled is counted (jit.compiles > 0);
#   - with the cache warm: the same output, every kernel read from the cache (jit.cache_hits > 0,
#     jit.compiles == 0: kernels are requested only for sequences that proved steady, whose chains
#     are the same in every run), and generated kernels ran (fused_by_pattern.elementwise_chain > 0)
#     in place of at least 60% of the chained launches (chained_fused), and groups of fills ran
#     (fused_by_pattern.fill_group > 0) in place of fill launches (fills_fused);
#   - a table of another build of the library (its build ID changed) is not used: nothing fused.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
# The host pauses after step 10 (fchain.py), by when every sequence is steady and its kernels
# requested; after it, the kernels read from a warm cache are in place: 25 of 36 steps fused.
d=$AG_TMP py=$AG_ROOT/tests/torch/fchain.py steps=36 pause=10
ag_run "$d/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --dtypes float32 \
  --ops add,add_alpha,mul_scalar,sigmoid,mul,add_scalar,rsqrt,sub_alpha,relu,div_scalar,fill --json "$d/table.json"
[ "$(cat "$d/cal.rc")" = 0 ] || { tail -n 20 "$d/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$d/cal.rc")"; }

ag_run "$d/plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$py" "$steps" --pause-at "$pause"
[ "$(cat "$d/plain.rc")" = 0 ] || { tail -n 20 "$d/plain.err" >&2; ag_fail "fchain.py failed without the library"; }
grep -q '^checksum: ' "$d/plain.out" || ag_fail "no checksum line"

# run TAG TABLE — the script with the library (tests/torch/sim-env.sh's fchain_run).
run() { fchain_run "$d" "$1" 2 "$2" "$py" "$steps" --pause-at "$pause"; }
summary() { fchain_summary "$1"; }

run cold "$d/table.json"
summary "$d/cold.json"
ag_expect "$d/cold.json" "st['jit']['compiles'] > 0"

run warm "$d/table.json"
summary "$d/warm.json"
ag_expect "$d/warm.json" "st['jit']['cache_hits'] > 0" "st['jit']['compiles'] == 0" \
  "fp['elementwise_chain'] > 0" "st['chained_fused'] >= 0.6 * chained" "fp['fill_group'] > 0" \
  "st['fills_fused'] >= 3 * fp['fill_group']"

# The same table, said to describe another build: never used.
python3 - "$d/table.json" "$d/other.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
b = t["library"]["build_id"]
t["library"]["build_id"] = ("0" if b[0] != "0" else "1") + b[1:]
json.dump(t, open(sys.argv[2], "w"))
PY
run other "$d/other.json"
summary "$d/other.json"
grep -q "no calibration table in .* describes a loaded library" "$d/other.err" ||
  ag_fail "no message that the table describes no loaded library"
ag_expect "$d/other.json" "st['chained_fused'] == 0" "fp['elementwise_chain'] == 0" "st['jit']['compiles'] == 0" \
  "st['fills_fused'] == 0"
echo "torch-fchain: chains fused by generated kernels, identical results, a warm cache compiles nothing"
