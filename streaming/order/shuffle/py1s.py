"""`py1s` shuffle: fixed shard-to-canonical-node assignment, shards shuffled in one place.

Each epoch reorders every canonical node's shards and shuffles the samples inside each shard
(or shard piece). About half the cost of `py2s`. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.order.shuffle.common import divide, epoch_spans, fill_and_shuffle

__all__ = ["divide_spans", "get_shuffle_py1s"]


def divide_spans(spans: list[tuple[int, int]], num_samples: int,
                 num_parts: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The reference's `divide_spans` on Python lists: split spans at part boundaries.

    Args:
        spans: `(begin, end)` id ranges in order (not modified, unlike the reference).
        num_samples: Samples to divide; part p ends at `num_samples * (p + 1) // num_parts`.
        num_parts: Number of parts (canonical nodes).

    Returns:
        The split spans, and each part's `(first, end)` range of indices into them.
    """
    pairs = np.asarray(spans, np.int64).reshape(-1, 2)
    cut = divide(pairs[:, 0], pairs[:, 1] - pairs[:, 0], num_samples, num_parts)
    out = list(zip(cut.begins.tolist(), (cut.begins + cut.sizes).tolist()))
    bounds = cut.bounds.tolist()
    return out, list(zip(bounds[:-1], bounds[1:]))


def get_shuffle_py1s(shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                     epoch: int, block_size: int = SHUFFLE_BLOCK_SIZE) -> NDArray[np.int64]:
    """The epoch's permutation of `range(sum(shard_sizes))`.

    Generator calls: `run_rng(seed).shuffle(units)`; then with `e = epoch_rng(seed, epoch)`:
    `e.shuffle(spans of node p)` for each canonical node, then `e.shuffle(samples of span)` for
    every span in output order. `block_size` is ignored.
    """
    spans, rng, num_samples = epoch_spans(shard_sizes, num_canonical_nodes, seed, epoch)
    ids = np.empty(num_samples, np.int64)
    fill_and_shuffle(rng, ids, spans.begins, spans.sizes)
    return ids

