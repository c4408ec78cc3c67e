"""A cross-process, cross-thread lock over `fcntl.flock` on a file in the temp dir.

The file stays open between acquisitions (each costs a `flock` and a `stat`, not the six system
calls of an open, lock, check, unlock and close: a shard's claim takes this lock twice, and every
call that releases the GIL is a handoff between a reader and its prefetch thread).

Fork-safe: a forked child closes the descriptors of every lock it inherited (`os.register_at_fork`),
so it never shares the parent's open file (which would make it share the parent's `flock`, and
keep a lock held by a parent that died holding it); a child that inherits the object notices the
pid change and starts fresh. Pickles as its path. Deletion-safe: after locking, the inode is
checked against the path, so a lock file removed by a namespace teardown is never locked "alone".
Always use it through `with`; acquisition has a deadline.
"""

from __future__ import annotations

import fcntl
import os
import threading
import weakref
from types import TracebackType

from streaming.coord.current import current_pid
from streaming.coord.wait import Deadline, wait_until
from streaming.errors import CoordinationError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "FileLock"]

DEFAULT_LOCK_TIMEOUT = 120.0
_MODE = 0o600

#: Locks with an open descriptor, for the forked child to close them all.
_OPEN: weakref.WeakSet[FileLock] = weakref.WeakSet()
#: Held while a lock's file is opened or closed and its record changed, and across a fork, so that
#: a fork never lands between a descriptor's open (or close) and its record in `_OPEN`: the child
#: would keep an inherited descriptor no hook knows of, or close a number reused meanwhile.
_FILES = threading.Lock()


def _before_fork() -> None:
    _FILES.acquire()


def _after_fork_in_parent() -> None:
    _FILES.release()


def _after_fork_in_child() -> None:
    global _FILES
    _FILES = threading.Lock()
    for lock in list(_OPEN):
        lock._check_fork()


class FileLock:
    """Mutual exclusion between threads and processes of one machine. Not reentrant."""

    def __init__(self, path: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        """Describe the lock; nothing is opened until the first acquire.

        Args:
            path: The lock file; created (mode 0600) on first use. Its directory must exist.
            timeout: Default seconds to wait in `acquire` before raising CoordinationError.
        """
        self.path = path
        self.timeout = timeout
        self._reset()

    def _reset(self) -> None:
        self._pid = current_pid()
        self._thread_lock = threading.Lock()
        self._fd: int | None = None  # kept open between acquisitions
        self._inode: tuple[int, int] | None = None  # (device, inode) of the file `_fd` opened
        self._holder: int | None = None  # the thread holding the lock

    def _check_fork(self) -> None:
        if self._pid != current_pid():
            fd = self._fd
            self._reset()
            _OPEN.discard(self)
            if fd is not None:
                # The parent's open file: closing our copy leaves its lock (if any) in place.
                os.close(fd)

    def _open(self) -> int:
        with _FILES:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, _MODE)
            try:
                info = os.fstat(fd)
            except BaseException:
                os.close(fd)
                raise
            self._fd, self._inode = fd, (info.st_dev, info.st_ino)
            _OPEN.add(self)
        return fd

    def _close(self) -> None:
        with _FILES:
            fd, self._fd, self._inode = self._fd, None, None
            _OPEN.discard(self)
            if fd is not None:
                os.close(fd)

    def _try_lock_file(self) -> int | None:
        fd = self._fd if self._fd is not None else self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        except BaseException:
            self._close()
            raise
        try:
            info = os.stat(self.path)
            same = (info.st_dev, info.st_ino) == self._inode
        except FileNotFoundError:
            same = False
        if not same:  # the file was unlinked (or replaced): retry on the one at the path now
            fcntl.flock(fd, fcntl.LOCK_UN)
            self._close()
            return None
        return fd

    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, waiting with backoff up to `timeout` (default: the lock's own).

        Raises:
            CoordinationError: Another thread or process held it past the deadline.
        """
        self._check_fork()
        if self._holder is not None and self._holder == threading.get_ident():
            raise CoordinationError(
                f"Lock {self.path} is already held by this thread (not reentrant)"
            )
        limit = self.timeout if timeout is None else timeout
        deadline = Deadline(limit)
        if not self._thread_lock.acquire(timeout=max(limit, 0)):
            raise CoordinationError(
                f"Timed out after {limit:g} s waiting for lock {self.path} (held by another "
                f"thread of this process)"
            )
        try:
            wait_until(
                self._try_lock_file,
                timeout=max(deadline.remaining(), 0),
                what=lambda: f"lock {self.path} (held by another process)",
                first=0.0001,
                cap=0.01,
            )
        except BaseException:
            self._thread_lock.release()
            raise
        self._holder = threading.get_ident()

    def try_acquire(self) -> bool:
        """Take the lock only if that needs no waiting at all; returns whether it was taken.

        For callers that must never block (garbage-collection finalizers): a lock held by anyone,
        this very thread included (through another `FileLock` on the same file), is a "no".
        """
        self._check_fork()
        if not self._thread_lock.acquire(blocking=False):
            return False
        try:
            fd = self._try_lock_file()
        except BaseException:
            self._thread_lock.release()
            raise
        if fd is None:
            self._thread_lock.release()
            return False
        self._holder = threading.get_ident()
        return True

    def release(self) -> None:
        """Release the lock taken by `acquire` in this process (its file stays open)."""
        self._check_fork()
        if self._holder is None or self._fd is None:
            raise RuntimeError(f"Lock {self.path} is not held")
        self._holder = None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        except BaseException:
            self._close()  # closing the file releases its lock too
            raise
        finally:
            self._thread_lock.release()

    def close(self) -> None:
        """Close the lock's file (it is opened again by the next acquire); not while held.

        Raises:
            RuntimeError: a thread of this process holds the lock or is taking it.
        """
        self._check_fork()
        if not self._thread_lock.acquire(blocking=False):
            raise RuntimeError(f"Lock {self.path} is held: release it before closing")
        try:
            self._close()
        finally:
            self._thread_lock.release()

    @property
    def held(self) -> bool:
        """Whether this process (some thread of it) holds the lock."""
        return self._pid == current_pid() and self._holder is not None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __del__(self) -> None:
        # Unrecorded before the close: the weak set forgets this object only after `__del__`,
        # and a fork during the close must not find the number in it (see `_FILES`).
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is None:
            return
        try:
            _OPEN.discard(self)
            if self._pid == current_pid():
                os.close(fd)
        except Exception:  # interpreter shutdown: modules half torn down; the exit closes it
            pass

    def __getstate__(self) -> dict[str, object]:
        return {"path": self.path, "timeout": self.timeout}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.path = state["path"]  # type: ignore[assignment]
        self.timeout = state["timeout"]  # type: ignore[assignment]
        self._reset()

    def __repr__(self) -> str:
        return f"FileLock({self.path!r})"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
