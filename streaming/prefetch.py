"""Prepare one worker's shards ahead of its reads, with as many fetches at once as the link
rewards.

The prefetcher walks the worker's shards in first-use order and prepares each (download,
decompression, hash check: all off the consumer's thread) at most `window` samples ahead of the
consumer. A shard already local, with no cache limit that could evict it before its use, is
passed over at once: over a warm cache the threads end early instead of polling the consumer's
progress all epoch (about 1% of an in-order read of 100 KB images).

How many shards it prepares at once is not a fixed count: one at a time leaves a high-latency
link idle between requests (many small shards from a far bucket), while several at once on a
local copy only add contention. `LinkSizer` measures instead: it doubles the count while doing
so raises the bytes per second fetched by a clear margin, and settles on the best count once it
stops paying.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from streaming.errors import HashAlgorithmError

if TYPE_CHECKING:
    from streaming.epoch_reads import EpochReads

__all__ = ["MAX_FETCHES", "MAX_FETCHES_ENV", "LinkSizer", "Prefetcher", "Prefetchers",
           "first_uses", "max_fetches"]

MAX_FETCHES = 16  # the most shards one worker prepares at once, unless MAX_FETCHES_ENV says
MAX_FETCHES_ENV = "STREAMING_MAX_FETCHES"
_POLL_SECONDS = 0.002
CHUNK = 8192  # plan positions located (and, by the readers, segmented) at a time

log = logging.getLogger(__name__)


def first_uses(shard_ids: np.ndarray, seen: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Shards in the order a sequence first needs them, with the position of that first need.

    Args:
        shard_ids: the shard of each position.
        seen: optional per-shard flags carried across chunks: shards already flagged are left
            out, and the returned ones get flagged.
    """
    if not len(shard_ids):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    shards, first = np.unique(shard_ids, return_index=True)
    if seen is not None:
        new = ~seen[shards]
        shards, first = shards[new], first[new]
        seen[shards] = True
    order = np.argsort(first, kind="stable")
    return shards[order].astype(np.int64), first[order].astype(np.int64)


def max_fetches() -> int:
    """The cap on concurrent fetches per worker: `STREAMING_MAX_FETCHES` (1 = one at a time,
    as before the sizer), else `MAX_FETCHES`."""
    raw = os.environ.get(MAX_FETCHES_ENV)
    if raw is None:
        return MAX_FETCHES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{MAX_FETCHES_ENV} must be a positive integer, got {raw!r}")
    return value


class LinkSizer:
    """How many shards to fetch at once, found by measuring the bytes per second fetched.

    A probe runs at one count until it has seen at least two fetches per concurrent slot and
    `min_seconds`. If its rate beats the best rate so far by the factor `gain`, the count doubles
    (up to `most`) and a new probe starts; otherwise the count falls back to the best one and
    stays there (the link, or the machine, is full). A probe only counts while the prefetcher is
    behind, every slot busy: when it waits for the consumer, the count is not what limits it, so
    such a probe is dropped and starts again.

    Pure bookkeeping (no clock, no threads): the caller passes the time, which keeps it testable.
    """

    def __init__(self, start: int = 1, most: int = MAX_FETCHES, gain: float = 1.2,
                 min_seconds: float = 0.25) -> None:
        if not 1 <= start <= most:
            raise ValueError(f"need 1 <= start <= most, got start={start}, most={most}")
        self.count, self.most, self.gain, self.min_seconds = start, most, gain, min_seconds
        self.best_rate, self.best_count = 0.0, start
        self.settled = start == most
        self._begin: float | None = None
        self._bytes = self._fetches = 0

    def fetched(self, nbytes: int, now: float, behind: bool) -> int:
        """Record one finished fetch of `nbytes`; the count of concurrent fetches to run now.

        Args:
            nbytes: bytes this fetch moved (0 when the shard was already local).
            now: a monotonic time in seconds.
            behind: whether every slot stayed busy since the last call (no wait for the
                consumer).
        """
        if self.settled:
            return self.count
        if not behind or self._begin is None:  # (re)start the probe's clock here
            self._begin, self._bytes, self._fetches = now, 0, 0
            return self.count
        self._bytes += nbytes
        self._fetches += 1
        elapsed = now - self._begin
        if self._fetches < 2 * self.count or elapsed < self.min_seconds:
            return self.count
        rate = self._bytes / elapsed
        if rate > self.best_rate * self.gain:
            self.best_rate, self.best_count = rate, self.count
            self.count = min(self.count * 2, self.most)
            self.settled = self.best_count == self.most
        else:
            self.count, self.settled = self.best_count, True
        self._begin = None
        return self.count


