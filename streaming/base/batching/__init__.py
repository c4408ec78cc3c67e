"""Old import path `streaming.base.batching`: the reference's dataset-reading entry points.

Adapters (see `_adapter.py`) over the one table of planners in `streaming.order.batching`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.base._lazy import submodules
from streaming.base.batching import device_per_stream, per_stream, random, stratified
from streaming.base.batching._adapter import ReferenceEntry, reference_entry
from streaming.base.batching.device_per_stream import generate_work_device_per_stream_batching
from streaming.base.batching.per_stream import generate_work_per_stream_batching
from streaming.base.batching.random import generate_work_random_batching
from streaming.base.batching.stratified import generate_work_stratified_batching
from streaming.order.batching import planners
from streaming.order.defaults import add_batching_resolver
from streaming.order.world import World

__all__ = [
    "batching_methods",
    "device_per_stream",
    "generate_work",
    "generate_work_device_per_stream_batching",
    "generate_work_per_stream_batching",
    "generate_work_random_batching",
    "generate_work_stratified_batching",
    "per_stream",
    "random",
    "stratified",
]

batching_methods: dict[str, ReferenceEntry] = {
    name: reference_entry(planner) for name, planner in planners.items()
}
_SHIPPED = dict(batching_methods)


def _users_method(name: str) -> ReferenceEntry | None:
    """A method put in `batching_methods` by the user, which datasets call as the reference
    does (the shipped entries leave datasets to their planners)."""
    found = batching_methods.get(name)
    return None if found is None or found is _SHIPPED.get(name) else found


add_batching_resolver(_users_method)


def generate_work(batching_method: str, dataset: Any, world: World, epoch: int,
                  sample_in_epoch: int) -> NDArray[np.int64]:
    """The reference's `generate_work`: plan the epoch of `dataset` (see `plan_config_of` for the
    attributes read).

    Raises:
        KeyError: unknown `batching_method`.
    """
    return batching_methods[batching_method](dataset, world, epoch, sample_in_epoch)

__getattr__ = submodules(__name__)  # the reference imported them eagerly
