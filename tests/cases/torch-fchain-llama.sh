#!/usr/bin/env bash
# torch-fchain-llama.sh — generated kernels for the elementwise chains of a LLaMA-style block's
# inference in bfloat16 (tests/torch/llama.py) on the simulator, with AUTOGRAPH_FUSE=chains:
#   - the calibration table is made for the wheel with the whole catalogue in float32 and
#     bfloat16, so that the block's strided launches (RMSNorm's broadcasts, the rotary
#     embedding's products on transposed views) count in its chains as well as its contiguous
#     ones;
#   - without the library (SIM_SEED=1), with it and an empty kernel cache (SIM_SEED=2: the chains
#     run unfused while their kernels compile in the background), and with the cache warm
#     (SIM_SEED=3): the same output, bit for bit;
#   - in the warm run, kernels read from the cache (jit.cache_hits > 0) ran in place of at least
#     60% of the elementwise launches that sit in chains (chained_fused of chained). The steps
#     are many enough that the few at the start, which run before the table is read and the
#     cached kernels are loaded, weigh little. The counts are printed.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
d=$AG_TMP py=$AG_ROOT/tests/torch/llama.py steps=200
ag_run "$d/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --dtypes float32,bfloat16 \
  --json "$d/table.json"
[ "$(cat "$d/cal.rc")" = 0 ] || { tail -n 20 "$d/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$d/cal.rc")"; }

ag_run "$d/plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$py" "$steps"
[ "$(cat "$d/plain.rc")" = 0 ] || { tail -n 20 "$d/plain.err" >&2; ag_fail "llama.py failed without the library"; }
grep -q '^checksum: ' "$d/plain.out" || ag_fail "no checksum line"

# run TAG SEED — the script with the library (tests/torch/sim-env.sh's fchain_run).
run() { fchain_run "$d" "$1" "$2" "$d/table.json" "$py" "$steps"; }
summary() { fchain_summary "$1"; }

run cold 2
summary "$d/cold.json"
ag_expect "$d/cold.json" "st['jit']['compiles'] > 0"

run warm 3
summary "$d/warm.json"
ag_expect "$d/warm.json" "st['jit']['cache_hits'] > 0" "st['chained'] > 0" \
  "st['chained_fused'] >= 0.6 * st['chained']"
echo "torch-fchain-llama: the block's chains fused by generated kernels, identical results"
