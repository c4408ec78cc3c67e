"""`RemoteSink`: the writer's output sink for URL remotes (`streaming.format.sink` protocol).

Each finished file is uploaded by a background thread as soon as the writer hands it over, with
`retry` attempts through `transfer.push`, and deleted locally afterwards unless `keep_local`.
An ``index.json`` is only sent once every file handed over before it has landed, so a crash
mid-write never leaves a remote index that points at missing shards.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import wait as wait_futures
from typing import Any

from streaming.format.sink import LocalSink
from streaming.storage.registry import open_store, scheme_of, get_store_spec
from streaming.storage.transfer import push

__all__ = ["RemoteSink"]

_INDEX_BASENAME = "index.json"


class RemoteSink(LocalSink):
    """Uploads a writer's finished files to a store in the background.

    Args:
        local: the directory the writer writes into.
        remote: the destination URL (any scheme `open_store` knows that supports writes).
        keep_local: keep each local file after it has been uploaded.
        progress_bar: draw one tqdm bar of uploaded bytes (the reference's writer option).
        max_workers: upload threads (ThreadPoolExecutor's default when None).
        retry: attempts per file.
        exist_ok: accepted for the reference's signature; `open_sink` applies it to `local`.
        store_options: passed to `open_store` for the remote.

    Raises:
        ValueError: ``Invalid Cloud provider prefix: <scheme>.`` for an unknown scheme.
    """

    def __init__(self, local: str, remote: str, *, keep_local: bool = False,
                 progress_bar: bool = False, max_workers: int | None = None, retry: int = 2,
                 exist_ok: bool = False, **store_options: Any) -> None:
        if get_store_spec(scheme_of(remote)) is None:
            raise ValueError(f"Invalid Cloud provider prefix: {scheme_of(remote)}.")
        super().__init__(local, None, keep_local=keep_local, progress_bar=progress_bar,
                         max_workers=max_workers, retry=retry)
        self.remote = remote
        self.store = open_store(remote, **store_options)
        if not self.store.supports_writes:
            raise ValueError(f"Cannot write to {remote}: {type(self.store).__name__} is "
                             "read-only")
        self._bar: Any = None
        self._bar_lock = threading.Lock()

    def put(self, local_path: str, relpath: str) -> None:
        """Queue `local_path` for upload as `relpath`; an index waits for everything before it."""
        if os.path.basename(relpath) == _INDEX_BASENAME:
            wait_futures(list(self._futures))
            if self.failed:
                return  # never publish an index over a dataset with a missing shard
        self._count(os.path.getsize(local_path), total=True)
        super().put(local_path, relpath)

    def _send(self, local_path: str, relpath: str) -> None:
        result = push(self.store, local_path, relpath.replace(os.sep, "/"), retries=self.retry)
        self._count(result.bytes)
        if not self.keep_local:
            os.remove(local_path)

    def _count(self, nbytes: int, total: bool = False) -> None:
        """Advance (or, with `total`, extend) the optional progress bar."""
        if not self.progress_bar:
            return
        with self._bar_lock:
            if self._bar is None:
                from tqdm import tqdm

                self._bar = tqdm(total=0, unit="B", unit_scale=True,
                                 desc=f"Uploading to {self.remote}")
            if total:
                self._bar.total += nbytes
                self._bar.refresh()
            else:
                self._bar.update(nbytes)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self._close_bar()

    def abort(self) -> None:
        super().abort()
        self._close_bar()

    def _close_bar(self) -> None:
        with self._bar_lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
