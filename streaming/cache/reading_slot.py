"""How one worker tells its node's cache what it reads: the shard in its slot (never evicted
meanwhile), its place in the epoch (the clock of future-aware eviction) and access stamps (for
recency). One array store per call, on views made once in the worker process.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from streaming.cache.node_cache import NodeCache

__all__ = ["IN_USE_SLOTS", "ReadingSlot"]

#: Per-node slots where workers publish the shard they are reading (never evicted meanwhile).
IN_USE_SLOTS = 4096


class ReadingSlot:
    """How one worker tells the node cache what it reads: one array store per call.

    Made in the worker process (it keeps that process's views of the shared arrays). The shard
    in the slot is never evicted; the access stamps drive least-recently-used eviction.
    """

    __slots__ = ("_access", "_in_use", "_progress", "_slot")

    def __init__(self, cache: NodeCache, slot: int) -> None:
        self._slot = slot % IN_USE_SLOTS
        self._in_use = cache.in_use.numpy()
        self._access = cache.access_times.numpy()
        self._progress = cache.progress.numpy()

    def enter(self, shard: int, position: int) -> None:
        """This worker reads `shard` from `position` of its list of the epoch on (the clock of
        future-aware eviction advances with every shard change)."""
        self._in_use[self._slot] = shard
        self._progress[self._slot] = position

    def leave(self) -> None:
        """This worker reads no shard (its epoch ended or was abandoned)."""
        self._in_use[self._slot] = -1
        self._progress[self._slot] = -1

    def stamp(self, shard_ids: np.ndarray) -> None:
        """The shards of a chunk are used now."""
        self._access[shard_ids] = time.time_ns()
