#!/usr/bin/env bash
# torch-sim-rnn.sh — nn.LSTM, nn.GRU and nn.RNN classifiers training on the simulator
# (tests/torch/rnn.py), each cell as two networks in one process: unidirectional without cuDNN
# (PyTorch's fused cell kernels, tests/sim/torch/rnn.c) and bidirectional through cuDNN's RNN API
# (the simulated cuDNN's tests/sim/cudnn/rnn.c: forward in training mode, backward data and
# weights), then an inference forward through cuDNN, eager, captured in a CUDA graph, and on
# packed sequences of different lengths:
#   - without the library, each network's first loss equals the CPU's within relative 1e-5 and
#     its third within 1e-4 (after two backward passes and Adam updates); the inference outputs
#     within absolute 1e-5; the graph's replay equals the eager forward exactly;
#   - with the library (another simulator seed): the same losses, outputs and parameter bits;
#   - the launches of the steps beyond the first three (both networks together) are at least 90%
#     replayed.
# ag-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
export AUTOGRAPH_HOLD_US=200000 # as in tests/torch/example.sh: a loaded machine's pace is no hold's end
py=$AG_ROOT/tests/torch/rnn.py d=$AG_TMP
for cell in lstm gru rnn; do
  torch_four_runs "$d/$cell" 6 3 "$py" $cell
  python3 - "$cell" "$d/$cell.plain.out" "$d/$cell.cpu.out" <<'PY' || ag_fail "$cell: see above"
import sys
cell = sys.argv[1]
dev, cpu = (open(p).read().splitlines() for p in sys.argv[2:4])
def values(lines, tag, col):
    return [float(v) for l in lines if l.startswith(tag + " ") for v in l.split()[col:]]
ok, report = True, []
for tag, name in (("loss:", "without cuDNN"), ("cudnn-loss:", "through cuDNN")):
    a, b = values(dev, tag, 2), values(cpu, tag, 2)
    rel = [abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b)]
    ok = ok and len(a) == len(b) == 6 and rel[0] <= 1e-5 and rel[2] <= 1e-4
    report.append(f"{name} {rel[0]:.1e} (first), {rel[2]:.1e} (third)")
diff = 0.0
for tag in ("infer:", "infer-packed:"):
    a, b = values(dev, tag, 1), values(cpu, tag, 1)
    diff = max(diff, max(abs(x - y) for x, y in zip(a, b)) if a and len(a) == len(b) else float("inf"))
graph = values(dev, "graph-diff:", 1)
ok = ok and diff <= 1e-5 and graph == [0.0]
print(f"{cell}: losses against the CPU {'; '.join(report)}; cuDNN inference outputs (full and packed sequences) within "
      f"{diff:.1e} of the CPU's, its graph replay {graph[0] if graph else 'missing'} from eager")
sys.exit(0 if ok else 1)
PY
  torch_steady "$d/$cell"
done
echo "torch-sim-rnn: LSTM, GRU and RNN train on the simulator with and without cuDNN, identical with the library"
