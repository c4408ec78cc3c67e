"""`streaming.array.Array`: numpy-exact indexing over a read-only sequence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streaming.array import Array


class Range(Array):
    def __init__(self, size: int) -> None:
        self._size = size
        self.calls: list[int] = []

    @property
    def size(self) -> int:
        return self._size

    def get_item(self, idx: int) -> int:
        self.calls.append(idx)
        if not 0 <= idx < self._size:
            raise IndexError(idx)
        return idx


bounds = st.one_of(st.none(), st.integers(-250, 250))


@settings(max_examples=400, deadline=None)
@given(start=bounds, stop=bounds, step=st.one_of(st.none(), st.integers(-12, 12).filter(bool)))
def test_slices_match_numpy(start: int | None, stop: int | None, step: int | None) -> None:
    at = slice(start, stop, step)
    assert Range(100)[at] == np.arange(100)[at].tolist()


def test_hand_picked_slices() -> None:
    ref = np.arange(100)
    for at in [slice(None, None, -1), slice(-1, None, -3), slice(5, -200, -1), slice(-200, 5),
               slice(200, None), slice(None, None, 7), slice(3, 3)]:
        assert Range(100)[at] == ref[at].tolist()
    assert Range(0)[:] == []


def test_zero_step_raises() -> None:
    with pytest.raises(ValueError):
        Range(10)[::0]


def test_ints_wrap_only_inside_size() -> None:
    arr = Range(10)
    assert arr[3] == 3
    assert arr[-1] == 9
    assert arr[np.int64(-10)] == 0
    for bad in (10, -11):  # passed through unchanged: the subclass decides how to fail
        with pytest.raises(IndexError):
            arr[bad]
        assert arr.calls[-1] == bad


def test_lists_and_arrays_recurse() -> None:
    arr = Range(10)
    assert arr[[1, -1, [2, [3]]]] == [1, 9, [2, [3]]]
    got = arr[np.array([[0, 1], [-2, 4]])]
    assert got == [[0, 1], [8, 4]]
    assert arr[np.array([], np.int64)] == []


@pytest.mark.parametrize("bad", [1.5, "3", None, (1, 2)])
def test_unsupported_types(bad: object) -> None:
    with pytest.raises(ValueError) as info:
        Range(10)[bad]
    assert str(info.value) == f"Unsupported argument type passed to __getitem__: {type(bad)}."


def test_each_slice_index() -> None:
    assert list(Range(10)._each_slice_index(slice(-3, None))) == [7, 8, 9]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8])
def test_a_small_numpy_integer_counts_from_the_end_without_overflow(dtype: type) -> None:
    # `np.int8(-1) + 300` overflowed the int8 (OverflowError) before becoming a Python int.
    data = Range(300)
    at = dtype(-1) if np.issubdtype(dtype, np.signedinteger) else dtype(255)
    assert data[at] == (299 if at < 0 else 255)
