"""A `StreamingDataLoader`'s persistent workers at an epoch's start: replaced when they ended.

A Ctrl-C that the training loop catches also reaches the workers (SIGINT goes to the whole
process group), and they end. torch knows nothing of it until it resumes them for the next
epoch: it waits 5 s for their answer, then fails that epoch and every later one ("exited
unexpectedly"). Here workers found dead are shut down before torch resumes them, and workers
still ending when it does (found alive a moment before) are replaced when torch says so.
(Workers killed by a signal, as by the OOM killer, make torch raise at once; left as it is.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

__all__ = ["replace_dead_workers", "resume_workers"]

_log = logging.getLogger("streaming.loader")  # (the name users filter the loader's notes by)


def replace_dead_workers(loader: Any) -> None:
    """Shut down `loader`'s persistent workers if any has ended, so this epoch starts new
    ones."""
    workers = getattr(getattr(loader, "_iterator", None), "_workers", None)
    if not loader.persistent_workers or not workers:
        return
    dead = [worker.pid for worker in workers if not worker.is_alive()]
    if dead:
        _log.warning("Persistent DataLoader workers %s had exited; starting new ones for "
                     "this epoch.", dead)
        loader._stop_workers()


def resume_workers(loader: Any, start: Callable[[], Any]) -> Any:
    """torch's iterator for this epoch (`start`, the `DataLoader`'s own `__iter__`), with
    persistent workers that ended as torch resumed them replaced."""
    try:
        return start()
    except RuntimeError as err:
        if not loader.persistent_workers or "exited unexpectedly" not in str(err):
            raise
        _log.warning("Persistent DataLoader workers ended as this epoch started (%s); "
                     "starting new ones.", str(err).split(". ", 1)[0])
        loader._stop_workers()
        return start()
