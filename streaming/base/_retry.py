"""`retry`: the reference's retrying decorator (exponential backoff with jitter).

Kept for user code that imports `streaming.base.util.retry`; our own transfers retry in
`streaming.storage.transfer`, which knows which errors are worth retrying.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from streaming.retries import backoff_pause, call_with_retries

__all__ = ["retry"]

F = TypeVar("F", bound=Callable[..., Any])


def retry(
    exc_class: type[BaseException] | tuple[type[BaseException], ...] | Callable = Exception,
    clean_up_fn: Callable[[], Any] | None = None,
    num_attempts: int = 3,
    initial_backoff: float = 1.0,
    max_jitter: float = 0.5,
) -> Any:
    """Decorate a function to retry it on `exc_class`, `num_attempts` times in total.

    Usable bare (`@retry`) or configured (`@retry(OSError, num_attempts=5)`). Between attempts it
    calls `clean_up_fn` and sleeps `initial_backoff * 2**i + uniform(0, max_jitter)` seconds.
    """
    if num_attempts < 1:
        raise ValueError("num_attempts must be at-least 1")
    if callable(exc_class) and not isinstance(exc_class, type):
        # Used bare: `exc_class` is the decorated function itself.
        return retry()(exc_class)

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            def call() -> Any:
                try:
                    return func(*args, **kwargs)
                except exc_class:  # type: ignore[misc]
                    if clean_up_fn is not None:
                        clean_up_fn()  # after every failed attempt, the last included
                    raise

            result, _ = call_with_retries(
                call, attempts=num_attempts,
                retry_if=lambda err: isinstance(err, exc_class),
                pause=backoff_pause(initial_backoff, max_jitter))
            return result

        return wrapper  # type: ignore[return-value]

    return decorate
