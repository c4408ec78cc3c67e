"""Vectorised sample checks for MDS shards, used by `validate`.

Every sample's framing is checked at once with numpy (the offsets table, then each sample's
column-length header against its size: spec §3.3). Then only the columns whose decoding can
fail are decoded, sample by sample: a `bytes` column or a fixed-size number accepts any bytes of
the right length, so once the framing holds there is nothing left to find in them, and copying
every payload out would only cost time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from streaming.errors import ShardFormatError
from streaming.format.encodings import is_mds_encoding_safe

__all__ = ["check_mds_samples"]

_ALWAYS_VALID = {"bytes", "int", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                 "int64", "float16", "float32", "float64"}
_BLOCK = 1 << 16  # samples whose headers are gathered at once

Report = Callable[[int | None, str], bool]  # (sample or None, message) -> keep going?


def _needs_decoding(encoding: str, size: int | None, decode_unsafe: bool) -> bool:
    if not decode_unsafe and not is_mds_encoding_safe(encoding):
        return False  # decoding a pickle can run code: only with the user's leave
    return not (encoding in _ALWAYS_VALID or (encoding.startswith("ndarray:") and size))


def _column_sizes(buf: np.ndarray, starts: np.ndarray, fixed: list[int | None],
                  num_variable: int) -> np.ndarray:
    """(samples, columns) byte size of every column of every sample in the block."""
    sizes = np.zeros((len(starts), len(fixed)), np.int64)
    if num_variable:
        gather = starts[:, None] + np.arange(4 * num_variable)
        lengths = np.ascontiguousarray(buf[gather]).view("<u4").astype(np.int64)
    slot = 0
    for j, size in enumerate(fixed):
        if size:
            sizes[:, j] = size
        else:
            sizes[:, j] = lengths[:, slot]
            slot += 1
    return sizes


def check_mds_samples(reader: Any, data: Any, report: Report, decode_unsafe: bool = False) -> int:
    """Check every sample of one MDS shard; return the number of good samples.

    Args:
        reader: the shard's `MDSReader` (column names, encodings and fixed sizes).
        data: the raw shard file's bytes (a memory map is best).
        report: called with ``(sample index or None, message)`` for each problem; returns
            False to stop looking.
        decode_unsafe: also decode `pkl` columns (their framing is checked either way).
    """
    try:
        columns = reader.columns  # sizes the index gives checked against the encodings
    except ShardFormatError as err:  # printed after the shard's name: not twice
        report(None, str(err).removeprefix(f"Shard {reader.raw_data.basename}: "))
        return 0
    n = reader.samples
    buf = np.frombuffer(data, np.uint8)
    if len(buf) < 8 + 4 * n:
        report(None, f"{len(buf)} bytes cannot hold the offsets of {n} samples")
        return 0
    offsets = np.frombuffer(data, "<u4", n + 1, 4).astype(np.int64)
    if offsets[0] < 8 + 4 * n or offsets[-1] != len(buf) or (np.diff(offsets) < 0).any():
        report(None, "the sample offsets table is out of order or does not end at the file end")
        return 0
    fixed = [column.size for column in columns]
    num_variable = sum(size is None for size in fixed)
    head = 4 * num_variable
    slow = [j for j, (enc, size) in enumerate(zip(reader.column_encodings, fixed))
            if _needs_decoding(enc, size, decode_unsafe)]
    coders = {j: columns[j].coder for j in slow}
    view = memoryview(data)
    good = 0
    for begin in range(0, n, _BLOCK):
        stop = min(begin + _BLOCK, n)
        starts, ends = offsets[begin:stop], offsets[begin + 1:stop + 1]
        short = (ends - starts) < head
        sizes = _column_sizes(buf, np.where(short, offsets[0], starts), fixed, num_variable)
        bad = short | (sizes.sum(1) + head != ends - starts)
        for i in np.flatnonzero(bad).tolist():  # each counted (`report` says when to stop)
            if not report(begin + i, f"its {int(ends[i] - starts[i])} bytes do not match the "
                          "column sizes in its header"):
                return good
        ok = ~bad
        if slow:
            positions = starts[:, None] + head + np.cumsum(sizes, 1) - sizes
            for i in np.flatnonzero(ok).tolist():
                for j in slow:
                    a = int(positions[i, j])
                    try:
                        coders[j].decode(view[a:a + int(sizes[i, j])])
                    except Exception as err:  # noqa: BLE001 - a finding, not a crash
                        ok[i] = False
                        if not report(begin + i, f"column {reader.column_names[j]!r} "
                                      f"({reader.column_encodings[j]}): "
                                      f"{type(err).__name__}: {err}"):
                            return good
                        break
        good += int(ok.sum())
    return good
