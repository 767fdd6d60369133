"""mlp.py — training a small MLP: very launch-bound.

Each step is a handful of tiny matrix products and elementwise kernels (forward, backward,
Adam), far too small to keep a GPU busy: the step time is almost all launch overhead, the case
the library is for. Synthetic data: a fixed set of random batches made on the CPU from the
seed, cycled. Under torchrun the model is wrapped in DistributedDataParallel (NCCL on the GPU).

    python3 examples/mlp.py [--device cpu|cuda] [--steps N] [--batch-size B] [--width W]
                            [--layers L] [--compile]

Prints the report described in common.py; the checksum covers the final parameters.
"""

import torch
from torch import nn

import common


def extra(p):
    p.add_argument("--width", type=int, default=256, help="hidden width (default %(default)s)")
    p.add_argument("--layers", type=int, default=4, help="hidden layers (default %(default)s)")
    p.add_argument("--inputs", type=int, default=64, help="input features (default %(default)s)")


def main():
    args = common.parse_args("mlp", __doc__.splitlines()[0], steps=100, batch_size=32,
                             extra=extra)
    dev = common.setup(args)
    layers, n_in = [], args.inputs
    for _ in range(args.layers):
        layers += [nn.Linear(n_in, args.width), nn.ReLU()]
        n_in = args.width
    layers.append(nn.Linear(n_in, 10))
    model = nn.Sequential(*layers).to(dev)
    gen = torch.Generator().manual_seed(args.seed + 1)
    batches = [(torch.randn(args.batch_size, args.inputs, generator=gen).to(dev),
                torch.randint(0, 10, (args.batch_size,), generator=gen).to(dev))
               for _ in range(4)]
    net = common.maybe_compile(args, common.distributed_wrap(model, dev))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = common.train_step_fn(net, opt, nn.CrossEntropyLoss(), batches)
    warmup_s, times = common.run_steps(args, dev, step)
    common.report(args, dev, warmup_s, times, list(model.parameters()))
    common.distributed_done()


if __name__ == "__main__":
    main()
