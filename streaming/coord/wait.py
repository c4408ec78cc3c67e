"""Deadlines and backoff: the single polling loop of the coordination room.

Every node-local wait goes through `wait_until`, so none can spin forever: it sleeps a quarter
of the time waited so far (from about 1 ms up to 50 ms), so a wait overshoots its condition by at
most ~25% while long waits poll rarely, and at its deadline it raises a `CoordinationError` that
says what it waited for and how far it got. A `LocalSignal` wakes a waiter at once when the
change comes from a thread of its own process (a prefetch thread finishing the shard a reader
waits for), which polling would notice up to 50 ms late.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from streaming.errors import CoordinationError

__all__ = ["BACKOFF", "FIRST_SLEEP", "MAX_SLEEP", "Deadline", "LocalSignal", "wait_until"]

T = TypeVar("T")

FIRST_SLEEP = 0.001
MAX_SLEEP = 0.05
BACKOFF = 0.25  # sleep this fraction of the time already waited (bounded by first and cap)


class Deadline:
    """A point in monotonic time after which a wait gives up."""

    __slots__ = ("end", "start", "timeout")

    def __init__(self, timeout: float) -> None:
        if not timeout >= 0:
            raise ValueError(f"timeout must be a non-negative number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.start = time.monotonic()
        self.end = self.start + self.timeout

    def remaining(self) -> float:
        """Seconds left; zero or negative once expired."""
        return self.end - time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the deadline was set."""
        return time.monotonic() - self.start


class LocalSignal:
    """Wakes this process's waiters as soon as another of its threads changes what they wait
    for, instead of at their next poll; waiters in other processes still poll.

    A waiter reads `generation` before it polls and passes it to `sleep`, which returns at once
    if a change came in between (so a notice is never missed), else at the next change or after
    `seconds`. Re-made in a forked child (a lock held by a thread of the parent at the fork
    would stay held there).
    """

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._changed = threading.Condition()
        self.generation = 0

    def notify(self) -> None:
        with self._changed:
            self.generation += 1
            self._changed.notify_all()

    def sleep(self, seconds: float, seen: int) -> None:
        with self._changed:
            if self.generation == seen:
                self._changed.wait(seconds)


def wait_until(
    poll: Callable[[], T | None],
    *,
    timeout: float,
    what: Callable[[], str] | str,
    first: float = FIRST_SLEEP,
    cap: float = MAX_SLEEP,
    sleep: Callable[[float], object] | None = None,
) -> T:
    """Call `poll` until it returns something other than None, or fail at the deadline.

    Args:
        poll: Returns the awaited value, or None for "not yet". Called at least once, even with
            a zero timeout, so a condition that already holds never fails.
        timeout: Seconds to wait in total.
        what: Describes the wait for the error message; called only on timeout, so it can report
            live progress (e.g. how many participants arrived).
        first: Shortest sleep between polls (the first ones).
        cap: Longest sleep between polls; bounds the latency after the condition becomes true.
        sleep: How to pause between polls (default `time.sleep`; a `LocalSignal`'s to be
            woken early).

    Raises:
        CoordinationError: The deadline passed.
    """
    deadline = Deadline(timeout)
    pause = sleep or time.sleep
    while True:
        value = poll()
        if value is not None:
            return value
        left = deadline.remaining()
        if left <= 0:
            raise CoordinationError(
                f"Timed out after {deadline.elapsed():.3g} s (limit {timeout:g} s) "
                f"waiting for {what() if callable(what) else what}"
            )
        # Proportional, not doubling: doubling can sleep as long again as the whole wait so far
        # just after the condition came true (a 33 ms fetch would then cost up to 64 ms).
        pause(min(max(first, deadline.elapsed() * BACKOFF), cap, left))
