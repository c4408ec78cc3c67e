"""The one process pool of the commands that fan work out (`validate`, `bench`).

Ctrl-C in a terminal signals the whole process group. Left alone, every worker would raise
`KeyboardInterrupt` and print its own traceback, and the parent's `with` would then wait for the
tasks still running. Here the workers ignore SIGINT and the parent, the one process that gets
`KeyboardInterrupt`, ends them: one ``Aborted!`` line, no task left running.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

from streaming.coord.orphans import exit_with_parent

__all__ = ["worker_pool"]


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` processes (forked on Linux), ended at once if the caller fails."""
    method = "fork" if sys.platform == "linux" else "spawn"
    pool = ProcessPoolExecutor(workers, multiprocessing.get_context(method),
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


def _start_worker() -> None:
    """A pool worker leaves Ctrl-C to its parent (which stops it), and ends with its parent:
    killed (SIGKILL), the parent can stop nothing, and the worker went on for its whole task,
    then waited for the next one forever, holding the caller's output pipe open."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()
