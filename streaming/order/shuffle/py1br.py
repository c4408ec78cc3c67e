"""`py1br` shuffle: randomly sized, staggered blocks shuffled inside each canonical node.

Block sizes are drawn from `[0.75, 1.25) * block_size` and each node's blocks start at a random
stagger, so nodes do not all cross shard boundaries at once. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.order.shuffle.common import epoch_spans, fill_spans

__all__ = ["get_shuffle_py1br"]


def _node_blocks(rng: np.random.Generator, start: int, stop: int, stagger: int,
                 low: int, high: int) -> list[tuple[int, int]]:
    """One node's (possibly overlapping) blocks; draws `rng.integers(low, high)` per block."""
    blocks = []
    end = start
    while end < stop:
        size = int(rng.integers(low, high))
        begin = max(end - stagger, start)
        finish = min(end + size - stagger, stop)
        blocks.append((begin, finish))
        end += finish - begin
    return blocks


def get_shuffle_py1br(shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                      epoch: int, block_size: int = SHUFFLE_BLOCK_SIZE) -> NDArray[np.int64]:
    """The epoch's permutation of `range(sum(shard_sizes))`.

    Generator calls: `run_rng(seed).shuffle(units)`; then with `e = epoch_rng(seed, epoch)`:
    `e.shuffle(spans of node p)` for each canonical node; `e.integers(0, int(0.75*block_size),
    num_canonical_nodes)` (staggers); then per canonical node: `e.integers(int(0.75*block_size),
    int(1.25*block_size))` per block until the node is covered, then `e.shuffle(block)` for each
    of its blocks in order.
    """
    spans, rng, num_samples = epoch_spans(shard_sizes, num_canonical_nodes, seed, epoch)
    ids = np.empty(num_samples, np.int64)
    fill_spans(ids, spans.begins, spans.sizes)
    low, high = int(0.75 * block_size), int(1.25 * block_size)
    staggers = rng.integers(0, low, (num_canonical_nodes,)).tolist()
    for (start, stop), stagger in zip(spans.node_ranges(), staggers):
        for begin, finish in _node_blocks(rng, start, stop, stagger, low, high):
            rng.shuffle(ids[begin:finish])
    return ids

