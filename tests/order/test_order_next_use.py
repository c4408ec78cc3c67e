"""`UseSchedule`: the next run start of every shard after a position, against a brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streaming.order.next_use import NEVER, UseSchedule


def brute_next_use(rows: np.ndarray, num_shards: int, now: int, quantum: int) -> np.ndarray:
    """First position >= now (on the quantum's clock) where some worker starts a run of a shard."""
    out = np.full(num_shards, NEVER, np.int64)
    for row in rows:
        for position, shard in enumerate(row.tolist()):
            starts_run = shard >= 0 and (position == 0 or row[position - 1] != shard)
            step = position // quantum
            if starts_run and step >= now // quantum:
                out[shard] = min(out[shard], step * quantum)
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(1, 60), st.integers(1, 9), st.integers(1, 200),
       st.data())
def test_next_use_matches_a_scan(workers, positions, num_shards, budget, data) -> None:
    rows = np.array(data.draw(st.lists(
        st.lists(st.integers(-1, num_shards - 1), min_size=positions, max_size=positions),
        min_size=workers, max_size=workers)), np.int64)
    schedule = UseSchedule.build(rows, num_shards, budget=budget)
    for now in range(0, positions + schedule.quantum + 1):
        expected = brute_next_use(rows, num_shards, now, schedule.quantum)
        assert np.array_equal(schedule.next_use(now), expected), now


def test_unused_and_finished_shards_are_never_needed() -> None:
    rows = np.array([[0, 0, 1, 1, 2, 2], [1, 1, 0, 0, -1, -1]])
    schedule = UseSchedule.build(rows, num_shards=4)
    assert schedule.quantum == 1
    assert schedule.next_use(0).tolist() == [0, 0, 4, NEVER]
    assert schedule.next_use(3).tolist() == [NEVER, NEVER, 4, NEVER]  # runs under way: in use
    assert schedule.next_use(6).tolist() == [NEVER] * 4
    assert schedule.next_use(10**12).tolist() == [NEVER] * 4


def test_one_worker_as_a_flat_array_and_a_bad_budget() -> None:
    schedule = UseSchedule.build(np.array([2, 2, 0, 2]), num_shards=3)
    assert schedule.next_use(0).tolist() == [2, NEVER, 0]
    assert schedule.next_use(1).tolist() == [2, NEVER, 3]
    with pytest.raises(ValueError, match="budget"):
        UseSchedule.build(np.array([0]), 1, budget=0)


def test_the_schedule_stays_within_its_budget() -> None:
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 50, (4, 100_000))  # a fully shuffled order: a run start per position
    schedule = UseSchedule.build(rows, num_shards=50, budget=10_000)
    assert schedule.quantum == 40
    assert len(schedule.keys) <= 50 * (100_000 // 40 + 1)
    long_runs = UseSchedule.build(np.repeat(np.arange(10), 100_000)[None, :], num_shards=10)
    assert schedule.quantum >= 1 and len(long_runs.keys) == 10 and long_runs.quantum == 1


def test_offline_optimum_evicts_the_shard_needed_last() -> None:
    from streaming.order.next_use import offline_optimum_bytes

    sizes = np.array([10, 10, 10])
    # room for two: at shard 2, Belady drops 1 (needed after 0), so only 2 and 1 are refetched
    assert offline_optimum_bytes(np.array([0, 1, 2, 0, 1]), sizes, 20) == 40
    assert offline_optimum_bytes(np.array([0, 0, 1, 1, 0]), sizes, 20) == 20  # all fit
    assert offline_optimum_bytes(np.array([0, 1, 0, 1]), sizes, 10) == 40  # room for one only
