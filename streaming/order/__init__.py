"""The sample-order planner: which sample ids each worker of each rank yields, in which order.

Pure functions of (shard sizes, stream weights, seed, epoch, canonical nodes, world, batch size)
that reproduce MosaicML Streaming 0.13's order bit for bit. numpy only: no I/O, no torch (except
lazily in `World.detect`), no shared memory, no globals.

    plan(OrderOptions, StreamTable, Resolution, World, epoch, sample_in_epoch) -> int64 ids
        (nodes, ranks, workers, batches, batch size), -1 = padding

`streaming.order.plan` is the one way in (the runtime and the CLI use it); the reference's
dataset-reading entry points (`generate_work`) are adapters in `streaming.base.batching`.
"""

from __future__ import annotations

from streaming.order.batching import plan_epoch, planners
from streaming.order.checkpoint import Checkpoint, check_state_dict
from streaming.order.defaults import (
    resolve_num_canonical_nodes,
    resolve_predownload,
    resolve_shuffle_block_size,
)
from streaming.order.partition import get_partitions, partition
from streaming.order.plan import (
    OrderOptions,
    Resolution,
    StreamTable,
    plan,
    plan_config,
    resolve_epoch,
)
from streaming.order.plan_config import PlanConfig
from streaming.order.resample import Resampled, StreamLayout, resample, resample_streams
from streaming.order.sampling import get_sampling
from streaming.order.shuffle import get_shuffle
from streaming.order.weighting import StreamWeights, apply_weights, validate_weights
from streaming.order.world import World

__all__ = [
    "Checkpoint", "OrderOptions", "PlanConfig", "Resampled", "Resolution", "StreamLayout",
    "StreamTable", "StreamWeights", "World", "apply_weights", "check_state_dict",
    "get_partitions", "get_sampling", "get_shuffle", "partition", "plan", "plan_config",
    "plan_epoch", "planners", "resample", "resample_streams", "resolve_epoch",
    "resolve_num_canonical_nodes", "resolve_predownload", "resolve_shuffle_block_size",
    "validate_weights",
]
