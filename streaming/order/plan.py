"""The one way into the planner: typed options and streams in, an epoch's sample ids out.

`StreamingDataset` and the `streaming plan` command both go through here, so a knob, a default
or a derivation (stream weights, `epoch_seed_change`, the lazy `num_canonical_nodes` and
`shuffle_block_size`) is written once:

    options = OrderOptions(shuffle=True, batch_size=32, ...)           # checked on creation
    streams = StreamTable.derive(layout, weights, epoch_size, seed)    # weights -> chooses
    resolution, epoch, offset = resolve_epoch(options.start(), checkpoint, epoch, nodes, algo)
    ids = plan(options, streams, resolution, world, epoch, offset)

Pure: no I/O, no torch, no globals.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from streaming.order.batching import plan_epoch
from streaming.order.checkpoint import Checkpoint
from streaming.order.defaults import (
    SHUFFLE_BLOCK_SIZE,
    check_batching_method,
    check_epoch_size,
    check_sampling_granularity,
    check_sampling_method,
    check_shuffle_block_size,
    check_shuffle_seed,
    check_whole,
    resolve_num_canonical_nodes,
    resolve_shuffle_block_size,
)
from streaming.order.plan_config import PlanConfig
from streaming.order.resample import StreamLayout
from streaming.order.weighting import StreamWeights, apply_weights
from streaming.order.world import World

__all__ = ["NEED_BATCH_SIZE", "OrderOptions", "Resolution", "StreamTable",
           "batch_size_when_missing", "epoch_node_rows", "node_rows", "plan", "plan_config",
           "resolve_epoch"]


@dataclass(frozen=True)
class OrderOptions:
    """The order knobs of `StreamingDataset`, as given; None means the reference's lazy default.

    Checked when created (also by `dataclasses.replace`), in the reference's order and wording.
    """

    shuffle: bool = False
    shuffle_algo: str = "py1e"
    shuffle_seed: int = 9176
    shuffle_block_size: int | None = None
    num_canonical_nodes: int | None = None
    partition_algo: str = "relaxed"
    sampling_method: str = "balanced"
    sampling_granularity: int = 1
    batching_method: str = "random"
    batch_size: int | None = None
    epoch_size: int | None = None  # requested samples per epoch, all streams; None: all

    def __post_init__(self) -> None:
        check_sampling_method(self.sampling_method)
        check_sampling_granularity(self.sampling_granularity)
        check_batching_method(self.batching_method)
        check_shuffle_seed(self.shuffle_seed)
        for name, value, least in (("batch_size", self.batch_size, 1),
                                   ("num_canonical_nodes", self.num_canonical_nodes, 0)):
            if value is None:
                continue
            message = f"`{name}` must be a positive integer, but got: {value!r}."
            check_whole(value, message)
            if value < least:
                raise ValueError(message)
            object.__setattr__(self, name, int(value))  # a numpy integer planned as an int
        object.__setattr__(self, "epoch_size", check_epoch_size(self.epoch_size))

    @property
    def epoch_seed_change(self) -> bool:
        """Whether the sample choice changes every epoch (balanced sampling with shuffle)."""
        return self.shuffle and self.sampling_method == "balanced"

    def start(self) -> Resolution:
        """The lazily decided values before any epoch or checkpoint decided them."""
        return Resolution(self.num_canonical_nodes, self.shuffle_seed, self.shuffle_block_size,
                          None)


@dataclass(frozen=True)
class StreamTable:
    """The streams as the planner sees them: shard sizes and derived weights.

    `weights` are every stream's `(proportion, repeat, choose)` after `apply_weights`;
    `epoch_size` is the samples per epoch they add up to.
    """

    layout: StreamLayout
    weights: tuple[StreamWeights, ...]
    epoch_size: int

    @classmethod
    def derive(cls, layout: StreamLayout, given: Sequence[StreamWeights],
               epoch_size: int | None, seed: int) -> StreamTable:
        """Derive the streams' weights (`apply_weights`) over their shards' layout.

        Args:
            layout: the streams' shards (`StreamLayout.from_shard_sizes`, or a catalog's).
            given: per stream, the weight it was given (at most one of the three).
            epoch_size: requested samples per epoch, or None.
            seed: the constructor's shuffle seed (it places the rounding shortfall).

        Raises:
            ValueError: weights `Stream`/`StreamingDataset` refuse (see `apply_weights`).
        """
        derived, size = apply_weights(list(given), layout.samples_per_stream, epoch_size, seed)
        return cls(layout, tuple(derived), size)


@dataclass(frozen=True)
class Resolution:
    """The values decided lazily, as the reference's dataset attributes are (sticky once set).

    `num_canonical_nodes` and `shuffle_block_size` get their defaults at the first epoch (or
    state dict), when the number of physical nodes is known; a checkpoint replaces the canonical
    nodes, the seed and the initial physical nodes.
    """

    num_canonical_nodes: int | None
    shuffle_seed: int
    shuffle_block_size: int | None
    initial_physical_nodes: int | None


def resolve_epoch(resolution: Resolution, checkpoint: Checkpoint | None, epoch: int,
                  num_physical_nodes: int, shuffle_algo: str
                  ) -> tuple[Resolution, int, int]:
    """Decide the lazy values for an epoch presumed to be `epoch`.

    A checkpoint of `epoch` or later wins (its epoch, its sample count and its order values);
    an older one is stale and ignored.

    Returns:
        The new resolution, the epoch to run and how many of its samples to skip.
    """
    if checkpoint is not None and checkpoint.epoch >= epoch:
        resolution = Resolution(checkpoint.num_canonical_nodes, checkpoint.shuffle_seed,
                                resolution.shuffle_block_size,
                                checkpoint.initial_physical_nodes)
        epoch, offset = checkpoint.epoch, checkpoint.sample_in_epoch
    else:
        offset = 0
    ncn = resolve_num_canonical_nodes(resolution.num_canonical_nodes, shuffle_algo,
                                      num_physical_nodes)
    block = resolve_shuffle_block_size(resolution.shuffle_block_size, ncn)
    return replace(resolution, num_canonical_nodes=ncn, shuffle_block_size=block), epoch, offset


NEED_BATCH_SIZE = ("Please pass `batch_size` to StreamingDataset. It should be set the same as "
                    "the DataLoader, and is the number of samples per batch, for each device. It "
                    "is necessary for deterministic resumption and optimal performance.")


def batch_size_when_missing(batching_method: str) -> int:
    """The batch size of a dataset built without one, at its first epoch: 1, with a warning, as
    a plain DataLoader's default (the reference raises; docs/compatibility.md says why we do
    not), except for the methods that lay out whole batches, whose batches of 1 would mix
    streams or miss their proportions: those raise the reference's error.

    Raises:
        ValueError: `batching_method` is not 'random'.
    """
    if batching_method != "random":
        raise ValueError(f"{NEED_BATCH_SIZE} `batching_method={batching_method!r}` lays out "
                         f"whole batches.")
    warnings.warn(
        "StreamingDataset was built without `batch_size`, so it lays samples out for batches "
        "of 1 (the DataLoader's default). Pass `batch_size=` to StreamingDataset (the same as "
        "your DataLoader's), or use StreamingDataLoader, which hands its own to the dataset.",
        stacklevel=3)
    return 1


def plan_config(options: OrderOptions, streams: StreamTable,
                resolution: Resolution) -> PlanConfig:
    """Everything the batching methods need, as one frozen value.

    Raises:
        RuntimeError: the resolution has no canonical node count (not resolved yet).
        ValueError: no batch size.
        TypeError, ValueError: shuffling without a usable block size
            (`check_shuffle_block_size`).
    """
    if resolution.num_canonical_nodes is None:
        raise RuntimeError("`num_canonical_nodes` can never be None. Provide a positive integer.")
    if not isinstance(options.batch_size, int):
        raise ValueError(NEED_BATCH_SIZE)
    block = resolution.shuffle_block_size
    check_shuffle_block_size(options.shuffle, options.shuffle_algo, block)
    return PlanConfig(
        layout=streams.layout,
        proportions=tuple(float(w.proportion) for w in streams.weights),  # type: ignore[arg-type]
        chooses=tuple(int(w.choose) for w in streams.weights),  # type: ignore[arg-type]
        epoch_size=streams.epoch_size,
        batch_size=options.batch_size,
        num_canonical_nodes=resolution.num_canonical_nodes,
        shuffle=options.shuffle,
        shuffle_algo=options.shuffle_algo,
        shuffle_seed=resolution.shuffle_seed,
        shuffle_block_size=block if block is not None else SHUFFLE_BLOCK_SIZE,
        partition_algo=options.partition_algo,
        sampling_method=options.sampling_method,
        sampling_granularity=options.sampling_granularity,
        initial_physical_nodes=resolution.initial_physical_nodes,
        epoch_seed_change=options.epoch_seed_change,
    )


def plan(options: OrderOptions, streams: StreamTable, resolution: Resolution, world: World,
         epoch: int, sample_in_epoch: int) -> NDArray[np.int64]:
    """One epoch's sample ids `(nodes, ranks, workers, batches, batch size)`, -1 for padding."""
    return plan_epoch(options.batching_method, plan_config(options, streams, resolution), world,
                      epoch, sample_in_epoch)


def node_rows(node_plan: NDArray[np.int64]) -> NDArray[np.int64]:
    """A node's plan `(ranks, workers, ...)` as one row of sample ids per worker (a view)."""
    return node_plan.reshape(node_plan.shape[0] * node_plan.shape[1], -1)


def epoch_node_rows(options: OrderOptions, streams: StreamTable, resolution: Resolution,
                    world: World, epoch: int) -> NDArray[np.int64]:
    """The rows of `world`'s node for epoch `epoch` from its start (eviction looks ahead to
    the next epoch with it)."""
    return node_rows(plan(options, streams, resolution, world, epoch, 0)[world.node])
