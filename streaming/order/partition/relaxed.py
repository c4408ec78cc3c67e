"""The `relaxed` partition: keep the initial run's global batches on any compatible world.

When the physical node count neither divides nor is divided by the canonical count, partition
over the initial node count and re-deal the same global batch sequence (spec §6.2). Otherwise
this is exactly `orig`. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.partition.orig import Table, nodes_divide, partition_orig

__all__ = ["get_partitions_relaxed", "partition_relaxed"]


def partition_relaxed(num_samples: int, num_canonical_nodes: int, num_physical_nodes: int,
                      ranks_per_node: int, workers_per_rank: int, batch_size: int,
                      drop_first: int = 0, initial_physical_nodes: int | None = None, *,
                      table: Table = None) -> NDArray[np.int64]:
    """`relaxed` partition of `table[0:num_samples]` (of the ids themselves if `table` is None).

    Raises:
        ValueError: the global batch is not divisible by the initial number of devices.
    """
    if initial_physical_nodes is None or nodes_divide(num_canonical_nodes, num_physical_nodes):
        return partition_orig(num_samples, num_canonical_nodes, num_physical_nodes,
                              ranks_per_node, workers_per_rank, batch_size, drop_first,
                              table=table)
    global_batch_size = num_physical_nodes * ranks_per_node * batch_size
    initial_devices = initial_physical_nodes * ranks_per_node
    if global_batch_size % initial_devices != 0:
        raise ValueError(f'A global batch size of {global_batch_size} is not evenly divisible by '
                         f'the initial total number of devices of {initial_devices}. Make sure '
                         f'that when using the `relaxed` partitioning algorithm, the global batch '
                         f'size does not change during resumption of training.')
    initial = partition_orig(num_samples, num_canonical_nodes, initial_physical_nodes,
                             ranks_per_node, workers_per_rank, global_batch_size // initial_devices,
                             drop_first, table=table)
    # Traversal order of the initial run, re-dealt to the current world's batches.
    inorder = initial.transpose(3, 2, 0, 1, 4).reshape(-1)
    del initial
    out = inorder.reshape(-1, workers_per_rank, num_physical_nodes, ranks_per_node, batch_size)
    return np.ascontiguousarray(out.transpose(2, 3, 1, 0, 4))


def get_partitions_relaxed(num_samples: int, num_canonical_nodes: int, num_physical_nodes: int,
                           ranks_per_node: int, workers_per_rank: int, batch_size: int,
                           drop_first: int = 0,
                           initial_physical_nodes: int | None = None) -> NDArray[np.int64]:
    """The reference's `get_partitions_relaxed`: ids `(P, R, W, batches, B)`, -1 padding."""
    return partition_relaxed(num_samples, num_canonical_nodes, num_physical_nodes,
                             ranks_per_node, workers_per_rank, batch_size, drop_first,
                             initial_physical_nodes)
