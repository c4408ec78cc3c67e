"""`LocalDataset`: a map-style PyTorch dataset over a dataset directory already on local disk.

No download, no cache, no shared memory: the index is read once, samples are located with a
`Spanner` and read through the shard readers (memory-mapped). Iterating in order uses the
readers' batched path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import chain
from typing import Any

import numpy as np
from torch.utils.data import Dataset

from streaming.array import Array, own_item_read
from streaming.errors import ShardUnavailableError
from streaming.format import Reader, load_readers
from streaming.format.read_options import ReadOptions
from streaming.format.shard_files import RAW, ZIP
from streaming.format.shard_readers import validate_reader
from streaming.spanner import Spanner

__all__ = ["LocalDataset"]

_IN_PLACE = ReadOptions(in_place=True)


def _refuse_compressed_only(shards: list[Reader], local: str) -> None:
    """Fail at construction, naming the way out, when shards are there only compressed
    (`MDSWriter(compression=...)` output): reads in place never decompress, and otherwise a
    sample would fail with a bare "No such file" for a file the index names.

    A writer compresses every shard alike, so one compressed shard per sub-dataset is looked
    at (a few `stat`s each): a merged index may join plain and compressed sub-datasets."""
    seen: set[tuple[str, str | None]] = set()
    for shard in shards:
        if not shard.files.compressed:
            continue
        group = (os.path.dirname(shard.files.form(RAW)[0].basename), shard.compression)
        if group not in seen:
            seen.add(group)
            _refuse_if_compressed_only(shard, local)


def _refuse_if_compressed_only(shard: Reader, local: str) -> None:
    files = shard.files
    if not files.compressed or files.raw_present() or not files.present(ZIP):
        return
    zipped, raw = files.form(ZIP)[0].basename, files.form(RAW)[0].basename
    raise ShardUnavailableError(
        f"The shards of {local} are compressed ({shard.compression}: {zipped} is there, {raw} "
        "is not) and LocalDataset reads shards in place, without decompressing. Read it with "
        f"StreamingDataset(local={local!r}), which decompresses each shard into the directory "
        "on first use, or write it without compression.")


def _read_where_they_lie(shards: list[Reader]) -> None:
    """Files indexed in place (Parquet) are read where they lie; in the cache folder of a
    `StreamingDataset` over them, which holds shard copies instead of the files, the copies are
    read (one `stat` tells which)."""
    for shard in shards:
        shard.apply_read_options(_IN_PLACE)
    if shards and shards[0].format == "parquet" and not shards[0].files.raw_present():
        for shard in shards:
            shard.apply_read_options(ReadOptions())


class LocalDataset(Array, Dataset):
    """A dataset whose shards reside locally, indexable like a numpy array.

    Args:
        local: dataset directory holding ``index.json`` (or ``<split>/index.json``).
        split: optional split subdirectory.
        allow_unsafe_types: decode columns that run code when decoded (``pkl``), as
            `StreamingDataset`'s argument of that name. Ours: the reference's `LocalDataset`
            unpickled them unasked, so a dataset from a stranger ran its code on first read.

    Raises:
        FileNotFoundError: no index file; or the shards are there only compressed
            (`streaming.errors.ShardUnavailableError`, naming what to do instead).
        ValueError: a malformed index (`streaming.errors.IndexFormatError`), including the
            reference's ``Unsupported streaming data version`` message; a ``pkl`` column
            without `allow_unsafe_types`.
    """

    def __init__(self, local: str, split: str | None = None, *,
                 allow_unsafe_types: bool = False) -> None:
        split = split or ""
        self.local = os.path.expanduser(local)
        self.split = split
        self.shards: list[Reader] = load_readers(self.local, split)
        for shard in self.shards:
            validate_reader(shard, allow_unsafe_types)
        _read_where_they_lie(self.shards)
        _refuse_compressed_only(self.shards, self.local)
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
