"""Progress reporting for long conversions: a callable taking increments, optionally a tqdm bar.

The converters only ever call ``progress(n)``; whether that draws a bar (the CLI, or a caller
passing ``progress=True``) is decided here, once, by the caller's argument.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator, Union

__all__ = ["Progress", "make_progress"]

Progress = Callable[[int], None]


def _ignore(_: int) -> None:
    return None


@contextlib.contextmanager
def make_progress(progress: Union[bool, Progress, None], total: int | None = None,
                  unit: str = "sample", desc: str | None = None) -> Iterator[Progress]:
    """Yield a ``progress(n)`` callable: the caller's own, a tqdm bar on stderr, or a no-op."""
    if callable(progress):
        yield progress
        return
    if not progress:
        yield _ignore
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, unit_scale=True, desc=desc, file=sys.stderr,
              dynamic_ncols=True) as bar:
        yield bar.update
