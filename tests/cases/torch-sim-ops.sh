#!/usr/bin/env bash
# torch-sim-ops.sh — real PyTorch (the PyPI CUDA wheel) on the simulator: every covered
# operation (creation, copies and casts, elementwise arithmetic and activations, comparisons,
# reductions, softmax, cross-entropy, cat, index_select and embeddings, layer norm, matmul,
# nn.Linear, conv2d, batch norm, adaptive average pooling, 2-D max and average pooling (NCHW and
# channels-last, max pooling's indices), gather, scatter, scatter_add, indexing with index tensors
# and index_put_ (also accumulating), index_copy_ and index_fill_, sort and topk, half and
# bfloat16 convolutions, torch.all/any, scaled_dot_product_attention on the math and
# memory-efficient backends, SGD and Adam (foreach, and fused=True in float32, float16 and
# bfloat16, also under GradScaler);
# forward and backward) equals the CPU's within float32 tolerance, dropout keeps its contract and
# Philox its known answers (tests/torch/ops.py), and a kernel without a CPU twin (kthvalue's) fails,
# named by the simulator on stderr. Then the same script with libautograph preloaded prints the
# same lines. Last, memory-efficient attention with dropout (which its twin does not implement)
# stops with the twin's message rather than compute something else.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
d=$AG_TMP
ag_run "$d/plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$AG_ROOT/tests/torch/ops.py"
[ "$(cat "$d/plain.rc")" = 0 ] || { cat "$d/plain.out"; tail -n 30 "$d/plain.err" >&2; ag_fail "ops.py failed on the simulator"; }
cat "$d/plain.out"
grep -q '^ops: [0-9]* ok$' "$d/plain.out" || ag_fail "ops.py did not finish"
grep -q '^sim: kernel .*gatherKthValue.* has no CPU twin' "$d/plain.err" ||
  ag_fail "the kernel without a twin was not named on stderr"
ag_run "$d/lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/stats.json" \
  "$TORCH_SIM" "$PY" "$AG_ROOT/tests/torch/ops.py"
[ "$(cat "$d/lib.rc")" = 0 ] || { tail -n 30 "$d/lib.err" >&2; ag_fail "ops.py failed with the library"; }
cmp -s "$d/plain.out" "$d/lib.out" || { diff -u "$d/plain.out" "$d/lib.out" >&2; ag_fail "the output differs with the library"; }
ag_expect "$d/stats.json" "launches > 100" "st['by_path']['driver'] > 0" "st['by_path']['runtime'] > 0"
cat >"$d/dropout.py" <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q = torch.randn(1, 2, 5, 8, device="cuda")
with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    print(F.scaled_dot_product_attention(q, q, q, dropout_p=0.3).sum().item())
PY
# (through an inner shell, whose report of the abort goes to dropout.err, not to this log)
ag_run "$d/dropout" bash -c '"$@"; exit $?' bash env SIM_SEED=1 "$TORCH_SIM" "$PY" "$d/dropout.py"
[ "$(cat "$d/dropout.rc")" != 0 ] || ag_fail "attention with dropout ran, but its twin does not implement dropout"
grep -q '^sim: .*fmha_cutlassF.*: dropout (use_dropout set), which has no twin; not run' "$d/dropout.err" ||
  { tail -n 5 "$d/dropout.err" >&2; ag_fail "attention with dropout was not refused by its twin"; }
echo "torch-sim-ops: $(tail -n 1 "$d/plain.out"), the same with the library; attention with dropout refused"
