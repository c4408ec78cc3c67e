"""`naive` shuffle: one global permutation per epoch, ignoring shards and canonical nodes.

Best randomness, worst download locality (every node touches every shard early). Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.order.rng import epoch_rng

__all__ = ["get_shuffle_naive"]


def get_shuffle_naive(shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                      epoch: int, block_size: int = SHUFFLE_BLOCK_SIZE) -> NDArray[np.int64]:
    """The epoch's permutation of `range(sum(shard_sizes))`.

    Generator calls: `epoch_rng(seed, epoch).permutation(sum(shard_sizes))` (as an in-place
    shuffle of an arange, which is what `permutation(int)` does).
    """
    num_samples = int(np.sum(shard_sizes))
    ids = np.arange(num_samples, dtype=np.int64)
    epoch_rng(seed, epoch).shuffle(ids)
    return ids

