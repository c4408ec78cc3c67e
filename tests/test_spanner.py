"""`streaming.spanner.Spanner`: global sample id -> (shard, offset), against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streaming.spanner import Spanner


def brute(sizes: list[int]) -> list[tuple[int, int]]:
    return [(shard, off) for shard, size in enumerate(sizes) for off in range(size)]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=30), st.sampled_from([1, 3, 1024]))
def test_matches_brute_force(sizes: list[int], span: int) -> None:
    spanner = Spanner(np.array(sizes, np.int64), span)
    want = brute(sizes)
    assert spanner.num_samples == len(want)
    assert [spanner[i] for i in range(len(want))] == want
    if want:
        shards, offsets = spanner.locate_many(np.arange(len(want)))
        assert list(zip(shards.tolist(), offsets.tolist())) == want


def test_zero_sample_shards_are_skipped() -> None:
    spanner = Spanner(np.array([0, 3, 0, 0, 2, 0]))
    assert [spanner[i] for i in range(5)] == [(1, 0), (1, 1), (1, 2), (4, 0), (4, 1)]


def test_out_of_range_message() -> None:
    spanner = Spanner(np.array([2, 3]))
    for bad in (-1, 5, 99):
        with pytest.raises(IndexError) as info:
            spanner[bad]
        assert str(info.value) == f"Invalid sample index `{bad}`: 0 <= {bad} < 5"
    with pytest.raises(IndexError, match="Invalid sample index `5`"):
        spanner.locate_many([0, 5, 7])


def test_does_not_mutate_input_and_handles_empty() -> None:
    sizes = np.array([5, 1023, 7], np.int64)
    before = sizes.copy()
    Spanner(sizes)
    assert (sizes == before).all()
    empty = Spanner(np.array([], np.int64))
    assert empty.num_samples == 0
    with pytest.raises(IndexError):
        empty[0]


def test_locate_many_keeps_shape() -> None:
    spanner = Spanner([4, 4])
    shards, offsets = spanner.locate_many(np.array([[0, 5], [7, 3]]))
    assert shards.tolist() == [[0, 1], [1, 0]]
    assert offsets.tolist() == [[0, 1], [3, 3]]
    assert spanner[np.int64(6)] == (1, 2)


@pytest.mark.parametrize("index", [2.5, 2.0, "2", None])
def test_an_index_that_is_not_an_integer_is_refused(index: object) -> None:
    # `get_item(2.5)` used to return sample 2 (bisect and `int()` take a float).
    with pytest.raises(TypeError, match="must be an integer"):
        Spanner(np.array([3, 3], np.int64), 4)[index]  # type: ignore[index]


@pytest.mark.parametrize("index", [1.0, 7.0, -1.0, np.float64(6.0)])
def test_a_float_out_of_range_is_an_index_error(index: float) -> None:
    # As in the reference: `get_item(1.0)` on a one-sample dataset is past its end.
    with pytest.raises(IndexError, match="Invalid sample index"):
        Spanner(np.array([1, 0], np.int64), 4)[index]  # type: ignore[index]
    if index >= 6:
        with pytest.raises(IndexError):
            Spanner(np.array([3, 3], np.int64), 4)[index]  # type: ignore[index]


def test_numpy_integer_ids_are_accepted() -> None:
    assert Spanner(np.array([3, 3], np.int64), 4)[np.int8(4)] == (1, 1)
