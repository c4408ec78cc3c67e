"""`NodeCache`'s eviction: what it deletes to make room, and the user's own eviction calls.

A mixin, as `PinnedShards` and `NodeMetrics` are: the node's shared tables it reads are made by
`NodeCache.__init__`. Which shards to evict is the pure decision of `eviction.py`; here is
which shards may go (`_evictable`: those with a remote, unpinned, not in use), the
bookkeeping of an eviction, and waiting for room that fetches in flight will free.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.cache.epoch_uses import EpochUses, Locate
from streaming.cache.eviction import (
    CacheFullError,
    choose_evictions,
    nothing_to_evict,
    rank_evictions,
)
from streaming.coord import Event, Outcome, ShardState
from streaming.coord.claims import CHANGES
from streaming.coord.wait import Deadline, wait_until

if TYPE_CHECKING:
    from streaming.coord.array import SharedArray
    from streaming.coord.claims import ShardClaims
    from streaming.coord.scalar import SharedScalar

__all__ = ["NEVER_ACCESSED", "NodeEviction", "PutOff"]

#: The access time of a shard not in the cache (`access_times`): colder than any.
NEVER_ACCESSED = np.iinfo(np.uint64).max


class PutOff(Exception):
    """A prefetch would evict a shard needed sooner than the one it fetches: not now."""


class NodeEviction:
    """`NodeCache`'s eviction (see the module doc)."""

    claims: ShardClaims
    shards: Any  # ShardReaders
    info: Any  # per-shard facts (`has_remote`)
    cache_limit: int | None
    fetch_wait: float
    future_aware: bool
    usage: SharedScalar
    counted: SharedArray  # int64 per shard: what it adds to `usage`
    pinned: SharedArray  # uint8 per shard
    in_use: SharedArray  # int64 slots: shards being read
    access_times: SharedArray  # uint64 per shard
    evictions: SharedArray  # int64 per shard, then the node's total
    progress: SharedArray  # int64 slots: each reader's place in the epoch
    counters: Any  # this process's metrics row
    _uses: EpochUses
    checked_ids: Callable[[Any], np.ndarray]  # PinnedShards': ids checked against the shards

    def set_epoch_order(self, node_ids: np.ndarray, locate: Locate,
                        following: Callable[[], np.ndarray] | None = None) -> None:
        """The node's sample ids of this epoch, one row per worker (-1 padding), for eviction
        (see `EpochUses.set_order`; `following` gives the next epoch's rows)."""
        self._uses.set_order(node_ids, locate, following)

    def next_uses(self) -> np.ndarray | None:
        """Per shard, the position at which the node's workers need it next (None: no order)."""
        return self._uses.next_uses(self.progress.numpy()) if self.future_aware else None

    def _reserve(self, needed: int, shard: int, put_off: bool) -> None:
        """Make room for `shard`'s `needed` bytes, as `_make_room`, when room can be made.

        Room held by fetches in flight (their reservations) frees up when they finish: a read
        that cannot wait for the prefetcher waits for them instead of failing, and only fails
        when nothing is in flight (the limit is really too small for what is in use). A
        prefetch is put off instead.
        """
        deadline = Deadline(self.fetch_wait)
        seen = CHANGES.generation

        def poll() -> bool | None:
            nonlocal seen
            seen = CHANGES.generation  # a fetch of this process finishing wakes the sleep
            try:
                self._make_room(needed, exclude=shard, put_off=put_off)
                return True
            except CacheFullError:
                if put_off:
                    raise PutOff() from None
                states = self.claims.states.numpy()
                in_flight = np.flatnonzero(states == ShardState.PREPARING)
                if not len(in_flight[in_flight != shard]) or deadline.remaining() <= 0:
                    raise  # the limit's own error, not a timeout of the wait
                return None

        wait_until(poll, timeout=math.inf, what="room in the cache",
                   sleep=lambda seconds: CHANGES.sleep(seconds, seen))

    def _make_room(self, needed: int, exclude: int = -1, put_off: bool = False) -> None:
        limit = int(self.cache_limit or 0)
        with self.claims.lock:
            if int(self.usage.get()) + needed <= limit:  # the usual case: no eviction
                self.usage.add(needed, None)
                return
        next_use = self.next_uses()  # outside the lock: may build the epoch's schedule
        with self.claims.lock:
            victims = choose_evictions(
                # What evicting each frees: a prepared shard holds its raw form only, less
                # than the raw + zip bytes reserved for it while it was fetched.
                size_bytes=self.counted.numpy(),
                resident=self.claims.states.numpy() == ShardState.LOCAL,
                evictable=self._evictable(exclude),
                last_access=self.access_times.numpy(),
                usage_bytes=int(self.usage.get()),
                limit_bytes=limit,
                needed_bytes=needed,
                next_use=next_use,
            )
            if (put_off and next_use is not None and exclude >= 0 and len(victims)
                    and int(next_use[victims].min()) < int(next_use[exclude])):
                raise PutOff()
            for victim in victims.tolist():
                self._evict_locked(victim)
            self.usage.add(needed, None)  # the reservation

    def _evictable(self, exclude: int = -1) -> np.ndarray:
        """Per shard, whether the cache may delete it (called with `claims.lock` held): it has a
        remote to fetch it from again, is not pinned and is not in use (nor `exclude`)."""
        evictable = self.info.has_remote & (self.pinned.numpy() == 0)
        in_use = self.in_use.numpy()
        evictable[in_use[in_use >= 0]] = False
        if exclude >= 0:
            evictable[exclude] = False
        return evictable

    def _evict_locked(self, shard: int) -> None:
        was_local = self.claims.states.numpy()[shard] == ShardState.LOCAL
        outcome = self.claims.apply(shard, Event.EVICT)
        if outcome is Outcome.BUSY:
            return
        self.shards[shard].evict()  # stray files of a shard never made local go too
        if not was_local:  # nothing was evicted: no count, no mapping to let go of
            return
        evictions = self.evictions.numpy()
        evictions[shard] += 1
        evictions[-1] += 1  # what `HeldMappings` looks at to know whether to look further
        self.access_times.numpy()[shard] = NEVER_ACCESSED
        counted = self.counted.numpy()
        self.counters.add_many({"evictions": 1, "evicted_bytes": int(counted[shard])})
        usage = int(self.usage.get()) - int(counted[shard])
        counted[shard] = 0
        if usage < 0:
            raise RuntimeError(f"Negative cache usage: {usage}.")
        self.usage.set(usage)

    def evict(self, shard: int) -> None:
        """Delete a shard's files from the cache and mark it remote."""
        with self.claims.lock:
            self._evict_locked(shard)

    def evict_on_request(self, shard_id: int) -> None:
        """`evict` for a user's `evict_shard`: the id checked, and a shard that has no remote
        refused (its files are the only copy of its samples).

        Raises:
            ValueError: as said.
        """
        (shard,) = self.checked_ids(shard_id).tolist()
        if not self.info.has_remote[shard]:
            raise ValueError(
                f"Shard {shard} has no remote: its files in the local directory are the only "
                f"copy of its samples, so evicting it would delete them. Evict only shards of "
                f"streams with a `remote`.")
        self.evict(shard)

    def evict_coldest(self) -> int:
        """Evict the shard the cache would evict next to make room (never a pinned one, one in
        use, or the only copy of a shard with no remote); returns its id.

        Raises:
            CacheFullError: no shard qualifies.
        """
        next_use = self.next_uses()
        with self.claims.lock:
            ranked = rank_evictions(resident=self.claims.states.numpy() == ShardState.LOCAL,
                                    evictable=self._evictable(),
                                    last_access=self.access_times.numpy(), next_use=next_use)
            if not len(ranked):
                raise nothing_to_evict("no cached shard that can be fetched again is unpinned "
                                       "and out of use.")
            shard = int(ranked[0])
            self._evict_locked(shard)
        return shard
