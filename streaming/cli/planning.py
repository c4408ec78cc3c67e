"""`plan`: the first sample ids each rank and worker reads, from shard sizes and a world.

Builds the planner's `PlanConfig` the way `StreamingDataset` does (stream weights through
`apply_weights`, the reference's lazy defaults for canonical nodes and shuffle block size) and
asks `streaming.order.plan_epoch`. Pure: no dataset object, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from streaming.order import (
    PlanConfig,
    StreamLayout,
    World,
    plan_epoch,
    resolve_num_canonical_nodes,
    resolve_shuffle_block_size,
)
from streaming.order.weighting import StreamWeights, apply_weights

__all__ = ["PlanRequest", "StreamSpec", "plan_first_ids"]


@dataclass(frozen=True)
class StreamSpec:
    """One stream: its samples per shard and at most one weight, as `Stream` takes them."""

    shard_sizes: list[int]
    proportion: float | None = None
    repeat: float | None = None
    choose: int | None = None


@dataclass(frozen=True)
class PlanRequest:
    """Streams and a world, with StreamingDataset's argument names."""

    streams: list[StreamSpec]
    nodes: int
    ranks_per_node: int
    workers: int
    batch_size: int
    epoch: int = 0
    sample_in_epoch: int = 0
    shuffle: bool = False
    shuffle_algo: str = "py1e"
    shuffle_seed: int = 9176
    shuffle_block_size: int | None = None
    num_canonical_nodes: int | None = None
    partition_algo: str = "relaxed"
    initial_nodes: int | None = None
    batching_method: str = "random"
    epoch_size: int | None = None
    sampling_method: str = "balanced"
    sampling_granularity: int = 1


def _layout(streams: list[StreamSpec]) -> StreamLayout:
    sizes = np.asarray([n for stream in streams for n in stream.shard_sizes], np.int64)
    counts = np.asarray([len(stream.shard_sizes) for stream in streams], np.int64)
    return StreamLayout(sizes, (np.cumsum(sizes) - sizes).astype(np.int64),
                        (np.cumsum(counts) - counts).astype(np.int64), counts)


def _config(request: PlanRequest) -> PlanConfig:
    """The planner's inputs for `request`, derived as `StreamingDataset` derives them.

    Raises:
        ValueError: no stream, or weights `Stream`/`StreamingDataset` would refuse.
    """
    if not request.streams:
        raise ValueError("No stream to plan.")
    layout = _layout(request.streams)
    per_stream = np.asarray([sum(stream.shard_sizes) for stream in request.streams], np.int64)
    weights = [StreamWeights(s.proportion, s.repeat, s.choose) for s in request.streams]
    derived, epoch_size = apply_weights(weights, per_stream, request.epoch_size,
                                        request.shuffle_seed)
    ncn = resolve_num_canonical_nodes(request.num_canonical_nodes, request.shuffle_algo,
                                      request.initial_nodes or request.nodes)
    return PlanConfig(
        layout=layout, proportions=tuple(float(w.proportion) for w in derived),
        chooses=tuple(int(w.choose) for w in derived), epoch_size=epoch_size,
        batch_size=request.batch_size, num_canonical_nodes=ncn, shuffle=request.shuffle,
        shuffle_algo=request.shuffle_algo, shuffle_seed=request.shuffle_seed,
        shuffle_block_size=resolve_shuffle_block_size(request.shuffle_block_size, ncn),
        partition_algo=request.partition_algo, sampling_method=request.sampling_method,
        sampling_granularity=request.sampling_granularity,
        initial_physical_nodes=request.initial_nodes,
        # derived as the dataset derives it: reshuffle per epoch when shuffling balanced samples
        epoch_seed_change=request.shuffle and request.sampling_method == "balanced")


def plan_first_ids(request: PlanRequest, first: int) -> dict[str, Any]:
    """Per rank and worker, the first `first` sample ids of the epoch (padding dropped).

    Raises:
        KeyError: an unknown shuffle or partition algorithm.
        ValueError: a world the partitioner refuses (e.g. nodes not dividing canonical nodes).
    """
    config = _config(request)
    world = World(request.nodes, request.ranks_per_node, request.workers, 0)
    ids = plan_epoch(request.batching_method, config, world, request.epoch,
                     request.sample_in_epoch)
    # Global sample id -> stream: streams own consecutive ranges of ids, in order.
    stream_starts = np.cumsum([0] + [sum(s.shard_sizes) for s in request.streams])[1:-1]
    workers = []
    for node in range(request.nodes):
        for rank_of_node in range(request.ranks_per_node):
            for worker in range(request.workers):
                flat = ids[node, rank_of_node, worker].reshape(-1)
                shown = flat[flat >= 0][:first]
                workers.append({
                    "node": node, "rank": node * request.ranks_per_node + rank_of_node,
                    "worker": worker, "ids": shown.tolist(),
                    "streams": np.searchsorted(stream_starts, shown, "right").tolist(),
                    "count": int((flat >= 0).sum())})
    return {"epoch": request.epoch, "sample_in_epoch": request.sample_in_epoch,
            "num_samples": config.epoch_size, "num_canonical_nodes": config.num_canonical_nodes,
            "shuffle": request.shuffle, "shuffle_algo": request.shuffle_algo,
            "shuffle_seed": request.shuffle_seed,
            "shuffle_block_size": config.shuffle_block_size,
            "batching_method": request.batching_method,
            "stream_chooses": list(config.chooses), "workers": workers}
