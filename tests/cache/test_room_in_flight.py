"""A read needing room that fetches in flight hold waits for them instead of failing.

Found by the simulator's validation (shuffled reads, a cache limit of five shards, two workers
over a slow link): prefetches in flight hold their reservations, so a worker that then needed a
shard found nothing evictable and raised `CacheFullError` mid-epoch, although the limit passes
the dataset's own check. Here four prefetches are held mid-download while a read asks for a
fifth shard: it must wait for them, then evict and read. A prefetch in the same spot is put off
quietly (no warning), and a read with nothing in flight still fails with the clear error.
"""

from __future__ import annotations

import os
import threading

import pytest

import streaming.cache.node_cache as node_cache
from streaming import MDSWriter, StreamingDataset
from streaming.cache.eviction import CacheFullError
from streaming.coord import ShardState
from streaming.coord.claims import CHANGES


@pytest.fixture
def tight(tmp_path):
    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"x": "bytes"}, size_limit=10_000) as writer:
        for _ in range(60):
            writer.write({"x": bytes(1000)})
    index = os.path.getsize(os.path.join(remote, "index.json"))
    with StreamingDataset(remote=remote, local=str(tmp_path / "local"), batch_size=4) as probe:
        largest = int(max(s.get_max_size() for s in probe.shards))
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4,
                               cache_limit=index + 4 * largest + largest // 2)
    yield dataset
    dataset.close()


def _hold_four_fetches(cache, monkeypatch):
    """Start prefetches of shards 0-3 that stay mid-download until the returned event is set."""
    release, inside = threading.Event(), threading.Semaphore(0)
    real = node_cache.prepare_shard_files

    def slow(source, files):
        inside.release()
        release.wait(60)
        return real(source, files)

    monkeypatch.setattr(node_cache, "prepare_shard_files", slow)
    threads = [threading.Thread(target=cache.prepare, args=(s,), kwargs={"blocking": False})
               for s in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(4):
        assert inside.acquire(timeout=60)
    monkeypatch.setattr(node_cache, "prepare_shard_files", real)
    return release, threads


def test_a_read_waits_for_room_held_by_fetches_in_flight(tight, monkeypatch):
    cache = tight._ss_cache
    release, threads = _hold_four_fetches(cache, monkeypatch)
    real_sleep = CHANGES.sleep

    def sleep(seconds, seen):  # the read is waiting for room: let the downloads finish now
        release.set()
        real_sleep(seconds, seen)

    monkeypatch.setattr(CHANGES, "sleep", sleep)
    assert cache.prepare(4, blocking=True)
    for thread in threads:
        thread.join(60)
    assert release.is_set()  # it did wait (and did not fail at once)
    assert cache.is_local(4)
    assert tight.metrics()["evictions"] >= 1
    assert int(cache.usage.get()) <= cache.cache_limit
    assert tight[0]["x"] == bytes(1000)


def test_a_prefetch_without_room_is_put_off_quietly(tight, monkeypatch, caplog):
    cache = tight._ss_cache
    release, threads = _hold_four_fetches(cache, monkeypatch)
    try:
        assert cache.prepare(4, blocking=False) is False
        assert cache.claims.state(4) == ShardState.REMOTE
    finally:
        release.set()
        for thread in threads:
            thread.join(60)
    assert not caplog.records


def test_a_read_with_nothing_in_flight_still_fails_clearly(tight):
    cache = tight._ss_cache
    for shard in range(4):
        cache.prepare(shard)
        cache.pinned.numpy()[shard] = 1  # kept: nothing else can be evicted
    with pytest.raises(CacheFullError, match="cache limit may be too low"):
        cache.prepare(4)
