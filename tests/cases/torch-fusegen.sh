#!/usr/bin/env bash
# torch-fusegen.sh — the fused kernels that src/fusegen.c generates for chains of PyTorch's
# elementwise kernels equal PyTorch's kernels bit for bit, intermediates included. Real PyTorch
# on the simulator (tests/torch/fusegen.py) runs chains in float32, float16 and bfloat16 on
# inputs with NaNs of both signs (in float16 and bfloat16 also NaNs with payloads, which relu,
# the clamps and threshold pass on with their bits, as PyTorch's lambdas return their argument
# itself), +-Inf, signed zeros, subnormals and extreme values: RMSNorm's
# tail x * rsqrt(ms + eps), silu(a) * b, ReLU's backward (threshold_backward) and threshold,
# dropout's backward (a bool mask), sigmoid(x) * x and x * sigmoid(x) (where two NaNs meet:
# the simulator gives a computed NaN's canonical bits, as a GPU does, in PyTorch's kernels and
# the generated ones alike), (x + y) * s, casts through bfloat16 and float16 and back, pow's
# own kernels for the exponents 3 and 2 (the cube of a float16 or bfloat16 rounds its first
# product to the type), two long chains through the other operations the generator knows,
# hardswish, hardsigmoid and their backwards (inputs at and around their bounds), GELU with the
# tanh approximation (x + 0.044715 * x^3 contracted into one FMA, as the wheel's SASS shows),
# sigmoid's and tanh's backwards (tanh's 1 - y * y contracted into one FMA in float32, as the
# wheel's SASS shows; each step rounded in float16 and bfloat16), leaky_relu and its backward,
# and
# chains with launches of PyTorch's strided framework: RMSNorm's scaling by a per-row statistic
# and a per-column weight (broadcasts), a slice read from an offset, and a rotary embedding on a
# transposed view, whose last add reads a product in another order than it was written in (the
# product is then computed in the add's order); and a run of five fills of
# tensors of other sizes, with -0, NaN, -Inf and a subnormal among the values (one kernel for
# the group, horizontally);
# the simulated driver logs each launch's bytes (SIM_LAUNCH_LOG) and the script writes every
# tensor's bytes. Then tests/torch/fusegen-check finds the chains (src/chain.c), describes them
# with the calibration table that tools/calibrate-elementwise writes for just these operations,
# generates each kernel, compiles it with NVRTC (the simulated one: the toolkit's real NVRTC,
# then a host build that runs), runs it on the inputs and compares every tensor the chain writes
# with PyTorch's bytes.
# Every chain must be fused and no byte may differ.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
check=$BUILD/tests/torch/fusegen-check
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
[ -x "$check" ] || ag_skip "skipped: $check is not built"
d=$AG_TMP
ops=add,add_alpha,sub_alpha,mul,div,add_scalar,sub_scalar,mul_scalar,div_scalar,neg,abs,exp,log
ops=$ops,sqrt,rsqrt,reciprocal,sigmoid,tanh,relu,silu,gelu,clamp,clamp_min,pow_scalar,pow_2,pow_3
ops=$ops,to_float32,to_float16,to_bfloat16,threshold,masked_scale,fill,hardsigmoid,hardswish
ops=$ops,hardsigmoid_backward,hardswish_backward,leaky_relu,leaky_relu_backward,sigmoid_backward
ops=$ops,tanh_backward,gelu_tanh
ag_run "$d/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --ops "$ops" --json "$d/table.json"
[ "$(cat "$d/cal.rc")" = 0 ] || { tail -n 20 "$d/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$d/cal.rc")"; }
mkdir -p "$d/tensors"
ag_run "$d/py" env SIM_LAUNCH_LOG="$d/launches.jsonl" "$TORCH_SIM" "$PY" "$AG_ROOT/tests/torch/fusegen.py" "$d/tensors"
[ "$(cat "$d/py.rc")" = 0 ] || { tail -n 20 "$d/py.err" >&2; ag_fail "fusegen.py exited $(cat "$d/py.rc")"; }
cat "$d/py.out"
ag_run "$d/check" env LD_LIBRARY_PATH="$AG_SIM" SIM_NVRTC_CACHE="$d/nvrtc-cache" \
  "$check" "$d/launches.jsonl" "$d/table.json" "$d/tensors"
cat "$d/check.out"
[ "$(cat "$d/check.rc")" = 0 ] || { tail -n 20 "$d/check.err" >&2; ag_fail "fusegen-check exited $(cat "$d/check.rc")"; }
# What the script runs: per type, RMSNorm's tail, the SiLU gate, the two sigmoid products,
# ReLU's backward and threshold after an add, ReLU's backward of an input gradient then a
# product, dropout's backward between a multiplication and an add, (x + y) * s, one or two chains
# of casts, pow's cube and square (then, in float16 and bfloat16, widened and squared again), the
# two long chains, the hard activations and their backwards, GELU's tanh approximation then a
# product, tanh's backward into sigmoid's then a product, leaky_relu and its backward, the three strided ones and the fills;
# 62 in all (bfloat16 has one cast chain fewer).
want() { # want COUNT PATTERN: lines of the check's output that match
  local n
  n=$(grep -cE -- "$2" "$d/check.out")
  [ "$n" = "$1" ] || ag_fail "expected $1 lines matching '$2', found $n"
}
want 3 '^chain at launch [0-9]+: 3 operations \(add_scalar rsqrt mul\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 2 operations \(silu mul\), [0-9]+ bytes compared, 0 differ$'
want 6 '^chain at launch [0-9]+: 2 operations \(sigmoid mul\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 3 operations \(add threshold threshold\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 2 operations \(threshold mul_scalar\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 3 operations \(mul_scalar masked_scale add\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 2 operations \(add mul_scalar\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 13 operations \(sigmoid mul_scalar sub_scalar tanh exp log axpy axpy div mul_scalar neg abs sqrt\)'
want 3 '^chain at launch [0-9]+: 9 operations \(relu clamp gelu clamp_min pow_scalar reciprocal add_scalar mul mul\)'
want 1 '^chain at launch [0-9]+: 3 operations \(cube square mul_scalar\), [0-9]+ bytes compared, 0 differ$'
want 2 '^chain at launch [0-9]+: 5 operations \(cube square mul_scalar cast square\), [0-9]+ bytes compared, 0 differ$'
want 5 '^chain at launch [0-9]+: [0-9]+ operations \((cast|mul_scalar)( (cast|mul_scalar))+\)'
want 2 '^chain at launch [0-9]+: 4 operations \(cast mul cast mul\), [0-9]+ bytes compared, 0 differ$'
want 1 '^chain at launch [0-9]+: 3 operations \(mul cast mul\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 3 operations \(neg mul exp\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 2 operations \(mul add\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 5 operations \(fill fill fill fill fill\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 4 operations \(hardswish hardswish_bw hardsigmoid hardsigmoid_bw\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 2 operations \(leaky_relu leaky_relu_bw\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 2 operations \(gelu_tanh mul\), [0-9]+ bytes compared, 0 differ$'
want 3 '^chain at launch [0-9]+: 4 operations \(tanh tanh_bw sigmoid_bw mul\), [0-9]+ bytes compared, 0 differ$'
want 1 '^fusegen-check: [0-9]+ launches, 62 chains and groups of fills: 62 fused \([0-9]+ operations\), 0 refused; [0-9]+ tensors, [0-9]+ bytes compared, 0 differ$'
echo "torch-fusegen: every chain fused, every byte equal to PyTorch's"
