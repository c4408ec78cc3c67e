"""When the node's workers need each shard next: what future-aware eviction ranks shards by.

The node's plan for an epoch is fixed before it starts (`EpochUses.set_order`); with how far each
worker has read (its published progress), the next use of every shard follows. The schedule is
worked out only when a shard must be evicted, once per epoch, and shards this epoch no longer
needs are ranked by their first use in the next epoch (planned for the same world, once, only
if the cache looks that far). Pure bookkeeping over numpy arrays: no I/O, no shared state.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from streaming.order.next_use import NEVER, UseCursor, UseSchedule

__all__ = ["EpochUses", "Locate"]

Locate = Callable[[np.ndarray], "tuple[np.ndarray, np.ndarray]"]


class EpochUses:
    """The next use of each of `num_shards` shards by one node, epoch after epoch."""

    def __init__(self, num_shards: int) -> None:
        self.num_shards = num_shards
        self._order: tuple[np.ndarray, Locate] | None = None
        self._following: Callable[[], np.ndarray] | None = None
        self._schedule: UseCursor | None = None  # this epoch's, kept in place as it advances
        self._next_schedule: UseSchedule | None = None

    def set_order(self, node_ids: np.ndarray, locate: Locate,
                  following: Callable[[], np.ndarray] | None = None) -> None:
        """The node's sample ids of this epoch, one row per worker (-1 padding).

        Kept as given (a view of the shared plan). `following` gives the next epoch's rows the
        same way, called at most once.
        """
        self._order = (node_ids, locate)
        self._following = following
        self._schedule = self._next_schedule = None

    def _build(self, node_ids: np.ndarray, locate: Locate) -> UseSchedule:
        rows = np.atleast_2d(node_ids)
        shards = np.full(rows.shape, -1, np.int64)
        used = rows >= 0
        shards[used] = locate(rows[used])[0]
        return UseSchedule.build(shards, self.num_shards)

    def next_uses(self, progress: np.ndarray) -> np.ndarray | None:
        """Per shard, the position at which the node's workers need it next, given each
        worker's `progress` (-1: not reading); None before any order was set."""
        if self._order is None:
            return None
        node_ids, locate = self._order
        if self._schedule is None:
            self._schedule = UseCursor(self._build(node_ids, locate))
        reading = progress[progress >= 0]
        uses = self._schedule.next_use(int(reading.min()) if len(reading) else 0)
        done = uses == NEVER
        if done.any() and self._following is not None:
            if self._next_schedule is None:
                self._next_schedule = self._build(self._following(), locate)
            later = self._next_schedule.next_use(0)[done]
            length = np.atleast_2d(node_ids).shape[1]  # this epoch ends at this position
            uses[done] = np.where(later == NEVER, NEVER, later + length)
        return uses
