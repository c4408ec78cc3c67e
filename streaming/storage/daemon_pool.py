"""A thread pool whose threads never hold the process open: the writers' upload threads.

`concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits, so an
upload blocked on a server that stopped answering kept a process the user had interrupted
alive until the upload's own timeout (two attempts of 300 s). Here a call abandoned by
`shutdown(wait=False)` runs on in a daemon thread and ends with the process; a writer that
waits for its uploads (`Sink.finish`) still joins them.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["DaemonPool"]


class DaemonPool:
    """Runs submitted calls on up to `max_workers` daemon threads, each answered by a Future.

    Args:
        max_workers: threads at most (ThreadPoolExecutor's default when None).
        name: the threads' name prefix.
    """

    def __init__(self, max_workers: int | None = None, name: str = "shardstream-pool") -> None:
        self._max = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._name = name
        self._work: queue.SimpleQueue[tuple[Future, Callable[..., Any], tuple] | None] = (
            queue.SimpleQueue())
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        future: Future = Future()
        self._work.put((future, fn, args))
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._max:
                thread = threading.Thread(target=self._serve, daemon=True,
                                          name=f"{self._name}_{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        return future

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            future, fn, args = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as err:  # noqa: BLE001 (the Future carries it)
                    future.set_exception(err)
                else:
                    future.set_result(result)
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Stop taking work; with `cancel_futures`, cancel what has not started; with `wait`,
        join the threads (calls in progress finish either way, unless the process ends)."""
        if cancel_futures:
            while True:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        with self._lock:
            threads = list(self._threads)
        for _ in threads:
            self._work.put(None)
        if wait:
            for thread in threads:
                thread.join()
