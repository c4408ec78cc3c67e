"""Dropping a process's hold on a namespace, without ever waiting inside a finalizer.

A hold is released explicitly (`Namespace.close`, which may wait for the registry lock) or by a
finalizer when the namespace is garbage collected. Finalizers run at arbitrary points, including
inside `json.dump` while this very thread holds the registry lock, so one that waited for that
lock would wait for itself. A finalizer therefore only *requests* a release: it tries the lock
once without waiting and, if it is busy, queues the release. The queue is drained at the next
safe point: the next namespace opened or closed in this process, a short-lived background thread
(a thread may wait, a finalizer may not), and process exit (`atexit`, and multiprocessing's exit
hooks, which DataLoader workers run instead of `atexit`).

At exit a process drops its holds while its DataLoader workers still hold theirs; multiprocessing
then terminates those (daemonic) workers, which never run their own release. So a last hook,
after that, reclaims every namespace this process held whose holders are all dead by then: a
script that ends, or dies of an exception, with a loader's iterator alive leaves nothing behind.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from multiprocessing import util as mp_util

from streaming.coord.liveness import Identity
from streaming.coord.lock import FileLock
from streaming.coord.records import (
    holder_entry,
    live_holders,
    read_record,
    reclaim,
    registry_lock,
    write_record,
)
from streaming.errors import CoordinationError

__all__ = ["Release", "after_workers_exit", "drain_pending", "pending_count"]

log = logging.getLogger(__name__)

#: At exit or in the drainer thread, never wait on a stuck registry lock for long.
RELEASE_TIMEOUT = 10.0
_EXIT_LOCK_TIMEOUT = 2.0  # the last exit hook's wait; the next start's sweep is the fallback
_ATTEMPTS = 3

_pending: deque[Release] = deque()  # appends and pops are atomic: no lock needed to queue
_outstanding: dict[int, Release] = {}  # id -> hold not released yet (for exit)
_held: set[tuple[str, str]] = set()  # (state dir, name) of every namespace this process held
_drainer = threading.Lock()  # held while a drainer thread runs (taken without waiting)
_hooked_pid: int | None = None
_late_hooks: dict[int, Callable[[], None]] = {}  # id(callback) -> callback, this process's


class Release:
    """One process's hold on one namespace, and how to drop it.

    Holds no reference to the `Namespace`, so keeping it (in a finalizer, in the queue) never
    keeps a dataset alive. Idempotent and bound to the registering process: a forked child that
    inherits it does nothing (the holder entry is the parent's).
    """

    __slots__ = ("done", "ident", "name", "state_dir", "timeout")

    def __init__(self, state_dir: str, name: str, ident: Identity, timeout: float) -> None:
        self.state_dir, self.name, self.ident = state_dir, name, ident
        self.timeout = min(timeout, RELEASE_TIMEOUT)
        self.done = False
        _hook_exit()
        _outstanding[id(self)] = self
        _held.add((state_dir, name))

    def _mine(self) -> bool:
        return not self.done and os.getpid() == self.ident[0]

    def __call__(self) -> None:
        """The finalizer's entry point: release now if the lock is free, else queue. Never waits."""
        if not self._mine():
            return
        lock = registry_lock(self.state_dir, self.timeout)
        try:
            taken = lock.try_acquire()
        except Exception:  # noqa: BLE001 (a finalizer must not raise; the queue retries)
            taken = False
        if taken:
            try:
                self._release_locked()
            except Exception:  # noqa: BLE001
                _queue(self)
            finally:
                lock.release()
            return
        _queue(self)

    def now(self) -> None:
        """Release at once, waiting for the registry lock if needed (never from a finalizer).

        A few attempts: an exception raised into us by a signal handler (torch's DataLoader
        raises from SIGCHLD when a worker was killed) must not leave our entry behind, or this
        process could not open a dataset over the same directories again. Every step is
        idempotent and the record is replaced atomically, so a retry is safe.
        """
        for attempt in range(_ATTEMPTS):
            if not self._mine():
                return
            try:
                with registry_lock(self.state_dir, self.timeout):
                    self._release_locked()
                return
            except Exception as err:  # noqa: BLE001 (also runs at exit: report, never raise)
                # a lock held past its deadline would only make us wait again
                if attempt + 1 == _ATTEMPTS or isinstance(err, CoordinationError):
                    log.warning("Could not release shared namespace %s: %s", self.name, err)
                    return

    def _release_locked(self) -> None:
        """Drop our holder entry; the last live holder reclaims everything. Lock held."""
        if not self._mine():
            return
        record = read_record(self.state_dir, self.name)
        if record is not None:
            entry = holder_entry(self.ident)
            if entry in record.holders:
                record.holders.remove(entry)
            record.holders = live_holders(record)
            if record.holders:  # others (maybe our workers) still hold it: looked at at exit
                write_record(self.state_dir, record)
            else:
                reclaim(self.state_dir, record)
        if record is None or not record.holders:  # gone: nothing for the exit hook to check
            _held.discard((self.state_dir, self.name))
        self.done = True
        _outstanding.pop(id(self), None)


def _queue(release: Release) -> None:
    _pending.append(release)
    if _drainer.acquire(blocking=False):  # else the running drainer will see it
        try:
            threading.Thread(target=_drain_in_background, name="shardstream-release",
                             daemon=True).start()
        except RuntimeError:  # interpreter shutting down: the exit hook drains instead
            _drainer.release()


def _drain_in_background() -> None:
    while True:
        try:
            drain_pending()
        finally:
            _drainer.release()
        # Something queued after our last look but before the release saw us still running.
        if not _pending or not _drainer.acquire(blocking=False):
            return


def drain_pending(lock: FileLock | None = None) -> int:
    """Run the queued releases of this process; returns how many ran.

    Args:
        lock: the registry lock of their state dir if the caller holds it already (opening a
            namespace does); otherwise each release takes it, waiting if needed.
    """
    count = 0
    while _pending:
        # Left in the queue until it has run, so that a caller holding the lock (opening a
        # namespace) runs it itself instead of finding the queue emptied by the background
        # drainer, which may still be waiting for that lock: the caller then saw its own
        # released dataset as live. Running a release twice is harmless (`_mine`).
        try:
            release = _pending[0]
        except IndexError:  # another thread emptied it
            break
        if release._mine():
            if lock is not None and lock.held and _same_dir(lock, release.state_dir):
                try:
                    release._release_locked()
                except Exception as err:  # noqa: BLE001 (leave it to exit, not fail the caller)
                    log.warning("Could not release shared namespace %s: %s", release.name, err)
            else:
                release.now()
            count += 1
        with contextlib.suppress(ValueError):  # (another drainer took it out already)
            _pending.remove(release)
    return count


def pending_count() -> int:
    """Releases queued by finalizers and not yet run (for tests and diagnostics)."""
    return sum(1 for release in list(_pending) if release._mine())


def _same_dir(lock: FileLock, state_dir: str) -> bool:
    return os.path.dirname(lock.path) == state_dir


def _release_all_at_exit() -> None:
    """Release every hold this process still has (queued or not). Waiting is fine here."""
    for release in list(_outstanding.values()):
        release.now()
    _pending.clear()


def _hook_exit() -> None:
    """Register the exit hooks once per process (DataLoader workers skip `atexit`)."""
    global _hooked_pid
    pid = os.getpid()
    if _hooked_pid == pid:
        return
    _hooked_pid = pid
    atexit.register(_release_all_at_exit)
    mp_util.Finalize(None, _release_all_at_exit, exitpriority=0)
    after_workers_exit(_reclaim_dead_at_exit)


def after_workers_exit(callback: Callable[[], None]) -> None:
    """Run `callback` once at this process's exit, after multiprocessing terminated and joined
    its daemonic children (DataLoader workers): what they held is free by then. Registering the
    same callback again does nothing."""
    if id(callback) in _late_hooks:
        return
    _late_hooks[id(callback)] = callback
    # A negative priority runs after multiprocessing has stopped the daemonic children.
    mp_util.Finalize(None, _run_late_hook, args=(callback,), exitpriority=-100)


def _run_late_hook(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception as err:  # noqa: BLE001 (exit: report, never raise)
        log.debug("Exit hook %r failed: %s", callback, err)


def _reclaim_dead_at_exit() -> None:
    """Reclaim the namespaces this process held whose holders are all dead now (its workers,
    terminated at exit, did not release theirs). A busy registry lock is not waited for long:
    the next dataset start's sweep removes whatever is left."""
    for state_dir, name in sorted(_held):
        try:
            with registry_lock(state_dir, _EXIT_LOCK_TIMEOUT):
                record = read_record(state_dir, name)
                if record is not None and not live_holders(record):
                    reclaim(state_dir, record)
        except Exception as err:  # noqa: BLE001 (exit: report, never raise)
            log.debug("Could not reclaim namespace %s at exit: %s", name, err)
    _held.clear()


def _forget_inherited() -> None:
    """In a forked child: the parent's holds and queue are the parent's to release."""
    global _drainer
    _pending.clear()
    _outstanding.clear()
    _held.clear()
    _late_hooks.clear()  # the inherited finalizers do not run in a child (another pid)
    _drainer = threading.Lock()  # the parent's drainer thread does not exist here


os.register_at_fork(after_in_child=_forget_inherited)
