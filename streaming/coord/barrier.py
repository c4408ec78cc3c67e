"""A reusable barrier for `n` processes of one node with a deadline, and a one-shot `Latch`.

Barrier state is shared int64s: arrivals in the current round, the round's generation, the
participant count the round was opened with, then a table of member processes (pid, start). The
last arrival resets the count and bumps the generation; the others poll the generation with
backoff. A participant that passes a different count, a member process that died, or a round that
does not fill before the deadline fails with a `CoordinationError` saying how many arrived,
instead of deadlocking (the reference hangs on uneven num_workers and on a crashed rank).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

import numpy as np

from streaming.coord.array import SharedArray
from streaming.coord.liveness import identity, is_alive
from streaming.coord.lock import FileLock
from streaming.coord.wait import wait_until
from streaming.defaults import NODE_WAIT_TIMEOUT
from streaming.errors import CoordinationError

__all__ = ["BARRIER_SLOTS", "LATCH_SLOTS", "MAX_MEMBERS", "Barrier",
           "Latch"]

MAX_MEMBERS = 512  # member processes a barrier tracks (ranks of one node); more are not tracked
_ARRIVED, _GENERATION, _PARTIES, _MEMBERS = range(4)
BARRIER_SLOTS = _MEMBERS + 2 * MAX_MEMBERS  # [arrived, generation, parties, (pid, start)...]
LIVENESS_PERIOD = 0.2  # seconds between liveness checks of a waiter (a /proc read per member)
# A wait this long asks `stranded` why (every STRANDED_PERIOD s): ranks still constructing a
# second dataset over the same remote are given time to attach before it is called a mistake.
STRANDED_GRACE = 10.0
STRANDED_PERIOD = 2.0
# A wait this long (then every WAITING_PERIOD s) says so at WARNING level: a live participant
# that never arrives is otherwise silent until the deadline (10 minutes by default).
WAITING_AFTER = 30.0
WAITING_PERIOD = 120.0

log = logging.getLogger(__name__)


def _dead_member(members: np.ndarray) -> int:
    """The pid of a recorded member process that is no longer running, or 0."""
    for pid, start in members[members[:, 0] > 0].tolist():
        if not is_alive(pid, start):
            return pid
    return 0


class _Throttle:
    """Runs a check at most every `period` seconds (liveness needs a /proc read per process)."""

    def __init__(self, period: float) -> None:
        self.period = period
        self.next = time.monotonic() + period

    def due(self) -> bool:
        now = time.monotonic()
        if now < self.next:
            return False
        self.next = now + self.period
        return True


class Barrier:
    """Wait until `parties` processes have called `wait`; reusable round after round."""

    def __init__(
        self, array: SharedArray, lock: FileLock, timeout: float = NODE_WAIT_TIMEOUT,
        stranded: Callable[[], str | None] | None = None,
    ) -> None:
        """Wrap the barrier's state.

        Args:
            array: int64 array of `BARRIER_SLOTS` elements, zero-initialised by its creator.
            lock: Serialises arrivals and membership changes.
            timeout: Default seconds `wait` allows the round to fill.
            stranded: Says why the round can never fill, if it can tell (e.g. ranks of the node
                waiting in another namespace); asked every few seconds once a wait has lasted
                `STRANDED_GRACE` seconds, and a message fails the wait at once.
        """
        if array.dtype != np.int64 or array.shape != (BARRIER_SLOTS,):
            raise ValueError(f"Barrier state must be int64[{BARRIER_SLOTS}], got {array!r}")
        self.array = array
        self.lock = lock
        self.timeout = timeout
        self.stranded = stranded

    @property
    def name(self) -> str:
        """The state block's name, used in error messages."""
        return self.array.name

    @property
    def generation(self) -> int:
        """How many rounds have completed."""
        return int(self.array.numpy()[_GENERATION])

    def _members(self) -> np.ndarray:
        return self.array.numpy()[_MEMBERS:].reshape(MAX_MEMBERS, 2)

    def join(self) -> bool:
        """Record this process as a member: while it is dead, every wait fails at once.

        A member is a process whose part in every round is certain (a rank: it arrives itself or
        through its DataLoader workers), so its death means no round can fill again. Joining also
        forgets members that died (a restarted rank replaces its predecessor). Idempotent.

        Returns:
            False if the member table is full (this process is then simply not tracked).
        """
        me = identity()
        with self.lock:
            members = self._members()
            recorded = np.flatnonzero(members[:, 0] > 0)  # of MAX_MEMBERS rows: check those only
            gone = [row for row, (pid, start) in zip(recorded.tolist(),
                                                     members[recorded].tolist())
                    if not is_alive(pid, start)]
            members[gone] = 0
            if ((members[:, 0] == me[0]) & (members[:, 1] == me[1])).any():
                return True
            free = np.flatnonzero(members[:, 0] == 0)
            if not len(free):
                return False
            members[free[0]] = me
            return True

    def members(self) -> list[int]:
        """Pids of the recorded member processes (alive or not)."""
        members = self._members()
        return [int(pid) for pid in members[members[:, 0] > 0, 0]]

    def wait(self, parties: int, timeout: float | None = None) -> int:
        """Arrive, and return once `parties` processes (this one included) have arrived.

        Args:
            parties: Number of participants; must be the same in every process of the round.
            timeout: Seconds to wait (default: the barrier's own).

        Returns:
            The generation of the completed round (1 for the first round).

        Raises:
            CoordinationError: The round did not fill in time, a member process died, or
                participants disagree on `parties`.
        """
        if parties < 1:
            raise ValueError(f"A barrier needs at least one participant, got {parties}")
        state = self.array.numpy()
        with self.lock:
            arrived, generation, expected = (int(v) for v in state[:_MEMBERS])
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

        def progress() -> str:
            return (f"barrier {self.name!r} (round {generation + 1}): {int(state[_ARRIVED])} of "
                    f"{parties} participants arrived")

        throttle = _Throttle(LIVENESS_PERIOD)
        diagnosis = _Throttle(STRANDED_PERIOD)
        diagnosis.next = time.monotonic() + STRANDED_GRACE
        waiting = _Throttle(WAITING_PERIOD)
        since = time.monotonic()
        waiting.next = since + WAITING_AFTER

        def poll() -> bool | None:
            if state[_GENERATION] != generation:
                return True
            if waiting.due():
                log.warning(
                    "Still waiting after %.0f s (%s) for %s. The others are alive but have not "
                    "arrived: every rank of a node, and every DataLoader worker, must start "
                    "each epoch (a rank that does not iterate its own dataset, as under "
                    "accelerate's dispatch_batches, keeps the rest here; docs/frameworks.md).",
                    time.monotonic() - since,
                    f"limit {limit:g} s" if math.isfinite(limit) else "no limit", progress())
            if self.stranded is not None and diagnosis.due():
                why = self.stranded()
                if why and state[_GENERATION] == generation:
                    raise CoordinationError(f"Gave up waiting for {progress()}: {why}")
            if throttle.due():
                dead = _dead_member(self._members())
                if dead and state[_GENERATION] == generation:
                    raise CoordinationError(
                        f"Gave up waiting for {progress()}: member process {dead} is no longer "
                        f"running, so the round can never fill. A rank of this node crashed or "
                        f"exited early; see its own error."
                    )
            return None

        try:
            wait_until(poll, timeout=limit, what=progress)
        except CoordinationError:
            self._withdraw(state, generation)
            raise
        return generation + 1

    def _withdraw(self, state: np.ndarray, generation: int) -> None:
        """Take back a failed arrival so the barrier stays consistent for a retry."""
        with self.lock:
            if state[_GENERATION] == generation and state[_ARRIVED] > 0:
                state[_ARRIVED] -= 1

    def __repr__(self) -> str:
        return f"Barrier({self.name!r})"


