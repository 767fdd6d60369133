#!/usr/bin/env bash
# torch-sim-nccl.sh — DistributedDataParallel with backend="nccl" under torchrun, two ranks, each
# on its own simulated device (SIM_DEVICES=2, tests/torch/ddp.py --backend nccl: set_device of the
# local rank as users write it) through the simulated libnccl.so.2 (tests/sim/nccl: the
# communicator through shared memory, the gradients' all-reduce and the broadcasts as
# ncclDevKernel_* kernels launched through the driver):
#   - the same losses and parameters as gloo (the all-reduce sums in rank order; two ranks' sums
#     are exact either way), both ranks with the same parameters;
#   - the same through the launcher with the library (tools/autograph --stats=stats-%r.json), each
#     rank replaying at least 90% of its launches;
#   - no rank waits on a launch another rank holds: the library passes every NCCL kernel through
#     at its launch (fallbacks.denied equals the kernels the rank's communicator ran, from
#     SIM_NCCL_LOG), so after the first collective (which waits for the slower rank's start-up)
#     no kernel waited for its peers anywhere near the hold bound, set to 2 s here: a held
#     collective would make its peers wait until the bound or the next ordering call.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
[ -f "$AG_SIM/libnccl.so.2" ] || ag_skip "skipped: the simulated NCCL is not built"
d=$AG_TMP/nccl
mkdir -p "$d"
ddp=$AG_ROOT/tests/torch/ddp.py
export SIM_DEVICES=2 SIM_NCCL_LOG=1 AUTOGRAPH_HOLD_US=2000000
run() { # TAG SEED BACKEND [LAUNCHER…]: torchrun with two ranks, 30 steps
  local tag=$1 seed=$2 backend=$3
  shift 3
  ag_run "$d/$tag" env SIM_SEED="$seed" "$@" "$TORCH_SIM" "$PY" -m torch.distributed.run \
    --standalone --nproc_per_node=2 "$ddp" 30 --backend "$backend"
  [ "$(cat "$d/$tag.rc")" = 0 ] || { tail -n 30 "$d/$tag.err" >&2; ag_fail "torchrun ($tag) exited $(cat "$d/$tag.rc")"; }
  sort "$d/$tag.out" >"$d/$tag.sorted"
}
run gloo 1 gloo
run nccl 2 nccl
cat "$d/nccl.sorted"
grep 'sim nccl:' "$d/nccl.err"
cmp -s "$d/gloo.sorted" "$d/nccl.sorted" || { diff -u "$d/gloo.sorted" "$d/nccl.sorted" >&2; ag_fail "nccl and gloo give different results"; }
[ "$(grep -c ' checksum: ' "$d/nccl.sorted")" = 2 ] && [ "$(awk '/ checksum: / {print $4}' "$d/nccl.sorted" | sort -u | wc -l)" = 1 ] ||
  ag_fail "the two ranks do not end with the same parameters"
echo "torch-sim-nccl: nccl gives what gloo gives"
run lib 3 nccl "$AG_ROOT/tools/autograph" --lib "$AG_LIB" --stats="$d/stats-%r.json" --
grep 'sim nccl:' "$d/lib.err"
cmp -s "$d/nccl.sorted" "$d/lib.sorted" || { diff -u "$d/nccl.sorted" "$d/lib.sorted" >&2; ag_fail "the output differs with the library"; }
for r in 0 1; do
  line=$(grep "^sim nccl: rank $r of 2 " "$d/lib.err") || ag_fail "no communicator report of rank $r"
  kernels=$(sed -n 's/.*: \([0-9]*\) kernels,.*/\1/p' <<<"$line")
  others=$(sed -n 's/.*the others at most \([0-9.]*\) ms$/\1/p' <<<"$line")
  # A hold that reaches its bound (a rank descheduled for seconds on a loaded machine) submits
  # what it held as ordinary launches: each such hold is allowed 8 unreplayed launches (8 of them
  # once left the share at 89.5%, 4 launches short of 90%).
  ag_expect "$d/stats-$r.json" "launches > 100" "replayed + 8 * st['hold_timeouts'] >= 0.9 * launches" \
    "fb['denied'] == $kernels" "$others < 1000"
done
echo "torch-sim-nccl: identical with the library, replayed, every NCCL kernel passed through at once"
