"""A writer process that dies hard mid-write (run by test_storage_writer_remote.py, not collected).

argv: the remote URL, then how many shards must have landed remotely before the process kills
itself with SIGKILL (no `finally`, no atexit: what an OOM kill or a lost node looks like). The
S3 server comes from the environment (`S3_ENDPOINT_URL`, `AWS_*`).
"""

from __future__ import annotations

import os
import signal
import sys
import time

from streaming import MDSWriter
from streaming.storage import open_store
from tests.storage.sample_data import COLUMNS, tokens_for


def main() -> None:
    url, landed = sys.argv[1], int(sys.argv[2])
    store = open_store(url)
    writer = MDSWriter(out=url, columns=COLUMNS, compression="zstd", hashes=["xxh64"],
                       size_limit=6_000)
    i = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        writer.write({"id": i, "tokens": tokens_for(i)})
        i += 1
        if i % 20 == 0 and len(store.list("shard.")) >= landed:
            os.kill(os.getpid(), signal.SIGKILL)
    sys.exit("the shards never landed")


if __name__ == "__main__":
    main()
