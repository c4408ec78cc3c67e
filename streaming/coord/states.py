"""The shard state machine as a pure transition table (no shared memory, no processes).

States use the reference's byte values (0 INVALID, 1 REMOTE, 2 PREPARING, 3 LOCAL). Events are what
a process asks for; each (state, event) pair maps to the next state and an outcome for the asker.
Pairs not in the table are errors. `streaming.coord.claims` applies this table to a shared array.
"""

from __future__ import annotations

import enum

from streaming.errors import CoordinationError

__all__ = [
    "TRANSITIONS",
    "Event",
    "InvalidTransition",
    "Outcome",
    "ShardState",
    "claim_event",
    "transition",
]


class ShardState(enum.IntEnum):
    """Where a shard is, as stored in the shared uint8 array."""

    INVALID = 0
    REMOTE = 1
    PREPARING = 2
    LOCAL = 3


class Event(enum.Enum):
    """What a process asks to do to a shard."""

    CLAIM = "claim"  # I want to prepare it (download)
    TAKEOVER = "takeover"  # claim of a PREPARING shard whose preparer died
    REPREPARE = "reprepare"  # it is LOCAL but needs work again (e.g. only the zip is present)
    SUCCEED = "succeed"  # my preparation finished
    FAIL = "fail"  # my preparation failed; someone may try again
    EVICT = "evict"  # delete its files from the cache


class Outcome(enum.Enum):
    """What the asker learns."""

    GRANTED = "granted"  # you own the preparation now
    BUSY = "busy"  # someone alive is preparing it; wait
    READY = "ready"  # it is already local
    DONE = "done"  # the state change happened


class InvalidTransition(CoordinationError):
    """An event that makes no sense in the shard's current state."""


_S, _E, _O = ShardState, Event, Outcome
TRANSITIONS: dict[tuple[ShardState, Event], tuple[ShardState, Outcome]] = {
    (_S.REMOTE, _E.CLAIM): (_S.PREPARING, _O.GRANTED),
    (_S.PREPARING, _E.CLAIM): (_S.PREPARING, _O.BUSY),
    (_S.LOCAL, _E.CLAIM): (_S.LOCAL, _O.READY),
    (_S.PREPARING, _E.TAKEOVER): (_S.PREPARING, _O.GRANTED),
    (_S.REMOTE, _E.REPREPARE): (_S.PREPARING, _O.GRANTED),
    (_S.PREPARING, _E.REPREPARE): (_S.PREPARING, _O.BUSY),
    (_S.LOCAL, _E.REPREPARE): (_S.PREPARING, _O.GRANTED),
    (_S.PREPARING, _E.SUCCEED): (_S.LOCAL, _O.DONE),
    (_S.PREPARING, _E.FAIL): (_S.REMOTE, _O.DONE),
    (_S.LOCAL, _E.EVICT): (_S.REMOTE, _O.DONE),
    (_S.REMOTE, _E.EVICT): (_S.REMOTE, _O.DONE),
    (_S.PREPARING, _E.EVICT): (_S.PREPARING, _O.BUSY),
}
del _S, _E, _O


def transition(state: int, event: Event) -> tuple[ShardState, Outcome]:
    """Next state and outcome of `event` in `state`.

    Raises:
        InvalidTransition: The pair is not in the table (message names the state, as the
            reference's 'Invalid shard state' does).
    """
    try:
        current = ShardState(state)
    except ValueError:
        raise InvalidTransition(f"Invalid shard state: {state}") from None
    try:
        return TRANSITIONS[(current, event)]
    except KeyError:
        raise InvalidTransition(
            f"Invalid shard state: {int(current)} ({current.name}) for event {event.value!r}"
        ) from None


def claim_event(state: int, owner_alive: bool, reprepare: bool = False) -> Event:
    """The event a claim becomes: a takeover when the shard's preparer is dead."""
    if state == ShardState.PREPARING and not owner_alive:
        return Event.TAKEOVER
    return Event.REPREPARE if reprepare else Event.CLAIM
