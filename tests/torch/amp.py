"""amp.py — mixed-precision training of a small MLP, as users write it: torch.autocast in bfloat16,
or in float16 with torch.amp.GradScaler and gradient clipping (clip_grad_norm_ and
clip_grad_value_, through the foreach kernels on even steps and tensor by tensor on odd ones).
Runs on the device given (cuda: the simulator; cpu: CPU PyTorch, whose autocast follows the same
rules for Linear: the low precision).

Prints one line per step (the loss as float32 bits and value; in float16 the gradient norm and
the loss scale) and a digest of the parameters, for each mode (--mode, both by default).
"""
import argparse
import hashlib
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cuda")
ap.add_argument("--mode", choices=["bf16", "fp16", "both"], default="both")
ap.add_argument("--steps", type=int, default=6)
a = ap.parse_args()
torch.set_num_threads(1)
dev = torch.device(a.device)


def train(mode):
    """Trains a fresh model; prints one line per step and the parameters' digest."""
    dtype = torch.bfloat16 if mode == "bf16" else torch.float16
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    x = torch.randn(64, 16)
    y = torch.randint(0, 4, (64,))
    model = model.to(dev)
    x, y = x.to(dev), y.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(dev.type, init_scale=1024.0, growth_interval=2) if mode == "fp16" else None
    for step in range(a.steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=dtype):
            out = model(x)
        # The loss in float32 outside the region: inside it, CUDA's autocast runs cross_entropy in
        # the low precision (this wheel launches its log-softmax in bfloat16) and the CPU's in
        # float32, so the two would differ by the rounding of the loss itself.
        loss = F.cross_entropy(out.float(), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            foreach = step % 2 == 0  # both implementations: the foreach kernels, then per tensor
            total = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach)
            torch.nn.utils.clip_grad_value_(model.parameters(), 0.05, foreach=foreach)
            scaler.step(opt)
            scaler.update()
            extra = f" norm {total.item():.6e} scale {scaler.get_scale():g}"
        else:
            loss.backward()
            opt.step()
            extra = ""
        v = loss.item()
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        print(f"{mode} step {step}: loss {v:.7e} bits {bits:08x}{extra}", flush=True)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().float().cpu().numpy().tobytes())
    print(f"{mode} params: {h.hexdigest()[:16]}")


for m in (["bf16", "fp16"] if a.mode == "both" else [a.mode]):
    train(m)
