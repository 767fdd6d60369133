"""attn.py check | train STEPS [cpu] — scaled dot-product attention on the flash backend.

Run under tools/torch-sim, with or without libautograph preloaded.

`check`: F.scaled_dot_product_attention forced to the flash backend
(torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)) in float16 and bfloat16, forward and
backward, on cases that reach each kernel the backend launches: square attention with and without
is_causal, seqlen_q != seqlen_k without a mask and with causal_lower_right (FlashAttention's own
causal alignment: PyTorch refuses is_causal with unequal lengths on this backend), an explicit
scale, grouped-query attention (enable_gqa), head dimensions 16 and 64, and 300 keys (PyTorch then
splits the keys over several blocks: flash_fwd_splitkv_kernel and its combine kernel). Each result
(out, dq, dk, dv) is compared with CPU PyTorch's float32 attention of the same half-precision
inputs (`reference`: like the device, the backward reads the output as stored, rounded to the
half type): every element must be within one unit in the last place of the device's type of the
CPU's value, plus 1/64 of one for values near zero (the twins compute in float and round once; a
GPU rounds intermediate products too, see tests/sim/torch/flash.c). Prints each case's largest error
in units of that tolerance and a digest of the device's results; exits 1 when a case is out of
tolerance. Then the deterministic backward must give the default one's bits, and dropout (whose
kernels have no twin) must fail to launch.

Then the DEFAULT backend (no sdpa_kernel context), which PyTorch resolves to cuDNN attention for
these inputs (checked with torch._fused_sdp_choice): square attention with and without is_causal,
float16 and bfloat16, forward and backward, within the same tolerance of the same reference and
in the digest. cudnn_frontend builds the forward as one fused attention operation of cuDNN's
backend API (with the causal mask as a score modifier, and the softmax statistics in training)
and the backward as a graph of matmuls, pointwise operations, reductions and reshapes, which the
simulated cuDNN interprets (tests/sim/cudnn/opgraph.h).

`train STEPS [cpu|default]`: a tiny causal self-attention block (a Linear each to q, k and v, two
heads of 16, SDPA on the flash backend, Linear out, MSE) trained with Adam under bfloat16
autocast, STEPS steps on one batch; prints every loss and a checksum of the parameters' bits. With
`cpu`, the same model in float32 on the CPU (the math backend), for the caller to compare the
losses; with `default`, SDPA on its default backend (which must resolve to cuDNN attention)
instead of flash.
"""
import contextlib
import hashlib
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

EPS = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}


def compare(dt, name, results, refs, digest):
    """Each device result (output, then the gradients) against its CPU reference, within the
    type's tolerance relative to the value (plus 1/64 of it absolute); the results' bits go into
    digest. Prints the largest error as a share of the tolerance; True when within it."""
    worst = 0.0
    for dev, cpu in zip(results, refs):
        dev = dev.detach().cpu()
        digest.update(dev.contiguous().view(torch.int16).numpy().tobytes())
        tol = EPS[dt] * (cpu.abs() + 1.0 / 64)
        worst = max(worst, ((dev.float() - cpu).abs() / tol).max().item())
    ok = worst <= 1.0
    print(f"{str(dt)[6:]:8} {name:16} largest error {worst:.2f} of the tolerance{'' if ok else '  OUT OF TOLERANCE'}")
    return ok


def reference(q, k, v, g, mask, scale):
    """CPU float32 attention of the half-precision inputs q, k, v (batch, heads, length, dim) and
    its gradients for the output gradient g: out, dq, dk, dv. As on the device, the backward's
    row sums D = rowsum(dO * O) take the output as stored (rounded to the inputs' type), and with
    grouped-query attention each head's dk and dv is rounded before PyTorch sums them per group.
    A query that sees no key gets zeros. The output equals CPU PyTorch's own SDPA (checked)."""
    dt = q.dtype
    q, k, v, g = (t.float() for t in (q, k, v, g))
    sq, sk, d, rep = q.shape[2], k.shape[2], q.shape[3], q.shape[1] // k.shape[1]
    ke, ve = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    scale = d ** -0.5 if scale is None else scale
    seen = torch.ones(sq, sk, dtype=torch.bool)
    if mask == "causal":
        seen = seen.tril()
    elif mask == "lower_right":
        seen = seen.tril(sk - sq)
    s = (q @ ke.transpose(-1, -2) * scale).masked_fill(~seen, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    out = p @ ve
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=seen, scale=scale, enable_gqa=rep > 1)
    assert torch.allclose(out, sdpa.nan_to_num(0.0), rtol=1e-5, atol=1e-6), "the reference is not SDPA"
    dd = (g * out.to(dt).float()).sum(-1, keepdim=True)
    ds = p * (g @ ve.transpose(-1, -2) - dd)
    dq = ds @ ke * scale
    dk = ds.transpose(-1, -2) @ q * scale
    dv = p.transpose(-1, -2) @ g
    if rep > 1:
        dk, dv = (t.to(dt).float().unflatten(1, (-1, rep)).sum(2) for t in (dk, dv))
    return out, dq, dk, dv


