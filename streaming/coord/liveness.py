"""Is a process alive, and who maps a shared-memory block: the facts stale detection rests on.

A process is identified by (pid, start time in clock ticks since boot) so a recycled pid is not
mistaken for the original, and zombies (killed but not yet reaped) count as dead. Without /proc
(non-Linux) we fall back to `os.kill(pid, 0)` and a start time of 0.
"""

from __future__ import annotations

import os

from streaming.coord.current import current_pid

__all__ = ["Identity", "identity", "is_alive", "mapped_shm_paths"]

Identity = tuple[int, int]  # (pid, start ticks since boot; 0 when unknown)

_PROC = "/proc"
_self_cache: tuple[int, Identity] | None = None


def _read_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start ticks) from /proc/<pid>/stat, or None if unreadable or gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses; fields resume after the
    # last ')'. There, index 0 is field 3 (state) and index 19 is field 22 (starttime).
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return fields[0].decode("ascii"), int(fields[19])
    except (IndexError, ValueError):
        return None


def _has_proc() -> bool:
    return os.path.isdir(f"{_PROC}/self")


def identity(pid: int | None = None) -> Identity:
    """The (pid, start) pair that names a process (this one by default) in registries."""
    global _self_cache
    if pid is None:
        pid = current_pid()
        if _self_cache is not None and _self_cache[0] == pid:
            return _self_cache[1]
        stat = _read_stat(pid)
        ident = (pid, stat[1] if stat else 0)
        _self_cache = (pid, ident)
        return ident
    stat = _read_stat(pid)
    return (pid, stat[1] if stat else 0)


def is_alive(pid: int, start: int = 0) -> bool:
    """Whether the process is running: not gone, not a zombie, and not a recycled pid.

    Args:
        pid: The process id; non-positive ids are never alive.
        start: The start time recorded with the pid, or 0 to skip the recycling check.
    """
    if pid <= 0:
        return False
    if pid == current_pid():  # the caller itself (a claim held by another of its threads)
        return not start or identity()[1] == start
    stat = _read_stat(pid)
    if stat is not None:
        state, started = stat
        if state in ("Z", "X", "x"):
            return False
        return not start or started == start
    if _has_proc():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def mapped_shm_paths(exclude: frozenset[int] = frozenset()) -> set[str] | None:
    """Every /dev/shm path mapped by a live process we can inspect, or None without /proc.

    Used where names carry no owner (the reference's `NNNNNN_*` blocks): a block that no live
    process maps is stale. Processes of other users are unreadable and skipped; their blocks are
    not ours to unlink anyway.

    Args:
        exclude: Pids whose mappings do not count (e.g. the caller, when it asks to clean).
    """
    if not _has_proc():
        return None
    found: set[str] = set()
    for entry in os.listdir(_PROC):
        if not entry.isdigit() or int(entry) in exclude:
            continue
        try:
            with open(f"{_PROC}/{entry}/maps", "rb") as f:
                data = f.read()
        except OSError:
            continue
        start = data.find(b"/dev/shm/")
        while start >= 0:
            end = data.find(b"\n", start)
            line = data[start : end if end >= 0 else len(data)]
            found.add(line.split(b" (deleted)")[0].decode("utf-8", "replace"))
            start = data.find(b"/dev/shm/", start + 1 if end < 0 else end)
    return found
