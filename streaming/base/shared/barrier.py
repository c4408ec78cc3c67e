"""Reference-compatible `SharedBarrier(filelock_path, shm_name)` with a deadline.

Same shared layout and meaning as the reference (3 x int32: num_enter, num_exit, flag; every
constructor call resets them to 0, -1, 1), so code that inspects the properties keeps working.
The lock is our fork-safe `FileLock` (the reference's filelock>=3.30 lock breaks in forked
workers), and every wait has a deadline ending in `CoordinationError` instead of hanging.
"""

from __future__ import annotations

import numpy as np

from streaming.base.constant import TICK  # (imported here by the reference too)
from streaming.base.shared.array import SharedArray
from streaming.coord.lock import FileLock
from streaming.coord.wait import Deadline, wait_until
from streaming.defaults import NODE_WAIT_TIMEOUT

__all__ = ["TICK", "TIMEOUT", "SharedBarrier"]

# Seconds one call may wait for the other processes before raising CoordinationError.
TIMEOUT = NODE_WAIT_TIMEOUT


class SharedBarrier:
    """A barrier between processes: a file lock plus three shared counters."""

    def __init__(self, filelock_path: str, shm_name: str) -> None:
        """Create or attach the counters and reset them (as the reference does).

        Args:
            filelock_path: Lock file path (its directory must exist when the barrier is used).
            shm_name: Shared-memory name of the counters.
        """
        self.filelock_path = filelock_path
        self.lock = FileLock(filelock_path)
        self._arr = SharedArray(3, np.int32, shm_name)
        self.num_enter = 0
        self.num_exit = -1
        self.flag = True

    @property
    def num_enter(self) -> int:
        """Processes that entered the current round."""
        return int(self._arr[0])

    @num_enter.setter
    def num_enter(self, num_enter: int) -> None:
        self._arr[0] = num_enter

    @property
    def num_exit(self) -> int:
        """Processes that left the previous round (-1: all left, barrier idle)."""
        return int(self._arr[1])

    @num_exit.setter
    def num_exit(self, num_exit: int) -> None:
        self._arr[1] = num_exit

    @property
    def flag(self) -> bool:
        """Whether the gate is open (False while a round is filling)."""
        return bool(self._arr[2])

    @flag.setter
    def flag(self, flag: bool) -> None:
        self._arr[2] = bool(flag)

    def _wait(self, cond: object, deadline: Deadline, what: str, num_procs: int) -> None:
        wait_until(
            lambda: True if cond() else None,  # type: ignore[operator]
            timeout=max(deadline.remaining(), 0),
            what=lambda: (
                f"{what} at barrier {self._arr.name!r}: {self.num_enter} of {num_procs} "
                f"entered, {self.num_exit} left the previous round"
            ),
        )

    def __call__(self, num_procs: int, timeout: float = TIMEOUT) -> None:
        """Return once `num_procs` processes have called this (reusable round after round).

        Raises:
            CoordinationError: The others did not arrive within `timeout` seconds.
        """
        deadline = Deadline(timeout)
        with self.lock:
            if self.num_exit == -1:
                self.num_exit = num_procs
            first = self.num_enter == 0
        if first:
            # The first arrival waits for the last round's stragglers to leave, then shuts the gate.
            self._wait(lambda: self.num_exit == num_procs, deadline, "stragglers", num_procs)
        with self.lock:
            if first:
                self.flag = False
            self.num_enter += 1
            if self.num_enter == num_procs:
                self.num_enter = 0
                self.num_exit = 0
                self.flag = True
        self._wait(lambda: self.flag, deadline, "arrivals", num_procs)
        with self.lock:
            self.num_exit += 1
            if self.num_exit == num_procs:
                self.num_exit = -1
