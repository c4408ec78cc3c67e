"""Steps shared by the stream-aware batching methods (stratified, per_stream, device_per_stream).

Partition one stream's resampled (and shuffled) samples, assign shuffled stream origins to
batch slots, and finish: drop batches already consumed, pad with -1 and lay the global batches
out as `(nodes, ranks, workers, batches, batch size)`. Pure numpy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from streaming.order.partition import partition
from streaming.order.plan_config import PlanConfig
from streaming.order.world import World

__all__ = ["batch_slots", "complete_rows", "finish", "full_rows", "stream_partition"]

logger = logging.getLogger(__name__)


def stream_partition(config: PlanConfig, epoch: int, stream_id: int, num_nodes: int,
                     ranks_per_node: int, workers_per_rank: int, batch_size: int,
                     check_block: Callable[[int], None] | None = None) -> NDArray[np.int64]:
    """One stream's underlying sample ids, partitioned `(nodes, ranks, workers, batches, B)`.

    The stream is resampled alone and shuffled with a block size scaled by its proportion (so
    the job's overall block size stays what the user set).

    Args:
        check_block: Called with the stream's block size before shuffling (may raise).
    """
    resampled = config.resample(epoch, stream_id)
    num_samples = len(resampled)
    holder = [resampled]
    del resampled

    def table() -> NDArray[np.signedinteger] | None:
        block = 0
        if config.shuffle:
            block = int(config.shuffle_block_size * config.proportions[stream_id])
            if check_block is not None:
                check_block(block)
        return config.id_table(holder.pop(), epoch, block)

    return partition(config.partition_algo, num_samples, config.num_canonical_nodes, num_nodes,
                     ranks_per_node, workers_per_rank, batch_size, 0,
                     config.initial_physical_nodes, table=table)


def batch_slots(rng: np.random.Generator, counts: Sequence[int]) -> NDArray[np.int64]:
    """Shuffle which stream fills each batch slot; return the batch taken at each slot.

    Streams' batches are stacked in stream order; each stream's batches keep their order and
    fill that stream's slots left to right.

    Generator calls: `rng.shuffle(origins)` with one entry per batch.
    """
    origins = np.concatenate([np.full(count, i) for i, count in enumerate(counts)])
    rng.shuffle(origins)
    slots = np.empty(len(origins), np.int64)
    slots[np.argsort(origins, kind='stable')] = np.arange(len(origins), dtype=np.int64)
    return slots


def finish(batches: NDArray[np.int64], world: World, batch_size: int, sample_in_epoch: int,
           warn: Callable[[str], None], message: str) -> NDArray[np.int64]:
    """Drop consumed global batches, pad with -1 to whole worker rounds, lay out per worker.

    Args:
        batches: Global batches in traversal order, `(num batches, P * R * B)`.
        warn: Called with `message` if `sample_in_epoch` is not a multiple of the global batch.
    """
    nodes, ranks, workers = world.num_nodes, world.ranks_per_node, world.workers_per_rank
    global_batch_size = batch_size * ranks * nodes
    if sample_in_epoch % global_batch_size != 0:
        warn(message)
    batches = batches[sample_in_epoch // global_batch_size:]
    divisibility = nodes * ranks * workers * batch_size
    if batches.size % divisibility != 0:
        needed = divisibility - batches.size % divisibility
        padding = np.full((needed // global_batch_size, global_batch_size), -1)
        batches = np.concatenate((batches, padding))
    return batches.reshape(-1, workers, nodes, ranks, batch_size).transpose(2, 3, 1, 0, 4)


def full_rows(rows: NDArray[np.int64]) -> int:
    """Number of rows without padding (-1)."""
    return int(np.count_nonzero(np.min(rows, axis=1) >= 0))


def complete_rows(rows: NDArray[np.int64], stream_id: int, method: str,
                  none_left: str) -> NDArray[np.int64]:
    """The leading rows without padding; logs when rows are dropped.

    Raises:
        ValueError: with message `none_left` when no row is complete.
    """
    count = full_rows(rows)
    if count != rows.shape[0]:
        logger.warning('Because of the `%s` batching method, some batches with an inadequate '
                       'number of samples from stream with index %d will be dropped.', method,
                       stream_id)
    if not count:
        raise ValueError(none_left)
    return rows[:count]
