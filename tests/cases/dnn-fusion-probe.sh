#!/usr/bin/env bash
# dnn-fusion-probe.sh — tests/probes/dnn-fusion.cu, the question a GPU's cuDNN answers (does it run
# a convolution and the batch norm and ReLU after it as one graph?), on the simulator: the baseline
# convolution graphs (float32 NCHW, float16 NHWC) are built, planned and run through the backend
# API and match the host's reference; the fused graphs are refused with a status (the simulated
# backend runs a convolution only as a graph of its own), which the probe reports without failing.
# With the library preloaded the output is the same: it passes backend executions through.
. "$(dirname "$0")/lib.sh"
probe=$BUILD/tests/probes/dnn-fusion
[ -x "$probe" ] || ag_skip "skipped: $probe is not built"
d=$AG_TMP
ag_run "$d/plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$probe"
cat "$d/plain.out"
[ "$(cat "$d/plain.rc")" = 0 ] || { tail -n 20 "$d/plain.err" >&2; ag_fail "the probe exited $(cat "$d/plain.rc")"; }
for v in 'float32  NCHW' 'float16  NHWC'; do
  grep -Eq "^$v conv +ran \(engine [0-9-]+\): largest error y [0-9.e+-]+: ok$" "$d/plain.out" ||
    ag_fail "$v: the baseline convolution did not run and match"
  for g in conv-sb-relu 'conv-sb-relu\+y' conv-bn-relu; do
    grep -Eq "^$v $g +(refused at [a-z ():-]+: CUDNN_STATUS_[A-Z_]+|ran \(engine [0-9-]+\): largest error .*: (ok|TOO LARGE))$" "$d/plain.out" ||
      ag_fail "$v $g: no answer"
  done
done
[ "$(grep -c ' refused at ' "$d/plain.out")" = 6 ] || ag_fail "the simulator's backend ran a fused graph"
if [ -f "$AG_LIB" ]; then
  ag_run "$d/lib" env LD_PRELOAD="$(ag_preload "$AG_LIB")" "$probe"
  cmp -s "$d/plain.out" "$d/lib.out" || { diff -u "$d/plain.out" "$d/lib.out" >&2; ag_fail "the output differs with the library"; }
fi
echo "dnn-fusion-probe: baselines run and match; the fused graphs answered"
