"""The one process pool of the commands that fan work out (`validate`, `bench`).

Ctrl-C in a terminal signals the whole process group. Left alone, every worker would raise
`KeyboardInterrupt` and print its own traceback, and the parent's `with` would then wait for the
tasks still running. Here the workers ignore SIGINT and the parent, the one process that gets
`KeyboardInterrupt`, ends them: one ``Aborted!`` line, no task left running.

The parent ends them with SIGTERM. A forked worker inherits the parent's Python handlers, and
`streaming.cli.main` makes SIGTERM raise `SystemExit`: in a worker that unwound the task, which
`ProcessPoolExecutor` catches as the task's error, and the worker went on to the shard queued
next (one per pool), and waited on a stalled server for that transfer to give up (25 s). A
worker's SIGTERM now unwinds its task (its scratch folder removed) and ends the worker.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from streaming.coord.orphans import exit_with_parent

__all__ = ["worker_pool"]


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` processes (forked on Linux), ended at once if the caller fails."""
    method = "fork" if sys.platform == "linux" else "spawn"
    pool = _WorkerPool(workers, multiprocessing.get_context(method),
                       initializer=_start_worker)
    try:
        yield pool
    except BaseException:
        # `_processes` is the executor's own table of its workers; there is no public way to
        # stop a task that is running, and waiting for it could take the whole run.
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


_TERMINATED = 128 + signal.SIGTERM
_stopping = False  # in a worker: SIGTERM arrived, end once the task has unwound


class _WorkerPool(ProcessPoolExecutor):
    """Runs every task through `_task`, which ends the worker after a stopped one."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        return super().submit(_task, fn, *args, **kwargs)


def _task(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    finally:
        if _stopping:  # its `finally`s and `with`s ran; take no next task (nor report this)
            os._exit(_TERMINATED)


def _stop_worker(signum: int, frame: object) -> None:
    global _stopping
    _stopping = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
    raise SystemExit(_TERMINATED)


def _start_worker() -> None:
    """A pool worker leaves Ctrl-C to its parent (which stops it), and ends with its parent:
    killed (SIGKILL), the parent can stop nothing, and the worker went on for its whole task,
    then waited for the next one forever, holding the caller's output pipe open. SIGTERM (the
    parent stopping it) ends it once its task unwound, never with the parent's handler."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)
    exit_with_parent()
