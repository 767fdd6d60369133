"""ddp.py STEPS [--backend gloo|nccl] — DistributedDataParallel under torchrun, on the device.

Run as `python -m torch.distributed.run --standalone --nproc_per_node=N ddp.py STEPS` under
tools/torch-sim, with or without libautograph. Every rank trains the same small MLP on its own
fixed batch (drawn from its rank) with SGD; the backend (gloo, the default, through the host;
nccl on the device) averages the gradients, so the parameters stay identical on every rank.
As users write it, each rank uses the device of its local rank (`torch.cuda.set_device`):
under the simulator SIM_DEVICES must give every rank one (gloo also runs with every rank on
device 0, when there are fewer devices than ranks). Each rank prints its final loss and a
checksum of the exact bits of the parameters (`rank R loss: …`, `rank R checksum: …`, the
checksum the same for every rank), then drops its model and leaves the process group before
exiting.
"""
import gc
import hashlib
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    steps = int(sys.argv[1])
    backend = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--backend" else "gloo"
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "gloo" and local_rank >= torch.cuda.device_count():
        local_rank = 0
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group(backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4)).to(dev)
    ddp = DistributedDataParallel(model, device_ids=[local_rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(1 + rank)
    x = torch.randn(32, 16, generator=gen).to(dev)
    y = torch.randn(32, 4, generator=gen).to(dev)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
    params = [p.detach().cpu() for p in model.parameters()]
    digest = hashlib.sha256(b"".join(p.numpy().tobytes() for p in params)).hexdigest()[:16]
    # One write of both lines: the ranks share the output, and a write of at most PIPE_BUF
    # bytes is never interleaved with another process's (print may split a line in two).
    sys.stdout.flush()
    os.write(1, f"rank {rank} loss: {loss.item()!r}\nrank {rank} checksum: {digest}\n".encode())
    # The process group must be gone before the interpreter finalizes: DistributedDataParallel
    # holds it, and a gloo worker thread still finishing CUDA work during finalization takes the
    # GIL, which makes CPython end the thread with pthread_exit, whose unwinding through a
    # noexcept frame aborts the process ("terminate called without an active exception").
    torch.cuda.synchronize()
    del ddp, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    return 0 if os.environ.get("WORLD_SIZE") else 1


if __name__ == "__main__":
    sys.exit(main())
