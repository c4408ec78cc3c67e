"""Old import path `streaming.base.distributed`: aliases of `streaming.distributed`."""

from __future__ import annotations

from streaming.distributed import (
    all_gather,
    all_gather_object,
    barrier,
    broadcast,
    get_local_rank,
    get_local_world_size,
    get_rank,
    get_world_size,
    maybe_init_dist,
)

__all__ = [
    "all_gather",
    "all_gather_object",
    "barrier",
    "broadcast",
    "get_local_rank",
    "get_local_world_size",
    "get_rank",
    "get_world_size",
    "maybe_init_dist",
]
