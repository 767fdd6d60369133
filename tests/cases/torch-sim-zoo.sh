#!/usr/bin/env bash
# torch-sim-zoo.sh — torchvision's resnet18 and mobilenet_v3_small training on the simulator
# (tests/torch/zoo.py: a few SGD steps on four 32x32 images, batch normalisation in training mode):
#   - without the library: each model's first loss equals the CPU's within relative 1e-5 (the
#     forward pass), its second within 1e-3 (after one backward pass and update); later steps
#     amplify float32 rounding differences (batch normalisation over four images), so they are
#     not compared;
#   - with the library (another simulator seed): the same losses and parameter bits;
#   - the launches of the steps beyond the first two were at least 90% replayed from graphs.
# ag-timeout: 400
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
"$BUILD/torch-venv/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torchvision") is None)' ||
  ag_skip "skipped: torchvision is not installed (tools/setup --torch installs it)"
export AUTOGRAPH_HOLD_US=200000 # as in tests/torch/example.sh: a loaded machine's pace is no hold's end
zoo=$AG_ROOT/tests/torch/zoo.py d=$AG_TMP
for m in resnet18 mobilenet_v3_small; do
  ag_run "$d/$m.plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$zoo" $m 6 &
  ag_run "$d/$m.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/$m.long.json" \
    "$TORCH_SIM" "$PY" "$zoo" $m 6
  wait
  ag_run "$d/$m.short" env SIM_SEED=3 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/$m.short.json" \
    "$TORCH_SIM" "$PY" "$zoo" $m 2 &
  ag_run "$d/$m.cpu" "$TORCH_SIM" "$PY" "$zoo" $m 6 cpu
  wait
  for r in plain lib short cpu; do
    [ "$(cat "$d/$m.$r.rc")" = 0 ] || { tail -n 30 "$d/$m.$r.err" >&2; ag_fail "$m ($r) exited $(cat "$d/$m.$r.rc")"; }
  done
  cat "$d/$m.plain.out"
  cmp -s "$d/$m.plain.out" "$d/$m.lib.out" || { diff -u "$d/$m.plain.out" "$d/$m.lib.out" >&2; ag_fail "$m: the result differs with the library"; }
  python3 - "$d/$m.plain.out" "$d/$m.cpu.out" <<'PY' || ag_fail "$m: the device's losses are not the CPU's"
import sys
dev, cpu = ([float(l.split()[2]) for l in open(p) if l.startswith("loss:")] for p in sys.argv[1:])
rel = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(dev, cpu)]
print(f"losses: device against CPU, relative differences of the first two steps {rel[0]:.2e}, {rel[1]:.2e}")
sys.exit(0 if len(dev) == len(cpu) == 6 and rel[0] <= 1e-5 and rel[1] <= 1e-3 else 1)
PY
  python3 - "$m" "$d/$m.short.json" "$d/$m.long.json" <<'PY' || ag_fail "$m: the steady state is not replayed"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[2:])
launches, replayed = b["launches"] - a["launches"], b["replayed"] - a["replayed"]
share = replayed / launches if launches else 0
print(f"{sys.argv[1]}: the steps beyond the first two made {launches} launches, {replayed} replayed "
      f"({share:.1%}); elementwise {b['elementwise']}, in chains {b['chained']}")
sys.exit(0 if launches > 0 and share >= 0.90 else 1)
PY
done
echo "torch-sim-zoo: resnet18 and mobilenet_v3_small train on the simulator, identical with the library"
