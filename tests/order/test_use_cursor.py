"""`UseCursor` answers exactly as `UseSchedule.next_use`, for any sequence of clock values."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from streaming.order.next_use import UseCursor, UseSchedule


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), workers=st.integers(1, 4), length=st.integers(1, 300),
       shards=st.integers(1, 30), budget=st.sampled_from([1, 7, 64, 1 << 21]),
       clocks=st.lists(st.integers(-5, 400), min_size=1, max_size=40), forward=st.booleans())
def test_the_cursor_gives_the_schedules_answers(seed, workers, length, shards, budget, clocks,
                                                forward):
    rng = np.random.default_rng(seed)
    rows = rng.integers(-1, shards, (workers, length))
    schedule = UseSchedule.build(rows, shards, budget=budget)
    cursor = UseCursor(schedule)
    for now in sorted(clocks) if forward else clocks:  # mostly forward, or anywhere
        assert np.array_equal(cursor.next_use(now), schedule.next_use(now))
