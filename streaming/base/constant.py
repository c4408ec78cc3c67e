"""Old import path `streaming.base.constant`: the reference's shared-memory names and timings."""

from __future__ import annotations

from streaming.coord.constants import (
    BARRIER,
    BARRIER_FILELOCK,
    CACHE_FILELOCK,
    CACHE_USAGE,
    DEFAULT_TIMEOUT,
    EPOCH_DATA,
    EPOCH_SHAPE,
    LOCALS,
    NEXT_EPOCH,
    RESUME,
    SHARD_ACCESS_TIMES,
    SHARD_STATES,
    SHM_TO_CLEAN,
    TICK,
)

__all__ = [
    "BARRIER",
    "BARRIER_FILELOCK",
    "CACHE_FILELOCK",
    "CACHE_USAGE",
    "DEFAULT_TIMEOUT",
    "EPOCH_DATA",
    "EPOCH_SHAPE",
    "LOCALS",
    "NEXT_EPOCH",
    "RESUME",
    "SHARD_ACCESS_TIMES",
    "SHARD_STATES",
    "SHM_TO_CLEAN",
    "TICK",
]
