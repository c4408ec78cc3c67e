"""Old import path `streaming.base.dataset`: aliases of `StreamingDataset` and its helpers.

`_Iterator` is `streaming.base._compat.EpochCursor`, the per-epoch progress record the reference
handed to subclasses that work ahead of the reader (see `streaming.multimodal.webvid`).
"""

from __future__ import annotations

from streaming.base._compat import EpochCursor as _Iterator
from streaming.base.constant import (
    BARRIER,
    BARRIER_FILELOCK,
    CACHE_FILELOCK,
    CACHE_USAGE,
    EPOCH_DATA,
    EPOCH_SHAPE,
    NEXT_EPOCH,
    RESUME,
    SHARD_ACCESS_TIMES,
    SHARD_STATES,
    TICK,
)
from streaming.dataset import StreamingDataset

# The shared-memory names the reference's dataset module imported (code reads them from here).
__all__ = ["BARRIER", "BARRIER_FILELOCK", "CACHE_FILELOCK", "CACHE_USAGE", "EPOCH_DATA",
           "EPOCH_SHAPE", "NEXT_EPOCH", "RESUME", "SHARD_ACCESS_TIMES", "SHARD_STATES", "TICK",
           "StreamingDataset", "_Iterator"]
