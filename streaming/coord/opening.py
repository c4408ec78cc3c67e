"""Opening a dataset's namespace: job-scoped naming, stale reclaim, "Reused local directory".

`open_namespace` runs in every rank's dataset constructor. Under the per-user registry lock it
derives the namespace name (directories, job, and the generation: the ranks' n-th datasets over
those directories pair up), reclaims it if all its holders are dead, attaches if another rank of
the job holds it, and refuses local directories that another live dataset with a remote uses;
when that one is an earlier dataset that slower ranks of the same job still hold, it waits for
them to drop it instead (as every rank does between two datasets over one cache).
"""

from __future__ import annotations

import gc
import logging
import math
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from streaming.coord.cache_claims import claim_caches
from streaming.coord.cleanup import sweep_at_start
from streaming.coord.forking import freeze_heap_in_forked_children
from streaming.coord.liveness import Identity, identity, is_alive
from streaming.coord.lock import DEFAULT_LOCK_TIMEOUT
from streaming.coord.names import is_solo_job, job_key, namespace_name
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
from streaming.coord.wait import Deadline, wait_until
from streaming.defaults import NODE_WAIT_TIMEOUT
from streaming.errors import CoordinationError, ReusedLocalError
from streaming.launch_env import launch_env

__all__ = ["check_self", "open_namespace"]

log = logging.getLogger(__name__)


def check_self(locals_: Sequence[str]) -> None:
    """Reject one dataset whose streams share a local directory (reference wording)."""
    duplicates = [d for d, n in Counter(locals_).items() if n > 1]
    if duplicates:
        raise ValueError(f"Reused local directory: {duplicates}. Provide a different one.")


def _reused(ours: Sequence[str], theirs: Sequence[str], why: str,
            same_process: bool = False, namespace: str | None = None) -> ReusedLocalError:
    return ReusedLocalError(
        f"Reused local directory: {list(ours)} vs {list(theirs)}. Provide a different one. {why}",
        same_process, namespace)


class _PeersStillHold(CoordinationError):
    """Other processes of this job still hold an earlier dataset over one of our directories
    (caught by `_name_when_free`, which waits for them)."""

    def __init__(self, ours: Sequence[str], record: Record, local: str, pids: list[int],
                 orphans: bool = False) -> None:
        super().__init__(local)
        self.ours, self.record, self.local, self.pids = list(ours), record, local, pids
        self.orphans = orphans  # workers whose parent died (they exit within seconds)


def _check_locals(state_dir: str, name: str, locals_: Sequence[str],
                  remotes: Sequence[str | None], job: str) -> None:
    """Refuse locals used by another live namespace when we have a remote; reclaim dead users.

    Raises:
        ReusedLocalError: with `same_process`, the other dataset is this process's (or its
            workers', in a job of one process); without, it belongs to another live job.
        _PeersStillHold: other ranks of this job on this node still hold an earlier dataset
            over the directory: `_name_when_free` waits for them to drop it.
    """
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
            if remote is None or record is None:
                continue
            pids = [h[0] for h in alive]
            creator = record.holders[0] if record.holders else None
            if (creator is not None and len(creator) == 2 and not is_alive(*creator)
                    and os.getpid() not in pids):
                # The process that built that dataset is gone (killed); what still holds it are
                # its DataLoader workers, which torch ends within seconds of their parent.
                raise _PeersStillHold(locals_, record, local, pids, orphans=True)
            # Without peer ranks, other holders are our own (persistent) DataLoader workers.
            if os.getpid() in pids or (record.job == job and is_solo_job(job)):
                raise _reused(
                    locals_, record.locals,
                    f"This process already has a live dataset over them with a remote "
                    f"(namespace {other}, pids {pids}); call close() on it and on its "
                    f"StreamingDataLoader (whose workers hold it too), or drop every reference "
                    f"to both, first. In a notebook, the traceback of a failed cell also keeps "
                    f"them alive.", same_process=True, namespace=other)
            if record.job == job:
                raise _PeersStillHold(locals_, record, local, pids)
            raise _reused(
                locals_, record.locals,
                f"{local!r} is the cache of another live dataset (namespace {other}, pids "
                f"{pids}), and a dataset with a remote must not share its local directory while "
                f"that one is alive. Close it or let its job end first; leftovers of dead jobs "
                f"are reclaimed automatically.")


def _choose(state_dir: str, locals_: list[str], remotes: list[str | None], job: str,
            me: Identity, generation: int) -> str:
    """Attach to or create this dataset's namespace and register `me`; under the lock.

    The name includes the generation (how many datasets over these directories this process
    opened before), so the ranks of a node pair up their n-th datasets: one built after an
    earlier one was dropped never adopts what a slower rank still holds of the earlier one.
    """
    name = namespace_name(locals_, remotes, job, os.getuid(), generation, state_dir)
    record = read_record(state_dir, name)
    if record is not None:
        alive = live_holders(record)
        if alive:  # another rank of this job on this node created it: attach
            record.holders = [*alive, holder_entry(me)]
            write_record(state_dir, record)
            return name
        log.debug("Reclaiming stale namespace %s (all holders dead)", name)
        reclaim(state_dir, record)
    _check_locals(state_dir, name, locals_, remotes, job)
    claim_caches(state_dir, name, [local for local, remote in zip(locals_, remotes, strict=True)
                                   if remote is not None])
    write_record(state_dir, Record(name, locals_, remotes, holders=[holder_entry(me)], job=job))
    for local, remote in zip(locals_, remotes, strict=True):
        add_local_user(state_dir, local, name, remote is not None)
    return name


