"""Length-prefixed framing shared by the multi-value MDS encodings (`list[...]`, `jpeg_array`).

A frame is `[count: u32] [count x size: u32] [payloads back to back]`, little-endian. Pure
functions over bytes; no encoding knowledge.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

from streaming.errors import ShardFormatError

_U32 = struct.Struct("<I")


def pack_frames(payloads: Sequence[bytes | bytearray | memoryview]) -> bytes:
    """Concatenate `payloads` behind a count and a size table."""
    for payload in payloads:
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise TypeError(f"Expected bytes-like elements, got {type(payload)}.")
    sizes = np.array([len(payload) for payload in payloads], np.dtype("<u4"))
    return b"".join((_U32.pack(len(payloads)), sizes.tobytes(), *payloads))


def frame_count(data: bytes | memoryview, pos: int = 0) -> int:
    """The count field of the frame starting at `pos`."""
    try:
        return _U32.unpack_from(data, pos)[0]
    except struct.error as err:
        raise ShardFormatError(f"Frame header cut short ({len(data)} bytes).") from err


def unpack_frames(data: bytes | memoryview, pos: int = 0) -> Iterable[bytes | memoryview]:
    """Slice the payloads of the frame starting at `pos` (slices of `data`, in order).

    Raises:
        ShardFormatError: The size table or the payloads run past the end of `data`.
    """
    count = frame_count(data, pos)
    table_end = pos + 4 + 4 * count
    if len(data) < table_end:
        raise ShardFormatError(f"Frame of {count} values is cut short at {len(data)} bytes.")
    sizes = np.frombuffer(data, np.dtype("<u4"), count, pos + 4)
    ends = (table_end + np.cumsum(sizes, dtype=np.int64)).tolist()
    if ends and ends[-1] > len(data):
        raise ShardFormatError(f"Frame payloads need {ends[-1]} bytes, got {len(data)}.")
    starts = [table_end, *ends[:-1]]
    return [data[start:end] for start, end in zip(starts, ends)]
