"""Atomic file replacement: a file appears under its final name only when it is complete.

One way to do it for every room (writers, the cache, the node registry, local stores, the
transfer layer): write to a sibling temp name no other process or thread picks, then
`os.replace` it over the target; on any error the temp file is removed and the target is left as
it was. A leaf: imports only the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = ["discard", "drop_dead_temps", "replacing", "temp_name_for", "write_atomic"]

# `temp_name_for`'s suffix: the writing process's pid, then 12 random hex digits.
_TEMP_SUFFIX = re.compile(r"\.tmp\.(\d+)\.[0-9a-f]{12}$")

_NAME_MAX = 255  # bytes in one file name on Linux and macOS filesystems
_IOV_MAX = 1024  # the Linux/macOS iovec limit per writev call


def temp_name_for(path: str) -> str:
    """A sibling name no other process or thread will pick: ``<name>.tmp.<pid>.<random>``.

    A name too long to take the suffix within the filesystem's 255 bytes keeps a head of it
    and a digest of the whole (a 239-byte shard name failed with "File name too long").
    """
    suffix = f".tmp.{os.getpid()}.{secrets.token_hex(6)}"
    head, name = os.path.split(path)
    raw = os.fsencode(name)
    if len(raw) + len(suffix) > _NAME_MAX:
        digest = hashlib.blake2b(raw, digest_size=8).hexdigest()
        keep = raw[:_NAME_MAX - len(suffix) - len(digest) - 1]
        name = keep.decode("utf-8", "ignore") + "~" + digest  # a cut character dropped
    return os.path.join(head, name + suffix)


def drop_dead_temps(paths: Iterable[str]) -> list[str]:
    """Remove the temp files among `paths` whose writer is no longer running on this machine
    (a process killed mid-write cannot remove its own); return the paths removed.

    A pid reused by a live process keeps its file: at worst litter stays, never a live write is
    cut.
    """
    removed = []
    for path in paths:
        if ".tmp." not in path:  # most of a cache: one substring test, not a regex
            continue
        match = _TEMP_SUFFIX.search(path)
        if match is None or _running(int(match.group(1))):
            continue
        if discard(path):
            removed.append(path)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process; not a pid at all
        return pid > 0
    return True


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
        except OSError as err:
            if err.filename is None:  # a bare "[Errno 28] No space left on device": say where
                err.filename = path
            raise
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
