"""`StreamingImageNet`: ImageNet-1k classification as a streamed vision dataset.

Expects the columns the reference's converter writes: `x` (image) and `y` (class index).
"""

from __future__ import annotations

from streaming.vision.base import StreamingVisionDataset

__all__ = ["StreamingImageNet"]


class StreamingImageNet(StreamingVisionDataset):
    """ImageNet streamed from MDS shards; arguments and behaviour of `StreamingVisionDataset`."""
