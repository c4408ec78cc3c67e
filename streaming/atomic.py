"""Atomic file replacement: a file appears under its final name only when it is complete.

One way to do it for every room (writers, the cache, the node registry, local stores, the
transfer layer): write to a sibling temp name no other process or thread picks, then
`os.replace` it over the target; on any error the temp file is removed and the target is left as
it was. A leaf: imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["discard", "replacing", "temp_name_for", "write_atomic"]

_IOV_MAX = 1024  # the Linux/macOS iovec limit per writev call


def temp_name_for(path: str) -> str:
    """A sibling name no other process or thread will pick: ``<name>.tmp.<pid>.<random>``."""
    return f"{path}.tmp.{os.getpid()}.{secrets.token_hex(6)}"


def discard(path: str) -> bool:
    """Remove `path` if it exists (a temp file left by a failed or abandoned write, a record of
    the dead); True if this call removed it."""
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    return True


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """Yield a temp path to fill; on a clean exit it replaces `path`, on an error it is removed.

    The caller writes (or downloads, or copies) into the yielded path and may check it before the
    block ends: raising inside the block leaves `path` untouched.
    """
    tmp = temp_name_for(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def write_atomic(path: str, parts: Sequence[Any], *, mode: int = 0o666) -> None:
    """Write `parts` (bytes-like, concatenated) to `path` so it never exists half-written."""
    with replacing(path) as tmp:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | getattr(os, "O_BINARY", 0)
        fd = os.open(tmp, flags, mode)
        try:
            _write_all(fd, parts)
        finally:
            os.close(fd)


def _write_all(fd: int, parts: Sequence[Any]) -> None:
    """Write every buffer in order with as few syscalls as possible, handling short writes."""
    pending = [
        part if isinstance(part, (bytes, bytearray)) else memoryview(part).cast("B")
        for part in parts
    ]
    if not hasattr(os, "writev"):  # pragma: no cover - Windows
        for part in pending:
            view = memoryview(part)
            while view:
                view = view[os.write(fd, view):]
        return
    start = 0
    while start < len(pending):
        batch = pending[start:start + _IOV_MAX]
        written = os.writev(fd, batch)
        if written == sum(map(len, batch)):  # the usual case: everything went out
            start += len(batch)
            continue
        for part in batch:  # a short write: skip what went out, resume mid-part
            if written >= len(part):
                written -= len(part)
                start += 1
                continue
            pending[start] = memoryview(part)[written:]
            break
