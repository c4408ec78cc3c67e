"""A reusable barrier for `n` processes of one node, with a deadline.

State is three shared int64s: arrivals in the current round, the round's generation, and the
participant count the round was opened with. The last arrival resets the count and bumps the
generation; the others poll the generation with backoff. A participant that passes a different
count, or a round that does not fill before the deadline, fails with a `CoordinationError` that
says how many arrived, instead of deadlocking (the reference hangs on uneven num_workers).
"""

from __future__ import annotations

import numpy as np

from streaming.coord.array import SharedArray
from streaming.coord.lock import FileLock
from streaming.coord.wait import wait_until
from streaming.errors import CoordinationError

__all__ = ["BARRIER_SLOTS", "DEFAULT_BARRIER_TIMEOUT", "Barrier"]

BARRIER_SLOTS = 3  # [arrived, generation, parties]
DEFAULT_BARRIER_TIMEOUT = 600.0
_ARRIVED, _GENERATION, _PARTIES = range(BARRIER_SLOTS)


class Barrier:
    """Wait until `parties` processes have called `wait`; reusable round after round."""

    def __init__(
        self, array: SharedArray, lock: FileLock, timeout: float = DEFAULT_BARRIER_TIMEOUT
    ) -> None:
        """Wrap the barrier's state.

        Args:
            array: int64 array of `BARRIER_SLOTS` elements, zero-initialised by its creator.
            lock: Serialises arrivals.
            timeout: Default seconds `wait` allows the round to fill.
        """
        if array.dtype != np.int64 or array.shape != (BARRIER_SLOTS,):
            raise ValueError(f"Barrier state must be int64[{BARRIER_SLOTS}], got {array!r}")
        self.array = array
        self.lock = lock
        self.timeout = timeout

    @property
    def name(self) -> str:
        """The state block's name, used in error messages."""
        return self.array.name

    @property
    def generation(self) -> int:
        """How many rounds have completed."""
        return int(self.array.numpy()[_GENERATION])

    def wait(self, parties: int, timeout: float | None = None) -> int:
        """Arrive, and return once `parties` processes (this one included) have arrived.

        Args:
            parties: Number of participants; must be the same in every process of the round.
            timeout: Seconds to wait (default: the barrier's own).

        Returns:
            The generation of the completed round (1 for the first round).

        Raises:
            CoordinationError: The round did not fill in time, or participants disagree on
                `parties`.
        """
        if parties < 1:
            raise ValueError(f"A barrier needs at least one participant, got {parties}")
        state = self.array.numpy()
        with self.lock:
            arrived, generation, expected = (int(v) for v in state)
            if arrived and expected != parties:
                raise CoordinationError(
                    f"Barrier {self.name!r}: this process expects {parties} participants but "
                    f"the {arrived} already waiting expect {expected}. Every rank on a node must "
                    f"use the same number of DataLoader workers."
                )
            if arrived + 1 == parties:
                state[_ARRIVED] = 0
                state[_GENERATION] = generation + 1
                return generation + 1
            state[_PARTIES] = parties
            state[_ARRIVED] = arrived + 1
        limit = self.timeout if timeout is None else timeout
        try:
            wait_until(
                lambda: True if state[_GENERATION] != generation else None,
                timeout=limit,
                what=lambda: (
                    f"barrier {self.name!r} (round {generation + 1}): {int(state[_ARRIVED])} of "
                    f"{parties} participants arrived"
                ),
            )
        except CoordinationError:
            self._withdraw(state, generation)
            raise
        return generation + 1

    def _withdraw(self, state: np.ndarray, generation: int) -> None:
        """Take back a timed-out arrival so the barrier stays consistent for a retry."""
        with self.lock:
            if state[_GENERATION] == generation and state[_ARRIVED] > 0:
                state[_ARRIVED] -= 1

    def __repr__(self) -> str:
        return f"Barrier({self.name!r})"
