"""`plan`: the first sample ids each rank and worker reads, from shard sizes and a world.

Goes through the planner's one way in (`streaming.order.plan`), exactly as `StreamingDataset`
does: the same options record, stream table and lazy-default resolution. Pure: no dataset
object, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from streaming.order.checkpoint import Checkpoint
from streaming.order.plan import OrderOptions, StreamTable, plan, resolve_epoch
from streaming.order.weighting import StreamWeights
from streaming.order.world import World

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


def _options(request: PlanRequest) -> OrderOptions:
    return OrderOptions(
        shuffle=request.shuffle, shuffle_algo=request.shuffle_algo,
        shuffle_seed=request.shuffle_seed, shuffle_block_size=request.shuffle_block_size,
        num_canonical_nodes=request.num_canonical_nodes, partition_algo=request.partition_algo,
        sampling_method=request.sampling_method,
        sampling_granularity=request.sampling_granularity,
        batching_method=request.batching_method, batch_size=request.batch_size,
        epoch_size=request.epoch_size)


def plan_first_ids(request: PlanRequest, first: int) -> dict[str, Any]:
    """Per rank and worker, the first `first` sample ids of the epoch (padding dropped).

    Raises:
        KeyError: an unknown shuffle or partition algorithm.
        ValueError: a world the partitioner refuses (e.g. nodes not dividing canonical nodes).
    """
    if not request.streams:
        raise ValueError("No stream to plan.")
    options = _options(request)
    streams = StreamTable.derive(
        [stream.shard_sizes for stream in request.streams],
        [StreamWeights(s.proportion, s.repeat, s.choose) for s in request.streams],
        options.epoch_size, options.shuffle_seed)
    # As a resumed run: the epoch and position given, the initial nodes of the first run.
    checkpoint = Checkpoint(request.epoch, request.sample_in_epoch, options.num_canonical_nodes,
                            options.shuffle_seed, request.initial_nodes)
    resolution, epoch, offset = resolve_epoch(options.start(), checkpoint, request.epoch,
                                              request.initial_nodes or request.nodes,
                                              options.shuffle_algo)
    world = World(request.nodes, request.ranks_per_node, request.workers, 0)
    ids = plan(options, streams, resolution, world, epoch, offset)
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
            "num_samples": streams.epoch_size,
            "num_canonical_nodes": resolution.num_canonical_nodes,
            "shuffle": request.shuffle, "shuffle_algo": request.shuffle_algo,
            "shuffle_seed": request.shuffle_seed,
            "shuffle_block_size": resolution.shuffle_block_size,
            "batching_method": request.batching_method,
            "stream_chooses": [int(w.choose) for w in streams.weights],  # type: ignore[arg-type]
            "workers": workers}
