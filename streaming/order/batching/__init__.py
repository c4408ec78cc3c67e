"""Batching methods: turn a dataset's streams into each worker's batches for one epoch.

`planners` maps the config name to the pure function on a `PlanConfig`; `plan_epoch` dispatches.
The reference's dataset-reading entry points (`generate_work`, `batching_methods`) are adapters in
`streaming.base.batching`, built from this one table.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streaming.order.batching import device_per_stream, per_stream, random, stratified
from streaming.order.batching.device_per_stream import plan_device_per_stream
from streaming.order.batching.per_stream import plan_per_stream
from streaming.order.batching.random import plan_random
from streaming.order.batching.stratified import plan_stratified
from streaming.order.plan_config import PlanConfig
from streaming.order.world import World

__all__ = ["Planner", "device_per_stream", "per_stream", "plan_epoch", "planners", "random",
           "stratified"]

Planner = Callable[[PlanConfig, World, int, int], NDArray[np.int64]]

planners: dict[str, Planner] = {
    'random': plan_random,
    'stratified': plan_stratified,
    'per_stream': plan_per_stream,
    'device_per_stream': plan_device_per_stream,
}


def plan_epoch(batching_method: str, config: PlanConfig, world: World, epoch: int,
               sample_in_epoch: int) -> NDArray[np.int64]:
    """One epoch's sample ids `(nodes, ranks, workers, batches, batch size)`, -1 for padding.

    Depends only on `config`, the world's shape, `epoch` and `sample_in_epoch`.

    Raises:
        KeyError: unknown `batching_method`.
    """
    return planners[batching_method](config, world, epoch, sample_in_epoch)
