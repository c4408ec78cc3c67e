"""What the simulator needs to know of a stream's shards: samples and bytes, nothing else.

Read from a dataset's index.json (local or remote: only that file is fetched) or made up
(`SimStream.synthetic`), so a cluster can be sized before the data exists. Sizes follow the
cache's own accounting (`streaming.cache`): a fetch moves the compressed forms when there are
any, the cache reserves raw + compressed while a shard is prepared, and keeps the raw forms.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from streaming.format.index import ShardEntry, get_index_basename, parse_index
from streaming.storage import open_store
from streaming.storage.urls import scheme_of

__all__ = ["SimStream", "stream_of_dataset"]


def _array(values: Sequence[int] | NDArray[np.int64], name: str) -> NDArray[np.int64]:
    out = np.asarray(values, np.int64).reshape(-1)
    if len(out) and int(out.min()) < 0:
        raise ValueError(f"`{name}` must not be negative.")
    return out


@dataclass(frozen=True)
class SimStream:
    """One stream's shards as the simulator sees them, with at most one weight.

    Attributes:
        samples: samples per shard.
        fetch_bytes: bytes a fetch of each shard moves over the network.
        resident_bytes: bytes each shard keeps in the cache once prepared.
        cache_bytes: the most each shard occupies while prepared (raw + compressed).
        index_bytes: bytes of the stream's index.json (always counted in the cache).
        name: where the stream came from (for reports).
        meta_fetch_bytes: bytes of each shard's separate metadata file (the `.meta` of a JSONL
            or CSV/TSV shard), part of `fetch_bytes` but fetched as a request of its own after
            the data, as the cache does (a second latency and a second fetch); 0 for MDS. None
            means 0 for every shard.
    """

    samples: NDArray[np.int64]
    fetch_bytes: NDArray[np.int64]
    resident_bytes: NDArray[np.int64]
    cache_bytes: NDArray[np.int64]
    index_bytes: int = 0
    proportion: float | None = None
    repeat: float | None = None
    choose: int | None = None
    name: str = field(default="synthetic")
    meta_fetch_bytes: NDArray[np.int64] | None = None

    def __post_init__(self) -> None:
        if self.meta_fetch_bytes is None:
            object.__setattr__(self, "meta_fetch_bytes", np.zeros(len(self.samples), np.int64))
        lengths = {len(self.samples), len(self.fetch_bytes), len(self.resident_bytes),
                   len(self.cache_bytes), len(self.meta_fetch_bytes)}  # type: ignore[arg-type]
        if len(lengths) != 1:
            raise ValueError("Every per-shard array of a stream must have one entry per shard.")
        if not len(self.samples):
            raise ValueError(f"Stream {self.name} has no shards.")

    @classmethod
    def synthetic(cls, shards: int, samples_per_shard: int, shard_bytes: int,
                  compressed_bytes: int | None = None, **weights: float | int | None
                  ) -> SimStream:
        """`shards` equal shards of `samples_per_shard` samples and `shard_bytes` raw bytes.

        Args:
            compressed_bytes: the compressed size of each shard, if the data is compressed.
            weights: `proportion`, `repeat` or `choose`, as `Stream` takes them.
        """
        if shards < 1 or samples_per_shard < 1 or shard_bytes < 1:
            raise ValueError("Synthetic shards need at least one shard, one sample and one "
                             f"byte each, got {shards}, {samples_per_shard}, {shard_bytes}.")
        if compressed_bytes is not None and compressed_bytes < 1:
            raise ValueError(f"`compressed_bytes` must be positive, got {compressed_bytes}.")
        raw = np.full(shards, shard_bytes, np.int64)
        moved = raw if compressed_bytes is None else np.full(shards, compressed_bytes, np.int64)
        most = raw if compressed_bytes is None else raw + moved
        return cls(np.full(shards, samples_per_shard, np.int64), moved, raw, most,
                   name=f"{shards} x {samples_per_shard} samples", **weights)  # type: ignore[arg-type]

    @classmethod
    def from_entries(cls, entries: Sequence[ShardEntry], index_bytes: int = 0, name: str = "",
                     **weights: float | int | None) -> SimStream:
        """A stream from its parsed index entries (`streaming.format.index.parse_index`)."""
        samples, moved, raw, most, meta = [], [], [], [], []
        for entry in entries:
            pairs = [(entry.raw_data, entry.zip_data), (entry.raw_meta, entry.zip_meta)]
            samples.append(entry.samples)
            moved.append(sum((z or r).bytes for r, z in pairs if r is not None))
            meta.append(0 if entry.raw_meta is None else (entry.zip_meta or entry.raw_meta).bytes)
            raw.append(sum(r.bytes for r, _ in pairs if r is not None))
            most.append(sum(r.bytes + (z.bytes if z else 0) for r, z in pairs if r is not None))
        return cls(_array(samples, "samples"), _array(moved, "fetch_bytes"),
                   _array(raw, "resident_bytes"), _array(most, "cache_bytes"), index_bytes,
                   name=name or "index", meta_fetch_bytes=_array(meta, "meta_fetch_bytes"),
                   **weights)  # type: ignore[arg-type]


def stream_of_dataset(location: str, split: str | None = None,
                      **weights: float | int | None) -> SimStream:
    """The stream of a dataset directory or URL (or its index.json), reading only its index.

    Raises:
        FileNotFoundError: no index.json there.
        IndexFormatError: a malformed index.
    """
    name = get_index_basename()
    if location.rstrip("/").endswith("/" + name) or location == name:  # the index file itself
        location = location.rstrip("/")[:-len(name)] or "."
    if scheme_of(location) and not location.startswith("file://"):
        where = location.rstrip("/") + (f"/{split.strip('/')}" if split else "")
        text = open_store(where).get(name)
        label = f"{where}/{name}"
    else:
        path = location.removeprefix("file://")
        path = os.path.join(os.path.expanduser(path), (split or "").strip("/"), name)
        with open(path, "rb") as file:
            text = file.read()
        label = path
    return SimStream.from_entries(parse_index(text, label), len(text), location, **weights)
