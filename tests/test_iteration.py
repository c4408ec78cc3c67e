"""One worker's epoch iteration: padding, runs, chunked first uses, bulk vs per-sample reads."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streaming import iteration
from streaming.cache.node_cache import ReadingSlot
from streaming.coord.wait import wait_until
from streaming.iteration import EpochReads, drop_padding, first_uses, iterate_epoch, runs
from streaming.metrics.counters import COLUMNS, Counters
from streaming.prefetch import Prefetchers
from streaming.spanner import Spanner


class FakeReader:
    """A shard whose sample `i` is `(shard, i)`; counts bulk and single reads."""

    def __init__(self, shard: int, size: int, missing: bool = False) -> None:
        self.shard, self.size, self.missing = shard, size, missing
        self.singles = self.attempts = 0
        self.bulk: list[tuple[int, int]] = []

    @property
    def mapped(self) -> bool:  # a file that is there reads as if mapped already
        return not self.missing

    def get_item(self, index: int) -> tuple[int, int]:
        self.attempts += 1
        if self.missing:
            raise FileNotFoundError(f"shard {self.shard} is missing")
        assert 0 <= index < self.size
        self.singles += 1
        return (self.shard, index)

    def iter_range(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        assert 0 <= start <= stop <= self.size
        self.bulk.append((start, stop))
        return iter([(self.shard, i) for i in range(start, stop)])


class FakeArray:
    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def numpy(self) -> np.ndarray:
        return self.values

    def __len__(self) -> int:
        return len(self.values)


class FakeCache:
    """The parts of `NodeCache` a worker's reads touch."""

    def __init__(self, num_shards: int, slots: int = 8) -> None:
        self.in_use = FakeArray(np.full(slots, -1, np.int64))
        self.progress = FakeArray(np.full(slots, -1, np.int64))
        self.access_times = FakeArray(np.zeros(num_shards, np.uint64))
        self.prepared: list[int] = []
        self.claimed: set[int] = set()
        self.cache_limit: int | None = None
        self.lock = threading.Lock()
        self.counters = Counters(np.zeros(len(COLUMNS)))  # the real bookkeeping, private
        self.info = SimpleNamespace(has_remote=np.zeros(num_shards, bool))  # local-only shards

    def prepare(self, shard: int, blocking: bool = True) -> bool:
        assert not blocking
        with self.lock:
            self.prepared.append(shard)
        return True

    def claim_ahead(self, shard: int) -> bool:  # the prefetcher claims before it prepares
        with self.lock:
            self.claimed.add(shard)
        return True

    def prepare_claimed(self, shard: int) -> bool:
        with self.lock:
            self.claimed.remove(shard)
        return self.prepare(shard, blocking=False)

    def release_claim(self, shard: int) -> None:
        with self.lock:
            self.claimed.remove(shard)

    def is_local(self, shard: int) -> bool:  # local once prepared (none is to begin with)
        return shard in self.prepared

    def all_local(self) -> bool:
        return set(range(len(self.access_times))) <= set(self.prepared)

    def egress(self) -> dict[str, Any]:
        return {"bytes": 1000 * len(self.prepared), "seconds": 0.0}

    def reading_slot(self, slot: int) -> ReadingSlot:
        return ReadingSlot(self, slot)  # type: ignore[arg-type]  # the real bookkeeping

    def raw_present(self, shard: int) -> bool:
        return True


def make_reads(sizes: list[int], get_item: Any = None, missing: frozenset[int] = frozenset()
               ) -> tuple[EpochReads, list[FakeReader], FakeCache, list[tuple[int, int]]]:
    readers = [FakeReader(i, n, i in missing) for i, n in enumerate(sizes)]
    cache = FakeCache(len(sizes))
    recovered: list[tuple[int, int]] = []

    def recover(shard: int, index: int, cause: str) -> tuple[int, int]:
        assert cause  # why: the reader's own error, or that the shard is not local
        recovered.append((shard, index))
        readers[shard].missing = False
        return readers[shard].get_item(index)

    reads = EpochReads(readers, cache, Spanner(sizes).locate_many, 3, recover,  # type: ignore
                       get_item)
    return reads, readers, cache, recovered


def expected(sizes: list[int], ids: np.ndarray) -> list[tuple[int, int]]:
    spanner = Spanner(sizes)
    return [spanner[int(i)] for i in ids]


def test_drop_padding_is_a_view_unless_padding_sits_mid_list() -> None:
    ids = np.arange(10, dtype=np.int64)
    assert drop_padding(ids) is ids
    tail = np.array([3, 4, 5, -1, -1], np.int64)
    out = drop_padding(tail)
    assert out.tolist() == [3, 4, 5] and np.shares_memory(out, tail)
    mid = np.array([3, -1, 5, -1], np.int64)
    out = drop_padding(mid)
    assert out.tolist() == [3, 5] and not np.shares_memory(out, mid)
    assert drop_padding(np.full(3, -1, np.int64)).tolist() == []


