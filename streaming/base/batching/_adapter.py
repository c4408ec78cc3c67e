"""The reference's dataset-reading batching entry points, over `streaming.order`'s planners.

The reference's `generate_work*(dataset, world, epoch, sample_in_epoch)` read about twenty
attributes off a dataset object; our runtime builds its `PlanConfig` from typed options instead
(`streaming.order.plan`). This adapter keeps the old entry points for code and tests that call
them with any object carrying those attributes (ours included).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.order.batching import Planner
from streaming.order.defaults import check_shuffle_block_size
from streaming.order.plan import NEED_BATCH_SIZE
from streaming.order.plan_config import PlanConfig
from streaming.order.resample import StreamLayout
from streaming.order.world import World

__all__ = ["ReferenceEntry", "plan_config_of", "reference_entry"]

ReferenceEntry = Callable[[Any, World, int, int], NDArray[np.int64]]

_LAYOUT = ("samples_per_shard", "sample_offset_per_shard", "shard_offset_per_stream",
           "shards_per_stream")


def plan_config_of(dataset: Any) -> PlanConfig:
    """Read the planner's inputs off a dataset object, as the reference's functions do.

    Attributes read: `streams[i].proportion`, `streams[i].choose` (derived weights), the four
    layout arrays, `epoch_size`, `batch_size`, `num_canonical_nodes`, `shuffle`,
    `shuffle_algo`, `shuffle_seed`, `shuffle_block_size`, `partition_algo`,
    `sampling_method`, `sampling_granularity`, `initial_physical_nodes`,
    `epoch_seed_change`.

    Raises:
        RuntimeError: `num_canonical_nodes` is None (defaults not resolved yet).
        ValueError: `batch_size` is not an int.
        TypeError, ValueError: shuffling without a usable `shuffle_block_size`.
    """
    if dataset.num_canonical_nodes is None:
        raise RuntimeError('`num_canonical_nodes` can never be None. Provide a positive '
                           'integer.')
    if not isinstance(dataset.batch_size, int):
        raise ValueError(NEED_BATCH_SIZE)
    check_shuffle_block_size(dataset.shuffle, dataset.shuffle_algo, dataset.shuffle_block_size)
    layout = StreamLayout(*(np.asarray(getattr(dataset, name), np.int64) for name in _LAYOUT))
    return PlanConfig(
        layout=layout,
        proportions=tuple(stream.proportion for stream in dataset.streams),
        chooses=tuple(stream.choose for stream in dataset.streams),
        epoch_size=int(dataset.epoch_size),
        batch_size=dataset.batch_size,
        num_canonical_nodes=dataset.num_canonical_nodes,
        shuffle=bool(dataset.shuffle),
        shuffle_algo=dataset.shuffle_algo,
        shuffle_seed=dataset.shuffle_seed,
        shuffle_block_size=dataset.shuffle_block_size,
        partition_algo=dataset.partition_algo,
        sampling_method=dataset.sampling_method,
        sampling_granularity=dataset.sampling_granularity,
        initial_physical_nodes=dataset.initial_physical_nodes,
        epoch_seed_change=bool(dataset.epoch_seed_change),
    )


def reference_entry(planner: Planner) -> ReferenceEntry:
    """`planner` with the reference's signature: `(dataset, world, epoch, sample_in_epoch)`."""

    def generate_work(dataset: Any, world: World, epoch: int,
                      sample_in_epoch: int) -> NDArray[np.int64]:
        return planner(plan_config_of(dataset), world, epoch, sample_in_epoch)

    generate_work.__doc__ = f"The reference's entry point over `{planner.__name__}`."
    return generate_work
