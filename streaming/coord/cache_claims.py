"""Which namespace uses a cache directory, machine-wide, whatever each job's TMPDIR.

The registry that refuses a second live dataset over one cache ("Reused local directory") lives
in the per-user state dir under the temp dir. Two jobs with different TMPDIRs (SLURM gives each
job its own) never saw each other's: both fetched into, and evicted from, one cache directory,
each counting only its own files. The reference's registry is shared memory, which every job of
a machine sees.

So a dataset with a remote also leaves a claim on each of its cache directories in
`/dev/shm/shardstream-<uid>/caches`: the state dir and namespace that use it. A dataset of
another state dir finding a claim whose namespace still has live holders is refused, naming
that job's TMPDIR; a claim of dead holders (or one it cannot read) is taken over. Where
/dev/shm is not a directory this user can write to (macOS), there are no claims.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence

from streaming.atomic import write_atomic
from streaming.coord.lock import DEFAULT_LOCK_TIMEOUT, FileLock
from streaming.coord.names import local_index_path
from streaming.coord.records import ensure_state_dir, live_holders, read_json, read_record
from streaming.coord.shm import SHM_DIR
from streaming.errors import CoordinationError, ReusedLocalError

__all__ = ["PRUNE_ABOVE", "PRUNE_AFTER", "claim_caches", "claims_dir"]

#: How many claims may accumulate before those of dead datasets are deleted.
PRUNE_ABOVE = 64

#: Claims younger than this (seconds) are never pruned: a dataset writes its claim before its
#: record (under its own TMPDIR's lock, not ours), so a young claim without a record may be
#: one still being opened.
PRUNE_AFTER = 60.0


def claims_dir(shm_dir: str = SHM_DIR) -> str | None:
    """The machine-wide claims directory of this user (made 0700), or None without one."""
    if not os.path.isdir(shm_dir) or not os.access(shm_dir, os.W_OK | os.X_OK):
        return None
    try:
        path = os.path.join(ensure_state_dir(shm_dir), "caches")
        os.makedirs(path, 0o700, exist_ok=True)
    except (OSError, CoordinationError):
        return None  # no claims rather than no dataset: the per-TMPDIR registry still checks
    return path


def claim_caches(state_dir: str, namespace: str, locals_: Sequence[str],
                 timeout: float = DEFAULT_LOCK_TIMEOUT, shm_dir: str = SHM_DIR) -> None:
    """Claim `locals_` (cache directories with a remote, resolved) for `namespace`.

    Raises:
        ReusedLocalError: a live namespace of another state dir (another TMPDIR) claims one.
    """
    directory = claims_dir(shm_dir) if locals_ else None
    if directory is None:
        return
    ours = {"state_dir": state_dir, "namespace": namespace}
    wrote = False
    with FileLock(os.path.join(directory, "claims.lock"), timeout):
        for local in locals_:
            path = local_index_path(directory, local)
            claim = read_json(path)
            if claim == ours:
                continue
            other_dir = claim.get("state_dir") if claim else None
            if isinstance(other_dir, str) and other_dir != state_dir:
                _refuse_if_live(local, state_dir, other_dir, str((claim or {}).get("namespace")))
            write_atomic(path, [json.dumps(ours).encode("utf-8")], mode=0o600)
            wrote = True
        if wrote:
            _prune(directory)


def _prune(directory: str, keep: int = PRUNE_ABOVE) -> None:
    """Past `keep` claims, delete those whose namespace has no live holder left (a claim is
    never removed when its dataset goes: the next one over that directory replaces it).

    Claims younger than `PRUNE_AFTER` stay: their dataset may not have written its record yet
    (ours included, which used to prune its own fresh claim and let the other job in)."""
    names = [name for name in os.listdir(directory) if name.endswith(".json")]
    if len(names) <= keep:
        return
    now = time.time()
    for name in names:
        path = os.path.join(directory, name)
        try:
            if now - os.stat(path).st_mtime < PRUNE_AFTER:
                continue
        except OSError:
            continue
        claim = read_json(path) or {}
        record = read_record(str(claim.get("state_dir", "")), str(claim.get("namespace", "")))
        if record is None or not live_holders(record):
            with contextlib.suppress(OSError):
                os.unlink(path)


def _refuse_if_live(local: str, state_dir: str, other_dir: str, other: str) -> None:
    record = read_record(other_dir, other)
    if record is None or local not in record.locals:
        return
    alive = live_holders(record)
    if not alive:
        return
    pids = [holder[0] for holder in alive]
    raise ReusedLocalError(
        f"Reused local directory: {[local]} vs {record.locals}. Provide a different one. "
        f"{local!r} is the cache of a live dataset of another job (namespace {other}, pids "
        f"{pids}), which keeps its state in {os.path.dirname(other_dir)!r} where this one "
        f"keeps it in {os.path.dirname(state_dir)!r} (their TMPDIRs differ), and a dataset "
        f"with a remote must not share its local directory while that one is alive. Close it "
        f"or let its job end first.", False, other)
