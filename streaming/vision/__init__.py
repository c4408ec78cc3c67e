"""Ready-made image datasets: ADE20K, CIFAR-10, COCO and ImageNet over MDS shards.

torchvision is optional: without it the default input conversion is our own `to_tensor`, and
`StreamingVisionDataset` is not a torchvision `VisionDataset` subclass.
"""

from __future__ import annotations

from streaming.vision.ade20k import StreamingADE20K
from streaming.vision.cifar10 import StreamingCIFAR10
from streaming.vision.coco import StreamingCOCO
from streaming.vision.imagenet import StreamingImageNet

__all__ = ["StreamingADE20K", "StreamingCIFAR10", "StreamingCOCO", "StreamingImageNet"]
