#!/usr/bin/env bash
# torch-sim-fuse.sh — the library's kernel patterns on real PyTorch: tests/torch/fuse.py
# chains add/relu and mul/add of PyTorch's own kernels. With AUTOGRAPH_FUSE=exact the library's
# fused kernels (their twins: tests/sim/torch/fused.c) replace the pairs in the graphs it
# replays, and the digests are bit-identical to the run without the library; without the twins
# the graph with a fused node could not run (the sequence would be demoted, nothing fused).
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
d=$AG_TMP
fuse=$AG_ROOT/tests/torch/fuse.py
export AUTOGRAPH_HOLD_US=200000 # see torch-sim-train.sh
ag_run "$d/plain" "$TORCH_SIM" "$PY" "$fuse" 20
[ "$(cat "$d/plain.rc")" = 0 ] || { tail -n 30 "$d/plain.err" >&2; ag_fail "fuse.py failed"; }
cat "$d/plain.out"
ag_run "$d/fused" env LD_PRELOAD="$AG_LIB" AUTOGRAPH_FUSE=exact AUTOGRAPH_STATS="$d/s.json" \
  "$TORCH_SIM" "$PY" "$fuse" 20
[ "$(cat "$d/fused.rc")" = 0 ] || { tail -n 30 "$d/fused.err" >&2; ag_fail "fuse.py failed with the library"; }
cmp -s "$d/plain.out" "$d/fused.out" || { diff -u "$d/plain.out" "$d/fused.out" >&2; ag_fail "fusion changed the result"; }
# add/relu falls inside one sequence every step; whether mul/add does depends on where the
# segmenter cuts the step (a pattern never spans two graphs), so it is not required here.
ag_expect "$d/s.json" "replayed > 0" "st['fused_by_pattern'].get('torch_add_relu', 0) > 0" \
  "demotions == 0"

# At 4096 elements this wheel launches blocks of 1024: the fixed rule refuses that shape, the
# wheel's calibration table (add, mul and relu in float32) makes it known.
ag_run "$d/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --dtypes float32 \
  --ops add,mul,relu --json "$d/table.json"
[ "$(cat "$d/cal.rc")" = 0 ] || { tail -n 20 "$d/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$d/cal.rc")"; }
ag_run "$d/plain4k" "$TORCH_SIM" "$PY" "$fuse" 20 4096
[ "$(cat "$d/plain4k.rc")" = 0 ] || { tail -n 30 "$d/plain4k.err" >&2; ag_fail "fuse.py 4096 failed"; }
for tables in table.json none; do
  ag_run "$d/$tables" env LD_PRELOAD="$AG_LIB" AUTOGRAPH_FUSE=exact AUTOGRAPH_FUSE_TABLES="$d/$tables" \
    AUTOGRAPH_STATS="$d/$tables.s.json" "$TORCH_SIM" "$PY" "$fuse" 20 4096
  [ "$(cat "$d/$tables.rc")" = 0 ] || { tail -n 30 "$d/$tables.err" >&2; ag_fail "fuse.py 4096 failed with the library"; }
  cmp -s "$d/plain4k.out" "$d/$tables.out" ||
    { diff -u "$d/plain4k.out" "$d/$tables.out" >&2; ag_fail "fusion changed the result (tables: $tables)"; }
done
ag_expect "$d/table.json.s.json" "replayed > 0" "st['fused_by_pattern'].get('torch_add_relu', 0) > 0" \
  "demotions == 0"
ag_expect "$d/none.s.json" "replayed > 0" "st['fused'] == 0"
echo "torch-sim-fuse: fused on real PyTorch, bit-identical; 4096 elements fused with the table only"
