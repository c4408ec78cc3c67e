"""Order values by float positions exactly as `values[numpy.argsort(positions)]`, faster.

py1e sorts each canonical node's samples by float64 positions in `[0, n]`. `numpy.argsort` on
floats (plus the gather after it) costs several times a `numpy.sort` of integers, so we sort one
uint64 key per sample, `floor(position * 2**f) << bits | payload`, where the payload is the value
itself when it fits (no gather at all) or else the index. Runs of keys whose truncated positions
collide (rare: f is as large as the bits allow) are then re-ordered by their exact positions.
For distinct positions the result is exactly numpy's; exact duplicates (probability ~2**-52 per
pair) come out by payload where numpy's unstable sort leaves the order unspecified.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["sort_by_positions"]

# Below this size numpy's argsort is as fast as the packed path's fixed costs.
_SMALL = 1 << 15
# Fewest fractional position bits worth packing. Collisions (about n / 2**bits) are re-sorted
# by exact position; with the value packed each one is first located (a Python step), so that
# mode wants more bits than the index mode, whose collisions are fixed fully vectorised.
_MIN_VALUE_FRACTION_BITS = 12
_MIN_INDEX_FRACTION_BITS = 6
# Temporaries of the collision scan stay this small (so they are recycled, not page-faulted).
_CHUNK = 1 << 20


def _collisions(keys: NDArray[np.uint64], payload_bits: int) -> NDArray[np.int64]:
    """Sorted positions `i` whose truncated position equals that of `i + 1`."""
    shift = np.uint64(payload_bits)
    found = []
    for begin in range(0, len(keys) - 1, _CHUNK):
        head = keys[begin:begin + _CHUNK + 1] >> shift
        hits = np.flatnonzero(head[1:] == head[:-1])
        if len(hits):
            found.append(hits + begin)
    return np.concatenate(found) if found else np.empty(0, np.int64)


def _runs(same: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Members of the collision runs (sorted positions) and the run id of each."""
    members = np.union1d(same, same + 1)
    return members, np.cumsum(np.diff(members, prepend=members[0] - 2) > 1)


def _pack(positions: NDArray[np.float64], payload: NDArray[np.uint64], payload_bits: int,
          fraction_bits: int, keys: NDArray[np.uint64]) -> None:
    """`keys = floor(positions * 2**fraction_bits) << payload_bits | payload`, then sort."""
    np.multiply(positions, float(1 << fraction_bits), out=keys, casting='unsafe')
    np.left_shift(keys, np.uint64(payload_bits), out=keys)
    np.bitwise_or(keys, payload, out=keys)
    keys.sort()


def sort_by_positions(positions: NDArray[np.float64], values: NDArray[np.int64],
                      out: NDArray[np.int64], keys: NDArray[np.uint64],
                      locate: Callable[[NDArray[np.int64]], NDArray[np.int64]],
                      index: NDArray[np.uint64] | None = None, value_bits: int = 0) -> None:
    """Write `values[numpy.argsort(positions)]` into `out`.

    Args:
        positions: float64 in `[0, len(positions)]` (finite, non-negative).
        values: Non-negative int64 ids, distinct.
        out: Destination, same length (must not overlap `values`).
        keys: uint64 scratch of at least the same length.
        locate: Maps some of `values` to their indices in `values` (for collisions only).
        index: Optional `arange` as uint64 of at least the same length, to reuse.
        value_bits: Bits that hold every value, if the caller knows (else measured).
    """
    n = len(positions)
    position_bits = int(n).bit_length() + 1
    if not value_bits:
        value_bits = max(int(values.max()).bit_length(), 1) if n else 1
    index_bits = max(int(n - 1).bit_length(), 1)
    keys = keys[:n]
    if n >= _SMALL and 64 - value_bits - position_bits >= _MIN_VALUE_FRACTION_BITS:
        # The value rides in the key: sorting the keys sorts the values.
        _pack(positions, values.view(np.uint64), value_bits, 64 - value_bits - position_bits,
              keys)
        same = _collisions(keys, value_bits)
        np.bitwise_and(keys, np.uint64((1 << value_bits) - 1), out=out.view(np.uint64))
        if len(same):
            members, run = _runs(same)
            picked = out[members]
            exact = positions[locate(picked)]
            out[members] = picked[np.lexsort((exact, run))]
        return
    if n >= _SMALL and 64 - index_bits - position_bits >= _MIN_INDEX_FRACTION_BITS:
        index = np.arange(n, dtype=np.uint64) if index is None else index[:n]
        _pack(positions, index, index_bits, 64 - index_bits - position_bits, keys)
        same = _collisions(keys, index_bits)
        np.bitwise_and(keys, np.uint64((1 << index_bits) - 1), out=keys)
        order = keys.view(np.int64)
        if len(same):
            members, run = _runs(same)
            picked = order[members]
            order[members] = picked[np.lexsort((positions[picked], run))]
    else:
        order = np.argsort(positions)
    np.take(values, order, out=out, mode='clip')
