"""`StreamingCOCO`: COCO object detection (image plus boxes) streamed from MDS shards.

Reads the columns the reference's converter writes: `img`, `img_id`, `htot`, `wtot`,
`bbox_sizes`, `bbox_labels`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streaming.base._compat import core_arguments
from streaming.dataset import StreamingDataset
from streaming.order.defaults import SHUFFLE_BLOCK_SIZE

__all__ = ["StreamingCOCO"]


class StreamingCOCO(StreamingDataset):
    """COCO samples as ``(img, img_id, (htot, wtot), bbox_sizes, bbox_labels)``.

    Takes the StreamingDataset arguments in the signature with the reference's older domain
    defaults (`orig`, `py1s`, ``1 << 18``).

    Args:
        transform: called as ``transform(img, (htot, wtot), bbox_sizes, bbox_labels)`` and
            returning the same four values (detection transforms move boxes with the image).
    """

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = 60,
        validate_hash: str | None = None,
        keep_zip: bool = False,
        epoch_size: int | str | None = None,
        predownload: int | None = None,
        partition_algo: str = "orig",
        cache_limit: int | str | None = None,
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: str = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = SHUFFLE_BLOCK_SIZE,
        transform: Callable | None = None,
    ) -> None:
        super().__init__(**core_arguments(locals()))
        self.transform = transform

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """The sample with global index `idx`, its image converted to RGB, then transformed."""
        sample = super().get_item(idx, retry)
        img = sample["img"].convert("RGB")
        size = (sample["htot"], sample["wtot"])
        sizes, labels = sample["bbox_sizes"], sample["bbox_labels"]
        if self.transform:
            img, size, sizes, labels = self.transform(img, size, sizes, labels)
        return img, sample["img_id"], size, sizes, labels
