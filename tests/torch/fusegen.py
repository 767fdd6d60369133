"""fusegen.py OUTDIR — chains of elementwise operations for the fused-kernel generator's check
(tests/cases/torch-fusegen.sh): run on the simulator with SIM_LAUNCH_LOG set, it runs each chain
in float32, float16 and bfloat16 on device tensors (contiguous ones, then views that PyTorch walks
with its strided framework: broadcasts, slices, transposes), runs of fills, keeps every tensor alive (so no
address is reused) and writes, for each input and each result, the bytes from its address to the
end of its storage to OUTDIR/<address in hex>.bin. The inputs are made on the CPU and copied to
the device, so that the only kernels the log holds are the chains' own, one chain after
another.

Inputs: random values, with NaN, +-Inf, signed zeros, numbers below each type's smallest normal
and the largest finite values among them; in float16 and bfloat16 also NaNs with payloads
(quiet ones of either sign; a signalling NaN's widening to float is not modelled), which an
operation that returns its argument itself (relu, the clamps, threshold) passes on bit for bit,
where arithmetic makes them the quiet NaN.
"""
import os
import sys

import torch

OUT = sys.argv[1]
N = 2048
gen = torch.Generator().manual_seed(1234)
kept = []


def special(dtype):
    fi = torch.finfo(dtype)
    return [float("nan"), -float("nan"), float("inf"), -float("inf"), 0.0, -0.0, fi.tiny / 4, -fi.tiny / 2,
            fi.tiny, fi.max, -fi.max, 1.0, -1.0]


def tensor(dtype, lo=-3.0, hi=3.0, extra=()):
    """A device tensor of N values from [lo, hi), with the special values (and `extra`, values
    an operation treats apart) spread through it."""
    x = torch.rand(N, generator=gen) * (hi - lo) + lo
    s = special(dtype) + list(extra)
    idx = torch.randperm(N, generator=gen)[: 8 * len(s)]
    x[idx] = torch.tensor(s * 8, dtype=torch.float32)
    x = x.to(dtype)
    if dtype in PAYLOAD_NANS:
        idx = torch.randperm(N, generator=gen)[:24]
        x.view(torch.int16)[idx] = torch.tensor(PAYLOAD_NANS[dtype] * 8, dtype=torch.int16)
    return save(x.cuda())


# Quiet NaNs with payloads, as int16 bit patterns: low bits set, a high one set, negative.
PAYLOAD_NANS = {torch.float16: [0x7E01, 0x7F80, 0xFE55 - 0x10000],
                torch.bfloat16: [0x7FC1, 0x7FE0, 0xFFC5 - 0x10000]}


def same_nans(x, y):
    """Asserts that y holds x's NaNs where x has them, bit for bit (an operation that returns its
    argument itself, as PyTorch's relu and clamp lambdas do)."""
    n = torch.isnan(x.cpu())
    a, b = x.cpu().view(torch.int16)[n], y.cpu().view(torch.int16)[n]
    assert torch.equal(a, b), "NaN bits not passed on: %s -> %s" % (a[a != b][:4].tolist(), b[a != b][:4].tolist())


def save(t):
    kept.append(t)
    return t


