"""Records of which processes hold a namespace and which namespaces use a local directory.

Plain JSON files in the per-uid state dir (never in a dataset's cache), replaced atomically, read
and written only under the state dir's single registry lock. A namespace whose recorded holders are
all dead is stale: `reclaim` unlinks its blocks, lock files and records.
"""

from __future__ import annotations

import glob
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field

from streaming.atomic import discard, write_atomic
from streaming.coord.liveness import Identity, is_alive
from streaming.coord.lock import DEFAULT_LOCK_TIMEOUT, FileLock
from streaming.coord.names import local_index_path, record_path, state_dir_path
from streaming.coord.shm import list_blocks, unlink_block
from streaming.errors import CoordinationError

__all__ = [
    "Record",
    "add_local_user",
    "ensure_state_dir",
    "failed_start_message",
    "holder_entry",
    "live_holders",
    "read_json",
    "local_users",
    "node_wait_message",
    "note_failed_start",
    "prune_local_index",
    "read_record",
    "reclaim",
    "registry_lock",
    "remove_local_user",
    "write_record",
]

_MODE = 0o600


@dataclass
class Record:
    """What the state dir knows about one namespace."""

    name: str
    locals: list[str]
    remotes: list[str | None]
    holders: list[list[int]] = field(default_factory=list)  # [pid, start] per attached handle
    blocks: list[str] = field(default_factory=list)
    job: str = ""  # the job key (`names.job_key`) of the ranks that may attach; "" if unknown
    # str(pid) of each holder that attached a copy of another process's dataset (a DataLoader
    # worker) -> that process's pid: what a process tells its own workers by, not parentage
    # (a forkserver's workers are not its children; a peer rank may be)
    owners: dict[str, int] = field(default_factory=dict)