def test_runs_break_on_shard_change_and_on_gaps() -> None:
    shards = np.array([0, 0, 0, 1, 1, 1, 0], np.int64)
    indices = np.array([0, 1, 2, 5, 6, 8, 3], np.int64)
    starts, ends = runs(shards, indices)
    assert starts.tolist() == [0, 3, 5, 6] and ends.tolist() == [3, 5, 6, 7]
    assert [len(a) for a in runs(shards[:0], indices[:0])] == [0, 0]


def test_first_uses_carries_seen_shards_across_chunks() -> None:
    seen = np.zeros(5, bool)
    shards, positions = first_uses(np.array([3, 3, 1, 3, 4]), seen)
    assert shards.tolist() == [3, 1, 4] and positions.tolist() == [0, 2, 4]
    shards, positions = first_uses(np.array([1, 0, 4, 2]), seen)
    assert shards.tolist() == [0, 2] and positions.tolist() == [1, 3]
    assert seen.tolist() == [True] * 5


def test_in_order_epoch_reads_whole_runs_in_bulk() -> None:
    sizes = [50, 70, 30]
    reads, readers, cache, _ = make_reads(sizes)
    ids = np.arange(150, dtype=np.int64)
    assert list(iterate_epoch(ids, reads, predownload=4096)) == expected(sizes, ids)
    assert [r.singles for r in readers] == [1, 1, 1]  # the first read of a run maps the shard
    assert [r.bulk for r in readers] == [[(1, 50)], [(1, 70)], [(1, 30)]]
    assert len(set(cache.prepared)) == len(cache.prepared)  # never prefetched twice
    assert cache.in_use.values[3] == -1  # slot released at the end
    assert (cache.access_times.values > 0).all()


def test_bulk_reads_report_progress_so_prefetch_stays_ahead() -> None:
    sizes = [400, 400]
    reads, readers, cache, _ = make_reads(sizes)
    seen_ahead = []
    it = iterate_epoch(np.arange(800, dtype=np.int64), reads, predownload=100)
    for count, _ in enumerate(it):
        if count == 320:  # 80 samples before shard 1 is needed, within the window of 100
            deadline = time.monotonic() + 30
            while 1 not in cache.prepared and time.monotonic() < deadline:
                time.sleep(0.005)
            seen_ahead.append(1 in cache.prepared)
    assert seen_ahead == [True]
    assert all(b - a <= 100 for r in readers for a, b in r.bulk)  # progress every <= window


