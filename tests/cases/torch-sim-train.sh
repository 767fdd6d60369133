#!/usr/bin/env bash
# torch-sim-train.sh — the library on real PyTorch: a fixed-shape training loop
# (tests/torch/train.py: Linear, ReLU, Linear, MSE, SGD with momentum) on the simulator.
#   - Without the library, under two simulator seeds: bit-identical parameters (the baseline is
#     race-free) and within float32 tolerance of the CPU's (train.py checks).
#   - With the library (LD_PRELOAD, as a user would write it), the loop also reading its loss
#     every step: bit-identical to the baseline, and the report (autograph-report on the dump)
#     names PyTorch's cudaStreamSynchronize (of loss.item()) as what ends the repeated step.
#   - Through the launcher (tools/autograph -- tools/torch-sim …), 10 steps and 30 steps without
#     reading the loss: bit-identical too, and the launches added by the extra steps were at least
#     95% replayed, both with and without reading the loss, i.e. the steady state replays graphs
#     (without the loss read nothing but launches separates the steps); cuBLAS's kernels arrive
#     through the driver path.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
d=$AG_TMP
train=$AG_ROOT/tests/torch/train.py
# On a loaded machine the simulated Python can spend more than the default AUTOGRAPH_HOLD_US
# (1 ms) between launches, and the library then submits held launches early (hold_timeout) and
# replays less; 200 ms keeps the replay share a property of the library, not of the machine's
# load. The bound only decides when held launches are submitted, never what runs.
export AUTOGRAPH_HOLD_US=200000
for seed in 1 2; do
  ag_run "$d/plain$seed" env SIM_SEED=$seed "$TORCH_SIM" "$PY" "$train" 30
  [ "$(cat "$d/plain$seed.rc")" = 0 ] || { tail -n 30 "$d/plain$seed.err" >&2; ag_fail "train.py failed (SIM_SEED=$seed)"; }
done
cat "$d/plain1.out"
cmp -s "$d/plain1.out" "$d/plain2.out" || { diff -u "$d/plain1.out" "$d/plain2.out" >&2; ag_fail "the baseline differs between simulator seeds"; }
# With the library the loop also reads its loss every step (loss.item(), as a loop that logs):
# the same printed lines, and the report must name the call of PyTorch's that ends each step.
ag_run "$d/lib30" env SIM_SEED=3 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/s30.json" \
  AUTOGRAPH_DUMP="$d/d30.json" "$TORCH_SIM" "$PY" "$train" 30 sgd log
[ "$(cat "$d/lib30.rc")" = 0 ] || { tail -n 30 "$d/lib30.err" >&2; ag_fail "train.py failed with the library"; }
cmp -s "$d/plain1.out" "$d/lib30.out" || { diff -u "$d/plain1.out" "$d/lib30.out" >&2; ag_fail "the result differs with the library"; }
# The same loop without reading its loss (nothing between the steps but launches): 30 steps
# against 10.
ag_run "$d/lib10" env SIM_SEED=1 "$AG_ROOT/tools/autograph" --lib "$AG_LIB" --stats="$d/s10.json" -- \
  "$TORCH_SIM" "$PY" "$train" 10 &
ag_run "$d/lib30n" env SIM_SEED=2 "$AG_ROOT/tools/autograph" --lib "$AG_LIB" --stats="$d/s30n.json" -- \
  "$TORCH_SIM" "$PY" "$train" 30
wait
for r in lib10 lib30n; do
  [ "$(cat "$d/$r.rc")" = 0 ] || { tail -n 30 "$d/$r.err" >&2; ag_fail "train.py failed under tools/autograph ($r)"; }
done
cmp -s "$d/plain1.out" "$d/lib30n.out" || { diff -u "$d/plain1.out" "$d/lib30n.out" >&2; ag_fail "the result differs with the library (no log)"; }
ag_expect "$d/s30.json" "replayed > 0" "graph_launches > 0" "st['by_path']['driver'] > 0"
ag_expect "$d/s10.json" "replayed > 0"
"$AG_ROOT/tools/autograph-report" "$d/d30.json" >"$d/report.txt" 2>&1 || ag_fail "autograph-report failed"
sed -n '/^Repeated step/,/^$/p' "$d/report.txt"
grep -A20 '^Repeated step' "$d/report.txt" | grep -q 'ended by .*cudaStreamSynchronize' ||
  ag_fail "the report does not name the synchronisation of loss.item() as the end of the step"
python3 - "$d/s10.json" "$d/s30.json" "$d/s30n.json" <<'PY' || ag_fail "the steady state is not replayed"
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:])
ok = True
for what, x in (("reading its loss", b), ("without reading its loss", c)):
    launches, replayed = x["launches"] - a["launches"], x["replayed"] - a["replayed"]
    share = replayed / launches if launches else 0
    print(f"steps 11-30 {what}: {launches} launches, {replayed} replayed ({share:.1%})")
    ok = ok and launches > 0 and share >= 0.95
sys.exit(0 if ok else 1)
PY
echo "torch-sim-train: bit-identical with and without the library"
