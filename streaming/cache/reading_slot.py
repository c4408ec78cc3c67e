"""How one worker tells its node's cache what it reads: the shard in its slot (never evicted
meanwhile), its place in the epoch (the clock of future-aware eviction) and access stamps (for
recency). One array store per call, on views made once in the worker process.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from streaming.cache.node_cache import NodeCache

__all__ = ["IN_USE_SLOTS", "ReadingSlot", "holding"]

#: Per-node slots where workers publish the shard they are reading (never evicted meanwhile).
IN_USE_SLOTS = 4096
#: The upper half is for reads outside an epoch's iteration (`holding`), one slot per thread.
_HOLD_SLOTS = IN_USE_SLOTS // 2


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


@contextmanager
def holding(cache: NodeCache, shard: int) -> Iterator[None]:
    """Keep `shard` from being evicted while a random access fetches it and opens it.

    Without this, a shard fetched for `dataset[i]` was a fine victim for any other fetch of
    the node in the instant before it was opened (under future-aware eviction the first one:
    the epoch's order does not need it soon), and a read racing an iteration under a tight
    `cache_limit` could lose it on every retry. Each thread of each process takes a slot of the
    upper half (workers use the lower one); two threads hashed to one slot only share the
    protection, and the slot is cleared only if it still holds this shard.
    """
    slot = _HOLD_SLOTS + hash((os.getpid(), threading.get_ident())) % _HOLD_SLOTS
    in_use = cache.in_use.numpy()
    in_use[slot] = shard
    try:
        yield
    finally:
        if in_use[slot] == shard:
            in_use[slot] = -1
