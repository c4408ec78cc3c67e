"""`random` batching (the default): every batch mixes streams at the sample level.

Resample all streams, shuffle the epoch's big ids and partition them over the world, in one
layout pass (spec §6.5). Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.partition import partition
from streaming.order.plan_config import PlanConfig
from streaming.order.world import World

__all__ = ["plan_random"]


def plan_random(config: PlanConfig, world: World, epoch: int,
                sample_in_epoch: int) -> NDArray[np.int64]:
    """Sample ids `(nodes, ranks, workers, batches, batch size)`, -1 for padding.

    Generator calls: `resample` (all streams), then the shuffle algorithm's.
    """
    holder = [config.resample(epoch)]

    def table() -> NDArray[np.signedinteger] | None:
        return config.id_table(holder.pop(), epoch, config.shuffle_block_size)

    return partition(config.partition_algo, config.epoch_size, config.num_canonical_nodes,
                     world.num_nodes, world.ranks_per_node, world.workers_per_rank,
                     config.batch_size, sample_in_epoch, config.initial_physical_nodes,
                     table=table, padded_resume=True)  # a checkpoint at the padded end
