#!/usr/bin/env bash
# torch-fchain-examples.sh — generated chain kernels (AUTOGRAPH_FUSE=chains) in the training
# examples on the simulator, with a float32 calibration table of every operation the generator
# knows (tools/calibrate-elementwise):
#   - resnet_small_batch: the output with the library (cold kernel cache, then warm) is the same
#     as without it, bit for bit; with the cache warm nothing is compiled, and in the steady state
#     (a 16-step run less an 8-step run) at least 60% of the launches in elementwise chains ran in
#     generated kernels (the share is printed; ReLU's backward after the residual add, the
#     batch-norm arithmetic);
#   - dropout_lr: the same output; its only chains (dropout's backward, then ReLU's) stay unfused,
#     and the log says why: PyTorch's allocator gives ReLU's gradient memory that overlaps the
#     gradient the chain reads first, so one kernel doing both would overwrite elements another
#     thread has still to read.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
d=$AG_TMP
ag_run "$d/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --dtypes float32 --json "$d/table.json"
[ "$(cat "$d/cal.rc")" = 0 ] || { tail -n 20 "$d/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$d/cal.rc")"; }

# ex NAME TAG STEPS [ENV…] -- ARGS… — the example with --steps STEPS; a TAG plain… runs without the
# library. Output without timing lines in $d/NAME.TAG.cmp, statistics in $d/NAME.TAG.json.
ex() {
  local name=$1 tag=$2 steps=$3 envs=()
  shift 3
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  if [ "${tag#plain}" != "$tag" ]; then
    ag_run "$d/$name.$tag" env SIM_SEED=1 "${envs[@]}" "$TORCH_SIM" "$PY" "$AG_ROOT/examples/$name.py" \
      --device cuda --warmup 2 --threads 1 "$@" --steps "$steps"
  else
    ag_run "$d/$name.$tag" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_FUSE=chains \
      AUTOGRAPH_FUSE_TABLES="$d/table.json" AUTOGRAPH_CACHE_DIR="$d/cache" SIM_NVRTC_CACHE="$d/sim-nvrtc" \
      AUTOGRAPH_STATS="$d/$name.$tag.json" AUTOGRAPH_HOLD_US=200000 AUTOGRAPH_LOG=debug "${envs[@]}" \
      "$TORCH_SIM" "$PY" "$AG_ROOT/examples/$name.py" --device cuda --warmup 2 --threads 1 "$@" --steps "$steps"
  fi
  [ "$(cat "$d/$name.$tag.rc")" = 0 ] || { tail -n 20 "$d/$name.$tag.err" >&2; ag_fail "$name ($tag) exited $(cat "$d/$name.$tag.rc")"; }
  grep -Ev '^(warmup_s|median_step_ms):' "$d/$name.$tag.out" >"$d/$name.$tag.cmp"
  grep -Eq '^checksum: [0-9a-f]{16}$' "$d/$name.$tag.cmp" || ag_fail "$name ($tag): no checksum line"
}
same() { # same NAME TAG — the run's output is the plain run's of as many steps
  cmp -s "$d/$1.$2.cmp" "$d/$1.plain${3:-}.cmp" || { diff -u "$d/$1.plain${3:-}.cmp" "$d/$1.$2.cmp" >&2; ag_fail "$1 ($2): the output differs with the library"; }
  echo "$1 ($2): identical with the library"
}

args=(--batch-size 8 --width 4 --image-size 16)
ex resnet_small_batch plain 8 -- "${args[@]}"
ex resnet_small_batch plain16 16 -- "${args[@]}"
ex resnet_small_batch cold 8 -- "${args[@]}"
same resnet_small_batch cold
ag_expect "$d/resnet_small_batch.cold.json" "st['jit']['compiles'] > 0"
ex resnet_small_batch warm 8 -- "${args[@]}"
same resnet_small_batch warm
ex resnet_small_batch warm16 16 -- "${args[@]}"
same resnet_small_batch warm16 16
ag_expect "$d/resnet_small_batch.warm16.json" "st['jit']['compiles'] == 0" "st['jit']['cache_hits'] > 0" \
  "fp['elementwise_chain'] > 0"
python3 - "$d/resnet_small_batch.warm.json" "$d/resnet_small_batch.warm16.json" <<'PY' || ag_fail "resnet_small_batch: less than 60% of the chained launches fused in the steady state"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
chained, fused = b["chained"] - a["chained"], b["chained_fused"] - a["chained_fused"]
share = fused / chained if chained else 0
print(f"resnet_small_batch: the 8 extra steps replayed {chained} launches in chains, {fused} of them "
      f"in generated kernels ({share:.1%}); elementwise {b['elementwise'] - a['elementwise']}")
sys.exit(0 if chained > 0 and share >= 0.6 else 1)
PY

args=(--batch-size 16 --width 64)
ex dropout_lr plain 8 -- "${args[@]}"
ex dropout_lr lib 8 -- "${args[@]}"
same dropout_lr lib
ag_expect "$d/dropout_lr.lib.json" "chained > 0" "st['chained_fused'] == 0"
grep -q "is not fused: overlap" "$d/dropout_lr.lib.err" || ag_fail "dropout_lr: no log line saying its chains overlap"
echo "torch-fchain-examples: the examples' chains fused where one kernel computes them exactly, identical results"
