"""The `orig` partition: stripe canonical nodes' sample ranges over physical nodes and ranks.

Reproduces `streaming.base.partition.orig.get_partitions_orig` element for element (spec §6.1)
without materialising the reference's intermediate copies: each physical node's sequence is read
straight from the (optionally shuffled) id table and laid out into the output. Pure numpy.
"""

from __future__ import annotations

import logging

import numpy as np
from numpy.typing import NDArray

from streaming.order.partition.canon import CanonicalMatrix, Table
from streaming.order.partition.layout import (
    batches_per_worker,
    lay_out_node,
    lay_out_nodes,
    rank_padding,
)

__all__ = ["Table", "check_nodes_divide", "get_partitions_orig", "nodes_divide", "partition_orig"]

logger = logging.getLogger(__name__)

# Ids read per group of nodes when node sequences are short (see `partition_orig`).
_GROUP_IDS = 1 << 16

_DIVISIBILITY = ('Either canonical or physical nodes must be evenly divisible by the other, '
                 'otherwise striping slices of shards over nodes may lead to each node '
                 'downloading all shards')


def nodes_divide(num_canonical_nodes: int, num_physical_nodes: int) -> bool:
    """Whether one node count divides the other (what `orig` needs)."""
    larger, smaller = max(num_canonical_nodes, num_physical_nodes), min(num_canonical_nodes,
                                                                         num_physical_nodes)
    return larger % smaller == 0


def check_nodes_divide(num_canonical_nodes: int, num_physical_nodes: int) -> None:
    """Raise the reference's error unless one node count divides the other."""
    if not nodes_divide(num_canonical_nodes, num_physical_nodes):
        raise ValueError(_DIVISIBILITY)


def partition_orig(num_samples: int, num_canonical_nodes: int, num_physical_nodes: int,
                   ranks_per_node: int, workers_per_rank: int, batch_size: int,
                   drop_first: int = 0, *, table: Table = None) -> NDArray[np.int64]:
    """`orig` partition of `table[0:num_samples]` (or of the ids themselves when `table` is None).

    Equal to `where(p != -1, table[p], -1)` for `p` the reference's partition, in one pass.

    Returns:
        C-contiguous int64 array `(P, R, W, batches per worker, B)`, -1 for padding.
    """
    check_nodes_divide(num_canonical_nodes, num_physical_nodes)
    if drop_first % num_physical_nodes:
        logger.warning('`drop_first` was not divisible by `num_physical_nodes`. Rounding it down '
                       'to make it divisible.')
        drop_first -= drop_first % num_physical_nodes
    canon = CanonicalMatrix(num_samples, num_canonical_nodes, num_physical_nodes, table)
    skip = drop_first // num_physical_nodes
    node_len = max(canon.node_length(num_physical_nodes) - skip, 0)
    pad = rank_padding(node_len, ranks_per_node)
    num_batches = batches_per_worker(node_len + len(pad), ranks_per_node, workers_per_rank,
                                     batch_size)
    out = np.empty((num_physical_nodes, ranks_per_node, workers_per_rank, num_batches,
                    batch_size), np.int64)
    # Short node sequences are read and laid out for a group of nodes at a time: a call per
    # node cost ~60 us of overhead, which dominated partitions over many canonical nodes (each
    # stream of `device_per_stream` is partitioned over all of them). Long ones go node by node,
    # in cache-sized chunks.
    group = _GROUP_IDS // max(node_len + len(pad), 1)
    if group > 1:
        for first in range(0, num_physical_nodes, group):
            nodes = np.arange(first, min(first + group, num_physical_nodes), dtype=np.int64)
            sequences = canon.read_nodes(nodes, num_physical_nodes, skip, skip + node_len)
            lay_out_nodes(sequences, pad, out[first:first + len(nodes)])
        return out
    for node in range(num_physical_nodes):
        def read(begin: int, end: int, node: int = node) -> NDArray[np.int64]:
            return canon.read(node, num_physical_nodes, skip + begin, skip + end)
        lay_out_node(read, node_len, pad, out[node])
    return out


def get_partitions_orig(num_samples: int, num_canonical_nodes: int, num_physical_nodes: int,
                        ranks_per_node: int, workers_per_rank: int, batch_size: int,
                        drop_first: int = 0,
                        initial_physical_nodes: int | None = None) -> NDArray[np.int64]:
    """The reference's `get_partitions_orig` (`initial_physical_nodes` is ignored, as there).

    Raises:
        ValueError: canonical and physical node counts do not divide one another.
    """
    return partition_orig(num_samples, num_canonical_nodes, num_physical_nodes, ranks_per_node,
                          workers_per_rank, batch_size, drop_first)
