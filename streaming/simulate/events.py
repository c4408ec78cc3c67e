"""A minimal discrete-event clock: callbacks ordered by time, then by when they were scheduled."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

__all__ = ["Clock"]


class Clock:
    """Simulated time and the callbacks waiting for it."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._queue: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        self.events = 0  # callbacks run so far (the model's cost, for reports)

    def at(self, when: float, callback: Callable[..., None], *args: Any) -> None:
        """Run `callback(*args)` at time `when` (never before now)."""
        self._seq += 1
        heapq.heappush(self._queue, (max(when, self.now), self._seq, callback, args))

    def run(self) -> None:
        """Run callbacks in time order until none is left."""
        queue, pop = self._queue, heapq.heappop
        while queue:
            when, _, callback, args = pop(queue)
            self.now = when
            self.events += 1
            callback(*args)
