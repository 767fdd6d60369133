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
  torch_four_runs "$d/$m" 6 2 "$zoo" $m
  cat "$d/$m.plain.out"
  python3 - "$d/$m.plain.out" "$d/$m.cpu.out" <<'PY' || ag_fail "$m: the device's losses are not the CPU's"
import sys
dev, cpu = ([float(l.split()[2]) for l in open(p) if l.startswith("loss:")] for p in sys.argv[1:])
rel = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(dev, cpu)]
print(f"losses: device against CPU, relative differences of the first two steps {rel[0]:.2e}, {rel[1]:.2e}")
sys.exit(0 if len(dev) == len(cpu) == 6 and rel[0] <= 1e-5 and rel[1] <= 1e-3 else 1)
PY
  torch_steady "$d/$m"
done
echo "torch-sim-zoo: resnet18 and mobilenet_v3_small train on the simulator, identical with the library"
