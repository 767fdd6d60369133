"""dropout_lr.py — a plain training loop with dropout and a learning-rate schedule.

The two things that change in every step of an otherwise identical launch sequence: dropout's
random seed and offset (kernel arguments passed by value) and the learning rate (a scalar
argument of the optimizer's kernels, here from a cosine schedule with warm restarts). A graph
replay must update exactly those arguments, or the results change: the checksum (final
parameters) makes that visible. The model is a small MLP with dropout after every hidden layer,
trained with SGD on synthetic batches made on the CPU from the seed.

    python3 examples/dropout_lr.py [--device cpu|cuda] [--steps N] [--batch-size B]
                                   [--width W] [--dropout P] [--compile]
"""

import torch
from torch import nn

import common


def extra(p):
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--dropout", type=float, default=0.2)


def main():
    args = common.parse_args("dropout_lr", __doc__.splitlines()[0], steps=60, batch_size=64,
                             extra=extra)
    dev = common.setup(args)
    w = args.width
    model = nn.Sequential(nn.Linear(128, w), nn.ReLU(), nn.Dropout(args.dropout),
                          nn.Linear(w, w), nn.ReLU(), nn.Dropout(args.dropout),
                          nn.Linear(w, 10)).to(dev).train()
    gen = torch.Generator().manual_seed(args.seed + 1)
    batches = [(torch.randn(args.batch_size, 128, generator=gen).to(dev),
                torch.randint(0, 10, (args.batch_size,), generator=gen).to(dev))
               for _ in range(4)]
    net = common.maybe_compile(args, model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=10)
    step = common.train_step_fn(net, opt, nn.CrossEntropyLoss(), batches, scheduler=sched)
    warmup_s, times = common.run_steps(args, dev, step)
    common.report(args, dev, warmup_s, times, list(model.parameters()))


if __name__ == "__main__":
    main()
