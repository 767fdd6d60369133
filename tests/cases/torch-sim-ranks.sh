#!/usr/bin/env bash
# torch-sim-ranks.sh — the launcher in front of torchrun, as a user of several processes writes
# it: `tools/autograph --stats=stats-%r.json -- torchrun --nproc_per_node=2 ddp.py`
# (tests/torch/ddp.py: DistributedDataParallel over gloo, both ranks on the simulator's device).
#   - Without the library, under two simulator seeds: the same lines (sorted: the ranks print
#     concurrently), and both ranks end with the same parameters (gloo averaged the gradients).
#   - Through the launcher: the same lines; one statistics file per rank (stats-0.json,
#     stats-1.json) and none from torchrun's agent, which imports PyTorch and launches nothing;
#     each rank replayed at least 90% of its launches.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
d=$AG_TMP/ranks
mkdir -p "$d"
ddp=$AG_ROOT/tests/torch/ddp.py
# As in torch-sim-train.sh: the simulated Python on a loaded machine may pause longer than the
# default bound between launches; the bound decides when held launches go, never what runs.
export AUTOGRAPH_HOLD_US=200000
run() { # TAG SEED [LAUNCHER…]: torchrun with two ranks, 30 steps
  local tag=$1 seed=$2
  shift 2
  ag_run "$d/$tag" env SIM_SEED="$seed" "$@" "$TORCH_SIM" "$PY" -m torch.distributed.run \
    --standalone --nproc_per_node=2 "$ddp" 30
  [ "$(cat "$d/$tag.rc")" = 0 ] || { tail -n 30 "$d/$tag.err" >&2; ag_fail "torchrun ($tag) exited $(cat "$d/$tag.rc")"; }
  sort "$d/$tag.out" >"$d/$tag.sorted"
}
run plain1 1
run plain2 2
cat "$d/plain1.sorted"
cmp -s "$d/plain1.sorted" "$d/plain2.sorted" || { diff -u "$d/plain1.sorted" "$d/plain2.sorted" >&2; ag_fail "the baseline differs between simulator seeds"; }
[ "$(grep -c ' checksum: ' "$d/plain1.sorted")" = 2 ] && [ "$(awk '/ checksum: / {print $4}' "$d/plain1.sorted" | sort -u | wc -l)" = 1 ] ||
  ag_fail "the two ranks do not end with the same parameters"
run lib 3 "$AG_ROOT/tools/autograph" --lib "$AG_LIB" --stats="$d/stats-%r.json" --
cmp -s "$d/plain1.sorted" "$d/lib.sorted" || { diff -u "$d/plain1.sorted" "$d/lib.sorted" >&2; ag_fail "the output differs with the library"; }
[ "$(cd "$d" && ls stats-*.json | tr '\n' ' ')" = "stats-0.json stats-1.json " ] ||
  ag_fail "expected one statistics file per rank and none from the agent: $(ls "$d")"
for r in 0 1; do
  ag_expect "$d/stats-$r.json" "launches > 100" "replayed >= 0.9 * launches"
done
echo "torch-sim-ranks: one report per rank, identical results, replayed"
