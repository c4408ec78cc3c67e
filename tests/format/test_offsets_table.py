"""The offsets table shared by MDS shards and the split formats' meta files."""

from __future__ import annotations

import numpy as np
import pytest

from streaming.format.offsets_table import SAMPLE_SPAN, header_bytes, read_offsets


class _Corrupt(Exception):
    pass


def _table(offsets: list[int], count: int | None = None) -> bytes:
    count = len(offsets) - 1 if count is None else count
    return np.array([count, *offsets], "<u4").tobytes()


def _read(table: bytes, samples: int, start: int = 0, size: int = 100) -> np.ndarray:
    return read_offsets(table, samples, start, size, "data.bin", _Corrupt)


def test_a_good_table_reads_as_a_view_and_spans_its_samples() -> None:
    table = _table([20, 25, 25, 40])
    offsets = _read(table, 3, start=header_bytes(3), size=40)
    assert offsets.tolist() == [20, 25, 25, 40]
    assert not offsets.flags.owndata  # a view of the table, not a copy
    assert [SAMPLE_SPAN.unpack_from(table, 4 + 4 * i) for i in range(3)] == [
        (20, 25), (25, 25), (25, 40)]


@pytest.mark.parametrize("table, samples, start, size, problem", [
    (b"\x01\x00", 1, 0, 9, "2 bytes is too short for a header"),
    (_table([0, 4], count=2), 1, 0, 9, "header says 2 samples, the index 1"),
    (_table([0, 4])[:8], 1, 0, 9, "8 bytes cannot hold 1 offsets"),
    (_table([0, 5, 4]), 2, 0, 9, "out of order or past the 9 bytes of data.bin"),
    (_table([0, 10]), 1, 0, 9, "out of order or past the 9 bytes of data.bin"),
    (_table([8, 12]), 1, header_bytes(1), 20, "out of order"),  # starts inside the table
], ids=["short", "count", "cut-table", "backwards", "past-the-data", "inside-the-table"])
def test_each_inconsistency_is_named(table: bytes, samples: int, start: int, size: int,
                                     problem: str) -> None:
    with pytest.raises(_Corrupt, match=problem):
        _read(table, samples, start, size)


def test_an_empty_table_is_fine() -> None:
    assert _read(_table([0]), 0, size=0).tolist() == [0]
