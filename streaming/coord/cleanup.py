"""`clean_stale_shared_memory()`: remove what dead jobs of this user left on this machine.

Unlike the reference it never unlinks objects of live processes, so any rank may call it at any
time with no torch.distributed set-up. Our namespaces go only when every recorded holder is dead
(with every block carrying their name). Blocks of ours whose namespace has no record here at all
(orphans: a record lost with a deleted temp dir, a crash between creating and recording) go when
no live process maps them and they are older than a grace period (a namespace being created
right now is mapped, and young). The reference's owner-less `NNNNNN_*` blocks go only when no
other live process maps them (the caller's own are removed, as the reference does; without /proc
they are left alone).
"""

from __future__ import annotations

import glob
import logging
import os
import pathlib
import time

from streaming.atomic import discard
from streaming.coord.liveness import is_alive, mapped_shm_paths
from streaming.coord.names import LEGACY_RE, namespace_of_block
from streaming.coord.records import (
    ensure_state_dir,
    live_holders,
    prune_local_index,
    read_record,
    reclaim,
    registry_lock,
)
from streaming.coord.shm import SHM_DIR, list_blocks, unlink_block

__all__ = [
    "ORPHAN_GRACE",
    "SWEEP_INTERVAL",
    "clean_orphan_blocks",
    "clean_stale_shared_memory",
    "sweep_at_start",
]

log = logging.getLogger(__name__)


#: Seconds an unrecorded block of ours is left alone: it may belong to a namespace being created.
ORPHAN_GRACE = 60.0

#: Seconds between two sweeps of a state dir by dataset starts (`sweep_at_start`).
SWEEP_INTERVAL = 60.0

_SWEPT = "swept"  # file in the state dir whose mtime is the last sweep's time


def clean_stale_shared_memory() -> list[str]:
    """Remove stale shared memory and lock files of dead jobs; return what was removed.

    Returns:
        Shared-memory block names and state-dir file paths that were removed.
    """
    removed = _clean_namespaces() + _clean_legacy()
    if removed:
        log.warning("Removed %d leftover shared-memory objects and files of dead jobs: %s",
                    len(removed), ", ".join(removed[:20]) + (" ..." if len(removed) > 20 else ""))
    return removed


def clean_orphan_blocks(state_dir: str, grace: float = ORPHAN_GRACE) -> list[str]:
    """Unlink blocks of ours whose namespace has no record in `state_dir`, that no live process
    maps and that are older than `grace` seconds; return their names.

    Call with the state dir's registry lock held, so no namespace of this state dir is between
    creating a block and recording it. Cheap when there is nothing to remove: /proc is only
    scanned when some unrecorded block is old enough to be a candidate.
    """
    now = time.time()
    candidates = []
    for name in list_blocks(f"ss_{os.getuid()}_", os.getuid()):
        namespace = namespace_of_block(name)
        if namespace is None or read_record(state_dir, namespace) is not None:
            continue
        try:
            age = now - os.stat(os.path.join(SHM_DIR, name)).st_mtime
        except OSError:
            continue
        if age >= grace:
            candidates.append(name)
    if not candidates:
        return []
    mapped = mapped_shm_paths()
    if mapped is None:
        return []
    return [name for name in candidates
            if f"{SHM_DIR}/{name}" not in mapped and unlink_block(name)]


def sweep_at_start(state_dir: str, interval: float = SWEEP_INTERVAL) -> list[str]:
    """What a dataset's start removes, registry lock held: everything `streaming clean` would
    (namespaces whose holders all died, their files, orphan blocks), at most once per `interval`
    seconds per state dir; return what was removed.

    A job that crashed, was killed by its scheduler or ran out of memory leaves its namespace's
    blocks in /dev/shm, which is RAM. Its own local directory may never be opened again, so
    waiting for a dataset over the same directory to reclaim it could leave it there for good.
    Sweeping every record at every start would cost a read per live namespace, times every rank
    of every job starting on the node; the interval bounds that to one sweep a minute.
    """
    stamp = pathlib.Path(state_dir, _SWEPT)
    try:
        if time.time() - stamp.stat().st_mtime < interval:
            return []
    except FileNotFoundError:
        pass
    stamp.touch()
    return _sweep_locked(state_dir)


def _clean_namespaces() -> list[str]:
    state_dir = ensure_state_dir()
    with registry_lock(state_dir):
        return _sweep_locked(state_dir)


def _sweep_locked(state_dir: str) -> list[str]:
    removed: list[str] = []
    live = set()
    for path in sorted(glob.glob(os.path.join(glob.escape(state_dir), "ss_*.json"))):
        name = os.path.basename(path)[: -len(".json")]
        record = read_record(state_dir, name)
        if record is not None and live_holders(record):
            live.add(name)
        elif record is not None:
            removed += reclaim(state_dir, record)
    removed += _clean_state_files(state_dir, live)
    removed += clean_orphan_blocks(state_dir)
    return removed


def _clean_state_files(state_dir: str, live: set[str]) -> list[str]:
    """Lock files of dead namespaces, local-directory entries of dead users, crashed temp files."""
    removed = []
    for path in glob.glob(os.path.join(glob.escape(state_dir), "ss_*.lock")):
        if os.path.basename(path).split(".")[0] not in live and discard(path):
            removed.append(path)
    for path in glob.glob(os.path.join(glob.escape(state_dir), "local-*.json")):
        if prune_local_index(path, live):
            removed.append(path)
    for path in glob.glob(os.path.join(glob.escape(state_dir), "*.tmp.*")):
        pid = path.rsplit(".", 1)[-1]
        if pid.isdigit() and not is_alive(int(pid)) and discard(path):
            removed.append(path)
    return removed


def _clean_legacy() -> list[str]:
    """The reference's `NNNNNN_<name>` blocks of this user that no other live process maps."""
    names = [n for n in list_blocks("", os.getuid()) if LEGACY_RE.match(n)]
    if not names:
        return []
    mapped = mapped_shm_paths(exclude=frozenset({os.getpid()}))
    if mapped is None:
        return []
    return [n for n in names if f"{SHM_DIR}/{n}" not in mapped and unlink_block(n)]