def chains(dt):
    # RMSNorm's tail on a full-size mean of squares: x * rsqrt(ms + eps)
    x, ms = tensor(dt), tensor(dt, 0.0, 2.0)
    save(x * save(torch.rsqrt(save(ms + 1e-6))))
    # SiLU-gated: silu(a) * b
    a, b = tensor(dt), tensor(dt)
    save(save(torch.nn.functional.silu(a)) * b)
    # two NaNs of either sign meeting in one operation: sigmoid(x) * x and x * sigmoid(x)
    x = tensor(dt)
    t = save(torch.sigmoid(x))
    save(t * x)
    t = save(torch.sigmoid(x))
    save(x * t)
    # ReLU's backward after an add (threshold_backward: x <= 0 ? 0 : t), and threshold itself
    x, y = tensor(dt), tensor(dt)
    t = save(x + y)
    t = save(torch.ops.aten.threshold_backward(t, x, 0.0))
    save(torch.threshold(t, 0.25, -1.5))
    # ReLU's backward of a gradient as it came (its NaNs passed on where x > 0), then a product
    g, x = tensor(dt), tensor(dt)
    t = save(torch.ops.aten.threshold_backward(g, x, 0.0))
    if dt != torch.float32:
        same_nans(torch.where(x.cpu() > 0, g.cpu(), 0.0), t)
    save(t * 0.5)
    # dropout's backward: a mask (a comparison, not fused), then mask * t * scale, then an add
    x, y = tensor(dt), tensor(dt)
    m = save(y > 0)
    t = save(x * 2.0)
    t = save(torch.ops.aten.native_dropout_backward(t, m, 1.25))
    save(t + y)
    # (x + y) * s
    x, y = tensor(dt), tensor(dt)
    save(save(x + y) * 0.7071)
    # through bfloat16 and back: float32 to bfloat16 to float32 (float16 and bfloat16 first
    # widen to float32: a float16 to bfloat16 copy casts in its loader, which is not fused)
    x = tensor(dt)
    t = x if dt == torch.float32 else save(x.float())
    save(save(save(t.to(torch.bfloat16)).float()) * 3.0)
    if dt != torch.bfloat16:
        save(save(save(x * 2.0).to(torch.float16)).float())
    # pow's own kernels for the exponents 3 and 2 (in float16 and bfloat16 the cube rounds
    # x * x to the type before the second product), then RMSNorm's head x.float().pow(2)
    x = tensor(dt)
    t = save(torch.pow(x, 3))
    t = save(torch.pow(t, 2))
    t = save(t * 0.5)
    if dt != torch.float32:
        save(save(t.float()).pow(2))
    # the other operations, two long chains
    x, y = tensor(dt), tensor(dt)
    t = save(torch.sigmoid(x))
    t = save(t * 2.5)
    t = save(t - 0.375)
    t = save(torch.tanh(t))
    t = save(torch.exp(t))
    t = save(torch.log(t))
    t = save(torch.add(t, y, alpha=2.5))
    t = save(torch.sub(t, y, alpha=0.375))
    t = save(t / y)
    t = save(t / 3.0)
    t = save(torch.neg(t))
    t = save(torch.abs(t))
    save(torch.sqrt(t))
    x, y = tensor(dt), tensor(dt)
    t = save(torch.relu(x))
    if dt != torch.float32:
        same_nans(x, t)
    t = save(torch.clamp(t, -1.75, 2.5))
    t = save(torch.nn.functional.gelu(t))
    t = save(torch.clamp_min(t, 0.125))
    t = save(torch.pow(t, 2.5))
    t = save(torch.reciprocal(t))
    t = save(t + 0.5)
    t = save(t * y)
    save(t * t)
    # the hard activations and their backwards, around their bounds -3, 3 and 6
    # (each backward for a gradient of its own, NaNs included, which it passes on or scales)
    bounds = (3.0, -3.0, 6.0, -6.0, 2.9999, -2.9999, 3.0001, -3.0001)
    x, g, h = tensor(dt, -7.0, 7.0, bounds), tensor(dt), tensor(dt)
    a = save(torch.nn.functional.hardswish(x))
    b = save(torch.ops.aten.hardswish_backward(g, a))
    c = save(torch.nn.functional.hardsigmoid(b))
    save(torch.ops.aten.hardsigmoid_backward(h, c))
    # GELU with the tanh approximation (x + 0.044715 * x^3 contracted into one FMA), then a
    # product, on inputs wide enough to reach tanh's saturation
    x, y = tensor(dt, -8.0, 8.0), tensor(dt)
    save(save(torch.nn.functional.gelu(x, approximate="tanh")) * y)
    # tanh's backward at its output, its result the gradient of sigmoid's backward, then a
    # product (tanh's 1 - y * y is one FMA in float32)
    x, y, g, h = tensor(dt), tensor(dt), tensor(dt), tensor(dt)
    s, t = save(torch.sigmoid(x)), save(torch.tanh(y))
    b = save(torch.ops.aten.tanh_backward(h, t))
    a = save(torch.ops.aten.sigmoid_backward(b, s))
    save(a * g)
    # leaky_relu, then its backward at that result (its zeros from x's signed zeros) for another
    # gradient
    x, g = tensor(dt), tensor(dt)
    a = save(torch.nn.functional.leaky_relu(x, 0.2))
    save(torch.ops.aten.leaky_relu_backward(g, a, 0.2, False))
    strided(dt)
    # a run of fills (FillFunctor, fused horizontally): values of every kind, over tensors of
    # other sizes than N
    for v, n in ((2.5, N), (-0.0, 100), (float("nan"), 7), (-float("inf"), 513), (1e-40, 33)):
        save(torch.empty(n, dtype=dt, device="cuda").fill_(v))


def strided(dt):
    """Chains with launches of the strided framework."""
    # RMSNorm as LLaMA writes it: h = x.float(); h * r with r one value per row (a broadcast);
    # back to the type; times the weight, one value per column (a broadcast)
    x = tensor(dt).view(16, 128)
    r = tensor(torch.float32, 0.0, 2.0)[:16].view(16, 1)
    w = tensor(torch.bfloat16 if dt == torch.float32 else dt)[:128]
    h = x if dt == torch.float32 else save(x.float())
    t = save(h * r)
    t = save(t.to(w.dtype))
    save(w * t)
    # a slice (rows of 32 at a stride of 64, from an offset), then contiguous operations
    x, y = tensor(dt).view(32, 64), tensor(dt)[:1024].view(32, 32)
    t = save(torch.neg(save(x[:, 32:])))
    t = save(t * y)
    save(torch.exp(t))
    # rotary embedding, LLaMA's way on a transposed view: q * cos + rotate_half(q) * sin, where
    # q is [batch, heads, tokens, 16] over memory laid out [batch, tokens, heads, 16] and cos and
    # sin are [tokens, 16] (broadcasts); rotate_half by slicing, negation and cat
    q = tensor(dt).view(2, 16, 4, 16).transpose(1, 2)
    cos, sin = tensor(dt, -1.0, 1.0)[:256].view(16, 16), tensor(dt, -1.0, 1.0)[:256].view(16, 16)
    a = save(q * cos)
    rot = save(torch.cat((save(-save(q[..., 8:])), q[..., :8]), dim=-1))
    b = save(rot * sin)
    save(a + b)


for dt in (torch.float32, torch.float16, torch.bfloat16):
    chains(dt)
torch.cuda.synchronize()
for t in kept:
    storage = t.untyped_storage().cpu()
    with open(os.path.join(OUT, "%x.bin" % t.data_ptr()), "wb") as f:
        f.write(bytes(storage)[t.storage_offset() * t.element_size():])
print(f"fusegen.py: {len(kept)} tensors of {N} elements written")
