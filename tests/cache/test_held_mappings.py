"""`HeldMappings`: which of a worker's mappings go, and when, as the node evicts shards."""

from __future__ import annotations

import time

import numpy as np

from streaming.cache.held_mappings import HeldMappings


class _Reader:
    def __init__(self) -> None:
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


def _held(n: int = 4, mapped: tuple[int, ...] = ()) -> tuple[HeldMappings, list[_Reader],
                                                           np.ndarray]:
    readers = [_Reader() for _ in range(n)]
    evictions = np.zeros(n + 1, np.int64)  # per shard, then the total
    held = HeldMappings(readers, evictions, mapped)  # type: ignore[arg-type]
    return held, readers, evictions


def _evict(evictions: np.ndarray, shard: int, times: int = 1) -> None:
    evictions[shard] += times
    evictions[-1] += times


def test_a_shard_evicted_after_it_was_read_is_let_go_once() -> None:
    held, readers, evictions = _held()
    held.add(1)
    assert readers[1].closes == 1  # not held before: whatever it mapped outside is dropped
    assert held.release() == 0 and readers[1].closes == 1
    _evict(evictions, 1)
    held.add(1)  # a shard change after an eviction looks
    assert readers[1].closes == 2
    assert held.release() == 0 and readers[1].closes == 2
    _evict(evictions, 1)
    assert held.release() == 1 and readers[1].closes == 3
    assert held.release() == 0 and readers[1].closes == 3  # once per eviction
    held.stop()


def test_a_shard_evicted_and_fetched_again_is_let_go() -> None:
    """The state is LOCAL again, but the mapping holds the deleted file: only the count says."""
    held, readers, evictions = _held()
    held.add(2)
    _evict(evictions, 2, 2)  # evicted, fetched, evicted, fetched: one look lets go once
    assert held.release() == 1 and readers[2].closes == 2
    held.add(2)  # read again: already held, the new mapping is followed from the new count
    assert readers[2].closes == 2
    _evict(evictions, 2)
    assert held.release() == 1 and readers[2].closes == 3
    held.stop()


def test_a_shard_evicted_before_it_is_read_is_followed_from_then_on() -> None:
    held, readers, evictions = _held()
    _evict(evictions, 3)  # gone before this worker gets to it; its read fetches it again
    held.add(3)
    assert held.release() == 0
    _evict(evictions, 3)
    assert held.release() == 1
    held.stop()


def test_mappings_of_an_earlier_epoch_go_at_the_first_look() -> None:
    held, readers, _ = _held(mapped=(0, 2))
    assert held.release() == 2
    assert [r.closes for r in readers] == [1, 0, 1, 0]
    assert held.release() == 0


def test_the_watcher_lets_go_while_the_worker_waits() -> None:
    """Nothing but the watcher runs after the eviction: the worker is waiting to hand over."""
    held, readers, evictions = _held()
    held.add(0)
    _evict(evictions, 0)
    deadline = time.monotonic() + 30
    while readers[0].closes < 2:
        assert time.monotonic() < deadline, "the watcher never looked"
        time.sleep(0.01)
    held.stop()