def ensure_state_dir(tmp: str | None = None) -> str:
    """Create (mode 0700) and vet the per-uid state dir in the temp dir; return its path.

    Raises:
        CoordinationError: The path exists but is not a private directory of this user (a
            symlink or another user's directory would let them tamper with our locks).
    """
    uid = os.getuid()
    # Resolved, so ranks that spell TMPDIR differently still agree on names derived from it.
    path = state_dir_path(os.path.realpath(tmp or tempfile.gettempdir()), uid)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
        raise CoordinationError(
            f"{path} must be a directory owned by uid {uid}; remove it or set TMPDIR elsewhere"
        )
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def registry_lock(state_dir: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> FileLock:
    """The lock that serialises every registry read-modify-write of this user."""
    return FileLock(os.path.join(state_dir, "registry.lock"), timeout)


def read_json(path: str) -> dict | None:
    """The JSON object in `path`; None if there is no file, and ``{}`` (a record with no live
    holders) if it is unreadable, truncated or not an object."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: str, data: dict) -> None:
    write_atomic(path, [json.dumps(data).encode("utf-8")], mode=_MODE)


def read_record(state_dir: str, namespace: str) -> Record | None:
    """The namespace's record; None if it has none. A corrupt record has no holders."""
    data = read_json(record_path(state_dir, namespace))
    if data is None:
        return None
    try:
        return Record(**data)
    except TypeError:
        return Record(name=namespace, locals=[], remotes=[])


def write_record(state_dir: str, record: Record) -> None:
    """Replace the namespace's record atomically."""
    # Its fields are JSON values already: `asdict`'s recursive copy would cost ~60 us a write.
    _write_json(record_path(state_dir, record.name), vars(record))


def live_holders(record: Record) -> list[list[int]]:
    """The record's holders whose processes are still running."""
    return [h for h in record.holders if len(h) == 2 and is_alive(h[0], h[1])]


def split_node_message(state_dir: str, namespace: str) -> str | None:
    """Why a node-wide wait in `namespace` cannot fill, when that is because other ranks of the
    same job opened the same remote(s) with other local directories; else None.

    Each such rank creates a namespace of its own (the local directory is part of the name), so
    every node-wide barrier waits for ranks that are waiting in another one.
    """
    ours = read_record(state_dir, namespace)
    if ours is None or not ours.job or not any(r is not None for r in ours.remotes):
        return None
    our_pids = {h[0] for h in live_holders(ours)}
    strays = []
    for path in glob.glob(os.path.join(glob.escape(state_dir), "*.json")):
        name = os.path.basename(path)[:-len(".json")]
        if name == namespace:
            continue
        other = read_record(state_dir, name)
        if (other is None or other.job != ours.job or other.remotes != ours.remotes
                or other.locals == ours.locals):
            continue
        pids = sorted({h[0] for h in live_holders(other)} - our_pids)
        if pids:
            strays.append(f"{other.locals} (pids {pids})")
    if not strays:
        return None
    return (f"other ranks of this job on this node opened the same remote {ours.remotes} with "
            f"different local directories: {'; '.join(strays)}, while this process "
            f"(pids {sorted(our_pids)}) uses {ours.locals}. Every rank of a node must pass the "
            "same `local` (it is the node's cache); give ranks on different nodes whatever you "
            "like.")


def _failed_start_path(state_dir: str, namespace: str) -> str:
    return os.path.join(state_dir, f"{namespace}.failed-start")  # (not *.json: no record)


def note_failed_start(state_dir: str, namespace: str, who: Identity, what: str) -> None:
    """Record that process `who` of `namespace` will never take part in its epochs (its
    DataLoader worker's `worker_init_fn` raised `what`), for `failed_start_message`."""
    _write_json(_failed_start_path(state_dir, namespace),
                {"pid": who[0], "start": who[1], "what": what})


def failed_start_message(state_dir: str, namespace: str) -> str | None:
    """Why a node-wide wait in `namespace` cannot fill, when a DataLoader worker whose start
    failed is still alive (torch keeps it, answering every request with its error, while its
    siblings wait for it at the epoch barrier); else None. A note of a dead process is stale."""
    note = read_json(_failed_start_path(state_dir, namespace))
    if not note or not is_alive(int(note.get("pid", 0)), int(note.get("start", 0))):
        return None
    return (f"DataLoader worker process {note['pid']} never started reading: its "
            f"worker_init_fn raised {note.get('what')}")


def node_wait_message(state_dir: str, namespace: str) -> str | None:
    """Why a node-wide wait in `namespace` cannot fill, if it can be told (see the two above)."""
    return (failed_start_message(state_dir, namespace)
            or split_node_message(state_dir, namespace))


def reclaim(state_dir: str, record: Record) -> list[str]:
    """Remove everything a namespace left behind; returns what was removed.

    Blocks listed in the record and any other block carrying the namespace prefix (one created
    just before a crash) are unlinked, then lock files, local-directory entries and the record.
    """
    removed = []
    names = set(record.blocks) | set(list_blocks(f"{record.name}_"))
    removed += [name for name in sorted(names) if unlink_block(name)]
    for local in record.locals:
        remove_local_user(state_dir, local, record.name)
    for path in glob.glob(os.path.join(glob.escape(state_dir), f"{record.name}.*.lock")):
        if discard(path):
            removed.append(path)
    for path in (_failed_start_path(state_dir, record.name), record_path(state_dir, record.name)):
        if discard(path):
            removed.append(path)
    return removed


def local_users(state_dir: str, local: str) -> dict[str, bool]:
    """Namespaces recorded as using `local`, each mapped to whether it has a remote there."""
    data = read_json(local_index_path(state_dir, local)) or {}
    users = data.get("users", {})
    return {str(k): bool(v) for k, v in users.items()} if isinstance(users, dict) else {}


def add_local_user(state_dir: str, local: str, namespace: str, has_remote: bool) -> None:
    """Record that `namespace` uses `local`."""
    users = local_users(state_dir, local)
    users[namespace] = has_remote
    _write_json(
        local_index_path(state_dir, local), {"local": os.path.abspath(local), "users": users}
    )


def remove_local_user(state_dir: str, local: str, namespace: str) -> None:
    """Forget that `namespace` uses `local`; drop the file when nobody is left."""
    path = local_index_path(state_dir, local)
    users = local_users(state_dir, local)
    if users.pop(namespace, None) is None:
        return
    if users:
        _write_json(path, {"local": os.path.abspath(local), "users": users})
    else:
        discard(path)


def prune_local_index(path: str, live: set[str]) -> bool:
    """Keep only `live` namespaces in one local-directory file; True if the file was removed."""
    data = read_json(path) or {}
    users = data.get("users")
    users = users if isinstance(users, dict) else {}
    kept = {k: v for k, v in users.items() if k in live}
    if kept:
        if kept != users:
            _write_json(path, {"local": data.get("local", ""), "users": kept})
        return False
    return discard(path)


def holder_entry(ident: Identity) -> list[int]:
    """The JSON form of a holder."""
    return [int(ident[0]), int(ident[1])]
