"""llama.py STEPS [cpu] — a LLaMA-style transformer block's inference in bfloat16, repeated.

Run under tools/torch-sim, with or without libautograph preloaded. One decoder block as LLaMA
writes it, in plain PyTorch (the way Hugging Face's modelling code does, not fused operators):
RMSNorm as float32 arithmetic cast back to bfloat16 (x.float().pow(2).mean(-1), + eps, rsqrt,
multiply, .to(bfloat16), times the weight), rotary embeddings (q * cos + rotate_half(q) * sin,
rotate_half by slicing, negation and cat), causal attention through
F.scaled_dot_product_attention(is_causal=True) on its memory-efficient backend (forced with
sdpa_kernel, so that the test keeps exercising those kernels' twins; the wheel would pick cuDNN
attention for bfloat16, which torch-sim-attn checks), the output projection and residual, then RMSNorm again and
the SiLU-gated MLP (silu(gate) * up, down). Width 64, 4 heads, a sequence of 16 tokens, batch 2.
STEPS forward passes under torch.no_grad() on the same input (an inference server's fixed-shape
step); prints the output's sum and a checksum of its exact bits. With `cpu`, the same on the CPU
in float32 (`value:` only; the caller compares within bfloat16's tolerance).
"""
import contextlib
import hashlib
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

D, H, T, B, FF = 64, 4, 16, 2, 172


def rms_norm(x, w, eps=1e-6):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def rotate_half(x):
    a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-b, a), dim=-1)


def block(x, p, cos, sin):
    h = rms_norm(x, p["n1"])
    q, k, v = ((h @ p[n]).view(B, T, H, D // H).transpose(1, 2) for n in ("wq", "wk", "wv"))
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION) if q.is_cuda else contextlib.nullcontext():
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + a.transpose(1, 2).reshape(B, T, D) @ p["wo"]
    h = rms_norm(x, p["n2"])
    return x + (torch.nn.functional.silu(h @ p["wg"]) * (h @ p["wu"])) @ p["wd"]


def main():
    steps = int(sys.argv[1])
    cpu = len(sys.argv) > 2 and sys.argv[2] == "cpu"
    dev, dt = ("cpu", torch.float32) if cpu else ("cuda", torch.bfloat16)
    g = torch.Generator().manual_seed(0)
    shapes = {"wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "wg": (D, FF), "wu": (D, FF),
              "wd": (FF, D)}
    p = {n: (torch.randn(*s, generator=g) * s[0] ** -0.5).to(dt).to(dev) for n, s in shapes.items()}
    p["n1"] = (1 + 0.1 * torch.randn(D, generator=g)).to(dt).to(dev)
    p["n2"] = (1 + 0.1 * torch.randn(D, generator=g)).to(dt).to(dev)
    x = torch.randn(B, T, D, generator=g).to(dt).to(dev)
    pos = torch.arange(T, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, D // H, 2, dtype=torch.float32) / (D // H)))
    ang = torch.outer(pos, inv)
    ang = torch.cat((ang, ang), dim=-1)
    cos, sin = ang.cos().to(dt).to(dev), ang.sin().to(dt).to(dev)
    with torch.no_grad():
        for _ in range(steps):
            y = block(x, p, cos, sin)
    print(f"value: {y.float().sum().item():.6e}")
    if not cpu:
        print("checksum:", hashlib.sha256(y.cpu().view(torch.int16).numpy().tobytes()).hexdigest()[:16])


if __name__ == "__main__":
    main()
