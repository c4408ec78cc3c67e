"""`Spanner`: maps a global sample id to ``(shard id, offset within shard)``, one or many at once.

A binary search over the cumulative shard bounds; zero-sample shards are allowed and never
selected. Imports numpy only.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Spanner"]


class Spanner:
    """Locates global sample ids among consecutive shards.

    Args:
        shard_sizes: samples per shard, in shard order. Copied, never modified.
        span_size: kept for signature compatibility with the reference, which bucketed ids into
            spans of this many samples; a binary search needs no buckets.
    """

    def __init__(self, shard_sizes: NDArray[np.int64] | Any, span_size: int = 1 << 10) -> None:
        sizes = np.array(shard_sizes, dtype=np.int64).reshape(-1)
        if (sizes < 0).any():
            raise ValueError(f"Shard sizes must be non-negative, got {sizes.tolist()}.")
        self.shard_sizes = sizes
        self.span_size = span_size
        self.shard_bounds = np.concatenate([np.zeros(1, np.int64), sizes.cumsum()])
        self.num_samples = int(self.shard_bounds[-1])
        # Python ints for the scalar path: list indexing beats numpy scalar indexing.
        self._bounds = self.shard_bounds.tolist()

    def __getitem__(self, index: int) -> tuple[int, int]:
        """Map one global sample id to ``(shard id, offset within that shard)``.

        Raises:
            IndexError: the id is outside ``[0, num_samples)``.
        """
        # A float would floor to a wrong sample, so only integers are taken; but an id out of
        # range is an IndexError whatever its numeric type, as in the reference.
        numeric = isinstance(index, (int, float, np.integer, np.floating))
        if numeric and not (0 <= index < self.num_samples):
            raise IndexError(
                f"Invalid sample index `{index}`: 0 <= {index} < {self.num_samples}"
            )
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"A sample index must be an integer, got {type(index).__name__} "
                            f"{index!r}.")
        # bisect_right skips empty shards that share a start with the one holding the id.
        shard = bisect_right(self._bounds, index) - 1
        return shard, int(index) - self._bounds[shard]

    def locate_many(self, indices: NDArray[np.integer] | Any) -> tuple[NDArray[np.int64],
                                                                       NDArray[np.int64]]:
        """Map many global sample ids at once.

        Returns:
            ``(shard_ids, offsets)``, two int64 arrays shaped like `indices`.

        Raises:
            IndexError: any id is outside ``[0, num_samples)`` (the first bad one is named).
        """
        ids = np.asarray(indices, dtype=np.int64)
        bad = (ids < 0) | (ids >= self.num_samples)
        if bad.any():
            index = int(ids[bad].flat[0])
            raise IndexError(
                f"Invalid sample index `{index}`: 0 <= {index} < {self.num_samples}"
            )
        shards = np.searchsorted(self.shard_bounds, ids, side="right") - 1
        return shards.astype(np.int64, copy=False), ids - self.shard_bounds[shards]
