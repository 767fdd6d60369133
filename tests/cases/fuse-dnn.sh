#!/usr/bin/env bash
# fuse-dnn.sh — cuDNN call fusion (src/fuse-dnn.h) on tests/progs/dnn-fuse.cu.
#
# Every run must print exactly what the program prints without the library. In "spin" the host
# waits on memory a held convolution writes, without a CUDA call: the bound on holds must submit
# it (the program gives up after 10 s and fails the comparison otherwise). The expected fused
# counts follow from the program's structure (see its header) and the library's rule that the
# first occurrence of each convolution runs unfused: with S steps, L0 and L2 fuse fully and L1
# and L4 as conv + bias from the second step on, so plain gives S-1 of each per layer:
# cudnn_conv_bias_act = 2(S-1), cudnn_conv_bias = 2(S-1). A variant that breaks L0 loses its
# S-1 full fusions. Each fused call replaces 3 (or 2) cuDNN calls, each of which launches one
# kernel on the simulator, so by_path.cudnn = K - 2*act - bias for K calls.
. "$(dirname "$0")/lib.sh"

prog=dnn-fuse
ag_need "$prog"

# With the default (off) and with exact: nothing fused, the usual comparison.
ag_compare_prog "$prog" plain -- launch copy cudnn sync
ag_expect "$AG_STATS" "fused == 0" "not st.get('fused_by_pattern')"
AUTOGRAPH_FUSE=exact ag_rerun "$prog" exact plain -- launch copy cudnn sync
ag_expect "$AG_STATS" "fused == 0"

steps=$(sed -n 's/^variant: [a-z]* steps: \([0-9]*\)$/\1/p' "$AG_TMP/$prog/plain1.out")
[ -n "$steps" ] || ag_fail "no steps line in the program's output"
full=$(( 2 * (steps - 1) )) broken=$(( steps - 1 ))

# fused_run TAG VARIANT ACT BIAS — plain and AUTOGRAPH_FUSE=all runs of VARIANT, identical
# output, the fused counts and the launches they imply. The environment may add SIM_FAIL.
fused_run() {
  local tag=$1 variant=$2 act=$3 bias=$4 d=$AG_TMP/$prog
  local p=$BUILD/tests/progs/$prog
  if [ ! -f "$d/plain-$variant.out" ]; then
    ag_run "$d/plain-$variant" env LD_PRELOAD="$AG_PRELOAD_BASE" SIM_FAIL= "$p" "$variant"
    ag_ok "$d/plain-$variant"
  fi
  rm -f "$d/$tag.json"
  ag_run "$d/$tag" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_FUSE=all \
    AUTOGRAPH_STATS="$d/$tag.json" "$p" "$variant"
  ag_same "$d/plain-$variant" "$d/$tag"
  local line k r
  line=$(tail -n 1 "$d/plain-$variant.out")
  r=$(echo "$line" | sed -n 's/.*runtime=\([0-9]*\).*/\1/p')
  k=$(echo "$line" | sed -n 's/.*cudnn_calls=\([0-9]*\).*/\1/p')
  echo "$prog $variant [$tag]: identical output with AUTOGRAPH_FUSE=all"
  ag_expect "$d/$tag.json" "fp['cudnn_conv_bias_act'] == $act" "fp['cudnn_conv_bias'] == $bias" \
    "fused == $act + $bias" "st['by_path']['cudnn'] == $k - 2 * $act - $bias" \
    "st['by_path']['runtime'] == $r" "launches == sum(st['by_path'].values())" \
    "passthrough + replayed == launches"
}

fused_run all-plain plain "$full" "$full"
fused_run all-exit exit "$full" "$full"
for v in stream handle beta alpha desc tanh nan sync memcpy kernel thread spin; do
  fused_run "all-$v" "$v" "$broken" "$full"
done

# The fused call fails: the original calls run instead and that convolution is not held again.
# The first fused call is L0's (step 2), the second L1's identity form.
SIM_FAIL=cudnnConvolutionBiasActivationForward:1 fused_run fail-first plain "$broken" "$full"
SIM_FAIL=cudnnConvolutionBiasActivationForward:2 fused_run fail-second plain "$full" $(( steps - 1 ))
SIM_FAIL=cudnnConvolutionBiasActivationForward:1+ fused_run fail-all plain 0 0
SIM_FAIL=cudnnConvolutionBiasActivationForward:1+ fused_run fail-all-exit exit 0 0
echo "fuse-dnn: every variant identical, fused counts as expected"
