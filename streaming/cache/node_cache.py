"""The node's shard cache: which shards are local, who fetches which, what to evict.

Ties the shared claim table (`streaming.coord`) to the file work (`prepare_shard_files`) and the
eviction policy (`choose_evictions`). One instance per dataset per process; all instances of a
node share state through the dataset's namespace, so each shard is fetched once per node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.cache.eviction import choose_evictions
from streaming.cache.prepare import PrepareResult, ShardSource, prepare_shard_files, unavailable
from streaming.coord import Event, Namespace, Outcome, ShardState
from streaming.errors import ShardUnavailableError

if TYPE_CHECKING:
    from streaming.format.reader import Reader

__all__ = ["IN_USE_SLOTS", "NodeCache", "ReadingSlot"]

#: Per-node slots where workers publish the shard they are reading (never evicted meanwhile).
IN_USE_SLOTS = 4096
_NEVER = np.iinfo(np.uint64).max


@dataclass(frozen=True)
class _ShardInfo:
    """Per-shard facts the cache needs, as arrays (index = global shard id)."""

    stream_ids: np.ndarray  # int64
    cache_bytes: np.ndarray  # int64: raw + zip bytes, the most a shard can occupy
    has_remote: np.ndarray  # bool: can be fetched again after eviction


class NodeCache:
    """Prepare, account for and evict shards on behalf of every process of a node."""

    def __init__(self, namespace: Namespace, shards: Sequence[Reader],
                 sources: Sequence[Callable[[], ShardSource]], stream_ids: np.ndarray,
                 cache_limit: int | None) -> None:
        self.namespace = namespace
        self.shards = list(shards)
        self.sources = list(sources)  # per stream; called lazily (stores open per process)
        # Per stream, then spread over shards: building a source per shard costs ~5 us each.
        built = [src() for src in sources]
        self.info = _ShardInfo(
            stream_ids=stream_ids,
            cache_bytes=np.array([s.get_max_size() for s in shards], np.int64),
            has_remote=np.array([src.store is not None for src in built], bool)[stream_ids],
        )
        self.cache_limit = cache_limit
        n = len(self.shards)
        self.claims = namespace.claims(n)
        self.access_times = namespace.array("access_times", np.uint64, n, fill=_NEVER)
        self.usage = namespace.scalar("cache_usage")
        # What each shard contributes to `usage`: measured after every preparation and given
        # back whole on eviction, so files deleted behind the cache's back never leak into it.
        self.counted = namespace.array("counted_bytes", np.int64, n, fill=0)
        self.fetched_bytes = namespace.scalar("fetched_bytes")
        self.fetch_nanos = namespace.scalar("fetch_nanos")
        self.in_use = namespace.array("in_use", np.int64, IN_USE_SLOTS, fill=-1)

    # ------------------------------------------------------------------------------- start-up

    def set_up(self, index_bytes: int, present_bytes: np.ndarray) -> None:
        """Record what the cache holds at start-up (call once, by the node's first process)."""
        states = self.claims.states.numpy()
        with self.claims.lock:
            states[:] = np.where(present_bytes > 0, ShardState.LOCAL, ShardState.REMOTE)
            now = time.time_ns()
            self.access_times.numpy()[present_bytes > 0] = now
            self.counted.numpy()[:] = present_bytes
            self.usage.set(int(index_bytes + present_bytes.sum()))

    # ------------------------------------------------------------------------------- prepare

    def is_local(self, shard: int) -> bool:
        return self.claims.state(shard) == ShardState.LOCAL

    def touch(self, shard: int) -> None:
        """Stamp a use of `shard` (for least-recently-used eviction)."""
        self.access_times.numpy()[shard] = time.time_ns()

    def reading_slot(self, slot: int) -> ReadingSlot:
        """The bookkeeping handle of the worker reading in `slot` (see `ReadingSlot`)."""
        return ReadingSlot(self, slot)

    def prepare(self, shard: int, *, blocking: bool = True, force: bool = False) -> bool:
        """Make `shard` local, fetching it here unless another process already is.

        Args:
            shard: global shard id.
            blocking: wait for another process's fetch; if False, return at once instead.
            force: re-check the files of a shard marked local (it was deleted behind our back).
                A blocking call re-checks by itself when a raw file of a local shard is gone.

        Returns:
            Whether the shard is local now (always True when blocking).
        """
        if blocking and not force and self.is_local(shard) and not self.raw_present(shard):
            force = True
        if not blocking:
            outcome = self.claims.claim(shard, reprepare=force)
            if outcome is not Outcome.GRANTED:
                return outcome is Outcome.READY
            self._run_prepare(shard)
            return True
        self.claims.ensure(shard, lambda: self._fetch(shard), reprepare=force)
        self.touch(shard)
        return True

    def _run_prepare(self, shard: int) -> None:
        try:
            account = self._fetch(shard)
        except BaseException:
            self.claims.finish(shard, ok=False)
            raise
        self.claims.finish(shard, ok=True, also=account)

    def _fetch(self, shard: int) -> Callable[[], None]:
        """The preparation itself; runs while this process holds the shard's claim.

        With a cache limit, room for the shard's largest form is reserved (counted in the usage)
        before fetching, so concurrent fetches can never overshoot the limit together.

        Returns:
            The usage and egress accounting, for the claims to run under the lock acquisition
            that marks the shard LOCAL (one acquisition per shard instead of two).
        """
        reserved = 0
        if self.cache_limit is not None:
            reserved = int(self.info.cache_bytes[shard])
            self._make_room(reserved, exclude=shard)
        files = self.shards[shard].files
        source = self.sources[int(self.info.stream_ids[shard])]()
        try:
            result: PrepareResult = prepare_shard_files(source, files)
        except BaseException as err:
            if reserved:
                self._add_usage(-reserved)
            if isinstance(err, FileNotFoundError) and not isinstance(err, ShardUnavailableError):
                raise unavailable(shard, files, source, err) from err
            raise
        self.touch(shard)
        resident = files.resident_bytes()

        def account() -> None:  # called with `claims.lock` held
            counted = self.counted.numpy()
            self.usage.set(self.usage.get() + resident - int(counted[shard]) - reserved)
            counted[shard] = resident
            self.fetched_bytes.set(self.fetched_bytes.get() + result.fetched_bytes)
            self.fetch_nanos.set(self.fetch_nanos.get() + int(result.fetch_seconds * 1e9))

        return account

    def raw_present(self, shard: int) -> bool:
        """Whether every readable file of `shard` is on disk (a few `stat` calls)."""
        return self.shards[shard].files.raw_present()

    def _add_usage(self, delta: int) -> None:
        with self.claims.lock:
            self.usage.set(self.usage.get() + delta)

    # ------------------------------------------------------------------------------- eviction

    def _make_room(self, needed: int, exclude: int = -1) -> None:
        with self.claims.lock:
            states = self.claims.states.numpy()
            evictable = self.info.has_remote.copy()
            in_use = self.in_use.numpy()
            evictable[in_use[in_use >= 0]] = False
            if exclude >= 0:
                evictable[exclude] = False
            victims = choose_evictions(
                size_bytes=self.info.cache_bytes,
                resident=states == ShardState.LOCAL,
                evictable=evictable,
                last_access=self.access_times.numpy(),
                usage_bytes=int(self.usage.get()),
                limit_bytes=int(self.cache_limit or 0),
                needed_bytes=needed,
            )
            for victim in victims.tolist():
                self._evict_locked(victim)
            self.usage.set(self.usage.get() + needed)  # the reservation

    def _evict_locked(self, shard: int) -> None:
        outcome = self.claims.apply(shard, Event.EVICT)
        if outcome is Outcome.BUSY:
            return
        self.shards[shard].evict()
        self.access_times.numpy()[shard] = _NEVER
        counted = self.counted.numpy()
        usage = int(self.usage.get()) - int(counted[shard])
        counted[shard] = 0
        if usage < 0:
            raise RuntimeError(f"Negative cache usage: {usage}.")
        self.usage.set(usage)

    def evict(self, shard: int) -> None:
        """Delete a shard's files from the cache and mark it remote."""
        with self.claims.lock:
            self._evict_locked(shard)

    def evict_coldest(self) -> int:
        """Evict the least recently used local shard; returns its id."""
        with self.claims.lock:
            states = self.claims.states.numpy()
            local = np.flatnonzero(states == ShardState.LOCAL)
            if not len(local):
                raise ValueError(
                    "Attempted shard eviction, but there are no shards present locally to "
                    "evict. Your cache limit may be too low."
                )
            shard = int(local[np.argmin(self.access_times.numpy()[local])])
            self._evict_locked(shard)
        return shard

    def egress(self) -> dict[str, Any]:
        """Bytes and seconds this node spent fetching shards so far."""
        return {"bytes": int(self.fetched_bytes.get()),
                "seconds": int(self.fetch_nanos.get()) / 1e9}


class ReadingSlot:
    """How one worker tells the node cache what it reads: one array store per call.

    Made in the worker process (it keeps that process's views of the shared arrays). The shard
    in the slot is never evicted; the access stamps drive least-recently-used eviction.
    """

    __slots__ = ("_access", "_in_use", "_slot")

    def __init__(self, cache: NodeCache, slot: int) -> None:
        self._slot = slot % IN_USE_SLOTS
        self._in_use = cache.in_use.numpy()
        self._access = cache.access_times.numpy()

    def enter(self, shard: int) -> None:
        """This worker reads `shard` from now on."""
        self._in_use[self._slot] = shard

    def leave(self) -> None:
        """This worker reads no shard."""
        self._in_use[self._slot] = -1

    def stamp(self, shard_ids: np.ndarray) -> None:
        """The shards of a chunk are used now."""
        self._access[shard_ids] = time.time_ns()
