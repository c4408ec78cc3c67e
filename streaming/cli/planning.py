"""`plan`: the first sample ids each rank and worker reads, from shard sizes and a world.

Builds the planner's `PlanConfig` for one stream the way `StreamingDataset` does (default
weights, the reference's lazy defaults for canonical nodes and shuffle block size) and asks
`streaming.order.plan_epoch`. Pure: no dataset object, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from streaming.order import (PlanConfig, StreamLayout, World, plan_epoch,
                             resolve_num_canonical_nodes, resolve_shuffle_block_size)

__all__ = ["PlanRequest", "plan_first_ids"]


@dataclass(frozen=True)
class PlanRequest:
    """A single-stream dataset and a world, with StreamingDataset's argument names."""

    shard_sizes: list[int]
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


def _config(request: PlanRequest) -> PlanConfig:
    sizes = np.asarray(request.shard_sizes, np.int64)
    total = int(sizes.sum())
    ncn = resolve_num_canonical_nodes(request.num_canonical_nodes, request.shuffle_algo,
                                      request.initial_nodes or request.nodes)
    layout = StreamLayout(sizes, np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64),
                          np.zeros(1, np.int64), np.array([len(sizes)], np.int64))
    return PlanConfig(
        layout=layout, proportions=(1.0,), chooses=(total,), epoch_size=total,
        batch_size=request.batch_size, num_canonical_nodes=ncn, shuffle=request.shuffle,
        shuffle_algo=request.shuffle_algo, shuffle_seed=request.shuffle_seed,
        shuffle_block_size=resolve_shuffle_block_size(request.shuffle_block_size, ncn),
        partition_algo=request.partition_algo, initial_physical_nodes=request.initial_nodes)


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
    workers = []
    for node in range(request.nodes):
        for rank_of_node in range(request.ranks_per_node):
            for worker in range(request.workers):
                flat = ids[node, rank_of_node, worker].reshape(-1)
                workers.append({
                    "node": node, "rank": node * request.ranks_per_node + rank_of_node,
                    "worker": worker, "ids": flat[flat >= 0][:first].tolist(),
                    "count": int((flat >= 0).sum())})
    return {"epoch": request.epoch, "sample_in_epoch": request.sample_in_epoch,
            "num_samples": config.epoch_size, "num_canonical_nodes": config.num_canonical_nodes,
            "shuffle": request.shuffle, "shuffle_algo": request.shuffle_algo,
            "shuffle_seed": request.shuffle_seed,
            "shuffle_block_size": config.shuffle_block_size, "workers": workers}
