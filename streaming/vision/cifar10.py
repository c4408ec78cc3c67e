"""`StreamingCIFAR10`: CIFAR-10 (32x32 images in 10 classes) as a streamed vision dataset.

Expects the columns the reference's converter writes: `x` (image) and `y` (class index).
"""

from __future__ import annotations

from streaming.vision.base import StreamingVisionDataset

__all__ = ["StreamingCIFAR10"]


class StreamingCIFAR10(StreamingVisionDataset):
    """CIFAR-10 streamed from MDS shards; arguments and behaviour of `StreamingVisionDataset`."""
