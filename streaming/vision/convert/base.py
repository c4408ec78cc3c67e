"""`convert_image_class_dataset`: any indexable ``(image, label)`` dataset to MDS ``{i, x, y}``.

The columns are the ones `StreamingCIFAR10` and `StreamingImageNet` read: `i` (the sample's
position in the source, so a shuffled dataset can still be traced back), `x` (the image) and `y`
(the class). Samples are written in a random permutation, as the reference's converter does, so a
dataset read without shuffling is not ordered by class.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from streaming.base._reimports import reimported as _reimported
from streaming.vision.convert._common import write_samples

__all__ = ["ImageClassDataset", "convert_image_class_dataset"]


class ImageClassDataset(Protocol):
    """What the converter needs of a dataset: a length, and ``dataset[i] -> (image, label)``
    (a torchvision dataset, a list of pairs...)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


def _label(value: Any) -> int:
    """Labels as plain ints: the `int` column refuses numpy integers, which torchvision-style
    datasets built from numpy arrays hand out."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"Labels must be integers, got {type(value).__name__}: {value!r}")


def convert_image_class_dataset(dataset: ImageClassDataset, out_root: str,
                                split: str | None = None, compression: str | None = None,
                                hashes: list[str] | None = None, size_limit: int = 1 << 24,
                                progress_bar: bool = True, leave: bool = False,
                                encoding: str = "pil") -> None:
    """Write `dataset` as an MDS dataset in ``out_root/split``.

    Args:
        dataset: ``len(dataset)`` samples, ``dataset[i]`` being ``(image, label)``.
        out_root: local directory or remote URL; the split is a subdirectory of it.
        split: the split's directory name; None or ``''`` writes into `out_root` itself.
        compression: ``algo[:level]``, or None / ``''`` for none.
        hashes: hash algorithms recorded for every shard.
        size_limit: bytes per shard before a new one starts.
        progress_bar: show a bar of samples written.
        leave: keep the bar on screen when done.
        encoding: the image column's MDS encoding (``pil``, ``jpeg``, ``png``...); the images
            must be what that encoding takes (PIL images for ``pil``).

    Raises:
        TypeError: a label is not an integer.
    """
    columns = {"i": "int", "x": encoding, "y": "int"}
    indices = np.random.permutation(len(dataset)).tolist()
    out_dir = os.path.join(out_root, split or "")

    def samples() -> Iterator[dict[str, Any]]:
        for index in indices:
            image, label = dataset[index]
            yield {"i": index, "x": image, "y": _label(label)}

    write_samples(out_dir, columns, samples(), len(indices), compression=compression,
                  hashes=hashes, size_limit=size_limit, progress_bar=progress_bar, leave=leave,
                  desc=split or None)

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
