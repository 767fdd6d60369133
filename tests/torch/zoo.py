"""zoo.py MODEL STEPS [cpu] — a model of torchvision's model zoo training on the device.

Run under tools/torch-sim, with or without libautograph preloaded. MODEL is resnet18 or
mobilenet_v3_small, built with 10 classes from a fixed seed, trained for STEPS steps of SGD with
momentum on one fixed batch of four 32x32 images (cross-entropy), in training mode (batch
normalisation on batch statistics). mobilenet_v3_small's classifier dropout is built with
p = 0: with it the device's masks would not be the CPU's (another generator), and the CPU could
not check the model. Prints the loss of every step and a checksum of the
exact bits of every parameter and buffer (`checksum: <hex>`), for a bit-for-bit comparison of
runs. With `cpu`, the same on the CPU instead (the comparison of the two is the caller's).
"""
import hashlib
import sys

import torch
import torchvision


def main():
    name, steps = sys.argv[1], int(sys.argv[2])
    dev = "cpu" if len(sys.argv) > 3 and sys.argv[3] == "cpu" else "cuda"
    torch.manual_seed(0)
    kw = {"dropout": 0.0} if name == "mobilenet_v3_small" else {}
    model = getattr(torchvision.models, name)(num_classes=10, **kw).to(dev)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, 32, 32, generator=gen).to(dev)
    y = torch.tensor([1, 3, 5, 7]).to(dev)
    for step in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print(f"loss: {step} {loss.item():.9e}")
    h = hashlib.sha256()
    for t in list(model.parameters()) + list(model.buffers()):
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    print("checksum:", h.hexdigest()[:16])


if __name__ == "__main__":
    main()
