"""One node's cache in the model, deciding with the runtime's own eviction rule.

Mirrors `streaming.cache.node_cache.NodeCache` step for step, on arrays instead of files and
shared memory: a fetch reserves the shard's largest form first (making room if needed), a
prefetch that would have to evict a shard needed sooner than its own is put off, the victims are
chosen by `choose_evictions` with next uses from `UseSchedule` at the slowest reader's position,
and once prepared a shard counts its resident bytes. States and counters are what the real
node's metrics report (`fetch_bytes`, `evictions`, `refetches`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from streaming.cache.eviction import CacheFullError, choose_evictions
from streaming.order.next_use import NEVER, UseCursor, UseSchedule

__all__ = ["FETCHING", "LOCAL", "REMOTE", "SimNodeCache"]

REMOTE, FETCHING, LOCAL = 0, 1, 2


class SimNodeCache:
    """States, usage and counters of one node's cache."""

    def __init__(self, cache_bytes: np.ndarray, resident_bytes: np.ndarray, index_bytes: int,
                 limit: int | None) -> None:
        n = len(cache_bytes)
        self.cache_bytes, self.resident_bytes, self.limit = cache_bytes, resident_bytes, limit
        self.state = np.zeros(n, np.int8)
        self.counted = np.zeros(n, np.int64)
        self.last_access = np.zeros(n, np.float64)
        self.fetched_once = np.zeros(n, bool)
        self.reserved = np.zeros(n, np.int64)
        self.usage = int(index_bytes)
        self.peak = self.usage
        self.evictions = self.evicted_bytes = self.refetches = 0
        self.schedule: UseCursor | None = None
        self._make_schedule: Callable[[], UseSchedule] | None = None
        self.later: Callable[[], UseSchedule | None] | None = None
        self._later: UseSchedule | None = None
        self.epoch_length = 0
        self._memo: tuple[int, np.ndarray] | None = None
        self.holding = np.zeros(n, np.int32)  # readers reading each shard now: not evictable
        self.progress: Callable[[], int] = lambda: 0

    def new_epoch(self, schedule: Callable[[], UseSchedule], length: int,
                  later: Callable[[], UseSchedule | None]) -> None:
        """How to get this epoch's schedule of next uses (built the first time an eviction
        needs it, as the runtime does), its length, and how to get the next epoch's."""
        self._make_schedule, self.schedule = schedule, None
        self.epoch_length, self.later, self._later = length, later, None
        self._memo = None

    def next_uses(self) -> np.ndarray | None:
        """Per shard, the position the node's readers need it next (None: no schedule).

        The same for every decision until the slowest reader moves, so it is kept until then
        (a full node puts many prefetches off in a row, each asking again).
        """
        if self.schedule is None:
            if self._make_schedule is None:
                return None
            self.schedule = UseCursor(self._make_schedule())
        now = self.progress()
        step = self.schedule.schedule.step(now)  # the answer changes only between steps
        if self._memo is not None and self._memo[0] == step:
            return self._memo[1]
        uses = self.schedule.next_use(now)
        done = uses == NEVER
        if done.any() and self.later is not None:
            if self._later is None:
                self._later = self.later()
                self.later = None if self._later is None else self.later
            if self._later is not None:
                after = self._later.next_use(0)[done]
                uses[done] = np.where(after == NEVER, NEVER, after + self.epoch_length)
        self._memo = (step, uses)
        return uses

    def reserve(self, shard: int, put_off: bool) -> bool:
        """Reserve room for `shard` before fetching it, evicting as the runtime would.

        Returns:
            False when a prefetch is put off (or cannot make room): it fetches nothing now.

        Raises:
            CacheFullError: a read that cannot wait finds nothing evictable to make room.
        """
        needed = int(self.cache_bytes[shard])
        if self.limit is None or self.usage + needed <= self.limit:
            self._take(shard, needed)
            return True
        uses = self.next_uses()
        evictable = self.holding == 0
        evictable[shard] = False
        try:
            victims = choose_evictions(
                size_bytes=self.counted, resident=self.state == LOCAL, evictable=evictable,
                last_access=self.last_access, usage_bytes=self.usage, limit_bytes=self.limit,
                needed_bytes=needed, next_use=uses)
        except CacheFullError:
            if put_off:
                return False
            raise
        if put_off and uses is not None and len(victims) and int(uses[victims].min()) < int(
                uses[shard]):
            return False
        for victim in victims.tolist():
            self.usage -= int(self.counted[victim])
            self.evicted_bytes += int(self.counted[victim])
            self.counted[victim] = 0
            self.state[victim] = REMOTE
            self.evictions += 1
        self._take(shard, needed)
        return True

    def _take(self, shard: int, needed: int) -> None:
        if self.limit is not None:
            self.usage += needed
            self.reserved[shard] = needed
        self.state[shard] = FETCHING
        self.peak = max(self.peak, self.usage)

    def fetched(self, shard: int, now: float) -> None:
        """`shard` is prepared: it counts its resident bytes instead of its reservation."""
        resident = int(self.resident_bytes[shard])
        if self.limit is None:
            self.usage += resident
        else:
            self.usage += resident - int(self.reserved[shard])
            self.reserved[shard] = 0
        self.counted[shard] = resident
        self.state[shard] = LOCAL
        self.last_access[shard] = now
        if self.fetched_once[shard]:
            self.refetches += 1
        self.fetched_once[shard] = True
        self.peak = max(self.peak, self.usage)
