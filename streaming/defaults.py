"""Named defaults shared across rooms, each defined once. A leaf: imports nothing.

Values a single module owns stay in that module; these are the ones several rooms agree on.
"""

from __future__ import annotations

import math
import os

__all__ = ["DEFAULT_TIMEOUT", "EPOCH_WAIT_ENV", "IO_CHUNK_BYTES", "NODE_WAIT_TIMEOUT",
           "STALL_TIMEOUT", "TENSOR_DTYPE_KINDS", "epoch_wait_timeout"]

#: Seconds one download attempt may take (the reference's `download_timeout` default).
DEFAULT_TIMEOUT = 60.0

#: Seconds a transfer may receive nothing before its attempt is given up and retried at once
#: (a connection that died silently never errors; waiting for `DEFAULT_TIMEOUT` wastes a minute).
#: Overridden by the `STREAMING_STALL_TIMEOUT` environment variable when a store is opened.
STALL_TIMEOUT = 5.0

#: The numpy dtype kinds torch has tensors of (bool, ints, floats, complex): which columns a
#: batch gathers into one array and the loader turns into one tensor.
TENSOR_DTYPE_KINDS = frozenset("biufc")

#: Bytes moved per read/write call when streaming a file or an object (copies, hashes, uploads).
IO_CHUNK_BYTES = 8 << 20

#: Seconds a node-local wait (barrier, shard claim, plan board) may last before it fails.
NODE_WAIT_TIMEOUT = 600.0

#: Environment variable bounding the wait at the start of each epoch for the node's other
#: ranks and workers, in seconds. Unset, it lasts as long as they are alive (as the
#: reference's): a rank may spend any time between epochs (evaluation, a checkpoint), while a
#: rank that died still fails the wait at once.
EPOCH_WAIT_ENV = "STREAMING_EPOCH_WAIT_TIMEOUT"


def epoch_wait_timeout() -> float:
    """Seconds the epoch barrier waits (`EPOCH_WAIT_ENV`; no limit when unset).

    Raises:
        ValueError: a value that is not a positive number.
    """
    value = os.environ.get(EPOCH_WAIT_ENV, "").strip()
    if not value:
        return math.inf
    seconds = float(value)
    if not seconds > 0:
        raise ValueError(f"{EPOCH_WAIT_ENV} must be a positive number of seconds, got {value!r}.")
    return seconds
