"""resnet_small_batch.py — training a ResNet-18-class CNN at a small batch: launch-bound.

At batch 8 on 32x32 images each of the step's few hundred kernels (convolutions, batch norm,
ReLU, their backward, SGD) finishes in microseconds on a GPU, so the step time is dominated by
launching them. The model and loop are in resnet.py.

    python3 examples/resnet_small_batch.py [--device cpu|cuda] [--steps N] [--batch-size B]
                                           [--image-size S] [--width W] [--compile]
"""

import resnet

if __name__ == "__main__":
    resnet.main("resnet_small_batch", __doc__.splitlines()[0], steps=30, batch_size=8,
                image_size=32)
