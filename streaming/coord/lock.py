"""A cross-process, cross-thread lock over `fcntl.flock` on a file in the temp dir.

Fork-safe by construction: the file is opened on every acquire and closed on release, so no
descriptor (and no lock) is carried into a child; a child that inherits the object while another
thread holds it notices the pid change and starts fresh. Pickles as its path. Deletion-safe: after
locking, the inode is checked against the path, so a lock file removed by a namespace teardown is
never locked "alone". Always use it through `with`; acquisition has a deadline.
"""

from __future__ import annotations

import fcntl
import os
import threading
from types import TracebackType

from streaming.coord.wait import Deadline, wait_until
from streaming.errors import CoordinationError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "FileLock"]

DEFAULT_LOCK_TIMEOUT = 120.0
_MODE = 0o600


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
        self._pid = os.getpid()
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._thread: int | None = None

    def _check_fork(self) -> None:
        if self._pid != os.getpid():
            fd = self._fd
            self._reset()
            if fd is not None:
                # Inherited from a parent that held the lock: close our copy without unlocking,
                # which leaves the parent's lock in place.
                os.close(fd)

    def _try_lock_file(self) -> int | None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, _MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the file was unlinked (or replaced) while we waited: retry on the new one
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            return None
        return fd

    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, waiting with backoff up to `timeout` (default: the lock's own).

        Raises:
            CoordinationError: Another thread or process held it past the deadline.
        """
        self._check_fork()
        if self._fd is not None and self._thread == threading.get_ident():
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
            self._fd = wait_until(
                self._try_lock_file,
                timeout=max(deadline.remaining(), 0),
                what=lambda: f"lock {self.path} (held by another process)",
                first=0.0001,
                cap=0.01,
            )
        except BaseException:
            self._thread_lock.release()
            raise
        self._thread = threading.get_ident()

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
        self._fd, self._thread = fd, threading.get_ident()
        return True

    def release(self) -> None:
        """Release the lock taken by `acquire` in this process."""
        self._check_fork()
        fd, self._fd, self._thread = self._fd, None, None
        if fd is None:
            raise RuntimeError(f"Lock {self.path} is not held")
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
            self._thread_lock.release()

    @property
    def held(self) -> bool:
        """Whether this process (some thread of it) holds the lock."""
        return self._pid == os.getpid() and self._fd is not None

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

    def __getstate__(self) -> dict[str, object]:
        return {"path": self.path, "timeout": self.timeout}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.path = state["path"]  # type: ignore[assignment]
        self.timeout = state["timeout"]  # type: ignore[assignment]
        self._reset()

    def __repr__(self) -> str:
        return f"FileLock({self.path!r})"
