"""The first samples of a worker's epoch, read from the remote before their shard has landed.

A cold start otherwise waits for the whole first shard (64 MiB by default, seconds from a
bucket) before its first batch, which needs a few hundred KB of it. While the prefetcher fetches
that shard, `remote_samples` reads just the samples asked for with two ranged reads of the
remote shard: their offsets from its header, then their bytes. It does so only where the result
is exactly what the cache would give: a raw MDS shard (no compression to undo), no digest to
check first (`validate_hash`, or a fast digest in the index that every download is checked
against: both check whole files, and no byte of a shard that fails is ever used), a remote to
read from, and samples that lie
close together (scattered ones, as a shuffle picks them, would cost a large read each) and take
a small part of the shard (a first batch of large images is most of it). In any
other case it returns None and the caller waits for the shard as usual, which raises the real
error if there is one.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np

from streaming.cache.prepare import ShardSource
from streaming.format.mds.reader import MDSReader
from streaming.format.offsets_table import header_bytes, offsets_in_order
from streaming.format.reader import Reader
from streaming.hashing import fast_hash_of
from streaming.storage.transfer import read_range

__all__ = ["EARLY_READS_ENV", "EarlySamples", "early_reads_enabled", "remote_samples"]

#: ``STREAMING_EARLY_READS=0`` turns early reads off (every read waits for its shard).
EARLY_READS_ENV = "STREAMING_EARLY_READS"

_SLACK = 16  # samples that may lie between the ones asked for (read, then skipped)
_MAX_PART = 4  # read early at most 1/4 of a shard's bytes ...
_MAX_BYTES = 16 << 20  # ... or this much when the index does not give its size


class EarlySamples(NamedTuple):
    samples: list[dict[str, Any]]
    nbytes: int  # bytes read from the remote


def early_reads_enabled() -> bool:
    """Whether `EARLY_READS_ENV` leaves early reads on (the default)."""
    return os.environ.get(EARLY_READS_ENV, "1") != "0"


def remote_samples(reader: Reader, source: ShardSource,
                   indices: np.ndarray) -> EarlySamples | None:
    """Samples `indices` (in that order) of the shard `reader` reads, read from the remote, or
    None when that is not possible or not worth it (see the module doc).

    Raises:
        StreamingError or OSError: the remote failed to answer (the caller falls back).
        ShardFormatError: the remote shard's bytes do not decode.
    """
    if (not isinstance(reader, MDSReader) or reader.reads_its_own or reader.zip_data is not None
            or source.store is None or not source.store.supports_ranges  # (whole reads: DBFS)
            or source.validate_hash or not len(indices)
            or fast_hash_of(reader.raw_data.hashes)):
        return None
    lo, hi = int(indices.min()), int(indices.max()) + 1
    if hi - lo > len(indices) + _SLACK or hi > reader.samples or 2 * (hi - lo) > reader.samples:
        return None  # scattered, or half the shard's samples: no need to read its offsets
    store, name, size = source.store, reader.raw_data.basename, reader.raw_data.bytes

    def read(start: int, end: int) -> bytes:
        # One attempt: the fallback, waiting for the shard, costs less than a retry's back-off.
        return read_range(store, name, start, end, retries=1, timeout=source.timeout)

    table = read(*reader.offsets_span(lo, hi))
    if len(table) != 4 * (hi - lo + 1):
        return None
    offsets = np.frombuffer(table, "<u4").astype(np.int64)
    if not offsets_in_order(offsets, header_bytes(reader.samples), size):
        return None  # not the shard the index describes: the normal path says what is wrong
    first, last = int(offsets[0]), int(offsets[-1])
    if last - first > (size // _MAX_PART if size else _MAX_BYTES):
        return None  # much of the shard: fetching it whole is about as quick, egress not doubled
    data = memoryview(read(first, last))
    if len(data) != last - first:
        return None
    spans = (offsets - first).tolist()
    decode = reader.decode_sample
    samples = [decode(data[spans[i]:spans[i + 1]]) for i in (indices - lo).tolist()]
    return EarlySamples(samples, len(table) + len(data))
