"""`py2s` shuffle: shards shuffled once per run and again per epoch, in two places.

Slightly better mixing of shards split across canonical nodes than `py1s`, at about twice the
cost. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.order.rng import epoch_rng, run_rng
from streaming.order.shuffle.common import divide, fill_and_shuffle

__all__ = ["get_shuffle_py2s"]


def get_shuffle_py2s(shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                     epoch: int, block_size: int = SHUFFLE_BLOCK_SIZE) -> NDArray[np.int64]:
    """The epoch's permutation of `range(sum(shard_sizes))`.

    Generator calls: with `f = run_rng(seed)`: `f.shuffle(units)`, then `f.shuffle(samples of
    unit)` for every unit in that order; with `e = epoch_rng(seed, epoch)`, per canonical node in
    order: `e.shuffle(pieces of node p)`, then `e.shuffle(samples of piece)` for each of its
    pieces in the new order. `block_size` is ignored.
    """
    sizes = np.asarray(shard_sizes, np.int64)
    begins = np.cumsum(sizes) - sizes
    num_samples = int(sizes.sum())
    fixed = run_rng(seed)
    perm = np.arange(len(sizes), dtype=np.int64)
    fixed.shuffle(perm)
    sizes, begins = sizes[perm], begins[perm]
    pool = np.empty(num_samples, np.int64)
    fill_and_shuffle(fixed, pool, begins, sizes)
    # Pieces are ranges of `pool` (positions, not ids) cut at canonical node boundaries.
    pieces = divide(np.cumsum(sizes) - sizes, sizes, num_samples, num_canonical_nodes)
    rng = epoch_rng(seed, epoch)
    shuffle = rng.shuffle
    ids = np.empty(num_samples, np.int64)
    offset = 0
    bounds = pieces.bounds.tolist()
    for first, end in zip(bounds[:-1], bounds[1:]):
        order = np.arange(first, end, dtype=np.int64)
        shuffle(order)
        for start, size in zip(pieces.begins[order].tolist(), pieces.sizes[order].tolist()):
            part = ids[offset:offset + size]
            part[...] = pool[start:start + size]
            if size > 1:
                shuffle(part)
            offset += size
    return ids

