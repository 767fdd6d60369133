#!/usr/bin/env bash
# torch-fchain-ops.sh — every operation the library generates kernels for, inside replayed graphs
# (AUTOGRAPH_FUSE=chains), with real PyTorch on the simulator: tests/torch/fchain.py --wide, in
# float32, float16 and bfloat16 (chains through the hard activations and their backwards,
# leaky_relu, tanh's and sigmoid's backwards, GELU both ways, SiLU, the clamps, threshold, ReLU's
# and dropout's backwards, exp, log, abs, sqrt, reciprocal, pow, neg, division, casts through
# bfloat16 and float16, and fills), the table made for all of them:
#   - with an empty kernel cache (the host pausing 10 s after step 8, in which the kernels the
#     steady sequences requested compile), then with it warm, the output (a hash of every result's
#     bytes, intermediates included, every step) is the same as without the library, bit for bit;
#   - every operation is in a generated kernel: the kernel cache's sources (the simulated NVRTC's
#     modules carry them) name each one;
#   - with the cache warm, kernels are read from it, and generated kernels ran in place of at
#     least 60% of the chained launches.
# tools/gpu-check runs the same script on a GPU, where the generated kernels meet PyTorch's own.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
d=$AG_TMP py=$AG_ROOT/tests/torch/fchain.py steps=24 pause=8 dtypes=float32,float16,bfloat16
ops=add,add_alpha,sub_alpha,mul,div,add_scalar,sub_scalar,mul_scalar,div_scalar,neg,abs,exp,log
ops=$ops,sqrt,rsqrt,reciprocal,sigmoid,tanh,relu,silu,gelu,gelu_tanh,clamp,clamp_min,pow_scalar
ops=$ops,pow_2,pow_3,to_float32,to_float16,to_bfloat16,threshold,masked_scale,fill,hardsigmoid
ops=$ops,hardswish,hardsigmoid_backward,hardswish_backward,leaky_relu,leaky_relu_backward
ops=$ops,sigmoid_backward,tanh_backward
ag_run "$d/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --dtypes "$dtypes" --ops "$ops" \
  --json "$d/table.json"
[ "$(cat "$d/cal.rc")" = 0 ] || { tail -n 20 "$d/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$d/cal.rc")"; }

args=("$steps" --pause-at "$pause" --wide --dtypes "$dtypes")
ag_run "$d/plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$py" "${args[@]}"
[ "$(cat "$d/plain.rc")" = 0 ] || { tail -n 20 "$d/plain.err" >&2; ag_fail "fchain.py --wide failed without the library"; }
grep -q '^checksum: ' "$d/plain.out" || ag_fail "no checksum line"

fchain_run "$d" cold 2 "$d/table.json" "$py" "${args[@]}" --pause-s 10
fchain_summary "$d/cold.json"
ag_expect "$d/cold.json" "st['jit']['compiles'] > 0"

fchain_run "$d" warm 3 "$d/table.json" "$py" "${args[@]}"
fchain_summary "$d/warm.json"
ag_expect "$d/warm.json" "st['jit']['cache_hits'] > 0" "fp['elementwise_chain'] > 0" \
  "st['chained_fused'] >= 0.6 * chained" "fp['fill_group'] > 0"

# Each operation of the chains in a generated kernel: the sources (one `// <operation>` comment
# per operation) in the cache's entries.
kinds="add axpy mul div add_scalar mul_scalar neg abs exp log sqrt rsqrt reciprocal sigmoid tanh"
kinds="$kinds silu gelu gelu_tanh relu clamp clamp_min pow_scalar cast threshold masked_scale square"
kinds="$kinds cube hardsigmoid hardswish hardsigmoid_bw hardswish_bw leaky_relu leaky_relu_bw"
kinds="$kinds sigmoid_bw tanh_bw"
cat "$d"/cache/*.agjit 2>/dev/null | tr -c '[:print:]\n' '\n' | grep -oE '; // [a-z0-9_]+$' | sort -u >"$d/kinds"
missing=
for k in $kinds; do grep -qx "; // $k" "$d/kinds" || missing="$missing $k"; done
[ -z "$missing" ] || ag_fail "no generated kernel computes:$missing"
echo "every operation in a generated kernel: $(wc -l <"$d/kinds") kinds of operation in the cache"
echo "torch-fchain-ops: every generated operation fused in replayed graphs, identical results"
