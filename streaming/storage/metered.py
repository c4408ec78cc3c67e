"""Writing a download into a local file while reporting progress and keeping a deadline.

SDKs that download "into a file object" call `write` once per received chunk, so a wrapper
of the file is where a per-attempt timeout can interrupt a transfer that is slow but not
stalled, and where progress is counted.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import IO

from streaming.defaults import IO_CHUNK_BYTES

__all__ = ["MeteredWriter", "ProgressFn", "copy_chunks"]

ProgressFn = Callable[[int], None]
"""Called with the number of bytes just moved (an increment, not a running total)."""


class MeteredWriter:
    """A write-only file wrapper that reports progress and enforces a deadline.

    SDKs that download "into a file object" call `write` once per received chunk, so this is
    where a per-attempt timeout can interrupt a transfer that is slow but not stalled.
    """

    def __init__(self, file: IO[bytes], progress: ProgressFn | None = None,
                 deadline: float | None = None) -> None:
        self._file = file
        self._progress = progress
        self._deadline = deadline
        self._lock = threading.Lock()
        self.bytes_written = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self._check_deadline()
        count = self._file.write(data)
        count = len(data) if count is None else count
        self.bytes_written += count
        if self._progress is not None:
            self._progress(count)
        return count

    def write_at(self, data: bytes | memoryview, offset: int) -> int:
        """Write at an absolute offset without moving the file position.

        Safe to call from several threads at once; `progress` is then called from those threads.
        """
        self._check_deadline()
        view, count = memoryview(data), 0
        while count < len(view):
            count += os.pwrite(self._file.fileno(), view[count:], offset + count)
        with self._lock:
            self.bytes_written += count
        if self._progress is not None:
            self._progress(count)
        return count

    def truncate(self, size: int) -> None:
        """Set the file's length up front, so parts can land at any offset."""
        self._file.truncate(size)

    def _check_deadline(self) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise TimeoutError("transfer exceeded its time limit")

    def flush(self) -> None:
        self._file.flush()

    def tell(self) -> int:
        return self._file.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def writable(self) -> bool:
        return True


def copy_chunks(read: Callable[[int], bytes], out: MeteredWriter) -> int:
    """Pump a `read(n)` callable into `out` until it returns nothing; returns bytes copied."""
    total = 0
    while chunk := read(IO_CHUNK_BYTES):
        out.write(chunk)
        total += len(chunk)
    return total
