"""Exactly one preparation (download) per shard per node: the state table applied to shared memory.

Two shared arrays: the state of each shard (uint8, `ShardState` values) and the identity (pid and
start time) of the process preparing it, so a preparer whose pid was recycled reads as dead.
Transitions happen under one lock. A waiter polls with backoff and a deadline; if the preparer
died (SIGKILLed worker) it takes the claim over, and a failed preparation returns the shard to
REMOTE so the next asker retries instead of waiting forever.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from streaming.coord.array import SharedArray
from streaming.coord.current import current_pid
from streaming.coord.liveness import identity, is_alive
from streaming.coord.lock import FileLock
from streaming.coord.states import (
    Event,
    InvalidTransition,
    Outcome,
    ShardState,
    claim_event,
    transition,
)
from streaming.coord.wait import LocalSignal, wait_until
from streaming.defaults import NODE_WAIT_TIMEOUT

__all__ = ["ShardClaims"]

#: Claims finished by a thread of this process wake this process's waiters at once.
CHANGES = LocalSignal()


class ShardClaims:
    """Per-shard claims shared by every process of a node."""

    def __init__(self, states: SharedArray, owners: SharedArray, lock: FileLock) -> None:
        """Wrap the shared arrays (see `Namespace.claims`).

        Args:
            states: uint8[num_shards] of `ShardState` values.
            owners: int64[num_shards, 2]: the (pid, start time) preparing each shard, zeros
                when none.
            lock: Guards every transition. Callers may hold it to combine a transition with
                their own bookkeeping (cache usage) via `apply`.
        """
        if (states.dtype != np.uint8 or owners.dtype != np.int64
                or owners.shape != (*states.shape, 2)):
            raise ValueError(
                f"Claims need uint8 states[n] and int64 owners[n, 2]: {states!r}, {owners!r}"
            )
        self.states = states
        self.owners = owners
        self.lock = lock

    def __len__(self) -> int:
        return len(self.states)

    def state(self, shard: int) -> ShardState:
        """The shard's state right now (a lock-free read of one byte)."""
        return ShardState(int(self.states.numpy()[shard]))

    def apply(self, shard: int, event: Event) -> Outcome:
        """Apply `event` to `shard`. The caller must hold `self.lock`.

        SUCCEED and FAIL are only accepted from the process that owns the preparation.
        """
        states, owners = self.states.numpy(), self.owners.numpy()
        if event in (Event.SUCCEED, Event.FAIL) and owners[shard, 0] != current_pid():
            raise InvalidTransition(
                f"Shard {shard}: pid {current_pid()} cannot {event.value} a preparation owned by "
                f"pid {int(owners[shard, 0])}"
            )
        new_state, outcome = transition(int(states[shard]), event)
        if outcome is Outcome.GRANTED:
            owners[shard] = identity()
        elif outcome is Outcome.DONE:
            owners[shard] = 0
        states[shard] = new_state
        return outcome

    def claim(self, shard: int, *, reprepare: bool = False) -> Outcome:
        """Try to become the shard's preparer: GRANTED (go), BUSY (wait) or READY (use it).

        A PREPARING shard whose preparer is dead is taken over (GRANTED).

        Args:
            shard: Shard index.
            reprepare: Claim a LOCAL shard too (it needs work again, e.g. decompression).
        """
        states = self.states.numpy()
        if not reprepare:
            seen = states[shard]
            if seen == ShardState.LOCAL:
                # A lock-free READY: LOCAL only leaves through EVICT, which may as well come
                # right after the lock is released, so holding it would add cost, not certainty.
                return Outcome.READY
            if seen == ShardState.PREPARING and is_alive(*self.owners.numpy()[shard].tolist()):
                # A lock-free BUSY, for the same reason: the caller waits and asks again. (A
                # reader that caught up with the prefetch thread asks at every shard.)
                return Outcome.BUSY
        with self.lock:
            state = int(states[shard])
            pid, start = self.owners.numpy()[shard].tolist()
            alive = state != ShardState.PREPARING or is_alive(pid, start)
            return self.apply(shard, claim_event(state, alive, reprepare))

    def finish(self, shard: int, ok: bool, also: Callable[[], None] | None = None) -> None:
        """End this process's preparation: LOCAL on success, back to REMOTE on failure.

        Args:
            shard: Shard index.
            ok: Whether the preparation succeeded.
            also: Bookkeeping to do atomically with the transition, under the same lock
                acquisition (the cache's usage accounting), instead of taking the lock twice.
        """
        with self.lock:
            if also is not None:
                also()
            self.apply(shard, Event.SUCCEED if ok else Event.FAIL)
        CHANGES.notify()

    def evict(self, shard: int) -> Outcome:
        """Mark a shard REMOTE again (DONE), unless it is being prepared (BUSY)."""
        with self.lock:
            return self.apply(shard, Event.EVICT)

    def wait(self, shard: int, timeout: float = NODE_WAIT_TIMEOUT) -> Outcome:
        """Wait while someone alive prepares the shard; then claim it or learn it is ready.

        Returns:
            READY once it is local, or GRANTED if it went back to REMOTE (failed, evicted) or its
            preparer died, in which case this process must prepare it and call `finish`.

        Raises:
            CoordinationError: Still being prepared by a live process at the deadline.
        """
        states, owners = self.states.numpy(), self.owners.numpy()
        seen = CHANGES.generation

        def poll() -> Outcome | None:
            nonlocal seen
            seen = CHANGES.generation
            if states[shard] == ShardState.PREPARING and is_alive(*owners[shard].tolist()):
                return None
            outcome = self.claim(shard)
            return None if outcome is Outcome.BUSY else outcome

        return wait_until(
            poll,
            timeout=timeout,
            sleep=lambda seconds: CHANGES.sleep(seconds, seen),
            what=lambda: (
                f"shard {shard} to be prepared by pid {int(owners[shard, 0])} "
                f"(state {ShardState(int(states[shard])).name})"
            ),
        )

    def ensure(
        self,
        shard: int,
        prepare: Callable[[], Callable[[], None] | None],
        timeout: float = NODE_WAIT_TIMEOUT,
        *,
        reprepare: bool = False,
    ) -> bool:
        """Make the shard LOCAL, running `prepare` here only if no other process is doing so.

        Args:
            shard: Shard index.
            prepare: Fetches the shard's files; an exception marks the shard REMOTE again and
                propagates. It may return bookkeeping to run under the lock together with the
                LOCAL transition (see `finish`).
            timeout: How long to wait for another process's preparation.
            reprepare: Run `prepare` even if the shard is LOCAL (see `claim`).

        Returns:
            Whether this process ran `prepare`.
        """
        outcome = self.claim(shard, reprepare=reprepare)
        if outcome is Outcome.BUSY:
            outcome = self.wait(shard, timeout)
        if outcome is Outcome.READY:
            return False
        try:
            also = prepare()
        except BaseException:
            self.finish(shard, ok=False)
            raise
        self.finish(shard, ok=True, also=also)
        return True

    def __repr__(self) -> str:
        return f"ShardClaims({self.states.name!r}, {len(self)} shards)"
