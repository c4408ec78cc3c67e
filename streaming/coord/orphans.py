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

The same thread ends a worker whose loader shut down without telling it. torch's loader sets a
"done" event, then sends each worker a last message. When the loader's iterator is reclaimed
by the garbage collector (it is in a reference cycle with the error a worker raised, through
torch's `reraise`), its queues' feeder threads are finalised first and that message is never
sent: each worker then waits out torch's 5 s join and is terminated. A plain `DataLoader`
paused that long per worker at the next collection after any error in a worker (10 s with 2;
the reference's loader, 5 s). A worker whose done event stays set for `DONE_GRACE` seconds
now ends by itself (`StreamingDataLoader` stops its workers before this can happen).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["DONE_GRACE", "POLL_SECONDS", "exit_with_parent", "loader_done_event",
           "when_orphaned"]

# What this process undoes before it ends because its parent is gone (`when_orphaned`).
_at_orphaned: list[Callable[[], object]] = []


def when_orphaned(undo: Callable[[], object]) -> None:
    """Run `undo` in this process before `exit_with_parent` ends it because its parent is gone
    (best effort: its errors are ignored). For what only the dead parent would have cleaned
    up: the batch slots a worker filled for it."""
    _at_orphaned.append(undo)

POLL_SECONDS = 0.5
#: How long a worker may outlive its loader's shutdown before it ends by itself (its last
#: message arrives within milliseconds when it is sent at all).
DONE_GRACE = 1.0

log = logging.getLogger(__name__)

_watching: dict[str, int | None] = {"pid": None}
_guard = threading.Lock()


def exit_with_parent(end: Callable[[int], object] = os._exit, done: Any = None) -> None:
    """Watch this process's parent from a daemon thread (once per process); when it is gone,
    call `end(1)` (by default, end the process at once, running no exit hook: its finalizers
    would wait for locks its dead parent may hold). When `done` (torch's event of the worker's
    loader, see `loader_done_event`) has stayed set for `DONE_GRACE` seconds, call `end(0)`."""
    pid = os.getpid()
    with _guard:
        if _watching["pid"] == pid:
            return
        _watching["pid"] = pid
    parent = os.getppid()
    thread = threading.Thread(target=_watch, args=(parent, end, done), daemon=True,
                              name="shardstream-parent-watch")
    thread.start()


def loader_done_event() -> Any:
    """The "done" event torch's worker loop of this DataLoader worker process was given, or
    None (not called under that loop, or a torch that names it otherwise)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_worker_loop" and "torch" in code.co_filename:
            done = frame.f_locals.get("done_event")
            return done if callable(getattr(done, "is_set", None)) else None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _watch(parent: int, end: Callable[[int], object], done: Any) -> None:
    done_since: float | None = None
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
        if done is None or not done.is_set():
            continue
        now = time.monotonic()
        if done_since is None:
            done_since = now
        elif now - done_since >= DONE_GRACE:
            log.debug("Process %d: its DataLoader shut down %.1f s ago without telling it; "
                      "ending this worker.", os.getpid(), now - done_since)
            end(0)
            return
    log.warning("Process %d: its parent %d is gone; ending this DataLoader worker.",
                os.getpid(), parent)
    for undo in list(_at_orphaned):
        try:
            undo()
        except Exception:  # noqa: BLE001 - ending anyway; the next sweep takes what is left
            log.debug("Undoing %r before ending failed", undo, exc_info=True)
    end(1)
