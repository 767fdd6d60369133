"""fuse.py STEPS — chains the library's kernel patterns fuse (add then relu, mul then add), on
real PyTorch, for tests/cases/torch-sim-fuse.sh.

Each step computes relu(x + y) (PyTorch's add kernel, then its clamp kernel for relu) and
a * z + y (its mul kernel, then its add kernel) on tensors of 500 elements, folds the result into
an accumulator and synchronises the stream, so that the step repeats as a sequence the library
graphs; then the same on 4096 elements. Prints a digest of the exact bits of each accumulator.
With AUTOGRAPH_FUSE=exact the library runs fused kernels in place of the pairs where the
pattern's conditions hold (they do at 500 elements: one block of PyTorch's launch; at 4096 this
wheel launches 1024 elements per block, which the patterns do not accept, so those stay
unfused): the digests must not change either way.
"""
import hashlib
import sys

import torch


def run(n, steps):
    g = torch.Generator().manual_seed(n)
    x, y, z = (torch.randn(n, generator=g).to("cuda") for _ in range(3))
    acc = torch.zeros(n, device="cuda")
    stream = torch.cuda.current_stream()
    for _ in range(steps):
        a = torch.relu(x + y)
        b = a * z + y
        acc = acc * 0.5 + b
        stream.synchronize()
    return hashlib.sha256(acc.cpu().numpy().tobytes()).hexdigest()[:16]


steps = int(sys.argv[1])
for n in (500, 4096):
    print(f"n={n}: {run(n, steps)}")
