"""`clean_stale_shared_memory()`: remove what dead jobs of this user left on this machine.

Unlike the reference it never unlinks objects of live processes, so any rank may call it at any
time with no torch.distributed set-up. Our namespaces go only when every recorded holder is dead
(with every block carrying their name); the reference's owner-less `NNNNNN_*` blocks only when no
other live process maps them (the caller's own are removed, as the reference does; without /proc
they are left alone). Blocks of a namespace with no record in this state dir are not judged.
"""

from __future__ import annotations

import glob
import os

from streaming.coord.liveness import is_alive, mapped_shm_paths
from streaming.coord.names import LEGACY_RE
from streaming.coord.registry import (
    ensure_state_dir,
    live_holders,
    prune_local_index,
    read_record,
    reclaim,
    registry_lock,
)
from streaming.coord.shm import SHM_DIR, list_blocks, unlink_block

__all__ = ["clean_stale_shared_memory"]


def clean_stale_shared_memory() -> list[str]:
    """Remove stale shared memory and lock files of dead jobs; return what was removed.

    Returns:
        Shared-memory block names and state-dir file paths that were removed.
    """
    return _clean_namespaces() + _clean_legacy()


def _clean_namespaces() -> list[str]:
    state_dir = ensure_state_dir()
    removed: list[str] = []
    with registry_lock(state_dir):
        live = set()
        for path in sorted(glob.glob(os.path.join(glob.escape(state_dir), "ss_*.json"))):
            name = os.path.basename(path)[: -len(".json")]
            record = read_record(state_dir, name)
            if record is not None and live_holders(record):
                live.add(name)
            elif record is not None:
                removed += reclaim(state_dir, record)
        removed += _clean_state_files(state_dir, live)
    return removed


def _clean_state_files(state_dir: str, live: set[str]) -> list[str]:
    """Lock files of dead namespaces, local-directory entries of dead users, crashed temp files."""
    removed = []
    for path in glob.glob(os.path.join(glob.escape(state_dir), "ss_*.lock")):
        if os.path.basename(path).split(".")[0] not in live and _unlink(path):
            removed.append(path)
    for path in glob.glob(os.path.join(glob.escape(state_dir), "local-*.json")):
        if prune_local_index(path, live):
            removed.append(path)
    for path in glob.glob(os.path.join(glob.escape(state_dir), "*.tmp.*")):
        pid = path.rsplit(".", 1)[-1]
        if pid.isdigit() and not is_alive(int(pid)) and _unlink(path):
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


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
