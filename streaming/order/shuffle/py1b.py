"""`py1b` shuffle: fixed-size blocks shuffled inside each canonical node.

Removed from the reference in 0.11 (0.13 raises `KeyError: 'py1b'`); restored here exactly as
0.10 computed it, so configurations written for old releases keep their order. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.order.shuffle.common import epoch_spans, fill_spans

__all__ = ["get_shuffle_py1b"]


def get_shuffle_py1b(shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                     epoch: int, block_size: int = SHUFFLE_BLOCK_SIZE) -> NDArray[np.int64]:
    """The epoch's permutation of `range(sum(shard_sizes))`.

    Generator calls: `run_rng(seed).shuffle(units)`; then with `e = epoch_rng(seed, epoch)`:
    `e.shuffle(spans of node p)` for each canonical node; then per canonical node, `e.shuffle`
    of each block `[start + k*block_size, min(start + (k+1)*block_size, stop))` in order.
    """
    spans, rng, num_samples = epoch_spans(shard_sizes, num_canonical_nodes, seed, epoch)
    ids = np.empty(num_samples, np.int64)
    fill_spans(ids, spans.begins, spans.sizes)
    for start, stop in spans.node_ranges():
        for begin in range(start, stop, block_size):
            rng.shuffle(ids[begin:min(begin + block_size, stop)])
    return ids