LATCH_SLOTS = 3  # [pid, start, status]
_PENDING, _OPEN, _FAILED = 0, 1, -1


class Latch:
    """A one-shot gate: one process does a job (the node's cache set-up), the others wait for it.

    Whoever holds the job calls `hold` first, then `open` (done) or `fail`. A waiter returns once
    the latch is open and fails at once, instead of at its deadline, when the holder failed or
    died before opening it.
    """

    def __init__(self, array: SharedArray) -> None:
        """Wrap the state: int64 array of `LATCH_SLOTS` elements, zero-initialised (pending)."""
        if array.dtype != np.int64 or array.shape != (LATCH_SLOTS,):
            raise ValueError(f"Latch state must be int64[{LATCH_SLOTS}], got {array!r}")
        self.array = array

    def hold(self) -> None:
        """Record this process as the one doing the job."""
        state = self.array.numpy()
        state[0], state[1] = identity()

    def open(self) -> None:
        """The job is done: release every waiter."""
        self.array.numpy()[2] = _OPEN

    def fail(self) -> None:
        """The job failed here: waiters raise instead of waiting."""
        self.array.numpy()[2] = _FAILED

    @property
    def is_open(self) -> bool:
        return int(self.array.numpy()[2]) == _OPEN

    def wait(self, timeout: float, what: str) -> None:
        """Return once the latch is open.

        Args:
            timeout: Seconds to wait at most.
            what: The job, for error messages.

        Raises:
            CoordinationError: The holder failed, died before finishing, or took too long.
        """
        state = self.array.numpy()
        throttle = _Throttle(LIVENESS_PERIOD)

        def poll() -> bool | None:
            status, pid = int(state[2]), int(state[0])
            if status == _OPEN:
                return True
            if status == _FAILED:
                raise CoordinationError(f"{what} failed in process {pid}; see its error.")
            if pid and throttle.due() and not is_alive(pid, int(state[1])) and not self.is_open:
                raise CoordinationError(
                    f"{what}: process {pid}, which was doing it, is no longer running."
                )
            return None

        wait_until(poll, timeout=timeout, what=lambda: what)


def once_per_node(latch: Latch, first: bool, job: Callable[[], None], what: str,
                  timeout: float = NODE_WAIT_TIMEOUT) -> None:
    """Run `job` in the process that is `first`; every other process waits until it is done."""
    if not first:
        latch.wait(timeout, what)
        return
    latch.hold()
    try:
        job()
    except BaseException:
        latch.fail()
        raise
    latch.open()
