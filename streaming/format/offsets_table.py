"""The sample offsets table of MDS shards and of the split formats' meta files.

Both open with a little-endian ``uint32`` sample count ``n`` followed by ``n + 1`` ``uint32``
offsets: sample ``i`` is bytes ``offsets[i]..offsets[i + 1]`` of the data (the MDS shard itself,
or a JSONL/CSV shard's data file). One reader of that table means one set of checks: a file that
is too short, counts other samples than the index, or whose offsets go back or past the data is
refused before any sample is sliced.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from mmap import mmap

import numpy as np

__all__ = ["SAMPLE_SPAN", "header_bytes", "offsets_in_order", "read_offsets"]

_UINT32 = struct.Struct("<I")
# ``SAMPLE_SPAN.unpack_from(table, 4 + 4 * i)`` is sample i's (begin, end): the hot path of
# random access, one C call.
SAMPLE_SPAN = struct.Struct("<II")


def header_bytes(samples: int) -> int:
    """Bytes of the table of `samples` samples (the count, then their n + 1 offsets)."""
    return 8 + 4 * samples


def offsets_in_order(offsets: np.ndarray, start: int, size: int) -> bool:
    """Whether offsets (a table's n + 1, or a run of them) begin at or after `start`, end within
    `size` bytes (0: not known) and never go back."""
    wide = offsets.astype(np.int64)
    return bool(wide[0] >= start and (not size or wide[-1] <= size)
                and (np.diff(wide) >= 0).all())


def read_offsets(table: bytes | memoryview | mmap, samples: int, start: int, size: int,
                 data_name: str, corrupt: Callable[[str], Exception]) -> np.ndarray:
    """The ``n + 1`` offsets of the table at the start of `table`, as a zero-copy view.

    Args:
        table: the bytes holding the table (an MDS shard's mapping, or a whole meta file).
        samples: the count the index gives; the table must say the same.
        start: the lowest offset a first sample may start at (past the table for MDS).
        size: bytes of the data the offsets point into (`data_name`).
        data_name: that file's name, for the message.
        corrupt: makes the error (naming the file holding the table) from a problem.

    Raises:
        The error `corrupt` makes: the table is short, disagrees with the index, or points
        backwards or past the data.
    """
    length = len(table)
    if length < 8:
        raise corrupt(f"{length} bytes is too short for a header.")
    num = _UINT32.unpack_from(table, 0)[0]
    if num != samples:
        raise corrupt(f"its header says {num} samples, the index {samples}.")
    if length < header_bytes(num):
        raise corrupt(f"{length} bytes cannot hold {num} offsets.")
    offsets = np.frombuffer(table, "<u4", num + 1, 4)
    if not offsets_in_order(offsets, start, size):
        raise corrupt(
            f"sample offsets are out of order or past the {size} bytes of {data_name}.")
    return offsets
