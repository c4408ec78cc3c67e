"""The sample-order planner: which sample ids each worker of each rank yields, in which order.

Pure functions of (shard sizes, stream weights, seed, epoch, canonical nodes, world, batch size)
that reproduce MosaicML Streaming 0.13's order bit for bit. numpy only: no I/O, no torch (except
lazily in `World.detect`), no shared memory, no globals.

    plan_epoch(batching_method, PlanConfig, World, epoch, sample_in_epoch) -> int64 ids
        (nodes, ranks, workers, batches, batch size), -1 = padding
"""

from __future__ import annotations

from streaming.order.batching import batching_methods, generate_work, plan_epoch, planners
from streaming.order.config import PlanConfig
from streaming.order.defaults import (
                                      resolve_num_canonical_nodes,
                                      resolve_predownload,
                                      resolve_shuffle_block_size,
)
from streaming.order.partition import get_partitions, partition
from streaming.order.resample import Resampled, StreamLayout, resample, resample_streams
from streaming.order.sampling import get_sampling
from streaming.order.shuffle import get_shuffle
from streaming.order.weighting import StreamWeights, apply_weights, validate_weights
from streaming.order.world import World

__all__ = [
    "PlanConfig", "Resampled", "StreamLayout", "StreamWeights", "World", "apply_weights",
    "batching_methods", "generate_work", "get_partitions", "get_sampling", "get_shuffle",
    "partition", "plan_epoch", "planners", "resample", "resample_streams",
    "resolve_num_canonical_nodes", "resolve_predownload", "resolve_shuffle_block_size",
    "validate_weights",
]
