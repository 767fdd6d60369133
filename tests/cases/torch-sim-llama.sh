#!/usr/bin/env bash
# torch-sim-llama.sh — a LLaMA-style block's inference in bfloat16 on the simulator
# (tests/torch/llama.py: RMSNorm as float arithmetic, rotary embeddings, causal attention through
# scaled_dot_product_attention's memory-efficient backend, SiLU-gated MLP; the same input every
# step):
#   - without the library its output's sum equals the float32 CPU block's within bfloat16's
#     tolerance (relative 2e-2);
#   - with the library (another simulator seed): the same output, bit for bit;
#   - the launches of the steps beyond the first two are at least 90% replayed; the statistics'
#     elementwise and chained counts (what a fusion of elementwise chains would replace) are
#     printed.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
export AUTOGRAPH_HOLD_US=200000 # as in tests/torch/example.sh: a loaded machine's pace is no hold's end
py=$AG_ROOT/tests/torch/llama.py d=$AG_TMP
ag_run "$d/plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$py" 8 &
ag_run "$d/lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/long.json" "$TORCH_SIM" "$PY" "$py" 8
wait
ag_run "$d/short" env SIM_SEED=3 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/short.json" "$TORCH_SIM" "$PY" "$py" 2 &
ag_run "$d/cpu" "$TORCH_SIM" "$PY" "$py" 8 cpu
wait
for r in plain lib short cpu; do
  [ "$(cat "$d/$r.rc")" = 0 ] || { tail -n 30 "$d/$r.err" >&2; ag_fail "llama.py ($r) exited $(cat "$d/$r.rc")"; }
done
cat "$d/plain.out"
grep -q '^checksum: ' "$d/plain.out" || ag_fail "no checksum line"
cmp -s "$d/plain.out" "$d/lib.out" || { diff -u "$d/plain.out" "$d/lib.out" >&2; ag_fail "the output differs with the library"; }
python3 - "$d/plain.out" "$d/cpu.out" <<'PY' || ag_fail "the bfloat16 block on the device is not the CPU's float32 block"
import sys
dev, cpu = (float(next(l.split()[1] for l in open(p) if l.startswith("value:"))) for p in sys.argv[1:])
rel = abs(dev - cpu) / max(abs(cpu), 1e-12)
print(f"value: device (bfloat16) {dev:.6e}, CPU (float32) {cpu:.6e}, relative difference {rel:.2e}")
sys.exit(0 if rel <= 2e-2 else 1)
PY
python3 - "$d/short.json" "$d/long.json" <<'PY' || ag_fail "the steady state is not replayed"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
launches, replayed = b["launches"] - a["launches"], b["replayed"] - a["replayed"]
share = replayed / launches if launches else 0
ew, ch = b["elementwise"] - a["elementwise"], b["chained"] - a["chained"]
print(f"llama: the steps beyond the first two made {launches} launches, {replayed} replayed "
      f"({share:.1%}); of these, {ew} elementwise, {ch} in chains ({ch / ew if ew else 0:.1%})")
sys.exit(0 if launches > 0 and share >= 0.90 else 1)
PY
echo "torch-sim-llama: identical with the library, the steady state replayed"
