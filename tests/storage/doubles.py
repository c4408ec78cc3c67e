"""Test doubles that implement the `Store` interface by delegation (a seam, not a patch)."""

from __future__ import annotations

import threading
from typing import Any

from streaming.storage import Store


class CountingStore(Store):
    """Delegates to another store and counts download attempts (a test double, not a patch)."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner.url)
        self.inner = inner
        self.downloads = 0
        self.download_threads: list[str] = []  # the thread each download ran in

    def get(self, path: str) -> bytes:
        return self.inner.get(path)

    def get_range(self, path: str, start: int, end: int) -> bytes:
        return self.inner.get_range(path, start, end)

    def size(self, path: str) -> int:
        return self.inner.size(path)

    def upload(self, local_path: str, path: str) -> None:
        self.inner.upload(local_path, path)

    def list(self, prefix: str = "") -> list[str]:
        return self.inner.list(prefix)

    def download(self, path: str, local_path: str, **kwargs: Any) -> int:
        self.downloads += 1
        self.download_threads.append(threading.current_thread().name)
        return self.inner.download(path, local_path, **kwargs)


class SlowRequest:
    """A request a storage helper process takes `seconds` to answer (a transfer in flight)."""

    url = "slow://request"

    def sleep(self, seconds: float) -> float:
        import time

        time.sleep(seconds)
        return seconds
