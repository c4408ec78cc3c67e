"""The shards of every stream of a dataset, numbered globally, with their bookkeeping arrays.

Pure arithmetic over shard sample counts: which stream each shard belongs to, where each stream's
shards and samples start. The reference's attribute names are kept since user code reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from streaming.spanner import Spanner

if TYPE_CHECKING:
    from streaming.format.reader import Reader

__all__ = ["Catalog"]


def _exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values), np.int64)
    np.cumsum(values[:-1], out=out[1:])
    return out


@dataclass(frozen=True)
class Catalog:
    """Shards of all streams in stream order; every array is int64."""

    shards: list[Reader]
    stream_per_shard: np.ndarray
    shards_per_stream: np.ndarray
    shard_offset_per_stream: np.ndarray
    samples_per_shard: np.ndarray
    sample_offset_per_shard: np.ndarray
    samples_per_stream: np.ndarray
    sample_offset_per_stream: np.ndarray
    spanner: Spanner

    @classmethod
    def build(cls, shards_per_stream_lists: Sequence[Sequence[Reader]]) -> Catalog:
        shards = [shard for group in shards_per_stream_lists for shard in group]
        shards_per_stream = np.array([len(g) for g in shards_per_stream_lists], np.int64)
        stream_per_shard = np.repeat(np.arange(len(shards_per_stream), dtype=np.int64),
                                     shards_per_stream)
        samples_per_shard = np.array([s.samples for s in shards], np.int64)
        samples_per_stream = np.array(
            [sum(s.samples for s in g) for g in shards_per_stream_lists], np.int64
        )
        return cls(
            shards=shards,
            stream_per_shard=stream_per_shard,
            shards_per_stream=shards_per_stream,
            shard_offset_per_stream=_exclusive_cumsum(shards_per_stream),
            samples_per_shard=samples_per_shard,
            sample_offset_per_shard=_exclusive_cumsum(samples_per_shard),
            samples_per_stream=samples_per_stream,
            sample_offset_per_stream=_exclusive_cumsum(samples_per_stream),
            spanner=Spanner(samples_per_shard),
        )

    @property
    def num_samples(self) -> int:
        return int(self.samples_per_shard.sum())
