"""The one retry loop: call, and on a failure worth another try, pause and call again. A leaf.

Policy is the caller's: which errors to retry (`retry_if`), how long to pause before the next
attempt (`pause`, exponential backoff with jitter by default, as the reference's `retry`), and
what to say when retrying (`on_retry`). `streaming.storage.transfer` and the reference's `retry`
decorator (`streaming.base.util`) are both built on it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["attempts_of", "backoff_pause", "call_with_retries", "note_attempts"]

T = TypeVar("T")


def backoff_pause(backoff: float = 1.0, max_jitter: float = 0.5) -> Callable[[int, Exception],
                                                                              float]:
    """Pauses of ``backoff * 2**(attempt - 1) + uniform(0, max_jitter)`` seconds."""
    return lambda attempt, _: backoff * 2 ** (attempt - 1) + random.uniform(0, max_jitter)


def call_with_retries(func: Callable[[], T], *, attempts: int,
                      retry_if: Callable[[Exception], bool] = lambda _: True,
                      pause: Callable[[int, Exception], float] | None = None,
                      on_retry: Callable[[int, Exception, float], None] | None = None
                      ) -> tuple[T, int]:
    """Run `func` up to `attempts` times in total; return its result and the attempts used.

    Args:
        func: the work; called with no arguments.
        attempts: total calls allowed, at least 1.
        retry_if: whether an error is worth another attempt (others are raised at once).
        pause: seconds to wait after failed attempt number `n` (1-based) with that error.
        on_retry: told `(attempt, error, pause)` before each pause (for logging).

    Raises:
        ValueError: ``num_attempts must be at-least 1`` (the reference's message).
        Exception: the last error, unchanged, when it is not retried or no attempt is left.
    """
    if attempts < 1:
        raise ValueError("num_attempts must be at-least 1")
    if pause is None:
        pause = backoff_pause()
    for attempt in range(1, attempts + 1):
        try:
            return func(), attempt
        except Exception as err:
            if attempt == attempts or not retry_if(err):
                note_attempts(err, attempt)
                raise
            seconds = pause(attempt, err)
            if on_retry is not None:
                on_retry(attempt, err, seconds)
            if seconds > 0:
                time.sleep(seconds)
    raise AssertionError("unreachable")  # pragma: no cover


def note_attempts(err: BaseException, attempts: int) -> None:
    """Record on a final error how many attempts were made (the runtime metrics count the
    retries of failed fetches too); `attempts_of` reads it back."""
    try:
        err.shardstream_attempts = attempts  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass


def attempts_of(err: BaseException) -> int:
    """The attempts `note_attempts` recorded on `err` (or its cause), else 1."""
    for candidate in (err, err.__cause__):
        attempts = getattr(candidate, "shardstream_attempts", None)
        if isinstance(attempts, int):
            return attempts
    return 1
