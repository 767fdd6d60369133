#!/usr/bin/env bash
# torch-fchain-zoo.sh — generated chain kernels (AUTOGRAPH_FUSE=chains) in torchvision's
# mobilenet_v3_small training (tests/torch/zoo.py, twelve steps), whose activations are hardswish
# and hardsigmoid: with a float32 calibration table of the whole catalogue, the output with the
# library (cold kernel cache, then warm) is the same as without it, bit for bit; with the cache
# warm nothing is compiled and at least 60% of the launches in elementwise chains ran in
# generated kernels (the share is printed); and no chain was refused for a hard activation's
# kernel (the generator computes them and their backwards).
# ag-timeout: 400
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
"$BUILD/torch-venv/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torchvision") is None)' ||
  ag_skip "skipped: torchvision is not installed (tools/setup --torch installs it)"
d=$AG_TMP zoo=$AG_ROOT/tests/torch/zoo.py steps=12
ag_run "$d/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --dtypes float32 --json "$d/table.json"
[ "$(cat "$d/cal.rc")" = 0 ] || { tail -n 20 "$d/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$d/cal.rc")"; }
ag_run "$d/plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$zoo" mobilenet_v3_small "$steps"
[ "$(cat "$d/plain.rc")" = 0 ] || { tail -n 20 "$d/plain.err" >&2; ag_fail "zoo.py failed without the library"; }
fchain_run "$d" cold 2 "$d/table.json" "$zoo" mobilenet_v3_small "$steps"
fchain_summary "$d/cold.json"
AUTOGRAPH_LOG=debug fchain_run "$d" warm 3 "$d/table.json" "$zoo" mobilenet_v3_small "$steps"
fchain_summary "$d/warm.json"
ag_expect "$d/warm.json" "st['jit']['compiles'] == 0" "st['jit']['cache_hits'] > 0" \
  "st['chained_fused'] >= 0.6 * st['chained']"
if grep -E "is not fused: unknown-(kernel|op) \(launch [0-9]+, [^)]*Hard(swish|sigmoid)" "$d/warm.err"; then
  ag_fail "a chain was refused for a hard activation's kernel"
fi
echo "torch-fchain-zoo: mobilenet_v3_small identical with generated chain kernels, hard activations fused"
