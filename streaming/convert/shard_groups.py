"""Reading a dataset's shards in groups, for engines that split a read into tasks (Ray, Dask).

`open_source` reads one ``index.json`` (a local folder or any URL `streaming.storage` opens);
`group_shards` cuts the shards into contiguous groups of about equal sample counts; `read_group`
runs inside a task and yields one column batch per shard. It goes through the same storage
layer, cache preparation (fetch, hash check, decompression) and shard readers as
`StreamingDataset`: there is no second reader. Uncompressed local shards are read in place;
anything else is fetched into a scratch directory the task deletes when it is done.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streaming.cache.prepare import ShardSource, prepare_shard_files
from streaming.convert.columns import ConversionError
from streaming.format import reader_for_entry
from streaming.format.index import get_index_basename, parse_index
from streaming.storage import open_store
from streaming.storage.urls import scheme_of

__all__ = ["ShardGroupSource", "columnize", "group_shards", "open_source", "read_group"]

_FETCH_RETRIES = 2
_FETCH_TIMEOUT = 60.0


@dataclass(frozen=True)
class ShardGroupSource:
    """A dataset to read in groups: where it is and its parsed index (pickled into tasks)."""

    root: str  # local directory or URL of the folder holding index.json
    index_text: bytes

    @property
    def entries(self) -> list[Any]:
        return parse_index(self.index_text, f"{self.root}/{get_index_basename()}")

    @property
    def is_local(self) -> bool:
        return scheme_of(self.root) in ("", "file")

    def column_names(self) -> list[str]:
        """The dataset's column names, from the first shard's index entry."""
        entries = self.entries
        if not entries:
            return []
        config = entries[0].config
        names = config.get("column_names") or list(config.get("columns") or {})
        return list(names)


def open_source(path: str, split: str | None = None) -> ShardGroupSource:
    """Read the index of the dataset at `path` (local folder or URL), optionally a split.

    Raises:
        FileNotFoundError: there is no ``index.json`` there.
        IndexFormatError: the index is malformed (the message names the file).
    """
    root = path.rstrip("/")
    if split:
        root = os.path.join(root, split) if scheme_of(root) in ("", "file") else f"{root}/{split}"
    if scheme_of(root) in ("", "file"):
        with open(os.path.join(root.removeprefix("file://"), get_index_basename()), "rb") as f:
            text = f.read()
    else:
        text = open_store(root).get(get_index_basename())
    source = ShardGroupSource(root, text)
    _ = source.entries  # parse once here, so a bad index fails on the driver
    return source


def group_shards(samples_per_shard: Sequence[int], groups: int) -> list[list[int]]:
    """Shard ids cut into at most `groups` contiguous runs of about equal sample counts."""
    count = len(samples_per_shard)
    if not count:
        return []
    groups = max(1, min(int(groups), count))
    ends = np.cumsum(np.asarray(samples_per_shard, np.int64))
    targets = ends[-1] * np.arange(1, groups) / groups
    cuts = np.unique(np.clip(np.searchsorted(ends, targets, side="left") + 1, 1, count - 1))
    bounds = [0, *cuts.tolist(), count]
    return [list(range(a, b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def columnize(samples: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, np.ndarray]:
    """Samples as columns: numbers as typed arrays, equal-shape arrays stacked, the rest objects.

    Raises:
        ConversionError: a sample lacks one of `names`.
    """
    columns: dict[str, np.ndarray] = {}
    for name in names:
        try:
            values = [sample[name] for sample in samples]
        except KeyError:
            raise ConversionError(f"A sample has no column {name!r}") from None
        columns[name] = _column(values)
    return columns


def _column(values: list[Any]) -> np.ndarray:
    if not values:
        return np.empty(0, object)
    first = values[0]
    if isinstance(first, np.ndarray):
        if all(isinstance(v, np.ndarray) and v.shape == first.shape and v.dtype == first.dtype
               for v in values):
            return np.stack(values)
    elif isinstance(first, (bool, int, float, np.generic)) and all(
            type(v) is type(first) for v in values):
        array = np.asarray(values)
        if array.dtype != object:
            return array
    out = np.empty(len(values), object)
    for i, value in enumerate(values):
        out[i] = value
    return out


def _shard_dir(source: ShardGroupSource, entry: Any, scratch: str) -> str:
    """The directory a shard's reader opens: in place when the raw files are local, else a
    scratch directory the files were fetched (and decompressed, hash-checked) into."""
    raws = [entry.raw_data] + ([entry.raw_meta] if entry.raw_meta is not None else [])
    if source.is_local and all(entry_zip is None for entry_zip in (entry.zip_data,
                                                                   entry.zip_meta)):
        root = source.root.removeprefix("file://")
        if all(os.path.exists(os.path.join(root, info.basename)) for info in raws):
            return root
    return scratch


def read_group(source: ShardGroupSource, shard_ids: Sequence[int],
               columns: Sequence[str] | None = None, *,
               allow_unsafe_types: bool = False) -> Iterator[dict[str, np.ndarray]]:
    """Yield each listed shard's samples as one column batch (see `columnize`).

    Args:
        source: the dataset (from `open_source`).
        shard_ids: which shards, in order.
        columns: keep only these columns (default: all).
        allow_unsafe_types: read columns whose decoding can run code (``pkl``).

    Raises:
        FileNotFoundError, HashMismatchError, ShardFormatError: a shard cannot be read; the
            message names it.
        ValueError: an unsafe column without `allow_unsafe_types`.
    """
    entries = source.entries
    names = list(columns) if columns is not None else source.column_names()
    scratch = tempfile.mkdtemp(prefix="mds-read-")
    store = None
    try:
        for shard in shard_ids:
            entry = entries[shard]
            dirname = _shard_dir(source, entry, scratch)
            reader = reader_for_entry(dirname, None, entry)
            reader.validate(allow_unsafe_types)
            if dirname == scratch:
                store = store or open_store(source.root)
                prepare_shard_files(ShardSource(scratch, store, False, None, _FETCH_RETRIES,
                                                _FETCH_TIMEOUT), reader.files)
            try:
                samples = reader.decode_range()
            finally:
                reader.close()
            if dirname == scratch:
                reader.evict()
            unknown = [n for n in names if samples and n not in samples[0]]
            if unknown:
                raise ConversionError(f"Column(s) {unknown} are not in the dataset at "
                                      f"{source.root}: {sorted(samples[0])}")
            yield columnize(samples, names)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
