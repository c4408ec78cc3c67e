"""Named defaults shared across rooms, each defined once. A leaf: imports nothing.

Values a single module owns stay in that module; these are the ones several rooms agree on.
"""

from __future__ import annotations

__all__ = ["DEFAULT_TIMEOUT", "IO_CHUNK_BYTES", "NODE_WAIT_TIMEOUT", "STALL_TIMEOUT"]

#: Seconds one download attempt may take (the reference's `download_timeout` default).
DEFAULT_TIMEOUT = 60.0

#: Seconds a transfer may receive nothing before its attempt is given up and retried at once
#: (a connection that died silently never errors; waiting for `DEFAULT_TIMEOUT` wastes a minute).
#: Overridden by the `STREAMING_STALL_TIMEOUT` environment variable when a store is opened.
STALL_TIMEOUT = 5.0

#: Bytes moved per read/write call when streaming a file or an object (copies, hashes, uploads).
IO_CHUNK_BYTES = 8 << 20

#: Seconds a node-local wait (barrier, shard claim, plan board) may last before it fails.
NODE_WAIT_TIMEOUT = 600.0
