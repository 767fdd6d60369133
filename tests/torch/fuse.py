"""fuse.py STEPS [N ...] — chains the library's kernel patterns fuse (add then relu, mul then
add), on real PyTorch, for tests/cases/torch-sim-fuse.sh.

Each step computes relu(x + y) (PyTorch's add kernel, then its clamp kernel for relu) and
a * z + y (its mul kernel, then its add kernel) on tensors of N elements (500, then 4096, by
default), folds the result into an accumulator and synchronises the stream, so that the step
repeats as a sequence the library graphs. Prints a digest of the exact bits of each accumulator.
With AUTOGRAPH_FUSE=exact the library runs fused kernels in place of the pairs where the
pattern's conditions hold: at 500 elements always (one block of PyTorch's launch); at 4096,
which this wheel launches in blocks of 1024 elements, only when a calibration table of the
wheel records that shape. The digests must not change either way.
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
for n in [int(a) for a in sys.argv[2:]] or (500, 4096):
    print(f"n={n}: {run(n, steps)}")
