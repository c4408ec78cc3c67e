"""`py1e` shuffle (the default): spread each shard's samples over a window of about a block.

Per canonical node, every span's samples are shuffled, then jittered by uniform offsets of at
most half a random block size around their place, and the node is sorted by jittered position.
Balanced downloads, a good shuffle, about one block of shards cached per node. Pure numpy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.order.shuffle.common import epoch_spans, fill_and_shuffle
from streaming.order.shuffle.sorting import sort_by_positions

__all__ = ["get_shuffle_py1e"]

_EMPTY_NODE = ('The number of samples assigned to a canonical node is 0. This very likely '
               'indicates that the number of samples in this stream is less than the number of '
               'canonical nodes, which is {}. Please check your index.json file and ensure that '
               'your dataset has been written out correctly. If this was intended, reduce '
               'num_canonical_nodes.')

_SMALL_BLOCK = ('Shuffle block size was smaller than shard size for some shards. This \
                        will result in these shards not being shuffled with other shards. Set \
                        shuffle_block_size to a larger value for a higher quality shuffle.')


def _draw_shifts(rng: np.random.Generator, sizes: list[int], total: int, low: int, high: int,
                 out: NDArray[np.float64]) -> bool:
    """Write each span's position jitter into `out`; returns whether a block was too small.

    Generator calls, per span in order: `rng.integers(low, high)` then
    `rng.uniform(lo, hi, size)`.
    """
    integers, uniform = rng.integers, rng.uniform
    too_small = False
    offset = 0
    for size in sizes:
        cutoff = (int(integers(low, high)) - size) / 2
        if cutoff < 0:
            cutoff = 0
            too_small = True
        lower = max(-cutoff, -offset)
        upper = min(cutoff, total - offset - size)
        out[offset:offset + size] = uniform(lower, upper, size)
        offset += size
    return too_small


def _locator(values: NDArray[np.int64], begins: NDArray[np.int64], sizes: NDArray[np.int64],
             offsets: NDArray[np.int64]) -> Callable[[NDArray[np.int64]], NDArray[np.int64]]:
    """Map ids of a node back to their index in `values` (needed only for rare collisions).

    A node's non-empty spans cover disjoint id ranges, so an id's span is found by its begin.
    """
    order = np.flatnonzero(sizes)
    order = order[np.argsort(begins[order], kind='stable')]
    sorted_begins = begins[order]

    def locate(targets: NDArray[np.int64]) -> NDArray[np.int64]:
        spans = order[np.searchsorted(sorted_begins, targets, side='right') - 1]
        found = np.empty(len(targets), np.int64)
        for i, (target, span) in enumerate(zip(targets.tolist(), spans.tolist())):
            start = int(offsets[span])
            found[i] = start + np.flatnonzero(values[start:start + sizes[span]] == target)[0]
        return found

    return locate


def get_shuffle_py1e(shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                     epoch: int, block_size: int = SHUFFLE_BLOCK_SIZE) -> NDArray[np.int64]:
    """The epoch's permutation of `range(sum(shard_sizes))`.

    Generator calls: `run_rng(seed).shuffle(units)`; then with `e = epoch_rng(seed, epoch)`:
    `e.shuffle(spans of node p)` for each canonical node; then per canonical node in order:
    `e.shuffle(samples of span)` for each of its spans, then per span `e.integers(int(0.75 *
    block_size), int(1.25 * block_size))` and `e.uniform(lower, upper, span_size)`.

    Raises:
        ValueError: a canonical node would get no samples.
    """
    spans, rng, num_samples = epoch_spans(shard_sizes, num_canonical_nodes, seed, epoch)
    ids = np.empty(num_samples, np.int64)
    bounds = spans.bounds.tolist()
    node_sizes = np.diff(np.concatenate([[0], np.cumsum(spans.sizes)])[spans.bounds]).tolist()
    largest = max(node_sizes, default=0)
    # Per-node work buffers, reused node after node (fresh big arrays cost page faults).
    values = np.empty(largest, np.int64)
    positions = np.empty(largest, np.float64)
    keys = np.empty(largest, np.uint64)
    grid = np.arange(largest, dtype=np.float64)
    low, high = int(0.75 * block_size), int(1.25 * block_size)
    value_bits = max(int(num_samples - 1).bit_length(), 1)
    too_small = False
    offset = 0
    for node, (first, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        total = node_sizes[node]
        if total == 0:
            raise ValueError(_EMPTY_NODE.format(num_canonical_nodes))
        node_begins, node_sizes_ = spans.begins[first:end], spans.sizes[first:end]
        fill_and_shuffle(rng, values[:total], node_begins, node_sizes_)
        too_small |= _draw_shifts(rng, node_sizes_.tolist(), total, low, high,
                                  positions[:total])
        np.add(positions[:total], grid[:total], out=positions[:total])
        locate = _locator(values[:total], node_begins, node_sizes_,
                          np.cumsum(node_sizes_) - node_sizes_)
        sort_by_positions(positions[:total], values[:total], ids[offset:offset + total], keys,
                          locate, value_bits=value_bits)
        offset += total
    if too_small:
        warnings.warn(_SMALL_BLOCK, stacklevel=2)
    return ids
