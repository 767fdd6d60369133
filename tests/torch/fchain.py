"""fchain.py STEPS [PAUSE_AT] — eager steps made of chains of PyTorch elementwise kernels, for the
library's generated chain kernels (AUTOGRAPH_FUSE=chains; tests/cases/torch-fchain.sh).

Run under tools/torch-sim, with or without libautograph preloaded. Each step computes, on float32
device tensors of 4096 elements (inputs with NaN, +-Inf, signed zeros and denormals among random
values), three chains of contiguous elementwise operations that each read what the one before
wrote: (x + y) * 0.5 -> sigmoid -> * x; u * u + 1e-6 -> rsqrt; a - 0.25 * b -> relu -> / 3. The
inputs move a little every step (an in-place add of the step's own output), so that every step's
results depend on the last. Prints one line per step with a hash of the exact bytes of every
result (the intermediates too), so that runs compare bit for bit, and `checksum: <hex>` of them
all. With PAUSE_AT, the host pauses for two seconds after that step, without a CUDA call (as a
program reading its next batch would): time in which the library's background work (reading
its kernel cache, compiling) ends however loaded the machine is, so that the steps after it
show what that work made ready.
"""
import hashlib
import sys
import time

import torch

steps = int(sys.argv[1])
pause_at = int(sys.argv[2]) if len(sys.argv) > 2 else -1
N = 4096
gen = torch.Generator().manual_seed(7)


def tensor(lo, hi):
    x = torch.rand(N, generator=gen) * (hi - lo) + lo
    special = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40, -3e-39, 3.4e38]
    idx = torch.randperm(N, generator=gen)[: 4 * len(special)]
    x[idx] = torch.tensor(special * 4)
    return x.cuda()


x, y, a, b = tensor(-3, 3), tensor(-3, 3), tensor(-2, 2), tensor(0, 4)
total = hashlib.sha256()
for s in range(steps):
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
    h = hashlib.sha256()
    for r in (t1, t2, t3, u, u2, u3, v, w1, w2, w3):
        h.update(r.cpu().numpy().tobytes())
    total.update(h.digest())
    print(f"step {s}: {h.hexdigest()[:16]}")
    # The next step's inputs: finite values only move, so that the chains keep their shape.
    x.add_(w3.nan_to_num(0.0, 0.0, 0.0), alpha=1e-3)
    if s == pause_at:
        time.sleep(2.0)
print(f"checksum: {total.hexdigest()[:16]}")