def _choose_locked(state_dir: str, locals_: list[str], remotes: list[str | None], job: str,
                   me: Identity, generation: int, timeout: float) -> str:
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
        return _choose(state_dir, locals_, remotes, job, me, generation)


# How many namespaces this process opened per (directories, job, state dir), keyed by the name
# of the first: the generation of the next one. Forked children inherit it, so a dataset a
# worker builds never takes the name of one its parent holds.
_opened: dict[str, int] = {}


_WARN_AFTER = 30.0  # seconds of waiting for slower ranks before saying so at WARNING level


# How long the DataLoader workers of a killed process may outlive it: ours end within a second
# (`streaming.coord.orphans`), other datasets' when torch's watchdog looks (every 5 s, between
# batches).
_ORPHANS_EXIT = 60.0


def _name_when_free(state_dir: str, locals_: list[str], remotes: list[str | None], job: str,
                    me: Identity, generation: int, timeout: float,
                    close_own: Callable[[str], bool] | None = None) -> str:
    """`_choose_locked`, collecting garbage once if our own dataset is in the way (then letting
    `close_own` close it if nothing uses it), and waiting (through `wait_until`'s polling) while
    slower ranks still hold an earlier dataset.

    Raises:
        ValueError: 'Reused local directory', by another job, by this process after the
            collection, or by slower ranks that did not drop theirs within `NODE_WAIT_TIMEOUT`.
    """
    deadline = Deadline(NODE_WAIT_TIMEOUT)
    collected, warned, closed = False, False, False
    held: _PeersStillHold | None = None

    def attempt() -> str | None:
        nonlocal collected, warned, held, closed
        try:
            return _choose_locked(state_dir, locals_, remotes, job, me, generation, timeout)
        except ReusedLocalError as err:
            if held is not None and held.orphans and deadline.elapsed() < _ORPHANS_EXIT:
                # A killed process's workers: its record no longer names it (swept), so they
                # now read as a live dataset; torch ends them within seconds.
                return None
            if collected and err.same_process and not closed and err.namespace is not None \
                    and close_own is not None and close_own(err.namespace):
                closed = True  # an idle dataset of ours over the same directories
                return None
            if collected or not err.same_process:
                raise
            # Our own earlier dataset may be garbage that only a collection frees (a reference
            # cycle somewhere in user code): collect once, let its release run, and look again.
            collected = True
            gc.collect()
            drain_pending()
            return None
        except _PeersStillHold as err:
            who = ("Workers of a killed process" if err.orphans else "Ranks") + f" {err.pids}"
            where = (f"{who} of this node still hold an earlier dataset over "
                     f"{err.local} (namespace {err.record.name})")
            if held is None:
                log.info("%s; waiting for them to drop it before building this one", where)
            held = err
            if deadline.elapsed() > _WARN_AFTER and not warned:
                warned = True
                log.warning("%s after %.0f s; still waiting (up to %g s). Every rank must drop "
                            "its datasets and build new ones over one cache in the same order.",
                            where, deadline.elapsed(),
                            _ORPHANS_EXIT if err.orphans else deadline.timeout)
            if deadline.remaining() <= 0:
                raise _reused(
                    err.ours, err.record.locals,
                    f"Processes {err.pids} of this job on this node still hold an earlier "
                    f"dataset over {err.local!r} (namespace {err.record.name}) after "
                    f"{deadline.timeout:g} s, and a dataset with a remote must not share its "
                    f"local directory with a live one. Drop the earlier dataset (and its "
                    f"DataLoader, whose persistent workers hold it too) on every rank before "
                    f"building the next.") from None
            return None

    # `attempt` fails at its own deadline with the error users of the reference expect.
    return wait_until(attempt, timeout=math.inf, what=lambda: "a free namespace")


def open_namespace(
    locals_: Sequence[str],
    remotes: Sequence[str | None] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
    tmp: str | None = None,
    close_own: Callable[[str], bool] | None = None,
) -> Namespace:
    """Open (create or attach) the namespace of a dataset in this process.

    Also makes sure processes forked from this one freeze the heap they inherit (see
    `streaming.coord.forking`), so DataLoader workers neither stall on nor copy it.

    Args:
        locals_: Local directory of each stream.
        remotes: Remote of each stream (None entries for local-only streams).
        env: Environment to read the job key from (default: `launch_env()`, read now).
        timeout: Seconds to wait for registry and namespace locks.
        tmp: Temp dir holding the per-user state dir (default: `tempfile.gettempdir()`).
        close_own: Given the namespace of a dataset of this process in the way (with a remote,
            over one of our directories), closes that dataset if nothing uses it and says so.

    Raises:
        ValueError: 'Reused local directory: ...' when the streams repeat a local directory, or
            a live dataset of another job (or of this process) uses one with our remote set.
    """
    locals_ = [os.path.realpath(p) for p in locals_]  # one directory, however spelled
    remotes = [None] * len(locals_) if remotes is None else list(remotes)
    if len(remotes) != len(locals_):
        raise ValueError(f"Got {len(locals_)} local directories but {len(remotes)} remotes")
    check_self(locals_)
    job = job_key(launch_env() if env is None else env, os.getpid())
    state_dir = ensure_state_dir(tmp)
    me = identity()
    key = namespace_name(locals_, remotes, job, os.getuid(), 0, state_dir)
    generation = _opened.get(key, 0)
    name = _name_when_free(state_dir, locals_, remotes, job, me, generation, timeout,
                           close_own)
    _opened[key] = generation + 1
    freeze_heap_in_forked_children()  # DataLoader workers forked from here start ~0.25 s faster
    return Namespace(name, state_dir, locals_, remotes, timeout=timeout, registered=me)
