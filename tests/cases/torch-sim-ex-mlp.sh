#!/usr/bin/env bash
# torch-sim-ex-mlp.sh — examples/mlp.py (Linear and ReLU layers, cross-entropy, Adam) with
# --device cuda on the simulator at a small size: equal to CPU PyTorch's result, bit-identical
# with the library, its steady state replayed (tests/torch/example.sh says what is checked).
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
. "$AG_ROOT/tests/torch/example.sh"
torch_example mlp 8 1 --batch-size 16 --width 64
