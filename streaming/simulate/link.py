"""A node's link to the remote: latency per request, then bandwidth shared by the transfers.

Transfers in flight share the bandwidth equally (processor sharing), which is what concurrent
TCP streams through one bottleneck converge to. Each request first waits `latency` seconds (the
time to its first byte) without using the link.
"""

from __future__ import annotations

from collections.abc import Callable

from streaming.simulate.events import Clock

__all__ = ["Link"]


class Link:
    """Fetches of one node, each finishing with a callback when its last byte arrived."""

    def __init__(self, clock: Clock, bandwidth: float | None, latency: float) -> None:
        self.clock, self.bandwidth, self.latency = clock, bandwidth, latency
        self._active: dict[int, list[float]] = {}  # transfer -> [remaining bytes]
        self._done: dict[int, Callable[[], None]] = {}
        self._last = 0.0
        self._version = 0
        self._next_id = 0

    def fetch(self, nbytes: int, done: Callable[[], None]) -> None:
        """Start moving `nbytes`; call `done()` when they have all arrived."""
        if self.latency:
            self.clock.at(self.clock.now + self.latency, self._begin, nbytes, done)
        else:
            self._begin(nbytes, done)

    def _begin(self, nbytes: int, done: Callable[[], None]) -> None:
        if self.bandwidth is None or nbytes <= 0:
            # Through the clock, not called here: a callback that starts the next fetch would
            # otherwise nest one call chain per shard of the prefetch window (RecursionError
            # at a few hundred shards).
            self.clock.at(self.clock.now, done)
            return
        self._advance()
        self._next_id += 1
        self._active[self._next_id] = [float(nbytes)]
        self._done[self._next_id] = done
        self._schedule()

    def _advance(self) -> None:
        """Take the bytes moved since the last change off every transfer in flight."""
        now = self.clock.now
        if self._active and now > self._last:
            moved = (now - self._last) * self.bandwidth / len(self._active)  # type: ignore[operator]
            for remaining in self._active.values():
                remaining[0] -= moved
        self._last = now

    def _schedule(self) -> None:
        self._version += 1
        if self._active:
            least = min(r[0] for r in self._active.values())
            when = self.clock.now + max(least, 0.0) * len(self._active) / self.bandwidth  # type: ignore[operator]
            self.clock.at(when, self._complete, self._version)

    def _complete(self, version: int) -> None:
        if version != self._version:  # the set of transfers changed since: rescheduled
            return
        self._advance()
        slack = 1e-9 * self.bandwidth  # type: ignore[operator]
        finished = [key for key, remaining in self._active.items() if remaining[0] <= slack]
        callbacks = []
        for key in finished:
            del self._active[key]
            callbacks.append(self._done.pop(key))
        self._schedule()
        for callback in callbacks:
            callback()
