"""Shards kept resident for every process of a node (`StreamingDataset.pin`): the node cache's
pinning, apart from how it fetches and evicts.

A pinned shard is never chosen for eviction (`NodeCache._make_room` skips it); pinning checks
up front that the cache limit can hold the pinned shards with everything else it must keep.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.cache.limits import required_bytes

if TYPE_CHECKING:
    from streaming.coord.array import SharedArray
    from streaming.coord.claims import ShardClaims

__all__ = ["PinnedShards"]


class PinnedShards:
    """`NodeCache`'s pinning (see the module doc)."""

    claims: ShardClaims
    pinned: SharedArray  # uint8 per shard: 1 while pinned
    info: Any  # per-shard facts (`stream_ids`, `cache_bytes`, `has_remote`)
    cache_limit: int | None
    shards: Sequence[Any]
    prepare: Callable[..., bool]  # NodeCache's: fetch a shard now

    def pin(self, shard_ids: Sequence[int] | np.ndarray, index_bytes: int,
            fetch: bool = True) -> None:
        """Keep shards resident, for every process of the node; with `fetch`, fetch them now.

        Raises:
            ValueError: an id out of range, or, with a cache limit, the pinned shards and the
                shards whose only copy is local, plus the largest other shard, would not fit;
                nothing is pinned then.
        """
        shards = self.checked_ids(shard_ids)
        with self.claims.lock:
            pinned = self.pinned.numpy()
            wanted = pinned.astype(bool)
            wanted[shards] = True
            if self.cache_limit is not None:
                need = required_bytes(index_bytes, self.info.cache_bytes,
                                      wanted | ~self.info.has_remote)
                if need > self.cache_limit:
                    raise ValueError(
                        f"Cannot pin {len(shards)} shards: the cache limit ({self.cache_limit} "
                        f"bytes) would have to hold {need} bytes (pinned shards, shards whose "
                        f"only copy is local, the index and the largest other shard). Raise "
                        f"`cache_limit` by at least {need - self.cache_limit} bytes or pin "
                        f"fewer shards.")
            pinned[shards] = 1
        if fetch:
            for shard in shards.tolist():
                self.prepare(shard)

    def unpin(self, shard_ids: Sequence[int] | np.ndarray) -> None:
        """Let shards be evicted again.

        Raises:
            ValueError: an id out of range; nothing is unpinned then.
        """
        shards = self.checked_ids(shard_ids)
        with self.claims.lock:
            self.pinned.numpy()[shards] = 0

    def checked_ids(self, shard_ids: Sequence[int] | np.ndarray | int) -> np.ndarray:
        """`shard_ids` as sorted unique int64 ids, each checked to name a shard (a negative id
        would count from the end in numpy, silently naming another shard).

        Raises:
            ValueError: an id out of range, or one that is not an integer.
        """
        given = np.atleast_1d(np.asarray(shard_ids))
        if given.dtype.kind not in "iub" and len(given):
            raise ValueError(f"Shard ids must be integers, got {given.tolist()}.")
        shards = np.unique(given.astype(np.int64))
        if len(shards) and (shards[0] < 0 or shards[-1] >= len(self.shards)):
            raise ValueError(f"Shard ids must be in [0, {len(self.shards)}), got "
                             f"{shards.tolist()}.")
        return shards
