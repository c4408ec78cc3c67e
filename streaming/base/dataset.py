"""Old import path `streaming.base.dataset`: aliases of `StreamingDataset` and its helpers.

`_Iterator` is `streaming.base._compat.EpochCursor`, the per-epoch progress record the reference
handed to subclasses that work ahead of the reader (see `streaming.multimodal.webvid`).
"""

from __future__ import annotations

import enum

import numpy as np

from streaming.base._compat import EpochCursor as _Iterator
from streaming.base._reimports import reimported as _reimported
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
from streaming.coord.states import ShardState as _ShardState
from streaming.dataset import StreamingDataset
from streaming.defaults import DEFAULT_TIMEOUT

# The shared-memory names the reference's dataset module imported (code reads them from here).
__all__ = ["BARRIER", "BARRIER_FILELOCK", "CACHE_FILELOCK", "CACHE_USAGE", "EPOCH_DATA",
           "EPOCH_SHAPE", "NEXT_EPOCH", "RESUME", "SHARD_ACCESS_TIMES", "SHARD_STATES", "TICK",
           "StreamingDataset", "_Iterator", "DEFAULT_TIMEOUT", "NEVER", "_ShardState",
           "_IterState"]

#: The reference's "never accessed" shard time (the largest uint64).
NEVER = int(np.iinfo(np.uint64).max)


class _IterState(enum.IntEnum):
    """The reference's states of a dataset's background thread (kept for code that names them;
    this package's threads do not use them)."""

    ITERATING = 0
    EXITING = 1
    EXITED = 2

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
