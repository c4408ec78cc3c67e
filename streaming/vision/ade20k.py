"""`StreamingADE20K`: ADE20K scene parsing (image `x`, segmentation map `y`) streamed.

A plain StreamingDataset subclass (not a `StreamingVisionDataset`), as in the reference: no
default tensor conversion, and a joint transform that sees image and mask together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streaming.base._compat import core_arguments
from streaming.dataset import StreamingDataset
from streaming.defaults import DEFAULT_TIMEOUT
from streaming.order.defaults import SHUFFLE_BLOCK_SIZE

__all__ = ["StreamingADE20K"]


class StreamingADE20K(StreamingDataset):
    """ADE20K samples as ``(x, y)`` after the optional transforms.

    Takes the StreamingDataset arguments in the signature with the reference's older domain
    defaults (`orig`, `py1s`, ``1 << 18``).

    Args:
        joint_transform: called with the tuple ``(x, y)``, returns a new ``(x, y)``; runs first,
            so crops and flips stay aligned between image and mask.
        transform: applied to the image afterwards.
        target_transform: applied to the mask afterwards.
    """

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = DEFAULT_TIMEOUT,
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
        joint_transform: Callable | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ) -> None:
        super().__init__(**core_arguments(locals()))
        self.joint_transform = joint_transform
        self.transform = transform
        self.target_transform = target_transform

    def get_item(self, idx: int, retry: int = 7) -> tuple[Any, Any]:
        """The transformed ``(image, mask)`` of the sample with global index `idx`."""
        sample = super().get_item(idx, retry)
        x, y = sample["x"], sample["y"]
        if self.joint_transform:
            x, y = self.joint_transform((x, y))
        if self.transform:
            x = self.transform(x)
        if self.target_transform:
            y = self.target_transform(y)
        return x, y