def check():
    gen = torch.Generator().manual_seed(0)
    digest = hashlib.sha256()
    bad = 0
    # (name, batch, heads of q, heads of k/v, seqlen_q, seqlen_k, head dim, mask kind, scale)
    cases = [
        ("square", 2, 3, 3, 5, 5, 16, None, None),
        ("causal", 2, 3, 3, 6, 6, 16, "causal", None),
        ("q<k", 1, 2, 2, 3, 7, 16, None, None),
        ("q>k", 1, 2, 2, 7, 3, 16, None, None),
        ("lower_right q<k", 1, 2, 2, 3, 7, 16, "lower_right", None),
        ("lower_right q>k", 1, 2, 2, 7, 3, 16, "lower_right", None),
        ("scale", 1, 2, 2, 4, 4, 16, "causal", 0.3),
        ("gqa", 1, 4, 2, 5, 5, 16, "causal", None),
        ("d64", 1, 2, 2, 9, 9, 64, "causal", None),
        ("300 keys", 1, 1, 1, 2, 300, 64, None, None),
    ]
    for dt in (torch.float16, torch.bfloat16):
        for name, b, hq, hk, sq, sk, d, mask, scale in cases:
            q, k, v, g = (torch.randn(b, h, s, d, generator=gen).to(dt)
                          for h, s in ((hq, sq), (hk, sk), (hk, sk), (hq, sq)))
            qd, kd, vd = (t.cuda().requires_grad_() for t in (q, k, v))
            kw = {"scale": scale, "enable_gqa": hq != hk}
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                if mask == "lower_right":
                    out = F.scaled_dot_product_attention(qd, kd, vd, attn_mask=causal_lower_right(sq, sk), **kw)
                else:
                    out = F.scaled_dot_product_attention(qd, kd, vd, is_causal=mask == "causal", **kw)
            out.backward(g.cuda())
            bad += not compare(dt, name, (out, qd.grad, kd.grad, vd.grad), reference(q, k, v, g, mask, scale), digest)
    bad += check_default(gen, digest)
    print("digest:", digest.hexdigest()[:16])
    # The deterministic backward (torch.use_deterministic_algorithms) sums dq over slices of its
    # accumulator: the same bits as the default one.
    base = [torch.randn(2, 3, 6, 16, generator=gen).half() for _ in range(3)]
    grads = []
    torch.utils.deterministic.fill_uninitialized_memory = False  # its fill kernel has no twin
    for det in (False, True):
        torch.use_deterministic_algorithms(det)
        q, k, v = (t.cuda().requires_grad_() for t in base)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
        grads.append(torch.cat([t.grad.flatten().cpu() for t in (q, k, v)]))
    torch.use_deterministic_algorithms(False)
    same = torch.equal(grads[0], grads[1])
    print("deterministic backward:", "the same" if same else "DIFFERS")
    bad += not same
    # Dropout has no twin: the kernel must fail to launch, never compute something else.
    q = torch.randn(1, 2, 4, 16, generator=gen).half().cuda()
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
        torch.cuda.synchronize()
        print("dropout: ran, but has no twin")
        bad += 1
    except RuntimeError as e:
        print("dropout: refused" if "no kernel image" in str(e) else f"dropout: {e}")
        bad += "no kernel image" not in str(e)
    return 1 if bad else 0


def check_default(gen, digest):
    """The default backend's cases (see the top of this file); returns the number out of tolerance."""
    bad = 0
    # (name, batch, heads, length, head dim, causal)
    cases = [("default square", 2, 3, 5, 16, False), ("default causal", 2, 3, 6, 16, True)]
    for dt in (torch.float16, torch.bfloat16):
        for name, b, h, s, d, causal in cases:
            q, k, v, g = (torch.randn(b, h, s, d, generator=gen).to(dt) for _ in range(4))
            qd, kd, vd = (t.cuda().requires_grad_() for t in (q, k, v))
            chosen = torch._fused_sdp_choice(qd, kd, vd, is_causal=causal)
            if chosen != int(SDPBackend.CUDNN_ATTENTION):
                print(f"{str(dt)[6:]:8} {name:16} resolved to backend {chosen}, not cuDNN attention")
                bad += 1
                continue
            out = F.scaled_dot_product_attention(qd, kd, vd, is_causal=causal)
            out.backward(g.cuda())
            bad += not compare(dt, name, (out, qd.grad, kd.grad, vd.grad),
                               reference(q, k, v, g, "causal" if causal else None, None), digest)
    return bad


class Block(torch.nn.Module):
    def __init__(self, width=32, heads=2):
        super().__init__()
        self.heads = heads
        self.require_cudnn = False
        self.q, self.k, self.v, self.out = (torch.nn.Linear(width, width) for _ in range(4))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (f(x).view(b, t, self.heads, c // self.heads).transpose(1, 2) for f in (self.q, self.k, self.v))
        if self.require_cudnn:
            chosen = torch._fused_sdp_choice(q, k, v, is_causal=True)
            assert chosen == int(SDPBackend.CUDNN_ATTENTION), f"the default backend is {chosen}, not cuDNN attention"
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


def train(steps, dev, backend=SDPBackend.FLASH_ATTENTION):
    """backend None: SDPA's default backend, which must resolve to cuDNN attention."""
    torch.manual_seed(0)
    model = Block().to(dev)
    model.require_cudnn = dev == "cuda" and backend is None
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 8, 32, generator=gen).to(dev)
    y = torch.randn(2, 8, 32, generator=gen).to(dev)
    for step in range(steps):
        opt.zero_grad()
        if dev == "cuda":
            with torch.autocast("cuda", dtype=torch.bfloat16), (sdpa_kernel(backend) if backend else contextlib.nullcontext()):
                loss = F.mse_loss(model(x).float(), y)
        else:
            loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"loss: {step} {loss.item():.9e}")
    h = hashlib.sha256()
    for t in model.parameters():
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    print("checksum:", h.hexdigest()[:16])
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "check":
        sys.exit(check())
    mode = sys.argv[3] if sys.argv[3:] else ""
    backend = None if mode == "default" else SDPBackend.FLASH_ATTENTION
    sys.exit(train(int(sys.argv[2]), "cpu" if mode == "cpu" else "cuda", backend))
