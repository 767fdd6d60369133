#!/usr/bin/env bash
# torch-sim-amp.sh — mixed precision on the simulator with real PyTorch (tests/torch/amp.py, a
# small MLP, 6 steps): bfloat16 autocast, and float16 autocast with GradScaler, clip_grad_norm_
# and clip_grad_value_ (the foreach kernels and the per-tensor ones, on alternate steps). Each
# mode runs on the simulator without and with the library (another simulator seed) and on CPU
# PyTorch; fails unless
#   - the runs with and without the library print the same, byte for byte (losses, gradient
#     norms, loss scales, the digest of the parameters);
#   - every loss (and, in float16, every gradient norm) is CPU PyTorch's within relative 1e-4;
#   - the library replayed launches from graphs (the share is printed).
# The tolerance: the simulated GEMMs accumulate in float32 in index order, CPU PyTorch in its own
# blocked order, and each rounds the activations once to bfloat16 or float16, so an activation
# may differ by one unit in the last place (2^-8 relative in bfloat16); the loss, a float32 mean
# over the batch, moves by far less (measured: 3e-7 in bfloat16, 2e-7 in float16, 4e-6 for a
# gradient norm), while bfloat16 stores that truncate instead of rounding to nearest even (in the
# twins and the GEMM) move the last loss by 7e-4.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
export AUTOGRAPH_HOLD_US=200000 # as tests/torch/example.sh explains
d=$AG_TMP
script=$AG_ROOT/tests/torch/amp.py
for mode in bf16 fp16; do
  args=(--mode "$mode")
  ag_run "$d/$mode.plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$script" "${args[@]}" &
  ag_run "$d/$mode.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/$mode.json" \
    "$TORCH_SIM" "$PY" "$script" "${args[@]}"
  wait
  ag_run "$d/$mode.cpu" "$TORCH_SIM" "$PY" "$script" "${args[@]}" --device cpu
  for r in plain lib cpu; do
    [ "$(cat "$d/$mode.$r.rc")" = 0 ] || { tail -n 30 "$d/$mode.$r.err" >&2; ag_fail "$mode ($r) exited $(cat "$d/$mode.$r.rc")"; }
  done
  grep -q '^params: ' "$d/$mode.plain.out" || ag_fail "$mode: no parameter digest"
  if ! cmp -s "$d/$mode.plain.out" "$d/$mode.lib.out"; then
    diff -u "$d/$mode.plain.out" "$d/$mode.lib.out" >&2
    ag_fail "$mode: the run differs with the library"
  fi
  python3 - "$mode" "$d/$mode.plain.out" "$d/$mode.cpu.out" <<'PY' || ag_fail "$mode: the simulator's losses are not the CPU's"
import re, sys
mode, dev, cpu = sys.argv[1], *(open(p).read() for p in sys.argv[2:])
def nums(text, key):
    return [float(v) for v in re.findall(rf"{key} (\S+)", text)]
worst = 0.0
for key in ("loss", "norm"):
    a, b = nums(dev, key), nums(cpu, key)
    if len(a) != len(b) or (key == "loss" and len(a) != 6):
        sys.exit(f"{mode}: {len(a)} {key} values on the simulator, {len(b)} on the CPU")
    for x, y in zip(a, b):
        worst = max(worst, abs(x - y) / abs(y))
print(f"{mode}: last loss {nums(dev, 'loss')[-1]:.7e} (cpu {nums(cpu, 'loss')[-1]:.7e}), "
      f"largest relative difference {worst:.1e}")
sys.exit(0 if worst <= 1e-4 else 1)
PY
  ag_expect "$d/$mode.json" "replayed > 0" "graph_launches > 0"
  python3 - "$mode" "$d/$mode.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]}: {st['replayed']} of {st['launches']} launches replayed "
      f"({st['replayed'] / st['launches']:.1%}), identical with and without the library")
PY
done
