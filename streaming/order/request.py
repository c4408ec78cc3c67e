"""A whole epoch's plan from plain numbers: shard sizes, weights, a world and the order knobs.

The one way in for tools that plan without a dataset (`streaming plan`, `streaming simulate`):
the same options record, stream table and lazy-default resolution as `StreamingDataset`, with
its argument names. Pure: no dataset object, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streaming.order.checkpoint import Checkpoint
from streaming.order.plan import OrderOptions, Resolution, StreamTable, plan, resolve_epoch
from streaming.order.resample import StreamLayout
from streaming.order.weighting import StreamWeights, check_stream_weights
from streaming.order.world import World

__all__ = ["PlanRequest", "PlannedEpoch", "StreamSpec", "plan_request"]


@dataclass(frozen=True)
class StreamSpec:
    """One stream: its samples per shard and at most one weight, as `Stream` takes them."""

    shard_sizes: list[int] | NDArray[np.int64]
    proportion: float | None = None
    repeat: float | None = None
    choose: int | None = None
    name: str = "stream"  # where it came from, for messages

    def __post_init__(self) -> None:
        """The checks `Stream` and the dataset make, so a plan is refused as a run would be."""
        try:
            check_stream_weights(self.proportion, self.repeat, self.choose)
        except ValueError as err:
            raise ValueError(f"{self.name}: {err}") from None
        sizes = np.asarray(self.shard_sizes)
        if sizes.size and (sizes.ndim != 1 or sizes.min() < 0):
            raise ValueError(f"{self.name}: shard sizes must be non-negative sample counts")
        if not sizes.sum():
            raise ValueError(f"{self.name}: stream contains no samples.")


@dataclass(frozen=True)
class PlanRequest:
    """Streams, the order knobs (checked `OrderOptions`) and a world to plan an epoch for."""

    streams: list[StreamSpec]
    options: OrderOptions
    nodes: int = 1
    ranks_per_node: int = 1
    workers: int = 1  # readers per rank
    epoch: int = 0
    sample_in_epoch: int = 0
    initial_nodes: int | None = None  # physical nodes of the run being resumed, if different


@dataclass(frozen=True)
class PlannedEpoch:
    """An epoch's plan and what it was derived from."""

    ids: NDArray[np.int64]  # (nodes, ranks per node, workers, batches, batch size), -1 padding
    streams: StreamTable
    resolution: Resolution

    @property
    def shard_offsets(self) -> NDArray[np.int64]:
        """The first global sample id of every shard, all streams in order (for locating)."""
        return np.asarray(self.streams.layout.sample_offset_per_shard, np.int64)


def plan_request(request: PlanRequest) -> PlannedEpoch:
    """Plan the requested epoch exactly as a dataset in that world would.

    Raises:
        KeyError: an unknown shuffle or partition algorithm.
        ValueError: no stream, or a world the partitioner refuses (e.g. nodes not dividing
            canonical nodes).
    """
    if not request.streams:
        raise ValueError("No stream to plan.")
    options = request.options
    streams = StreamTable.derive(
        StreamLayout.from_shard_sizes([stream.shard_sizes for stream in request.streams]),
        [StreamWeights(s.proportion, s.repeat, s.choose) for s in request.streams],
        options.epoch_size, options.shuffle_seed)
    # As a resumed run: the epoch and position given, the initial nodes of the first run.
    checkpoint = Checkpoint(request.epoch, request.sample_in_epoch, options.num_canonical_nodes,
                            options.shuffle_seed, request.initial_nodes)
    resolution, epoch, offset = resolve_epoch(options.start(), checkpoint, request.epoch,
                                              request.initial_nodes or request.nodes,
                                              options.shuffle_algo)
    world = World(request.nodes, request.ranks_per_node, request.workers, 0)
    return PlannedEpoch(plan(options, streams, resolution, world, epoch, offset), streams,
                        resolution)
