"""train.py STEPS [sgd|adam] [log] — a fixed-shape training loop of real PyTorch on the device.

Run under tools/torch-sim, with or without libautograph preloaded. A small MLP (Linear, ReLU,
Linear) learns a fixed regression batch with MSE loss; the loop has the same shapes every step,
so its launch sequence repeats. Prints the final loss and a checksum of the exact bits of every
parameter (`checksum: <hex>`), for a bit-for-bit comparison of runs, and the largest difference
from the same loop on the CPU (`cpu_max_diff: <float>`, within float32 tolerance). With `log`,
every step also reads its loss on the host (`loss.item()`, as a training loop that logs does);
the printed lines do not change.
"""
import hashlib
import sys

import torch


def run(dev, steps, opt_name, log=False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4)).to(dev)
    opt = (torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9) if opt_name == "sgd"
           else torch.optim.Adam(model.parameters(), lr=1e-3))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64, 16, generator=gen).to(dev)
    y = torch.randn(64, 4, generator=gen).to(dev)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if log:
            loss.item()
    return loss.item(), [p.detach().cpu() for p in model.parameters()]


steps = int(sys.argv[1])
opt_name = sys.argv[2] if len(sys.argv) > 2 else "sgd"
log = len(sys.argv) > 3 and sys.argv[3] == "log"
loss, params = run("cuda", steps, opt_name, log)
digest = hashlib.sha256(b"".join(p.numpy().tobytes() for p in params)).hexdigest()[:16]
ref_loss, ref = run("cpu", steps, opt_name)
diff = max((a - b).abs().max().item() for a, b in zip(params, ref))
print(f"loss: {loss!r}")
print(f"checksum: {digest}")
print(f"cpu_max_diff: {diff:.3g}")
assert diff < 1e-4, f"the device result differs from the CPU's by {diff}"
