"""`per_stream` batching: every global batch comes from a single stream.

Each stream is partitioned over the real world on its own; its complete global batches keep
their order, and a seeded shuffle decides which stream fills each batch slot (spec §6.5). Pure
numpy.
"""

from __future__ import annotations

import logging

import numpy as np
from numpy.typing import NDArray

from streaming.order.batching.common import batch_slots, complete_rows, finish, stream_partition
from streaming.order.plan_config import PlanConfig
from streaming.order.rng import sampling_rng
from streaming.order.world import World

__all__ = ["plan_per_stream"]

logger = logging.getLogger(__name__)


def plan_per_stream(config: PlanConfig, world: World, epoch: int,
                    sample_in_epoch: int) -> NDArray[np.int64]:
    """Sample ids `(nodes, ranks, workers, batches, batch size)`, -1 for padding.

    Generator calls: per stream in order, `resample(stream)` then its shuffle's; then
    `sampling_rng(seed, epoch, epoch_seed_change).shuffle(origins)`.

    Raises:
        ValueError: a stream cannot fill a single global batch.
    """
    nodes, ranks = world.num_nodes, world.ranks_per_node
    global_batch_size = config.batch_size * ranks * nodes
    kept, counts = [], []
    for stream_id in range(len(config.proportions)):
        part = stream_partition(config, epoch, stream_id, nodes, ranks, world.workers_per_rank,
                                config.batch_size)
        rows = part.transpose(3, 2, 0, 1, 4).reshape(-1, global_batch_size)
        rows = complete_rows(rows, stream_id, 'per_stream', (
            f'Stream with index {stream_id} does not have an adequate number of samples to '
            f'construct a complete global batch. Training will occur without any samples from '
            f'this stream.'))
        kept.append(rows)
        counts.append(len(rows))
    batches = np.concatenate(kept)
    del kept
    rng = sampling_rng(config.shuffle_seed, epoch, config.epoch_seed_change)
    batches = batches[batch_slots(rng, counts)]
    message = ('Because of the `per_stream` batching method, resumption may only occur on a '
               'sample             that is a multiple of the current global batch size of '
               f'{global_batch_size}. Resuming training after the most recently finished global '
               'batch.')
    return finish(batches, world, config.batch_size, sample_in_epoch, logger.warning, message)
