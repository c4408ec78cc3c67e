"""The shards of every stream of a dataset, numbered globally, with their bookkeeping arrays.

Pure arithmetic over shard sample counts: the planner's `StreamLayout` plus which stream each
shard belongs to and where each stream's samples start. The reference's attribute names are kept
(the dataset exposes them) since user code reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from streaming.format.shard_readers import ShardReaders
from streaming.order.resample import StreamLayout, exclusive_cumsum
from streaming.spanner import Spanner

if TYPE_CHECKING:
    from streaming.format.reader import Reader

__all__ = ["Catalog"]


@dataclass(frozen=True)
class Catalog:
    """Shards of all streams in stream order; every array is int64.

    `shards` builds each reader on first use (`ShardReaders`); `groups` are the same readers
    per stream.
    """

    shards: ShardReaders
    groups: tuple[ShardReaders, ...]
    layout: StreamLayout
    stream_per_shard: NDArray[np.int64]
    samples_per_stream: NDArray[np.int64]
    sample_offset_per_stream: NDArray[np.int64]
    spanner: Spanner

    @classmethod
    def build(cls, shards_per_stream_lists: Sequence[Sequence[Reader]]) -> Catalog:
        groups = tuple(g if isinstance(g, ShardReaders) else ShardReaders.from_readers(g)
                       for g in shards_per_stream_lists)
        sizes = [group.samples for group in groups]
        layout = StreamLayout.from_shard_sizes(sizes)
        samples_per_stream = layout.samples_per_stream
        return cls(
            shards=ShardReaders.concat(groups),
            groups=groups,
            layout=layout,
            stream_per_shard=np.repeat(np.arange(len(groups), dtype=np.int64),
                                       layout.shards_per_stream),
            samples_per_stream=samples_per_stream,
            sample_offset_per_stream=exclusive_cumsum(samples_per_stream),
            spanner=Spanner(layout.samples_per_shard),
        )

    @property
    def samples_per_shard(self) -> NDArray[np.int64]:
        return self.layout.samples_per_shard

    @property
    def sample_offset_per_shard(self) -> NDArray[np.int64]:
        return self.layout.sample_offset_per_shard

    @property
    def shards_per_stream(self) -> NDArray[np.int64]:
        return self.layout.shards_per_stream

    @property
    def shard_offset_per_stream(self) -> NDArray[np.int64]:
        return self.layout.shard_offset_per_stream

    @property
    def num_shards(self) -> int:
        return len(self.shards)

    @property
    def num_samples(self) -> int:
        return int(self.layout.samples_per_shard.sum())

    def stream_slice(self, stream_id: int) -> slice:
        """The stream's shards as a slice of the global shard ids."""
        begin = int(self.layout.shard_offset_per_stream[stream_id])
        return slice(begin, begin + int(self.layout.shards_per_stream[stream_id]))
