"""The node's shard cache: which shards are local, who fetches which, what to evict.

Ties the shared claim table (`streaming.coord`) to the file work (`prepare_shard_files`) and the
eviction policy (`choose_evictions`). One instance per dataset per process; all instances of a
node share state through the dataset's namespace, so each shard is fetched once per node.

Eviction knows the future: each epoch's order is fixed before it starts, so the cache is given
the node's plan (`set_epoch_order`) and every worker publishes how far it has read (per chunk).
Under pressure the shard needed furthest ahead (never again first) goes, least recently used
among equals, and a prefetch that would have to evict a shard needed sooner than the one it
fetches is put off (the reader fetches it when it gets there). `STREAMING_EVICTION=lru` turns
the future off (least recently used only), for comparison.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.cache.epoch_uses import EpochUses
from streaming.cache.eviction import (
    future_aware_policy,
)
from streaming.cache.node_eviction import NEVER_ACCESSED, NodeEviction, PutOff
from streaming.cache.node_metrics import NodeMetrics
from streaming.cache.pinning import PinnedShards
from streaming.cache.prepare import PrepareResult, ShardSource, prepare_shard_files, unavailable
from streaming.cache.reading_slot import IN_USE_SLOTS, ReadingSlot
from streaming.coord import Namespace, Outcome, ShardState
from streaming.defaults import NODE_WAIT_TIMEOUT
from streaming.errors import ShardUnavailableError
from streaming.format.shard_readers import ShardReaders
from streaming.retries import attempts_of
from streaming.storage.transfer import TransferError
from streaming.storage.urls import scheme_of

if TYPE_CHECKING:
    from streaming.format.reader import Reader

__all__ = ["IN_USE_SLOTS", "NodeCache", "ReadingSlot"]  # the last two from reading_slot.py



@dataclass(frozen=True)
class _ShardInfo:
    """Per-shard facts the cache needs, as arrays (index = global shard id)."""

    stream_ids: np.ndarray  # int64
    cache_bytes: np.ndarray  # int64: raw + zip bytes, the most a shard can occupy
    has_remote: np.ndarray  # bool: can be fetched again after eviction


class NodeCache(PinnedShards, NodeMetrics, NodeEviction):
    """Prepare, account for and evict shards on behalf of every process of a node."""

    def __init__(self, namespace: Namespace, shards: Sequence[Reader],
                 sources: Sequence[Callable[[], ShardSource]], stream_ids: np.ndarray,
                 cache_limit: int | None) -> None:
        self.namespace = namespace
        self.shards = shards if isinstance(shards, ShardReaders) else ShardReaders.from_readers(
            shards)
        self.sources = list(sources)  # per stream; called lazily (stores open per process)
        # Per stream, then spread over shards: building a source per shard costs ~5 us each.
        built = [src() for src in sources]
        self.info = _ShardInfo(
            stream_ids=stream_ids,
            cache_bytes=self.shards.max_bytes,
            has_remote=np.array([src.store is not None for src in built], bool)[stream_ids],
        )
        self.cache_limit = cache_limit
        # The longest a read waits for fetches of other threads or processes of the node (of
        # its shard, or that hold the room it needs): each ends within its stream's attempts
        # (`download_retry` x `download_timeout`, plus backoff), so a fetch slower than the
        # node's usual wait is waited for, not given up on.
        self.fetch_wait = NODE_WAIT_TIMEOUT + max(
            (src.retries * (src.timeout + 2 ** src.retries) for src in built
             if src.store is not None), default=0.0)
        self.future_aware = future_aware_policy()
        n = len(self.shards)
        with namespace.batch():  # one registry write for the node's tables
            self.claims = namespace.claims(n)
            self.access_times = namespace.array("access_times", np.uint64, n, fill=NEVER_ACCESSED)
            self.usage = namespace.scalar("cache_usage")
            # What each shard contributes to `usage`: measured after every preparation and given
            # back whole on eviction, so files deleted behind the cache's back never leak into it.
            self.counted = namespace.array("counted_bytes", np.int64, n, fill=0)
            self.in_use = namespace.array("in_use", np.int64, IN_USE_SLOTS, fill=-1)
            # How many times each shard was evicted, then the node's total: a worker's mapping
            # of a shard evicted (and maybe fetched again) since holds a deleted file.
            self.evictions = namespace.array("evictions", np.int64, n + 1, fill=0)
            # Shards the user asked to keep resident (`pin`): never evicted while pinned.
            self.pinned = namespace.array("pinned", np.uint8, n, fill=0)
            # How far each reading worker is in its list of the epoch (-1: not reading).
            self.progress = namespace.array("progress", np.int64, IN_USE_SLOTS, fill=-1)
            # The node's runtime counters (`streaming.metrics`, egress too): a row per process.
            self._open_metrics(namespace, IN_USE_SLOTS, n,
                               [scheme_of(src.store.url) if src.store is not None else ""
                                for src in built])
        self._uses = EpochUses(n)  # when each shard is needed next (future-aware eviction)
        # This process's background fetches that used up their attempts: (when, error).
        self._gave_up: dict[int, tuple[float, TransferError]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_counters"] = None  # a view of shared memory and a lock: made again on use
        state["_gave_up"] = {}
        return state

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
        if self.cache_limit is not None:  # a smaller limit than last run's: shrink now
            self._make_room(0)

    # ------------------------------------------------------------------------------- prepare

    def is_local(self, shard: int) -> bool:
        return self.claims.state(shard) == ShardState.LOCAL

    def all_local(self) -> bool:
        """Whether every shard of the node is local now (one pass over the state table)."""
        return bool((self.claims.states.numpy() == ShardState.LOCAL).all())

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
            return self._run_prepare(shard)
        since = time.monotonic()
        self.claims.ensure(shard, lambda: self._fetch_unless_given_up(shard, since),
                           self.fetch_wait, reprepare=force)
        self._gave_up.pop(shard, None)  # local now: an old failure concerns no one
        self.touch(shard)
        return True

    def _fetch_unless_given_up(self, shard: int, since: float) -> Callable[[], None]:
        """`_fetch`, unless a fetch of `shard` in this process (a prefetch, or another thread's
        read) used up every attempt while this reader waited for it: its error is this
        reader's too (the user's `download_retry` attempts were made; each waiting thread
        starting them all again made the last of 16 threads wait 16 times as long)."""
        gave_up = self._gave_up.get(shard)
        if gave_up is not None and gave_up[0] >= since:
            raise gave_up[1]
        try:
            return self._fetch(shard)
        except TransferError as err:
            self._gave_up[shard] = (time.monotonic(), err)
            raise

    def claim_ahead(self, shard: int) -> bool:
        """Claim `shard` for a preparation this process will run soon (`prepare_claimed`), so
        that a reader asking for it meanwhile waits for that one instead of starting its own.

        Returns:
            Whether the claim was granted (False: local already, or another fetch has it).
        """
        return self.claims.claim(shard) is Outcome.GRANTED

    def prepare_claimed(self, shard: int) -> bool:
        """Run the preparation of a shard claimed by `claim_ahead` (a prefetch: it may be put
        off). Returns whether the shard is local now."""
        return self._run_prepare(shard)

    def release_claim(self, shard: int) -> None:
        """Give back a claim taken by `claim_ahead` that will not be prepared."""
        self.claims.finish(shard, ok=False)

    def _run_prepare(self, shard: int) -> bool:
        try:
            account = self._fetch(shard, put_off=True)
        except PutOff:
            self.claims.finish(shard, ok=False)
            return False
        except BaseException as err:
            if isinstance(err, TransferError):
                self._gave_up[shard] = (time.monotonic(), err)
            self.claims.finish(shard, ok=False)
            raise
        self._gave_up.pop(shard, None)
        self.claims.finish(shard, ok=True, also=account)
        return True

    def _fetch(self, shard: int, put_off: bool = False) -> Callable[[], None]:
        """The preparation itself; runs while this process holds the shard's claim.

        With a cache limit, room for the shard's largest form is reserved (counted in the usage)
        before fetching, so concurrent fetches can never overshoot the limit together. With
        `put_off` (a prefetch), `PutOff` is raised instead when making room would evict a shard
        needed sooner than this one.

        Returns:
            The usage accounting, for the claims to run under the lock acquisition
            that marks the shard LOCAL (one acquisition per shard instead of two).
        """
        reserved = 0
        if self.cache_limit is not None:
            reserved = int(self.info.cache_bytes[shard])
            self._reserve(reserved, shard, put_off)
        files = self.shards[shard].files
        source = self.sources[int(self.info.stream_ids[shard])]()
        try:
            result: PrepareResult = prepare_shard_files(source, files)
        except BaseException as err:
            if isinstance(err, Exception):
                self.counters.fetch_failed(self._schemes[int(self.info.stream_ids[shard])],
                                           attempts_of(err))
            if reserved:
                self._add_usage(-reserved)
            if isinstance(err, FileNotFoundError) and not isinstance(err, ShardUnavailableError):
                raise unavailable(shard, files, source, err) from err
            raise
        self.touch(shard)
        self._count_prepare(shard, int(self.info.stream_ids[shard]), result)
        resident = files.resident_bytes()

        def account() -> None:  # called with `claims.lock` held
            counted = self.counted.numpy()
            self.usage.add(resident - int(counted[shard]) - reserved, None)
            counted[shard] = resident

        return account

    def raw_present(self, shard: int) -> bool:
        """Whether every readable file of `shard` is on disk (a few `stat` calls)."""
        return self.shards[shard].files.raw_present()

    def _add_usage(self, delta: int) -> None:
        self.usage.add(delta, self.claims.lock)
