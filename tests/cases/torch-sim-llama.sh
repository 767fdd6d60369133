#!/usr/bin/env bash
# torch-sim-llama.sh — a LLaMA-style block's inference in bfloat16 on the simulator
# (tests/torch/llama.py: RMSNorm as float arithmetic, rotary embeddings, causal attention through
# scaled_dot_product_attention's memory-efficient backend, SiLU-gated MLP; the same input every
# step):
#   - without the library its output's sum equals the float32 CPU block's within bfloat16's
#     tolerance (relative 2e-2);
#   - with the library (another simulator seed): the same output, bit for bit;
#   - the launches of the steps beyond the first four (the first whose sequences are all learned)
#     are at least 90% replayed; the statistics'
#     elementwise and chained counts (what a fusion of elementwise chains would replace) are
#     printed.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
export AUTOGRAPH_HOLD_US=200000 # as in tests/torch/example.sh: a loaded machine's pace is no hold's end
py=$AG_ROOT/tests/torch/llama.py d=$AG_TMP
torch_four_runs "$d/llama" 8 4 "$py"
cat "$d/llama.plain.out"
grep -q '^checksum: ' "$d/llama.plain.out" || ag_fail "no checksum line"
python3 - "$d/llama.plain.out" "$d/llama.cpu.out" <<'PY' || ag_fail "the bfloat16 block on the device is not the CPU's float32 block"
import sys
dev, cpu = (float(next(l.split()[1] for l in open(p) if l.startswith("value:"))) for p in sys.argv[1:])
rel = abs(dev - cpu) / max(abs(cpu), 1e-12)
print(f"value: device (bfloat16) {dev:.6e}, CPU (float32) {cpu:.6e}, relative difference {rel:.2e}")
sys.exit(0 if rel <= 2e-2 else 1)
PY
torch_steady "$d/llama"
echo "torch-sim-llama: identical with the library, the steady state replayed"
