"""`memory://<name>`: an in-process store for tests of the layers above storage.

Objects live in a module-level dict per name, so two stores with the same URL in one process see
the same objects, and a forked worker sees a copy taken at fork time. Nothing is shared with
spawned processes; use `file://` for that.
"""

from __future__ import annotations

import os
import threading

from streaming.storage.base import Store
from streaming.storage.urls import split_url

__all__ = ["MemoryStore"]

_BUCKETS: dict[str, dict[str, bytes]] = {}
_LOCK = threading.Lock()


class MemoryStore(Store):
    """A dict of bytes, addressed like a bucket (``memory://name/optional/prefix``)."""

    scheme = "memory"
    can_stall = False

    def __init__(self, url: str) -> None:
        super().__init__(url)
        _, name, prefix = split_url(url)
        self._name = name
        self._prefix = f"{prefix}/" if prefix else ""

    @property
    def _objects(self) -> dict[str, bytes]:
        with _LOCK:
            return _BUCKETS.setdefault(self._name, {})

    def get(self, path: str) -> bytes:
        try:
            return self._objects[self._prefix + path]
        except KeyError:
            raise self.not_found(path) from None

    def get_range(self, path: str, start: int, end: int) -> bytes:
        return self.get(path)[start:end]

    def size(self, path: str) -> int:
        return len(self.get(path))

    def put(self, path: str, data: bytes) -> None:
        """Store bytes directly (memory stores only; handy for seeding tests)."""
        self._objects[self._prefix + path] = bytes(data)

    def upload(self, local_path: str, path: str) -> None:
        with open(os.fspath(local_path), "rb") as f:
            self.put(path, f.read())

    def list(self, prefix: str = "") -> list[str]:
        start = self._prefix + prefix
        cut = len(self._prefix)
        return sorted(key[cut:] for key in list(self._objects) if key.startswith(start))
