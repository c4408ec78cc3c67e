"""Progress reporting for long work: a callable taking increments, optionally a tqdm bar. A leaf.

Library code (converters, a writer's uploads) only ever calls ``progress(n)``; whether that
draws a bar (the CLI, or a caller passing ``progress=True`` / ``progress_bar=True``) is decided
here, once, from the caller's argument.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Progress", "make_progress", "open_bar"]

Progress = Callable[[int], None]


def _ignore(_: int) -> None:
    return None


@contextlib.contextmanager
def make_progress(progress: bool | Progress | None, total: int | None = None,
                  unit: str = "sample", desc: str | None = None) -> Iterator[Progress]:
    """Yield a ``progress(n)`` callable: the caller's own, a tqdm bar on stderr, or a no-op."""
    if callable(progress):
        yield progress
        return
    if not progress:
        yield _ignore
        return
    from tqdm import tqdm

    # Scaled units (12.3k) only where counts get large: tqdm shows a small total as 0.00/200.
    scale = total is not None and total >= 10_000  # unknown: whole counts ("5sample", not "5.00")
    with tqdm(total=total, unit=unit, unit_scale=scale, desc=desc, file=sys.stderr,
              dynamic_ncols=True) as bar:
        yield bar.update


def open_bar(enabled: bool, unit: str = "B", desc: str | None = None) -> Any:
    """A tqdm bar to feed with ``bar.update(n)`` and close with ``bar.close()``, or None.

    For progress that outlives a `with` block (a writer's background uploads).
    """
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=None, unit=unit, unit_scale=True, desc=desc, file=sys.stderr,
                dynamic_ncols=True)
