#!/usr/bin/env bash
# torch-sim-attn.sh — F.scaled_dot_product_attention on the flash backend (the FlashAttention-2
# kernels' twins, tests/sim/torch/flash.c; tests/torch/attn.py):
#   - `check`: float16 and bfloat16, forward and backward, square and causal, unequal lengths
#     with and without causal_lower_right, a scale, grouped-query attention, head dimensions 16
#     and 64, split keys: every element within one unit in the last place of CPU float32
#     attention of the same inputs; the deterministic backward's bits equal the default one's;
#     dropout fails to launch (no twin); the same output (a digest of the results) with the
#     library; then the same cases on SDPA's default backend, which resolves to cuDNN attention
#     (PyTorch's own choice is checked, and the simulator's launch log must show the simulated
#     cuDNN's operation-graph kernel: one launch per forward and one per backward);
#   - `train`: a tiny causal attention block under bfloat16 autocast, 6 Adam steps: the same
#     losses and parameter bits with and without the library (other simulator seeds), the CPU's
#     float32 losses within relative 2e-3 (bfloat16 autocast against float32), and the launches
#     of the steps beyond the first two at least 90% replayed; the same (`train default`) with SDPA
#     on its default backend, cuDNN attention, whose forward and backward run through the
#     simulated cuDNN's backend API.
# ag-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
export AUTOGRAPH_HOLD_US=200000 # as in tests/torch/example.sh: a loaded machine's pace is no hold's end
py=$AG_ROOT/tests/torch/attn.py d=$AG_TMP
ag_run "$d/check.plain" env SIM_SEED=1 SIM_LAUNCH_LOG="$d/launches.jsonl" "$TORCH_SIM" "$PY" -W ignore "$py" check &
ag_run "$d/check.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" "$TORCH_SIM" "$PY" -W ignore "$py" check
wait
ag_run "$d/train.plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" -W ignore "$py" train 6 &
ag_run "$d/train.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/long.json" \
  "$TORCH_SIM" "$PY" -W ignore "$py" train 6
wait
ag_run "$d/dtrain.plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" -W ignore "$py" train 6 default &
ag_run "$d/dtrain.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/dlong.json" \
  "$TORCH_SIM" "$PY" -W ignore "$py" train 6 default
wait
ag_run "$d/train.short" env SIM_SEED=3 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/short.json" \
  "$TORCH_SIM" "$PY" -W ignore "$py" train 2 &
ag_run "$d/dtrain.short" env SIM_SEED=3 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/dshort.json" \
  "$TORCH_SIM" "$PY" -W ignore "$py" train 2 default &
ag_run "$d/train.cpu" "$TORCH_SIM" "$PY" -W ignore "$py" train 6 cpu
wait
cat "$d/check.plain.out"
for r in check.plain check.lib train.plain train.lib train.short train.cpu dtrain.plain dtrain.lib dtrain.short; do
  [ "$(cat "$d/$r.rc")" = 0 ] || { tail -n 30 "$d/$r.out" "$d/$r.err" >&2; ag_fail "$r exited $(cat "$d/$r.rc")"; }
done
for r in check train dtrain; do
  cmp -s "$d/$r.plain.out" "$d/$r.lib.out" || { diff -u "$d/$r.plain.out" "$d/$r.lib.out" >&2; ag_fail "$r: the result differs with the library"; }
done
for v in "train train.plain short long" "dtrain dtrain.plain dshort dlong"; do
  read -r name out short long <<<"$v"
  python3 - "$name" "$d/$out.out" "$d/train.cpu.out" "$d/$short.json" "$d/$long.json" <<'PY' || ag_fail "$name: see above"
import json, sys
name = sys.argv[1]
dev, cpu = ([float(l.split()[2]) for l in open(p) if l.startswith("loss:")] for p in sys.argv[2:4])
rel = max(abs(a - b) / abs(b) for a, b in zip(dev, cpu))
a, b = (json.load(open(p)) for p in sys.argv[4:6])
launches, replayed = b["launches"] - a["launches"], b["replayed"] - a["replayed"]
share = replayed / launches if launches else 0
print(f"{name}: losses against the CPU within {rel:.1e}; the steps beyond the first two made {launches} "
      f"launches, {replayed} replayed ({share:.1%})")
sys.exit(0 if len(dev) == len(cpu) == 6 and rel <= 2e-3 and launches > 0 and share >= 0.90 else 1)
PY
done
# cuDNN attention really ran: the simulated cuDNN's interpreter kernel, one launch per forward
# and per backward of the four default-backend cases.
n=$(grep -c '"name": *"cudnnsim_opgraph"' "$d/launches.jsonl" || true)
[ "${n:-0}" -ge 8 ] || ag_fail "check: $n launches of cudnnsim_opgraph, expected at least 8 (cuDNN attention did not run)"
echo "check: $n launches of the simulated cuDNN's operation-graph kernel"
echo "torch-sim-attn: SDPA's flash backend and its default backend (cuDNN attention) run on the simulator, identical with the library"
