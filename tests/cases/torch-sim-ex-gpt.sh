#!/usr/bin/env bash
# torch-sim-ex-gpt.sh — examples/gpt_decode.py (embeddings, layer norm, attention with a causal
# mask and softmax, GELU, greedy argmax written into an int64 context) with --device cuda on the
# simulator at a small size: the generated tokens and logits equal CPU PyTorch's, bit-identical
# with the library, its steady state replayed (tests/torch/example.sh).
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
. "$AG_ROOT/tests/torch/example.sh"
torch_example gpt_decode 3 1 --batch-size 1 --tokens 4 --prompt 4 --context 16 --layers 2 --dim 32 --vocab 64
