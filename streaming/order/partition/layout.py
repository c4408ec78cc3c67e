"""Lay one physical node's sample sequence out over its ranks, workers and batches.

The last two steps of the reference's `orig` partition, done per node straight into the output
array: deal the node's sequence round-robin to ranks (topping it up to a multiple of the rank
count with the reference's repeats), pad each rank with -1 up to whole worker rounds, and cut
worker batches. Pure numpy; no randomness.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["batches_per_worker", "lay_out_node", "lay_out_nodes", "rank_padding"]

# Elements moved per strided copy: small enough to stay in L2 across the per-rank passes.
_CHUNK = 1 << 15


def rank_padding(size: int, ranks_per_node: int) -> NDArray[np.int64]:
    """Positions (into a node's sequence of `size` ids) of the ids appended to even out ranks.

    The reference repeats the `under` ids that end `ranks_per_node - 1` before the end of the
    sequence; when the sequence is too short for that it cycles the whole sequence instead, and
    warns. Every node's sequence has the same length, so call this once per partition.

    Raises:
        ZeroDivisionError: `ranks_per_node` is 0 (as the reference does).
    """
    overflow = size % ranks_per_node
    if not overflow:
        return np.empty(0, np.int64)
    under = ranks_per_node - overflow
    if ranks_per_node + under - 1 <= size:
        return np.arange(size - ranks_per_node - under + 1, size - ranks_per_node + 1,
                         dtype=np.int64)
    warnings.warn(f'Attempting to partition {size} samples per physical node over '
                  f'{ranks_per_node} gpus. This will result in many samples being repeated, and '
                  f'depending on your batching method, batches being completely dropped. Check '
                  f'if your dataset has the expected number of samples.', stacklevel=2)
    cycle = np.arange(size, dtype=np.int64)
    return np.concatenate([np.tile(cycle, under // size), cycle[:under % size]])


def batches_per_worker(node_len: int, ranks_per_node: int, workers_per_rank: int,
                       batch_size: int) -> int:
    """Batches each worker gets from a node sequence of `node_len` ids (after rank padding).

    Raises:
        ZeroDivisionError: zero ranks, workers or batch size (as the reference does).
    """
    per_rank = -(-node_len // ranks_per_node)
    per_rank % workers_per_rank  # noqa: B018 - the reference fails here first for 0 workers
    if not workers_per_rank * batch_size:
        raise ZeroDivisionError('division by zero')
    return -(-per_rank // (workers_per_rank * batch_size))


def lay_out_node(read: Callable[[int, int], NDArray[np.int64]], length: int,
                 pad: NDArray[np.int64], out: NDArray[np.int64]) -> None:
    """Write one node's ids into its `(ranks, workers, batches, batch_size)` block of the output.

    Element `j` of the rank-padded sequence goes to rank `j % R` at position `m = j // R`;
    position `m` is batch `m // (W*B)`, worker `(m // B) % W`, slot `m % B`; slots past the end
    are -1.

    Args:
        read: `read(begin, end)` returns the node's ids `[begin, end)`.
        length: Length of the node's sequence (before rank padding).
        pad: Positions of the ids appended as rank padding (`rank_padding`).
        out: The node's block, C-contiguous, shape `(R, W, NB, B)`.
    """
    num_ranks, num_workers, num_batches, batch_size = out.shape
    round_size = num_workers * batch_size * num_ranks
    # Whole worker rounds that lie entirely inside the sequence: strided copies of a few rounds
    # at a time, so each slice is read once and stays in cache while it is dealt to the ranks.
    main = (length // num_ranks) // (num_workers * batch_size)
    step = max(1, _CHUNK // round_size)
    for first in range(0, main, step):
        last = min(first + step, main)
        rounds = read(first * round_size, last * round_size)
        block = rounds.reshape(last - first, num_workers, batch_size, num_ranks)
        out[:, :, first:last, :] = block.transpose(3, 1, 0, 2)
    if main == num_batches:
        return
    # The rest (under two rounds, plus the rank padding) goes through a small buffer.
    tail = np.full((num_batches - main) * round_size, -1, np.int64)
    rest = read(main * round_size, length)
    tail[:len(rest)] = rest
    if len(pad):
        low = int(pad.min())
        tail[len(rest):len(rest) + len(pad)] = read(low, int(pad.max()) + 1)[pad - low]
    block = tail.reshape(num_batches - main, num_workers, batch_size, num_ranks)
    out[:, :, main:, :] = block.transpose(3, 1, 0, 2)


def lay_out_nodes(sequences: NDArray[np.int64], pad: NDArray[np.int64],
                  out: NDArray[np.int64]) -> None:
    """`lay_out_node` for several nodes at once, from their whole sequences.

    Args:
        sequences: `(nodes, length)`, each node's ids.
        pad: Positions of the ids appended as rank padding (`rank_padding`).
        out: The nodes' blocks, C-contiguous, shape `(nodes, R, W, NB, B)`.
    """
    num_nodes, num_ranks, num_workers, num_batches, batch_size = out.shape
    length = sequences.shape[1]
    padded = np.full((num_nodes, num_batches * num_workers * batch_size * num_ranks), -1,
                     np.int64)
    padded[:, :length] = sequences
    padded[:, length:length + len(pad)] = sequences[:, pad]
    block = padded.reshape(num_nodes, num_batches, num_workers, batch_size, num_ranks)
    out[...] = block.transpose(0, 4, 2, 1, 3)
