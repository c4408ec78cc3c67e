"""`stratified` batching: every global batch has the same per-stream composition.

Each stream gets a fixed portion of the global batch (its proportion, rounding leftovers to the
streams closest to another sample); streams are partitioned separately and their chunks
concatenated batch by batch (spec §6.5). Pure numpy.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from numpy.typing import NDArray

from streaming.order.batching.common import finish, full_rows, stream_partition
from streaming.order.plan_config import PlanConfig
from streaming.order.world import World

__all__ = ["batch_portions", "plan_stratified"]

logger = logging.getLogger(__name__)

_INDENT = ' ' * 12


def batch_portions(proportions: tuple[float, ...], global_batch_size: int) -> NDArray[np.int64]:
    """Samples of each stream in every global batch (truncated shares, leftovers by remainder).

    Raises:
        ValueError: a stream would get no sample per batch.
    """
    portions = np.array([int(p * global_batch_size) for p in proportions])
    if np.sum(portions) != global_batch_size:
        missing = global_batch_size - np.sum(portions)
        leftovers = global_batch_size * np.array(proportions) - portions
        # Stable: among equal remainders, the later streams first, on every numpy and CPU. The
        # reference's default sort agrees for small tables but not for many tied streams,
        # where its choice moves with the numpy version (2.1 vs 2.4 differ at 300 streams).
        portions[np.flip(np.argsort(leftovers, kind='stable'))[:missing]] += 1
    for stream_id, portion in enumerate(portions):
        if portion <= 0:
            raise ValueError(
                f'Number of samples for stream {stream_id} is {portion} because the portion of '
                f'this stream in the global batch, which is of size {global_batch_size}, is too '
                f'low. Please increase the global batch size or increase the proportion of total '
                f'samples that come from stream {stream_id}.')
    return portions


def _resume_message(global_batch_size: int) -> str:
    return (f'Because of the `stratified` batching method, resumption may {_INDENT}only occur '
            f'on a sample that is a multiple of the current global batch {_INDENT}size of '
            f'{global_batch_size}. Resuming training after the most {_INDENT}recently finished '
            f'global batch. Set {global_batch_size} to {_INDENT}the original value for '
            f'deterministic resumption.')


def plan_stratified(config: PlanConfig, world: World, epoch: int,
                    sample_in_epoch: int) -> NDArray[np.int64]:
    """Sample ids `(nodes, ranks, workers, batches, batch size)`, -1 for padding.

    Generator calls: per stream in order, `resample(stream)` then its shuffle's.
    """
    global_batch_size = config.batch_size * world.ranks_per_node * world.num_nodes
    partitions = [stream_partition(config, epoch, i, 1, world.ranks_per_node,
                                   world.workers_per_rank, 1)
                  for i in range(len(config.proportions))]
    portions = batch_portions(config.proportions, global_batch_size)
    chunks = []
    for stream_id, (part, portion) in enumerate(zip(partitions, portions)):
        inorder = part.transpose(3, 2, 0, 1, 4).reshape(-1)
        if inorder.size % portion:
            inorder = np.concatenate((inorder, np.full(portion - inorder.size % portion, -1)))
        rows = inorder.reshape(-1, portion)
        if full_rows(rows) != rows.shape[0]:
            logger.warning('Because of the `stratified` batching method, some batches with an '
                           'inadequate number of samples from stream with index %d are being '
                           'dropped.', stream_id)
        chunks.append(rows)
    num_batches = min(full_rows(rows) for rows in chunks)
    batches = np.concatenate([rows[:num_batches] for rows in chunks], axis=1)
    return finish(batches, world, config.batch_size, sample_in_epoch, warnings.warn,
                  _resume_message(global_batch_size))
