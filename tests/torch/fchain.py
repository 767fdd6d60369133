"""fchain.py STEPS [--pause-at K] [--dtypes LIST] — eager steps made of chains of PyTorch elementwise kernels, for the
library's generated chain kernels (AUTOGRAPH_FUSE=chains; tests/cases/torch-fchain.sh, and
tools/gpu-check on a GPU).

Run under tools/torch-sim, with or without libautograph preloaded (or on a GPU). Each step
computes, on device tensors of 4096 elements (inputs with NaN, +-Inf, signed zeros and denormals
among random values), three chains of contiguous elementwise operations that each read what the
one before wrote: (x + y) * 0.5 -> sigmoid -> * x; u * u + 1e-6 -> rsqrt; a - 0.25 * b -> relu ->
/ 3; then a run of three fills (fill_ with the step's own values, over tensors of 64, 4096 and 300
elements: FillFunctor kernels, one after another, which the library fuses horizontally). The
inputs move a little every step (an in-place add of the step's own output), so that
every step's results depend on the last. Prints one line per step with a hash of the exact bytes
of every result (the intermediates too), so that runs compare bit for bit, and `checksum: <hex>`
of them all.

Without --dtypes the tensors are float32 (the lines read `step S: <hash>`). --dtypes, a list such
as float32,float16,bfloat16, runs the chains in each type in turn every step, on tensors of that
type with its own special values (NaN of both signs, +-Inf, signed zeros, its subnormals and its
largest finite values); the lines then read `step S DTYPE: <hash>`.

With --pause-at K, the host pauses for two seconds after step K, without a CUDA call (as a
program reading its next batch would): time in which the library's background work (reading its
kernel cache, compiling) ends however loaded the machine is, so that the steps after it show
what that work made ready.
"""
import argparse
import hashlib
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("steps", type=int)
ap.add_argument("--pause-at", type=int, default=-1)
ap.add_argument("--dtypes")
args = ap.parse_args()
steps, typed = args.steps, args.dtypes is not None
names = args.dtypes.split(",") if typed else ["float32"]
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
N = 4096
gen = torch.Generator().manual_seed(7)


def special(dt):
    if not typed:
        return [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40, -3e-39, 3.4e38]
    fi = torch.finfo(dt)
    return [float("nan"), -float("nan"), float("inf"), -float("inf"), 0.0, -0.0, fi.tiny / 4,
            -fi.tiny / 2, fi.max, -fi.max]


def tensor(lo, hi, dt):
    x = torch.rand(N, generator=gen) * (hi - lo) + lo
    s = special(dt)
    idx = torch.randperm(N, generator=gen)[: 4 * len(s)]
    x[idx] = torch.tensor(s * 4)
    return x.to(dt).cuda()


inputs = {}
for n in names:
    dt = DTYPES[n]
    inputs[n] = [tensor(-3, 3, dt), tensor(-3, 3, dt), tensor(-2, 2, dt), tensor(0, 4, dt)]
total = hashlib.sha256()
for s in range(steps):
    for n in names:
        x, y, a, b = inputs[n]
        t1 = x + y
        t2 = t1 * 0.5
        t3 = torch.sigmoid(t2)
        u = t3 * x
        u2 = u * u
        u3 = u2 + 1e-6
        v = torch.rsqrt(u3)
        w1 = torch.sub(a, b, alpha=0.25)
        w2 = torch.relu(w1)
        w3 = w2 / 3.0
        fills = [torch.empty(m, dtype=x.dtype, device=x.device) for m in (64, N, 300)]
        for i, f in enumerate(fills):
            f.fill_(s * 0.25 - i)
        h = hashlib.sha256()
        for r in (t1, t2, t3, u, u2, u3, v, w1, w2, w3, *fills):
            # The bytes as they are (numpy has no bfloat16: viewed as 16-bit integers).
            r = r.cpu()
            h.update((r.view(torch.int16) if r.element_size() == 2 else r).numpy().tobytes())
        total.update(h.digest())
        print(f"step {s}{' ' + n if typed else ''}: {h.hexdigest()[:16]}")
        # The next step's inputs: finite values only move, so that the chains keep their shape.
        x.add_(w3.nan_to_num(0.0, 0.0, 0.0), alpha=1e-3)
    if s == args.pause_at:
        time.sleep(2.0)
print(f"checksum: {total.hexdigest()[:16]}")
