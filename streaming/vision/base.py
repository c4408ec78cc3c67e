"""`StreamingVisionDataset`: an image dataset of `x` (input) and `y` (target) columns.

Also a torchvision `VisionDataset` when torchvision imports (as in the reference); otherwise it
carries the same transform attributes through a small local base, so torchvision stays optional.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from streaming.base._compat import core_arguments
from streaming.dataset import StreamingDataset
from streaming.defaults import DEFAULT_TIMEOUT
from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.vision.transforms import StandardTransform

__all__ = ["StreamingVisionDataset"]


class _TransformHolder:
    """Stand-in for torchvision's `VisionDataset` when torchvision is missing or unusable."""

    transforms: Callable | None
    transform: Callable | None
    target_transform: Callable | None

    def __repr__(self) -> str:
        lines = [f"Dataset {type(self).__name__}"]
        if hasattr(self, "length"):
            lines.append(f"    Number of datapoints: {len(self)}")  # type: ignore[arg-type]
        if getattr(self, "transforms", None) is not None:
            lines.append(f"    {self.transforms!r}")
        return "\n".join(lines)


def _vision_base() -> type:
    """torchvision's `VisionDataset` if it can be imported, else `_TransformHolder`.

    Any failure counts as missing: a torchvision wheel built for another torch raises
    RuntimeError (not ImportError) at import.
    """
    try:
        if importlib.util.find_spec("torchvision") is None:
            return _TransformHolder
        from torchvision.datasets import VisionDataset
    except Exception:  # noqa: BLE001 - see docstring
        return _TransformHolder
    return VisionDataset


class StreamingVisionDataset(StreamingDataset, _vision_base()):  # type: ignore[misc]
    """A streamed image dataset whose samples are `{'x': image, 'y': target}`.

    Takes the StreamingDataset arguments listed in the signature, with the older defaults the
    reference kept for its domain datasets (`orig` partitioning, `py1s` shuffling, blocks of
    ``1 << 18``), and a required `batch_size`. `get_item` returns ``transforms(x, y)``; by
    default that is ``(to_tensor(x), y)``.

    Args:
        transforms: one callable taking and returning ``(x, y)``.
        transform: applied to `x` instead of `to_tensor`.
        target_transform: applied to `y`.

    Raises:
        ValueError: when `transforms` is given together with `transform` or `target_transform`.
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
        cache_limit: int | str | None = None,
        partition_algo: str = "orig",
        num_canonical_nodes: int | None = None,
        batch_size: int,
        shuffle: bool = False,
        shuffle_algo: str = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = SHUFFLE_BLOCK_SIZE,
        transforms: Callable | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ) -> None:
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError(
                "Only transforms or transform/target_transform can be passed as an argument")
        StreamingDataset.__init__(self, **core_arguments(locals()))
        self.root = None  # read by torchvision's VisionDataset.__repr__
        self.transform = transform
        self.target_transform = target_transform
        if transforms is None:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """The transformed ``(x, y)`` of the sample with global index `idx`."""
        sample = super().get_item(idx, retry)
        return self.transforms(sample["x"], sample["y"])
