#!/usr/bin/env bash
# torch-sim-ex-dropout.sh — examples/dropout_lr.py (dropout, a cosine learning-rate schedule,
# SGD with momentum) with --device cuda on the simulator at a small size: bit-identical with the
# library although dropout's seed and offset and the learning rate change every step, its steady
# state replayed (tests/torch/example.sh). Dropout draws the device's own random numbers, so
# there is no CPU result to compare with; tests/torch/ops.py checks dropout's contract.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
. "$AG_ROOT/tests/torch/example.sh"
torch_example dropout_lr 8 0 --batch-size 16 --width 64
