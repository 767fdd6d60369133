#!/usr/bin/env bash
# torch-sim-amp.sh — mixed precision on the simulator with real PyTorch (tests/torch/amp.py, a
# small MLP, 6 steps): bfloat16 autocast, and float16 autocast with GradScaler, clip_grad_norm_
# and clip_grad_value_ (the foreach kernels and the per-tensor ones, on alternate steps), both
# in one run: on the simulator without and with the library (another simulator seed) and on CPU
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
# Each run trains in both modes, one after the other (one start of PyTorch per run).
ag_run "$d/plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$script" &
ag_run "$d/lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/stats.json" \
  "$TORCH_SIM" "$PY" "$script"
wait
ag_run "$d/cpu" "$TORCH_SIM" "$PY" "$script" --device cpu
for r in plain lib cpu; do
  [ "$(cat "$d/$r.rc")" = 0 ] || { tail -n 30 "$d/$r.err" >&2; ag_fail "$r run exited $(cat "$d/$r.rc")"; }
done
for mode in bf16 fp16; do
  grep -q "^$mode params: " "$d/plain.out" || ag_fail "$mode: no parameter digest"
done
if ! cmp -s "$d/plain.out" "$d/lib.out"; then
  diff -u "$d/plain.out" "$d/lib.out" >&2
  ag_fail "the runs differ with the library"
fi
python3 - "$d/plain.out" "$d/cpu.out" <<'PY' || ag_fail "the simulator's losses are not the CPU's"
import re, sys
dev, cpu = (open(p).read() for p in sys.argv[1:])
ok = True
for mode in ("bf16", "fp16"):
    def nums(text, key):
        return [float(v) for v in re.findall(rf"^{mode} step \d+: .*?{key} (\S+)", text, re.M)]
    worst = 0.0
    for key in ("loss", "norm"):
        a, b = nums(dev, key), nums(cpu, key)
        if len(a) != len(b) or (key == "loss" and len(a) != 6):
            sys.exit(f"{mode}: {len(a)} {key} values on the simulator, {len(b)} on the CPU")
        for x, y in zip(a, b):
            worst = max(worst, abs(x - y) / abs(y))
    print(f"{mode}: last loss {nums(dev, 'loss')[-1]:.7e} (cpu {nums(cpu, 'loss')[-1]:.7e}), "
          f"largest relative difference {worst:.1e}")
    ok = ok and worst <= 1e-4
sys.exit(0 if ok else 1)
PY
ag_expect "$d/stats.json" "replayed > 0" "graph_launches > 0"
python3 - "$d/stats.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
print(f"{st['replayed']} of {st['launches']} launches replayed "
      f"({st['replayed'] / st['launches']:.1%}), identical with and without the library")
PY
