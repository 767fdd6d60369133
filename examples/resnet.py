"""resnet.py — a ResNet-18-class CNN and its training run, shared by resnet_small_batch.py and
resnet_large_batch.py (defined here so that nothing needs torchvision or a download).

The network is ResNet-18's layout (a 3x3 stem for small images, then four stages of two basic
blocks with 64, 128, 256 and 512 channels, batch norm, global average pooling, a linear
classifier); `--width` scales the channel counts, `--image-size` the synthetic images. One
training step is forward, cross-entropy, backward and SGD with momentum; the batches are a
fixed set of random images and labels made on the CPU from the seed, cycled. The checksum
covers the final parameters and batch-norm running statistics.
"""

import torch
from torch import nn

import common


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + idt)


class ResNet18(nn.Module):
    def __init__(self, classes=10, width=64):
        super().__init__()
        w = [width, width * 2, width * 4, width * 8]
        self.stem = nn.Sequential(nn.Conv2d(3, w[0], 3, 1, 1, bias=False), nn.BatchNorm2d(w[0]),
                                  nn.ReLU(inplace=True))
        blocks, cin = [], w[0]
        for i, c in enumerate(w):
            for j in range(2):
                blocks.append(BasicBlock(cin, c, 2 if (i > 0 and j == 0) else 1))
                cin = c
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def extra(p, image_size):
    p.add_argument("--image-size", type=int, default=image_size,
                   help="synthetic image side in pixels (default %(default)s)")
    p.add_argument("--width", type=int, default=64,
                   help="channels of the first stage (default %(default)s, as ResNet-18)")


def main(name, doc, steps, batch_size, image_size):
    args = common.parse_args(name, doc, steps=steps, batch_size=batch_size,
                             extra=lambda p: extra(p, image_size))
    dev = common.setup(args)
    model = ResNet18(width=args.width).to(dev)
    gen = torch.Generator().manual_seed(args.seed + 1)
    shape = (args.batch_size, 3, args.image_size, args.image_size)
    batches = [(torch.randn(shape, generator=gen).to(dev),
                torch.randint(0, 10, (args.batch_size,), generator=gen).to(dev))
               for _ in range(2)]
    net = common.maybe_compile(args, model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    step = common.train_step_fn(net, opt, nn.CrossEntropyLoss(), batches)
    warmup_s, times = common.run_steps(args, dev, step)
    common.report(args, dev, warmup_s, times,
                  list(model.parameters()) + list(model.buffers()))
