"""Batching methods: turn a dataset's streams into each worker's batches for one epoch.

`batching_methods` maps the config name to the reference-compatible entry point
(`fn(dataset, world, epoch, sample_in_epoch)`); `planners` maps it to the pure function on a
`PlanConfig`. `generate_work` is the reference's dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.order.batching import device_per_stream, per_stream, random, stratified
from streaming.order.batching.device_per_stream import (
    generate_work_device_per_stream_batching,
    plan_device_per_stream,
)
from streaming.order.batching.per_stream import generate_work_per_stream_batching, plan_per_stream
from streaming.order.batching.random import generate_work_random_batching, plan_random
from streaming.order.batching.stratified import generate_work_stratified_batching, plan_stratified
from streaming.order.config import PlanConfig
from streaming.order.world import World

__all__ = [
    "batching_methods", "device_per_stream", "generate_work",
    "generate_work_device_per_stream_batching", "generate_work_per_stream_batching",
    "generate_work_random_batching", "generate_work_stratified_batching", "per_stream",
    "plan_epoch", "planners", "random", "stratified",
]

Planner = Callable[[PlanConfig, World, int, int], NDArray[np.int64]]

batching_methods: dict[str, Callable[[Any, World, int, int], NDArray[np.int64]]] = {
    'random': generate_work_random_batching,
    'stratified': generate_work_stratified_batching,
    'per_stream': generate_work_per_stream_batching,
    'device_per_stream': generate_work_device_per_stream_batching,
}

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


def generate_work(batching_method: str, dataset: Any, world: World, epoch: int,
                  sample_in_epoch: int) -> NDArray[np.int64]:
    """The reference's `generate_work`: plan the epoch of `dataset` (see `PlanConfig.from_dataset`
    for the attributes read).

    Raises:
        KeyError: unknown `batching_method`.
    """
    return batching_methods[batching_method](dataset, world, epoch, sample_in_epoch)
