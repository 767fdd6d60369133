"""resnet_large_batch.py — the same ResNet-18-class training at a large batch: compute-bound.

At batch 256 on 64x64 images the GPU is busy with each kernel far longer than it takes to
launch it: the control case, where replaying graphs can save almost nothing and must cost
nothing. The model and loop are in resnet.py.

    python3 examples/resnet_large_batch.py [--device cpu|cuda] [--steps N] [--batch-size B]
                                           [--image-size S] [--width W] [--compile]
"""

import resnet

if __name__ == "__main__":
    resnet.main("resnet_large_batch", __doc__.splitlines()[0], steps=20, batch_size=256,
                image_size=64)
