"""Opening a dataset's namespace: job-scoped naming, stale reclaim, "Reused local directory".

`open_namespace` runs in every rank's dataset constructor. Under the per-user registry lock it
derives the namespace name, reclaims it if all its holders are dead, attaches if another rank of
the job holds it, and refuses local directories that another live dataset with a remote uses.
"""

from __future__ import annotations

import gc
import itertools
import logging
import os
from collections import Counter
from collections.abc import Mapping, Sequence

from streaming.coord.cleanup import sweep_at_start
from streaming.coord.forking import freeze_heap_in_forked_children
from streaming.coord.liveness import Identity, identity
from streaming.coord.lock import DEFAULT_LOCK_TIMEOUT
from streaming.coord.names import job_key, namespace_name
from streaming.coord.namespace import Namespace
from streaming.coord.records import (
    Record,
    add_local_user,
    ensure_state_dir,
    holder_entry,
    live_holders,
    local_users,
    read_record,
    reclaim,
    registry_lock,
    remove_local_user,
    write_record,
)
from streaming.coord.release import drain_pending

__all__ = ["check_self", "open_namespace"]

log = logging.getLogger(__name__)


def check_self(locals_: Sequence[str]) -> None:
    """Reject one dataset whose streams share a local directory (reference wording)."""
    duplicates = [d for d, n in Counter(locals_).items() if n > 1]
    if duplicates:
        raise ValueError(f"Reused local directory: {duplicates}. Provide a different one.")


def _reused(ours: Sequence[str], theirs: Sequence[str], why: str) -> ValueError:
    return ValueError(
        f"Reused local directory: {list(ours)} vs {list(theirs)}. Provide a different one. {why}"
    )


def _check_locals(
    state_dir: str, name: str, locals_: Sequence[str], remotes: Sequence[str | None]
) -> None:
    """Refuse locals used by another live namespace when we have a remote; reclaim dead users."""
    for local, remote in zip(locals_, remotes, strict=True):
        for other in local_users(state_dir, local):
            if other == name:
                continue
            record = read_record(state_dir, other)
            alive = live_holders(record) if record else []
            if not alive:
                log.debug("Reclaiming stale namespace %s that used %s", other, local)
                if record:
                    reclaim(state_dir, record)
                else:
                    remove_local_user(state_dir, local, other)
                continue
            if remote is not None:
                raise _reused(
                    locals_,
                    record.locals if record else [local],
                    f"{local!r} is the cache of another live dataset (namespace {other}, pids "
                    f"{[h[0] for h in alive]}), and a dataset with a remote must not share its "
                    f"local directory while that one is alive. Close it or let its job end first; "
                    f"leftovers of dead jobs are reclaimed automatically.",
                )


class _SameProcess(ValueError):
    """'Reused local directory' because of a dataset of this very process (maybe unreachable)."""

    def __init__(self, ours: Sequence[str], theirs: Sequence[str], why: str) -> None:
        super().__init__(str(_reused(ours, theirs, why)))


def _choose(
    state_dir: str, locals_: list[str], remotes: list[str | None], job: str, me: Identity
) -> str:
    """Pick, reclaim or create this dataset's namespace and register `me`; under the lock."""
    entry = holder_entry(me)
    for instance in itertools.count():
        name = namespace_name(locals_, remotes, job, os.getuid(), instance, state_dir)
        record = read_record(state_dir, name)
        if record is not None:
            alive = live_holders(record)
            if not alive:
                log.debug("Reclaiming stale namespace %s (all holders dead)", name)
                reclaim(state_dir, record)
            elif any(h[0] == me[0] for h in alive):  # this process already has such a dataset
                if any(r is not None for r in remotes):
                    raise _SameProcess(
                        locals_,
                        record.locals,
                        f"This process already has a live dataset over them with a remote "
                        f"(namespace {name}); close it or drop every reference to it first.",
                    )
                continue
            else:  # another rank of this job on this node created it: attach
                record.holders = [*alive, entry]
                write_record(state_dir, record)
                return name
        _check_locals(state_dir, name, locals_, remotes)
        write_record(state_dir, Record(name, locals_, remotes, holders=[entry], job=job))
        for local, remote in zip(locals_, remotes, strict=True):
            add_local_user(state_dir, local, name, remote is not None)
        return name
    raise AssertionError("unreachable")  # pragma: no cover


def _choose_locked(state_dir: str, locals_: list[str], remotes: list[str | None], job: str,
                   me: Identity, timeout: float) -> str:
    """`_choose` under the registry lock, after the releases our finalizers had to queue."""
    lock = registry_lock(state_dir, timeout)
    with lock:
        drain_pending(lock)
        swept = sweep_at_start(state_dir)
        blocks = [name for name in swept if not os.path.isabs(name)]  # the rest: state files
        if blocks:  # memory a dead job held; its empty lock files are not worth a warning
            log.warning("Removed %d shared-memory blocks left by dead jobs: %s", len(blocks),
                        ", ".join(blocks[:10]) + (" ..." if len(blocks) > 10 else ""))
        elif swept:
            log.debug("Removed %d state files of dead jobs: %s", len(swept), ", ".join(swept))
        return _choose(state_dir, locals_, remotes, job, me)


def open_namespace(
    locals_: Sequence[str],
    remotes: Sequence[str | None] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    tmp: str | None = None,
) -> Namespace:
    """Open (create or attach) the namespace of a dataset in this process.

    Also makes sure processes forked from this one freeze the heap they inherit (see
    `streaming.coord.forking`), so DataLoader workers neither stall on nor copy it.

    Args:
        locals_: Local directory of each stream.
        remotes: Remote of each stream (None entries for local-only streams).
        env: Environment to read the job key from (default: `os.environ`, read now).
        timeout: Seconds to wait for registry and namespace locks.
        tmp: Temp dir holding the per-user state dir (default: `tempfile.gettempdir()`).

    Raises:
        ValueError: 'Reused local directory: ...' when the streams repeat a local directory, or
            a live dataset of another job (or of this process) uses one with our remote set.
    """
    locals_ = [os.path.abspath(p) for p in locals_]
    remotes = [None] * len(locals_) if remotes is None else list(remotes)
    if len(remotes) != len(locals_):
        raise ValueError(f"Got {len(locals_)} local directories but {len(remotes)} remotes")
    check_self(locals_)
    job = job_key(os.environ if env is None else env, os.getpid())
    state_dir = ensure_state_dir(tmp)
    me = identity()
    try:
        name = _choose_locked(state_dir, locals_, remotes, job, me, timeout)
    except _SameProcess:
        # Our own earlier dataset may be garbage that only a collection frees (a reference
        # cycle somewhere in user code): collect once, let its release run, and look again.
        gc.collect()
        drain_pending()
        name = _choose_locked(state_dir, locals_, remotes, job, me, timeout)
    freeze_heap_in_forked_children()  # DataLoader workers forked from here start ~0.25 s faster
    return Namespace(name, state_dir, locals_, remotes, timeout=timeout, registered=me)
