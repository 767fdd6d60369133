"""fchain.py STEPS [--pause-at K [--pause-s S]] [--dtypes LIST] [--wide] — eager steps made of chains of PyTorch elementwise kernels, for the
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

With --wide, each step also runs chains through every operation the library generates kernels
for (the activations and their backwards, the clamps and threshold, ReLU's and dropout's
backwards, exp, log, sqrt, pow and the casts; see WIDE below), so that a GPU run checks each of
them against PyTorch's own kernels.

With --pause-at K, the host pauses for two seconds (or S) after step K, without a CUDA call (as a
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
ap.add_argument("--pause-s", type=float, default=2.0)
ap.add_argument("--dtypes")
ap.add_argument("--wide", action="store_true")
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


F = torch.nn.functional
A = torch.ops.aten


def wide(x, g, h, p):
    """The chains of --wide on x (moving every step), gradients g and h, positive values p: each
    operation reads what the one before wrote. Returns every result, intermediates included."""
    out = []

    def k(t):
        out.append(t)
        return t

    # the hard activations and their backwards, around their bounds
    t = k(F.hardswish(x * 2.5))
    t = k(A.hardswish_backward(g, t))
    t = k(F.hardsigmoid(t))
    k(A.hardsigmoid_backward(h, t))
    # leaky_relu and its backward at its result
    t = k(F.leaky_relu(x, 0.2))
    k(A.leaky_relu_backward(g, t, 0.2, False))
    # tanh's backward into sigmoid's, then a product
    s = k(torch.sigmoid(g))
    t = k(torch.tanh(x))
    t = k(A.tanh_backward(h, t))
    t = k(A.sigmoid_backward(t, s))
    k(t * h)
    # GELU both ways, SiLU, the clamps, threshold and ReLU's backward
    t = k(F.gelu(x))
    t = k(F.gelu(t, approximate="tanh"))
    t = k(F.silu(t))
    t = k(torch.clamp(t, -1.75, 2.5))
    t = k(torch.clamp_min(t, 0.125))
    t = k(torch.threshold(t, 0.25, -1.5))
    t = k(A.threshold_backward(g, t, 0.5))
    k(t * 0.5)
    # exp, log, sqrt, reciprocal, pow, abs, neg, division and subtraction
    t = k(torch.exp(x))
    t = k(torch.log(t + p))
    t = k(torch.abs(t))
    t = k(torch.sqrt(t))
    t = k(torch.reciprocal(t))
    t = k(torch.pow(t, 2.5))
    t = k(torch.pow(t, 2))
    t = k(torch.pow(t, 3))
    t = k(-t)
    t = k(t / p)
    k(torch.sub(t, x, alpha=0.375))
    # dropout's backward (a bool mask, then mask * t * scale), then an add
    m = k(g > 0)
    t = k(x * 2.0)
    t = k(A.native_dropout_backward(t, m, 1.25))
    k(t + h)
    # casts: through bfloat16 (and float16) and back to float32
    t = k(x.float()) if x.dtype != torch.float32 else x
    t = k(t.to(torch.bfloat16))
    t = k(t.float())
    t = k(t.to(torch.float16))
    t = k(t.float())
    k(t * 3.0)
    return out


inputs = {}
for n in names:
    dt = DTYPES[n]
    inputs[n] = [tensor(-3, 3, dt), tensor(-3, 3, dt), tensor(-2, 2, dt), tensor(0, 4, dt)]
    if args.wide:
        inputs[n] += [tensor(-2, 2, dt), tensor(-2, 2, dt), tensor(0.5, 2, dt)]
total = hashlib.sha256()
for s in range(steps):
    for n in names:
        x, y, a, b = inputs[n][:4]
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
        more = wide(x, *inputs[n][4:]) if args.wide else []
        h = hashlib.sha256()
        for r in (t1, t2, t3, u, u2, u3, v, w1, w2, w3, *fills, *more):
            # The bytes as they are (numpy has no bfloat16: viewed as 16-bit integers).
            r = r.cpu()
            h.update((r.view(torch.int16) if r.element_size() == 2 else r).numpy().tobytes())
        total.update(h.digest())
        print(f"step {s}{' ' + n if typed else ''}: {h.hexdigest()[:16]}")
        # The next step's inputs: finite values only move, so that the chains keep their shape.
        x.add_(w3.nan_to_num(0.0, 0.0, 0.0), alpha=1e-3)
    if s == args.pause_at:
        time.sleep(args.pause_s)
print(f"checksum: {total.hexdigest()[:16]}")
