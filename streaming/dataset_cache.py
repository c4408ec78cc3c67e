"""`CacheControls`: what a `StreamingDataset` lets its user do with the node's shard cache.

Thin, public delegations to `streaming.cache.node_cache.NodeCache` (the reference's
`prepare_shard`, `evict_shard`, `evict_coldest_shard`; ours: pinning and egress counters), kept
apart from the dataset's construction, iteration and checkpoints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from streaming.cache.node_cache import NodeCache
    from streaming.stream import Stream

__all__ = ["CacheControls"]


class CacheControls:
    """Mixed into `StreamingDataset`, which sets `_cache` and `streams`."""

    _cache: NodeCache
    streams: list[Stream]

    def metrics(self) -> dict[str, Any]:
        """Where the time goes, summed over every process of this node that reads this
        dataset (its DataLoader workers and the other ranks): a plain dict of counters, seconds
        and bytes with a few rates; keys and units in `docs/metrics.md`."""
        return self._cache.metrics_snapshot()

    @property
    def egress(self) -> dict[str, Any]:
        """Bytes and seconds this node spent downloading shards (network egress)."""
        return self._cache.egress()

    def prepare_shard(self, shard_id: int, blocking: bool = True) -> None:
        """Make a shard local (fetching it once per node); see `NodeCache.prepare`."""
        self._cache.prepare(shard_id, blocking=blocking)

    def pin_shards(self, shard_ids: Sequence[int] | np.ndarray, fetch: bool = True) -> None:
        """Keep these shards resident under `cache_limit` (for every process of the node).

        Pinned shards are never evicted; with `fetch`, those not yet local are fetched now. Use
        it for shards read at the start of every epoch or by evaluation in between.

        Raises:
            ValueError: an id is out of range, or the pinned shards would not fit the limit.
        """
        self._cache.pin(shard_ids, sum(s.get_index_size() for s in self.streams), fetch=fetch)

    def unpin_shards(self, shard_ids: Sequence[int] | np.ndarray) -> None:
        """Let pinned shards be evicted again."""
        self._cache.unpin(np.asarray(shard_ids, np.int64))

    def evict_shard(self, shard_id: int) -> None:
        """Delete a shard's files from the cache now (fetched again when next needed)."""
        self._cache.evict(shard_id)

    def evict_coldest_shard(self) -> None:
        """Evict the shard the cache would evict next."""
        self._cache.evict_coldest()
