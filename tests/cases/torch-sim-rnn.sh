#!/usr/bin/env bash
# torch-sim-rnn.sh — nn.LSTM, nn.GRU and nn.RNN classifiers training on the simulator without
# cuDNN (tests/torch/rnn.py: PyTorch's fused cell kernels, tests/sim/torch/rnn.c):
#   - without the library, the first loss equals the CPU's within relative 1e-5 and the third
#     within 1e-4 (after two backward passes and Adam updates);
#   - with the library (another simulator seed): the same losses and parameter bits;
#   - the launches of the steps beyond the first two are at least 90% replayed.
# ag-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
export AUTOGRAPH_HOLD_US=200000 # as in tests/torch/example.sh: a loaded machine's pace is no hold's end
py=$AG_ROOT/tests/torch/rnn.py d=$AG_TMP
for cell in lstm gru rnn; do
  ag_run "$d/$cell.plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$py" $cell 6 &
  ag_run "$d/$cell.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/$cell.long.json" \
    "$TORCH_SIM" "$PY" "$py" $cell 6
  wait
  ag_run "$d/$cell.short" env SIM_SEED=3 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/$cell.short.json" \
    "$TORCH_SIM" "$PY" "$py" $cell 2 &
  ag_run "$d/$cell.cpu" "$TORCH_SIM" "$PY" "$py" $cell 6 cpu
  wait
  for r in plain lib short cpu; do
    [ "$(cat "$d/$cell.$r.rc")" = 0 ] || { tail -n 30 "$d/$cell.$r.err" >&2; ag_fail "$cell ($r) exited $(cat "$d/$cell.$r.rc")"; }
  done
  cmp -s "$d/$cell.plain.out" "$d/$cell.lib.out" || { diff -u "$d/$cell.plain.out" "$d/$cell.lib.out" >&2; ag_fail "$cell: the result differs with the library"; }
  python3 - "$cell" "$d/$cell.plain.out" "$d/$cell.cpu.out" "$d/$cell.short.json" "$d/$cell.long.json" <<'PY' || ag_fail "$cell: see above"
import json, sys
cell = sys.argv[1]
dev, cpu = ([float(l.split()[2]) for l in open(p) if l.startswith("loss:")] for p in sys.argv[2:4])
rel = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(dev, cpu)]
a, b = (json.load(open(p)) for p in sys.argv[4:6])
launches, replayed = b["launches"] - a["launches"], b["replayed"] - a["replayed"]
share = replayed / launches if launches else 0
print(f"{cell}: losses against the CPU {rel[0]:.1e} (first), {rel[2]:.1e} (third); the steps beyond "
      f"the first two made {launches} launches, {replayed} replayed ({share:.1%})")
ok = len(dev) == len(cpu) == 6 and rel[0] <= 1e-5 and rel[2] <= 1e-4 and launches > 0 and share >= 0.90
sys.exit(0 if ok else 1)
PY
done
echo "torch-sim-rnn: LSTM, GRU and RNN train on the simulator, identical with the library"
