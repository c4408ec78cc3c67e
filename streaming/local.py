"""`LocalDataset`: a map-style PyTorch dataset over a dataset directory already on local disk.

No download, no cache, no shared memory: the index is read once, samples are located with a
`Spanner` and read through the shard readers (memory-mapped). Iterating in order uses the
readers' batched path.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

import numpy as np
from torch.utils.data import Dataset

from streaming.array import Array, own_item_read
from streaming.format import Reader, load_readers
from streaming.format.read_options import ReadOptions
from streaming.spanner import Spanner

__all__ = ["LocalDataset"]

_IN_PLACE = ReadOptions(in_place=True)


class LocalDataset(Array, Dataset):
    """A dataset whose shards reside locally, indexable like a numpy array.

    Args:
        local: dataset directory holding ``index.json`` (or ``<split>/index.json``).
        split: optional split subdirectory.

    Raises:
        FileNotFoundError: no index file.
        ValueError: a malformed index (`streaming.errors.IndexFormatError`), including the
            reference's ``Unsupported streaming data version`` message.
    """

    def __init__(self, local: str, split: str | None = None) -> None:
        split = split or ""
        self.local = local
        self.split = split
        self.shards: list[Reader] = load_readers(local, split)
        for shard in self.shards:  # files indexed in place (Parquet) are read where they lie
            shard.apply_read_options(_IN_PLACE)
        shard_sizes = np.array([shard.samples for shard in self.shards], np.int64)
        self.num_samples = int(shard_sizes.sum())
        self.spanner = Spanner(shard_sizes)

    def __len__(self) -> int:
        return self.num_samples

    @property
    def size(self) -> int:
        return self.num_samples

    def get_item(self, sample_id: int) -> dict[str, Any]:
        """The sample with this global id.

        Raises:
            IndexError: the id is outside ``[0, len)``.
        """
        shard_id, index_in_shard = self.spanner[sample_id]
        return self.shards[shard_id].get_item(index_in_shard)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        own = own_item_read(self, LocalDataset)
        if own is not None:  # a subclass's transforms apply, as in the reference
            return map(own, range(self.num_samples))
        # Chained in C: a sample passes through no Python frame of ours but its shard reader's.
        return chain.from_iterable(shard.iter_range() for shard in self.shards)
