"""`device_per_stream` batching: every device batch comes from a single stream.

Each stream is partitioned over the canonical nodes as if they were physical nodes; each
physical node takes its canonical nodes' device batches, and a seeded shuffle per node decides
which stream fills each device batch slot (spec §6.5). Pure numpy.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
from numpy.typing import NDArray

from streaming.order.batching.common import batch_slots, complete_rows, finish, stream_partition
from streaming.order.plan_config import PlanConfig
from streaming.order.rng import sampling_rng
from streaming.order.world import World

__all__ = ["plan_device_per_stream"]

logger = logging.getLogger(__name__)


def _check_divisible(num_canonical_nodes: int, num_nodes: int) -> None:
    if num_canonical_nodes % num_nodes != 0:
        raise ValueError(f'For `device_per_stream` batching, num_canonical_nodes must be '
                         f'divisible by physical nodes. Got {num_canonical_nodes} canonical nodes '
                         f'and {num_nodes} physical nodes.')


def _node_batches(partitions: list[NDArray[np.int64]], node: int, per_node: int,
                  batch_size: int) -> tuple[list[NDArray[np.int64]], list[int]]:
    """One physical node's complete device batches of every stream, and their counts."""
    kept, counts = [], []
    for stream_id, part in enumerate(partitions):
        inorder = part[node * per_node:(node + 1) * per_node].transpose(3, 2, 0, 1, 4).reshape(-1)
        padding = batch_size - inorder.size % batch_size
        rows = np.concatenate((inorder, np.full(padding, -1))).reshape(-1, batch_size)
        rows = complete_rows(rows, stream_id, 'device_per_stream', (
            f'Stream with index {stream_id} does not have an adequate number of samples to '
            f'construct even a single device batch of size {batch_size}. Training will occur '
            f'without any samples from this stream!'))
        kept.append(rows)
        counts.append(len(rows))
    return kept, counts


def plan_device_per_stream(config: PlanConfig, world: World, epoch: int,
                           sample_in_epoch: int) -> NDArray[np.int64]:
    """Sample ids `(nodes, ranks, workers, batches, batch size)`, -1 for padding.

    Generator calls: per stream in order, `resample(stream)` then its shuffle's; then with
    `sampling_rng(seed, epoch, epoch_seed_change)`, `shuffle(origins)` per physical node.

    Raises:
        ValueError: canonical nodes not divisible by physical nodes, a stream's scaled shuffle
            block of 0, or a stream that cannot fill a device batch on some node.
    """
    ncn, nodes, batch_size = config.num_canonical_nodes, world.num_nodes, config.batch_size
    _check_divisible(ncn, nodes)

    def check_block(block: int, stream_id: int) -> None:
        if block == 0:
            raise ValueError(f'Samples from stream {stream_id} are not being used. Please either '
                             f'increase the `shuffle_block_size` from {config.shuffle_block_size}'
                             f', or increase the stream proportion from '
                             f'{config.proportions[stream_id]}.')

    partitions = [
        stream_partition(config, epoch, i, ncn, world.ranks_per_node, world.workers_per_rank, 1,
                         functools.partial(check_block, stream_id=i))
        for i in range(len(config.proportions))]
    per_node = ncn // nodes
    per_node_batches = [_node_batches(partitions, node, per_node, batch_size)
                        for node in range(nodes)]
    del partitions
    devices = nodes * world.ranks_per_node
    longest = max(sum(counts) for _, counts in per_node_batches)
    longest += devices - longest % devices
    rng = sampling_rng(config.shuffle_seed, epoch, config.epoch_seed_change)
    stacked = np.full((longest, nodes, batch_size), -1, np.int64)
    for node, (kept, counts) in enumerate(per_node_batches):
        batches = np.concatenate(kept)[batch_slots(rng, counts)]
        stacked[:len(batches), node] = batches
    global_batch_size = batch_size * devices
    message = ('Because of the `device_per_stream` batching method, resumption may only occur on '
               'a sample             that is a multiple of the current global batch size of '
               f'{global_batch_size}. Resuming training after the most recently finished global '
               'batch.')
    return finish(stacked.reshape(-1, global_batch_size), world, batch_size, sample_in_epoch,
                  logger.warning, message)
