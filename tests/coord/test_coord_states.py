"""The shard state machine, as a pure table: no processes, no shared memory."""

from __future__ import annotations

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from streaming.coord.states import (
    TRANSITIONS,
    Event,
    InvalidTransition,
    Outcome,
    ShardState,
    claim_event,
    transition,
)


def test_reference_byte_values() -> None:
    assert [int(s) for s in ShardState] == [0, 1, 2, 3]
    assert [s.name for s in ShardState] == ["INVALID", "REMOTE", "PREPARING", "LOCAL"]


@pytest.mark.parametrize(
    ("state", "event", "expected"),
    [
        (ShardState.REMOTE, Event.CLAIM, (ShardState.PREPARING, Outcome.GRANTED)),
        (ShardState.PREPARING, Event.CLAIM, (ShardState.PREPARING, Outcome.BUSY)),
        (ShardState.LOCAL, Event.CLAIM, (ShardState.LOCAL, Outcome.READY)),
        (ShardState.PREPARING, Event.TAKEOVER, (ShardState.PREPARING, Outcome.GRANTED)),
        (ShardState.PREPARING, Event.SUCCEED, (ShardState.LOCAL, Outcome.DONE)),
        (ShardState.PREPARING, Event.FAIL, (ShardState.REMOTE, Outcome.DONE)),
        (ShardState.LOCAL, Event.EVICT, (ShardState.REMOTE, Outcome.DONE)),
        (ShardState.PREPARING, Event.EVICT, (ShardState.PREPARING, Outcome.BUSY)),
        (ShardState.LOCAL, Event.REPREPARE, (ShardState.PREPARING, Outcome.GRANTED)),
    ],
)
def test_table(state: ShardState, event: Event, expected: tuple[ShardState, Outcome]) -> None:
    assert transition(state, event) == expected


@pytest.mark.parametrize("event", list(Event))
def test_invalid_state_is_an_error_naming_it(event: Event) -> None:
    with pytest.raises(InvalidTransition, match="Invalid shard state: 0"):
        transition(ShardState.INVALID, event)
    with pytest.raises(RuntimeError, match="Invalid shard state: 9"):
        transition(9, event)


def test_finishing_without_a_claim_is_an_error() -> None:
    for state in (ShardState.REMOTE, ShardState.LOCAL):
        for event in (Event.SUCCEED, Event.FAIL, Event.TAKEOVER):
            assert (state, event) not in TRANSITIONS
            with pytest.raises(InvalidTransition):
                transition(state, event)


def test_claim_becomes_takeover_only_for_a_dead_preparer() -> None:
    assert claim_event(ShardState.PREPARING, owner_alive=False) is Event.TAKEOVER
    assert claim_event(ShardState.PREPARING, owner_alive=True) is Event.CLAIM
    assert claim_event(ShardState.REMOTE, owner_alive=False) is Event.CLAIM
    assert claim_event(ShardState.LOCAL, owner_alive=True, reprepare=True) is Event.REPREPARE


PIDS = st.integers(min_value=1, max_value=4)


class ShardMachine(RuleBasedStateMachine):
    """Several processes (some of which die) claim, finish and evict one shard."""

    def __init__(self) -> None:
        super().__init__()
        self.state = ShardState.REMOTE
        self.owner: int | None = None
        self.alive = {1, 2, 3, 4}
        self.prepared = 0  # completed preparations since the shard was last REMOTE

    def _apply(self, event: Event) -> Outcome:
        self.state, outcome = transition(self.state, event)
        return outcome

    @rule(pid=PIDS)
    def claim(self, pid: int) -> None:
        if pid not in self.alive:
            return
        owner_alive = self.owner in self.alive
        before = self.state
        outcome = self._apply(claim_event(self.state, owner_alive))
        if outcome is Outcome.GRANTED:
            assert before == ShardState.REMOTE or (
                before == ShardState.PREPARING and not owner_alive
            )
            self.owner = pid
        elif outcome is Outcome.BUSY:
            assert owner_alive
        else:
            assert outcome is Outcome.READY and before == ShardState.LOCAL

    @precondition(lambda self: self.owner is not None and self.owner in self.alive)
    @rule(ok=st.booleans())
    def finish(self, ok: bool) -> None:
        assert self._apply(Event.SUCCEED if ok else Event.FAIL) is Outcome.DONE
        self.owner = None
        if ok:
            self.prepared += 1

    @precondition(lambda self: self.owner is not None)
    @rule()
    def owner_dies(self) -> None:
        self.alive.discard(self.owner)  # type: ignore[arg-type]
        if not self.alive:
            self.alive.add(99)

    @rule()
    def evict(self) -> None:
        outcome = self._apply(Event.EVICT)
        if outcome is Outcome.DONE:
            self.prepared = 0
        else:
            assert self.state == ShardState.PREPARING

    @invariant()
    def owner_iff_preparing(self) -> None:
        assert (self.owner is not None) == (self.state == ShardState.PREPARING)

    @invariant()
    def local_means_prepared_exactly_once(self) -> None:
        assert self.prepared == (1 if self.state == ShardState.LOCAL else 0)


ShardMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestShardMachine = ShardMachine.TestCase
