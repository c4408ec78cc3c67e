"""The reference's shared-memory names and timing constants (`streaming.base.constant`).

Compatibility code: our own runtime names its objects through
`streaming.coord.names`; these values matter only to the reference-style prefix scheme
(`NNNNNN_<name>`) that `streaming.base.shared` and `clean_stale_shared_memory()` understand.
"""

from __future__ import annotations

from streaming.defaults import DEFAULT_TIMEOUT as _DEFAULT_TIMEOUT

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

# Shared-memory object names of one reference dataset (prefixed by `f'{prefix:06}_'`).
LOCALS = "locals"
BARRIER = "barrier"
NEXT_EPOCH = "next_epoch"
CACHE_USAGE = "cache_usage"
SHARD_STATES = "shard_states"
SHARD_ACCESS_TIMES = "shard_access_times"
RESUME = "resume"
EPOCH_SHAPE = "epoch_shape"
EPOCH_DATA = "epoch_data"

# Order matters: the reference walks prefixes name by name in this order.
SHM_TO_CLEAN = [
    LOCALS,
    BARRIER,
    NEXT_EPOCH,
    CACHE_USAGE,
    SHARD_STATES,
    SHARD_ACCESS_TIMES,
    RESUME,
    EPOCH_SHAPE,
    EPOCH_DATA,
]

# Lock-file names in the temp dir (same `NNNNNN_` prefix).
BARRIER_FILELOCK = "barrier_filelock"
CACHE_FILELOCK = "cache_filelock"

# The reference's polling interval, in seconds.
TICK = 0.007

# Default download timeout, in seconds.
DEFAULT_TIMEOUT = _DEFAULT_TIMEOUT
