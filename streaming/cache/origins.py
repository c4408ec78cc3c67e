"""Which remote index filled each cache directory, recorded outside the directory.

A cache directory reused for another remote must be told apart from a remote whose dataset
changed (`IndexCache.commit`), so the URL of the index that filled it is kept in a file of the
per-user state dir (never in the cache directory itself, which holds only what the reference's
would), keyed by the directory's real path, with that index's modification time at the remote
when it was last read: how an index written again identically is noticed, by the server's
clock alone. The record also names that path, so
records of directories that are gone (every test's temporary cache, say) are pruned, at most
once an hour and on a thread of their own (never delaying a start), instead of piling up in
the temp dir.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from typing import NamedTuple

from streaming.coord.records import ensure_state_dir
from streaming.errors import CoordinationError
from streaming.format.fileio import write_atomic

__all__ = ["Origin", "prune_origins", "read_origin", "record_origin"]

log = logging.getLogger(__name__)

_PREFIX, _SUFFIX = "origin-", ".txt"
_STAMP = "origins-pruned"  # its mtime: the last prune
PRUNE_EVERY = 3600.0  # seconds between prunes
OLD_RECORD_AGE = 7 * 86400.0  # a record without its directory's path goes after this long


def _record_path(local_dir: str) -> str | None:
    """The record's file, or None when the state dir cannot be used."""
    key = hashlib.sha1(os.fsencode(os.path.realpath(local_dir))).hexdigest()[:24]
    try:
        return os.path.join(ensure_state_dir(), f"{_PREFIX}{key}{_SUFFIX}")
    except (OSError, CoordinationError):
        return None


class Origin(NamedTuple):
    """What a cache directory's record says: the remote index that filled it, and that index's
    modification time at the remote (by the server's clock) when the directory last read it."""

    where: str | None  # None: unknown (filled by the reference, or the temp dir was cleared)
    seen: float | None  # None: unknown (no time given, or a record from before times were kept)


_UNKNOWN = Origin(None, None)


def read_origin(local_dir: str) -> Origin:
    """The record of `local_dir`, read once (both fields None when there is none)."""
    path = _record_path(local_dir)
    if path is None:
        return _UNKNOWN
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return _UNKNOWN
    where = (lines[0].strip() or None) if lines else None
    try:
        seen = float(lines[2]) if len(lines) > 2 and lines[2] else None
    except ValueError:
        seen = None
    return Origin(where, seen)


def record_origin(local_dir: str, where: str, seen: float | None = None) -> None:
    """Record that `local_dir` now holds the files of the index at `where`, whose time at the
    remote was `seen` (best effort: a state dir that cannot be written leaves the cache
    unrecorded)."""
    path = _record_path(local_dir)
    if path is None:
        return
    stamp = "" if seen is None else repr(seen)
    try:
        write_atomic(path, [os.fsencode(f"{where}\n{os.path.realpath(local_dir)}\n{stamp}\n")])
        if _prune_due(os.path.dirname(path), time.time()):
            threading.Thread(target=_prune_quietly, args=(os.path.dirname(path),),
                             name="streaming-origins-prune", daemon=True).start()
    except OSError as err:
        log.debug("Could not record the origin of %s: %s", local_dir, err)


def _prune_due(state_dir: str, now: float) -> bool:
    try:
        return now - os.stat(os.path.join(state_dir, _STAMP)).st_mtime >= PRUNE_EVERY
    except FileNotFoundError:
        return True


def _prune_quietly(state_dir: str) -> None:
    try:
        prune_origins(state_dir)
    except OSError as err:
        log.debug("Could not prune the cache origin records in %s: %s", state_dir, err)


def prune_origins(state_dir: str, *, now: float | None = None, force: bool = False) -> int:
    """Delete the records of cache directories that no longer exist (and records too old to
    name theirs); runs at most once per `PRUNE_EVERY` unless `force`. Returns how many went."""
    now = time.time() if now is None else now
    if not force and not _prune_due(state_dir, now):
        return 0
    with open(os.path.join(state_dir, _STAMP), "w"):  # claimed first: starts do not all scan
        pass
    removed = 0
    for entry in os.scandir(state_dir):
        if not (entry.name.startswith(_PREFIX) and entry.name.endswith(_SUFFIX)):
            continue
        try:
            with open(entry.path, encoding="utf-8", errors="surrogateescape") as f:
                lines = f.read().splitlines()
            gone = (not os.path.isdir(lines[1]) if len(lines) > 1
                    else now - entry.stat().st_mtime > OLD_RECORD_AGE)
            if gone:
                os.unlink(entry.path)
                removed += 1
        except (OSError, UnicodeDecodeError):
            continue  # another process pruned or rewrote it
    return removed
