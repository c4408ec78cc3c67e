"""Shuffles: the epoch's permutation of (big) sample ids, aware of shards and canonical nodes.

One algorithm per module, looked up by its config name in `algos` (the reference's table, plus
`py1b`, which 0.10 had and 0.11 removed). Every algorithm returns an int64 permutation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE, algorithm
from streaming.order.shuffle import naive, py1b, py1br, py1e, py1s, py2s
from streaming.order.shuffle.naive import get_shuffle_naive
from streaming.order.shuffle.py1b import get_shuffle_py1b
from streaming.order.shuffle.py1br import get_shuffle_py1br
from streaming.order.shuffle.py1e import get_shuffle_py1e
from streaming.order.shuffle.py1s import get_shuffle_py1s
from streaming.order.shuffle.py2s import get_shuffle_py2s

__all__ = [
    "algos", "get_shuffle", "get_shuffle_naive", "get_shuffle_py1b", "get_shuffle_py1br",
    "get_shuffle_py1e", "get_shuffle_py1s", "get_shuffle_py2s", "naive", "py1b", "py1br", "py1e",
    "py1s", "py2s",
]

Shuffle = Callable[..., NDArray[np.int64]]

algos: dict[str, Shuffle] = {
    'py1b': get_shuffle_py1b,
    'py1br': get_shuffle_py1br,
    'py1e': get_shuffle_py1e,
    'py1s': get_shuffle_py1s,
    'py2s': get_shuffle_py2s,
    'naive': get_shuffle_naive,
}

def get_shuffle(algo: str, shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                epoch: int, block_size: int = SHUFFLE_BLOCK_SIZE) -> NDArray[np.int64]:
    """The epoch's int64 permutation of `range(sum(shard_sizes))` (`output[i]` = i-th id).

    Each canonical node's contiguous output range `[N*i//C, N*(i+1)//C)` holds the same ids every
    epoch (for the shard-aware algorithms); only the order inside changes.

    Raises:
        KeyError: unknown `algo`.
    """
    shuffle = algorithm(algos, algo, "shuffle_algo")
    return shuffle(shard_sizes, num_canonical_nodes, seed, epoch, block_size)
