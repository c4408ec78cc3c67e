"""The prefetcher's concurrency policy (`LinkSizer`): pure bookkeeping, so driven by hand here.

End to end through a slow link: tests/storage/test_storage_prefetch_link.py.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, strategies as st

from streaming.prefetch import MAX_FETCHES, MAX_FETCHES_ENV, LinkSizer, Prefetcher, max_fetches


def _probe(sizer: LinkSizer, rate: float, now: float, fetches: int | None = None) -> float:
    """Run one probe at `rate` bytes/s from `now`; returns the time it ended."""
    sizer.fetched(0, now, behind=True)  # starts the probe's clock
    count = fetches or 2 * sizer.count
    step = max(1.01 * sizer.min_seconds / count, 0.01)  # (just past the minimum)
    for _ in range(count):
        now += step
        sizer.fetched(int(rate * step), now, behind=True)
    return now


def test_doubles_while_each_step_pays_then_settles_on_the_best() -> None:
    sizer = LinkSizer()
    now = 0.0
    for rate in (100.0, 200.0, 390.0):  # 1 -> 2 -> 4 -> 8: each probe beats the last by > 20%
        now = _probe(sizer, rate, now)
    assert sizer.count == 8 and not sizer.settled
    _probe(sizer, 400.0, now)  # 8 fetches at once gain nothing over 4
    assert (sizer.count, sizer.settled) == (4, True)
    assert sizer.fetched(10**9, now + 10, behind=True) == 4  # settled: never moves again


def test_a_local_copy_that_gains_nothing_stays_at_one() -> None:
    sizer = LinkSizer()
    now = _probe(sizer, 1000.0, 0.0)
    assert sizer.count == 2
    _probe(sizer, 1050.0, now)
    assert (sizer.count, sizer.settled) == (1, True)


def test_a_probe_waiting_for_the_consumer_does_not_count() -> None:
    sizer = LinkSizer()
    sizer.fetched(0, 0.0, behind=True)
    for t in range(1, 20):  # plenty of fetches and time, but the prefetcher waited between them
        sizer.fetched(10**6, t * 0.1, behind=False)
    assert sizer.count == 1 and sizer.best_rate == 0.0


def test_a_probe_needs_time_and_fetches_before_it_decides() -> None:
    sizer = LinkSizer(min_seconds=1.0)
    sizer.fetched(0, 0.0, behind=True)
    for t in range(1, 10):  # many fetches but only 0.9 s
        sizer.fetched(1000, t * 0.1, behind=True)
    assert sizer.count == 1
    sizer.fetched(1000, 1.1, behind=True)
    assert sizer.count == 2


def test_the_cap_holds_and_a_cap_of_one_never_probes() -> None:
    sizer = LinkSizer(most=3)
    now = 0.0
    for rate in (1e3, 1e4, 1e5):
        now = _probe(sizer, rate, now)
    assert (sizer.count, sizer.settled) == (3, True)
    one = LinkSizer(most=1)
    assert one.settled and _probe(one, 5.0, 0.0) and one.count == 1


@pytest.mark.parametrize("start,most", [(0, 4), (5, 4), (-1, 1)])
def test_bad_bounds_are_refused(start: int, most: int) -> None:
    with pytest.raises(ValueError, match="start"):
        LinkSizer(start=start, most=most)


@given(st.lists(st.tuples(st.integers(0, 10**9), st.floats(0.0, 2.0), st.booleans()),
                max_size=200),
       st.integers(1, 32))
def test_count_stays_a_doubling_within_bounds_and_settling_is_final(
        events: list[tuple[int, float, bool]], most: int) -> None:
    sizer = LinkSizer(most=most)
    now, settled_at = 0.0, None
    for nbytes, step, behind in events:
        now += step
        count = sizer.fetched(nbytes, now, behind)
        assert 1 <= count <= most
        assert count == most or (count & (count - 1)) == 0  # 1, 2, 4, ... or the cap
        if settled_at is not None:
            assert count == settled_at
        if sizer.settled:
            settled_at = count


def test_max_fetches_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_FETCHES_ENV, raising=False)
    assert max_fetches() == MAX_FETCHES
    monkeypatch.setenv(MAX_FETCHES_ENV, "3")
    assert max_fetches() == 3
    for bad in ("0", "-2", "many"):
        monkeypatch.setenv(MAX_FETCHES_ENV, bad)
        with pytest.raises(ValueError, match=MAX_FETCHES_ENV):
            max_fetches()


class _Reads:
    """The part of `EpochReads` a `Prefetcher` uses: 10 samples per shard, nothing local."""

    def __init__(self, shards: int) -> None:
        self.readers = [None] * shards
        self.prepared: list[int] = []
        self.released: list[int] = []

    def locate(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return ids // 10, ids % 10

    def all_settled(self) -> bool:
        return False

    def settled(self, shard: int) -> bool:
        return False

    def watch(self, prefetcher: Prefetcher) -> None:
        pass

    def claim(self, shard: int) -> bool:
        return True

    def release(self, shard: int) -> None:
        self.released.append(shard)

    def prepare_claimed(self, shard: int) -> None:
        self.prepared.append(shard)


def test_a_prefetcher_behind_the_consumer_skips_the_shards_it_has_read_past() -> None:
    # Under a cache limit a shard the consumer has read past may be evicted already: a
    # prefetcher that lagged behind and prepared it anyway fetched it again for nothing (seen
    # with `num_workers=0`: 2-12 refetches in an epoch of 94 shards).
    reads = _Reads(10)
    prefetcher = Prefetcher(np.arange(100), reads, window=15,  # type: ignore[arg-type]
                            sizer=LinkSizer(start=1, most=1))
    prefetcher.consumed = 45  # the consumer is in shard 4 before the prefetcher has started
    prefetcher.start()
    prefetcher.consumed = 100  # ... and then read to the end, so no thread waits
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in prefetcher.threads) and time.monotonic() < deadline:
        time.sleep(0.01)
    prefetcher.finish()
    assert reads.prepared == []  # every shard's first use lies behind the consumer
    assert reads.released == [0]  # the first shard, claimed at start, is given back


class _ConsumerPassesDuringClaim(_Reads):
    """The consumer reads past each shard while the prefetch thread waits for its claim (on a
    loaded machine, a thread can wait that long for a core)."""

    def __init__(self, shards: int) -> None:
        super().__init__(shards)
        self.prefetcher: Prefetcher | None = None

    def claim(self, shard: int) -> bool:
        assert self.prefetcher is not None
        self.prefetcher.consumed = (shard + 1) * 10  # read it, and the cache evicted it
        return True  # so the claim is granted: a fetch now would be a refetch

    def prepare(self, shard: int) -> None:  # (what an unclaimed prefetch called)
        self.prepared.append(shard)


def test_a_prefetcher_looks_at_the_consumer_again_once_it_holds_the_claim() -> None:
    """Looking first and claiming later let a lagging thread fetch again a shard the consumer
    had fetched, read and seen evicted meanwhile: `test_sequential_refetch` failed in 11 of 25
    runs beside two CPU hogs (0 of 25 now)."""
    reads = _ConsumerPassesDuringClaim(10)
    prefetcher = Prefetcher(np.arange(100), reads, window=1000,  # type: ignore[arg-type]
                            sizer=LinkSizer(start=1, most=1))
    reads.prefetcher = prefetcher
    prefetcher.start()  # claims shard 0: the consumer is past it at once
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in prefetcher.threads) and time.monotonic() < deadline:
        time.sleep(0.01)
    prefetcher.finish()
    assert reads.prepared == []
    assert reads.released == list(range(10))


def test_a_settled_sizer_stops_reading_the_nodes_egress() -> None:
    """Reading the node's egress sums a table over every process of the node: done after each
    fetch only while the sizer still measures, not for every tiny shard of an epoch after."""
    reads = _Reads(20)
    reads_of_egress: list[int] = []

    def egress() -> int:
        reads_of_egress.append(1)
        return 1000 * len(reads.prepared)

    prefetcher = Prefetcher(np.arange(200), reads, window=1000,  # type: ignore[arg-type]
                            fetched_bytes=egress, sizer=LinkSizer(start=1, most=1))
    assert prefetcher.sizer.settled
    prefetcher.start()
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in prefetcher.threads) and time.monotonic() < deadline:
        time.sleep(0.01)
    prefetcher.finish()
    assert reads.prepared == list(range(20))
    assert len(reads_of_egress) == 1  # at the start only
