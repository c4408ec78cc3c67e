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

__all__ = ["worker_pool"]


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of `workers` processes (forked on Linux), ended at once if the caller fails."""
    method = "fork" if sys.platform == "linux" else "spawn"
    pool = ProcessPoolExecutor(workers, multiprocessing.get_context(method),
                               initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))
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
