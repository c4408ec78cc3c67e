"""DataLoader workers that outlive their parent end within a second or two.

torch's own watchdog looks for the parent only between two batches of a worker's loop. A worker
blocked in a dataset (waiting for a shard another process fetches, or fetching one) can outlive
a killed training process for minutes, and meanwhile it keeps fetching shards, and it holds the
dataset's node state. The job restarted by the scheduler then finds a live dataset over its
cache and, after waiting for it, fails with "Reused local directory". (The reference's workers
linger the same way; its restart shares the cache with them.)

`exit_with_parent` starts one daemon thread per worker process that polls `os.getppid()`: a
process whose parent died is re-parented, so the value changes. The worker then ends at once:
its parent, the only consumer of its batches, is gone. What it held (a holder entry, the
partial file of a download) is what a killed process leaves, which the next dataset start
sweeps.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

__all__ = ["POLL_SECONDS", "exit_with_parent"]

POLL_SECONDS = 0.5

log = logging.getLogger(__name__)

_watching: dict[str, int | None] = {"pid": None}
_guard = threading.Lock()


def exit_with_parent(end: Callable[[int], object] = os._exit) -> None:
    """Watch this process's parent from a daemon thread (once per process); when it is gone,
    call `end(1)` (by default, end the process at once, running no exit hook: its finalizers
    would wait for locks its dead parent may hold)."""
    pid = os.getpid()
    with _guard:
        if _watching["pid"] == pid:
            return
        _watching["pid"] = pid
    parent = os.getppid()
    thread = threading.Thread(target=_watch, args=(parent, end), daemon=True,
                              name="shardstream-parent-watch")
    thread.start()


def _watch(parent: int, end: Callable[[int], object]) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    log.warning("Process %d: its parent %d is gone; ending this DataLoader worker.",
                os.getpid(), parent)
    end(1)