def test_shuffled_epoch_reads_sample_by_sample_and_marks_shards() -> None:
    sizes = [40, 40, 40]
    reads, readers, cache, _ = make_reads(sizes)
    ids = np.random.default_rng(0).permutation(120).astype(np.int64)
    seen_slots, positions = [], []
    for sample in iterate_epoch(ids, reads, predownload=16):
        seen_slots.append(int(cache.in_use.values[3]) == sample[0])
        positions.append(int(cache.progress.values[3]))
    assert all(seen_slots)  # the shard being read is published while its sample is read
    # ... and where the worker is (at each shard change), for future-aware eviction
    assert positions == sorted(positions) and positions[-1] > 100
    changes = np.flatnonzero(np.diff(ids // 40)) + 1
    assert set(positions) == {0, *changes.tolist()}
    assert cache.progress.values[3] == -1  # released at the end
    assert sum(r.singles for r in readers) == 120 and not any(r.bulk for r in readers)


def test_custom_get_item_gets_global_sample_ids() -> None:
    sizes = [10, 10]
    calls: list[int] = []
    reads, readers, _, _ = make_reads(sizes, get_item=lambda i: calls.append(i) or i)
    ids = np.arange(20, dtype=np.int64)[::-1].copy()
    assert list(iterate_epoch(ids, reads, predownload=4)) == ids.tolist()
    assert calls == ids.tolist() and not any(r.bulk or r.singles for r in readers)


class BrokenReader(FakeReader):
    """Its bulk reads raise a decoder's error at sample `bad` (a corrupt value)."""

    def __init__(self, shard: int, size: int, bad: int) -> None:
        super().__init__(shard, size)
        self.bad = bad

    def iter_range(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        self.bulk.append((start, stop))
        for i in range(start, stop):
            if i == self.bad:
                raise ValueError("not utf-8")
            yield (self.shard, i)

    def undecodable_run(self, start: int, stop: int, err: BaseException) -> Exception:
        return RuntimeError(f"run {self.shard}:{start}..{stop - 1}: {err}")


def test_a_decoders_error_in_a_bulk_run_names_the_run() -> None:
    reads, readers, _, _ = make_reads([100, 100])
    readers[1] = BrokenReader(1, 100, bad=40)
    got: list[tuple[int, int]] = []
    with pytest.raises(RuntimeError, match=r"^run 1:\d+\.\.\d+: not utf-8$") as caught:
        got.extend(iterate_epoch(np.arange(200, dtype=np.int64), reads, predownload=32))
    start, stop = (int(x) for x in str(caught.value).split()[1][2:-1].split(".."))
    assert start <= 40 <= stop and (start + 1, stop + 1) in readers[1].bulk  # 1st: get_item
    assert got == [(0, i) for i in range(100)] + [(1, i) for i in range(40)]
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_custom_get_items_own_error_is_not_renamed() -> None:
    def get_item(i: int) -> int:
        if i == 7:
            raise ValueError("the user's transform")
        return i

    reads, _, cache, _ = make_reads([10, 10], get_item=get_item)
    with pytest.raises(ValueError, match="the user's transform"):
        list(iterate_epoch(np.arange(20, dtype=np.int64), reads, predownload=4))
    assert cache.in_use.values[3] == -1  # released all the same


def test_each_sample_passes_through_one_frame_of_ours() -> None:
    """The epoch chains runs in C: between the consumer and a reader's generator sits only
    `epoch_samples` (every frame resumed per sample costs ~0.1 us)."""
    depths: list[int] = []

    class Deep(FakeReader):
        def iter_range(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
            for i in range(start, stop):
                if i > start:  # the run's first is pulled as the run starts (`read_run`)
                    frame, depth = sys._getframe(1), 0
                    while frame is not None and frame.f_code.co_name != "consume":
                        frame, depth = frame.f_back, depth + 1
                    depths.append(depth)
                yield (self.shard, i)

    reads, readers, _, _ = make_reads([300])
    readers[0] = Deep(0, 300)

    def consume() -> list[Any]:
        return list(iterate_epoch(np.arange(300, dtype=np.int64), reads, predownload=64))

    assert len(consume()) == 300
    assert len(depths) > 250 and set(depths) == {1}  # all but the first two of each run


def test_missing_shard_takes_the_recovery_path_once_per_run() -> None:
    sizes = [30, 30]
    reads, _, _, recovered = make_reads(sizes, missing=frozenset({1}))
    ids = np.arange(60, dtype=np.int64)
    assert list(iterate_epoch(ids, reads, predownload=8)) == expected(sizes, ids)
    assert recovered == [(1, 0)]


def test_a_run_of_a_shard_not_local_yet_waits_for_it_without_opening_it_first() -> None:
    """The reader caught up with the prefetch thread: the shard's file is not there and the node
    does not have it, so the read goes straight to the recovery path (which waits for the
    fetch) instead of failing to open the file first."""
    reads, readers, cache, recovered = make_reads([30, 30], missing=frozenset({0, 1}))
    cache.prepared.append(1)  # shard 1 is local by the node's table (its file is not)
    assert list(reads.read_run(0, 0, 30)) == [(0, i) for i in range(30)]
    assert recovered == [(0, 0)] and readers[0].attempts == 1  # the recovery's read only
    assert list(reads.read_run(1, 5, 30)) == [(1, i) for i in range(5, 30)]
    assert recovered == [(0, 0), (1, 5)] and readers[1].attempts == 2  # opened, then recovered


def test_short_runs_wait_for_a_shard_not_local_yet_without_opening_it_first() -> None:
    """The same in the sample-by-sample path (runs too short to read in bulk: small shards)."""
    sizes = [5, 5, 5]
    reads, readers, cache, recovered = make_reads(sizes, missing=frozenset({0, 1, 2}))
    cache.claim_ahead = lambda shard: False  # type: ignore[method-assign]  # no prefetch
    ids = np.arange(15, dtype=np.int64)
    assert list(iterate_epoch(ids, reads, predownload=8)) == expected(sizes, ids)
    assert recovered == [(0, 0), (1, 0), (2, 0)]
    assert [reader.attempts for reader in readers] == [5, 5, 5]  # the recovery's read, then 4


def test_abandoned_iterator_stops_the_prefetcher() -> None:
    sizes = [5] * 200
    reads, _, cache, _ = make_reads(sizes)
    it = iterate_epoch(np.arange(1000, dtype=np.int64), reads, predownload=10)
    next(it)
    threads = [t for t in threading.enumerate() if t.name == "shardstream-prefetch"]
    it.close()
    for thread in threads:
        thread.join(2)
    assert not any(t.is_alive() for t in threads)
    assert len(cache.prepared) < 10  # never ran past the window
    assert cache.in_use.values[3] == -1


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=8),
       seed=st.integers(0, 2**16), mode=st.sampled_from(["order", "shuffle", "blocks"]),
       chunk=st.sampled_from([7, 64, 8192]))
def test_yields_exactly_the_planned_samples(sizes: list[int], seed: int, mode: str,
                                            chunk: int) -> None:
    total = sum(sizes)
    rng = np.random.default_rng(seed)
    ids = np.arange(total, dtype=np.int64)
    if mode == "shuffle":
        ids = rng.permutation(total).astype(np.int64)
    elif mode == "blocks":  # runs of varying length in shuffled order
        cuts = np.sort(rng.choice(max(total, 1), size=min(total, 5), replace=False))
        parts = np.split(ids, cuts)
        ids = np.concatenate([parts[i] for i in rng.permutation(len(parts))]).astype(np.int64)
    original = iteration.CHUNK
    iteration.CHUNK = chunk
    try:
        reads, _, cache, _ = make_reads(sizes)
        assert list(iterate_epoch(ids, reads, predownload=5)) == expected(sizes, ids)
    finally:
        iteration.CHUNK = original
    assert cache.in_use.values[3] == -1


def _plain(sample: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.tolist(), v.dtype.str) if isinstance(v, np.ndarray) else (v, type(v).__name__)
            for k, v in sample.items()}


@pytest.mark.parametrize("fmt", ["mds", "mds_fixed", "jsonl", "csv"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_bulk_reads_of_real_shards_equal_random_access(tmp_path: Any, fmt: str,
                                                       shuffle: bool) -> None:
    from streaming import CSVWriter, JSONWriter, MDSWriter, StreamingDataset

    writer, columns, make = {
        "mds": (MDSWriter, {"a": "int", "t": "ndarray:int32", "s": "str", "u": "uint8"},
                lambda i: {"a": i, "t": np.arange(1 + i % 5, dtype=np.int32), "s": "q" * (i % 3),
                           "u": np.uint8(i % 200)}),
        "mds_fixed": (MDSWriter, {"a": "int", "t": "ndarray:uint16:8", "f": "float32"},
                      lambda i: {"a": i, "t": np.full(8, i, np.uint16), "f": np.float32(i)}),
        "jsonl": (JSONWriter, {"a": "int", "s": "str"}, lambda i: {"a": i, "s": "x" * (i % 7)}),
        "csv": (CSVWriter, {"a": "int", "f": "float"}, lambda i: {"a": i, "f": i / 3}),
    }[fmt]
    out = str(tmp_path / fmt)
    with writer(out=out, columns=columns, size_limit=1000) as w:
        for i in range(300):
            w.write(make(i))
    with StreamingDataset(local=out, batch_size=8, shuffle=shuffle) as ds:
        assert ds.num_shards > 2
        seen = list(ds)
        assert sorted(s["a"] for s in seen) == list(range(300))
        assert [_plain(s) for s in seen] == [_plain(ds[s["a"]]) for s in seen]


@pytest.mark.parametrize("limit", [None, 10**9])
def test_a_warm_cache_leaves_the_prefetcher_nothing_to_wait_for(limit: int | None) -> None:
    """Every shard local already, with no cache limit to evict them: no prefetch thread is
    started at all (it would only pass each shard over, and starting it costs the consumer
    its first batch's time on a loaded machine). Under a cache limit the threads run and wait
    for the consumer as before (a shard may be evicted before its use)."""
    reads, _, cache, _ = make_reads([50] * 6)
    cache.prepared.extend(range(6))
    cache.cache_limit = limit
    running = Prefetchers()
    reads.background = running
    samples = iterate_epoch(np.arange(300, dtype=np.int64), reads, predownload=10)
    next(samples)
    if limit is None:
        assert not list(running._running)
        assert cache.prepared[6:] == []
    else:
        (prefetcher,) = list(running._running)
        assert any(t.is_alive() for t in prefetcher.threads)  # waiting for the consumer
    assert len(list(samples)) == 299


def test_a_partly_warm_cache_passes_the_local_shards_over() -> None:
    """One shard still remote: the threads start, pass the local shards over at once and
    prepare only the remote one (then end: nothing is left to wait for)."""
    reads, _, cache, _ = make_reads([50] * 6)
    cache.prepared.extend(range(5))
    running = Prefetchers()
    reads.background = running
    samples = iterate_epoch(np.arange(300, dtype=np.int64), reads, predownload=400)
    next(samples)
    (prefetcher,) = list(running._running)
    wait_until(lambda: not any(t.is_alive() for t in prefetcher.threads) or None,
               timeout=30, what="the prefetcher's threads to end")
    assert set(cache.prepared[5:]) <= {0, 5} and 5 in cache.prepared[5:]
    assert len(list(samples)) == 299