def _first_use_order(sample_ids: np.ndarray, locate: Callable[[np.ndarray], tuple[
        np.ndarray, np.ndarray]], num_shards: int) -> Iterator[tuple[int, int]]:
    """(shard, position of its first use) over `sample_ids`, located one chunk at a time."""
    seen = np.zeros(num_shards, bool)
    for begin in range(0, len(sample_ids), CHUNK):
        shard_ids, _ = locate(sample_ids[begin:begin + CHUNK])
        shards, positions = first_uses(shard_ids, seen)
        yield from zip(shards.tolist(), (positions + begin).tolist())


class Prefetcher:
    """Background threads preparing shards in first-use order within a sliding window.

    They take shards from one shared first-use order, so one slow transfer (a remote's
    first-byte latency, a big shard) does not hold up the next shards. Thread `i` runs while `i`
    is below the sizer's count: a grown count starts threads, a lowered one lets the surplus
    threads leave after their current shard (no shard taken is ever dropped).

    Args:
        sample_ids: the worker's sample ids in read order.
        reads: how the worker prepares shards (`EpochReads.prepare`) and locates samples.
        window: how many samples ahead of the consumer a shard may be prepared.
        fetched_bytes: the node's egress counter, read to measure the rate.
        sizer: the concurrency policy (default: a `LinkSizer` from one fetch at a time up to
            `max_fetches()`).
        on_count: told each count the sizer moves to (the runtime counters' level).
    """

    def __init__(self, sample_ids: np.ndarray, reads: EpochReads, window: int,
                 fetched_bytes: Callable[[], int] | None = None,
                 sizer: LinkSizer | None = None,
                 on_count: Callable[[int], None] | None = None) -> None:
        self.sample_ids, self.reads, self.window = sample_ids, reads, max(int(window), 1)
        self.consumed = 0  # written by the consumer, read here; a plain int is atomic enough
        self.stop = threading.Event()
        self.sizer = sizer or LinkSizer(most=max_fetches())
        self._fetched_bytes = fetched_bytes or (lambda: 0)
        self._on_count = on_count or (lambda count: None)
        # A generator of module level: a method's would hold `self`, a cycle that keeps the
        # dataset alive after its last reference is dropped (until a garbage collection).
        self._order = _first_use_order(sample_ids, reads.locate, len(reads.readers))
        self._lock = threading.Lock()  # the order generator and the sizer are not thread-safe
        self._waited = False  # some thread waited for the consumer since the sizer's last call
        self._head: tuple[int, int, bool] | None = None  # the first shard, claimed in `start`
        self._seen_bytes = 0
        self.threads: list[threading.Thread] = []

    @property
    def concurrency(self) -> int:
        """How many shards the prefetcher prepares at once now."""
        return self.sizer.count

    def start(self) -> None:
        """Start the threads; the first shard is claimed here, before the consumer's first
        read can ask for it, so the consumer waits for this fetch instead of starting its own
        while the prefetcher moves on to the next shard and halves the first one's bandwidth.

        Over a warm cache with no limit it starts no thread at all: every shard would be passed
        over, and starting a thread waits for the scheduler to run it (milliseconds before the
        first batch when other jobs load the cores)."""
        if self.reads.all_settled():
            return
        self.reads.watch(self)
        with self._lock:
            self._seen_bytes = self._fetched_bytes()
            first = next(self._order, None)
            if first is not None:
                claimed = self.reads.claim(first[0])
                self._head = (first[0], first[1], claimed)
            self._spawn(self.sizer.count)

    def _spawn(self, count: int) -> None:
        """Start threads up to `count` (called with `_lock` held)."""
        if count > len(self.threads):
            self._on_count(count)
        while len(self.threads) < count and not self.stop.is_set():
            thread = threading.Thread(target=self._run, args=(len(self.threads),),
                                      name="shardstream-prefetch", daemon=True)
            self.threads.append(thread)
            thread.start()

    def finish(self, wait: float = 0.05,
               _finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        """Stop, joining the threads for at most `wait` seconds: by default only briefly, as a
        prepare in flight may take a while and the threads are daemons that check `stop` before
        their next step. A dataset's `close()` waits longer, so that no fetch of its writes into
        the cache once it returns. Idempotent.

        An iterator left open at interpreter exit is finished while modules are torn down and
        daemon threads are frozen, maybe holding our lock: then only `stop` is set (the bound
        default is still there when `sys` is gone; a claim of this dying process is taken over
        by its peers).
        """
        self.stop.set()
        if _finalizing():
            return
        deadline = time.monotonic() + wait
        for thread in list(self.threads):
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))
        with self._lock:  # a first shard claimed but never taken: give the claim back
            head, self._head = self._head, None
        if head is not None and head[2]:
            self.reads.release(head[0])

    def _take(self, slot: int) -> tuple[int, int, bool] | None:
        """The next shard, its first use, and whether it is claimed already."""
        with self._lock:
            if slot >= self.sizer.count:  # the count went down: this thread leaves
                return None
            if self._head is not None:
                head, self._head = self._head, None
                return head
            item = next(self._order, None)
            return None if item is None else (item[0], item[1], False)

    def _done(self) -> None:
        """Tell the sizer a fetch finished; start threads if the count grew."""
        with self._lock:
            if self.sizer.settled:  # it measures no more: the node's egress is not read
                return
            total = self._fetched_bytes()
            moved, self._seen_bytes = total - self._seen_bytes, total
            count = self.sizer.fetched(moved, time.monotonic(), behind=not self._waited)
            self._waited = False
            self._spawn(count)

    def _run(self, slot: int) -> None:
        time.sleep(0)  # hand the GIL straight back to the consumer that started this thread
        while not self.stop.is_set() and (item := self._take(slot)) is not None:
            shard, position, claimed = item
            if not claimed and self.reads.settled(shard):  # a warm cache: nothing to wait for
                continue
            while position > self.consumed + self.window:
                self._waited = True
                if self.stop.wait(_POLL_SECONDS):
                    if claimed:
                        self.reads.release(shard)
                    return
            if self.stop.is_set():
                if claimed:
                    self.reads.release(shard)
                return
            # Claim first, then look at the consumer: once claimed, the consumer cannot read
            # past the shard without waiting for this fetch. Looking first left a window (wide
            # when other jobs load the cores and this thread waits for one) in which the
            # consumer fetched the shard itself, read past it and the cache evicted it, and
            # this thread then fetched it again for nobody.
            if not claimed and (position < self.consumed or not self.reads.claim(shard)):
                continue  # read past already; or local, or another fetch has it
            if position < self.consumed:
                # The consumer got here first: it fetches what it still reads itself, and a
                # shard it has read past may have been evicted since (fetching it again would
                # be a refetch of a shard this epoch no longer needs).
                self.reads.release(shard)
                continue
            try:
                self.reads.prepare_claimed(shard)
            except HashAlgorithmError:
                # A setting every shard fails on: the consumer raises it at its first read, and
                # a warning from here would only repeat it (after it, as the threads go).
                return
            except Exception as err:  # the consumer retries this shard itself when needed
                log.warning("Prefetching shard %d failed (%s: %s); it will be fetched when "
                            "needed.", shard, type(err).__name__, err)
            self._done()


class Prefetchers:
    """The prefetchers of one dataset's iterations that are still running, held weakly (an
    iterator dropped takes its prefetcher with it), so that closing the dataset stops them.

    A copy pickled into a DataLoader worker starts empty: a worker's iterations are its own.
    """

    def __init__(self) -> None:
        self._running: weakref.WeakSet[Prefetcher] = weakref.WeakSet()
        self._lock = threading.Lock()  # an iteration may start in another thread meanwhile

    def add(self, prefetcher: Prefetcher) -> None:
        with self._lock:
            self._running.add(prefetcher)

    def stop(self, wait: float) -> None:
        """Stop every one and forget it, waiting up to `wait` seconds in all for fetches in
        flight."""
        deadline = time.monotonic() + wait
        with self._lock:
            stopping, self._running = list(self._running), weakref.WeakSet()
        for prefetcher in stopping:
            prefetcher.finish(wait=max(deadline - time.monotonic(), 0.0))

    def __len__(self) -> int:
        return len(self._running)

    def __getstate__(self) -> dict[str, object]:
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__()  # type: ignore[misc]
