"""The coordination fast paths: proportional waits, lock-free READY, one lock per finished shard,
own-process liveness and a frozen inherited heap in forked workers."""

from __future__ import annotations

import gc
import os

import pytest

from streaming.coord import Outcome, ShardState, open_namespace, wait as wait_module
from streaming.coord.liveness import identity, is_alive


class FakeClock:
    """A virtual monotonic clock whose `sleep` only advances time (records each sleep)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("ready_at", [0.0005, 0.033, 0.2, 3.0])
def test_wait_overshoots_its_condition_by_at_most_a_quarter(
    monkeypatch: pytest.MonkeyPatch, ready_at: float
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(wait_module, "time", clock)
    seen = wait_module.wait_until(
        lambda: clock.now if clock.now >= ready_at else None, timeout=60, what=lambda: "x"
    )
    bound = max(ready_at * (1 + wait_module.BACKOFF), ready_at + wait_module.FIRST_SLEEP)
    assert ready_at <= seen <= min(bound, ready_at + wait_module.MAX_SLEEP) + 1e-9
    assert max(clock.sleeps) <= wait_module.MAX_SLEEP


def test_long_waits_poll_rarely(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(wait_module, "time", clock)
    wait_module.wait_until(lambda: True if clock.now >= 10 else None, timeout=60, what=str)
    assert len(clock.sleeps) < 10 / wait_module.MAX_SLEEP + 60  # ~20 polls a second at most


def test_a_claim_held_by_another_thread_of_this_process_is_alive() -> None:
    me = identity()
    assert is_alive(os.getpid()) and is_alive(*me)
    assert not is_alive(os.getpid(), me[1] + 1)


def test_local_shard_is_ready_without_the_lock(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"], ["s3://b/data"]) as ns:
        claims = ns.claims(2)
        claims.states.numpy()[0] = ShardState.LOCAL
        with claims.lock:  # held (not reentrant): a claim that locked would raise here
            assert claims.claim(0) is Outcome.READY
        assert claims.claim(0, reprepare=True) is Outcome.GRANTED  # reprepare still locks


def test_finish_runs_bookkeeping_under_the_same_lock(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"], ["s3://b/data"]) as ns:
        claims = ns.claims(1)
        usage = ns.scalar("usage")
        held: list[bool] = []

        def prepare():  # noqa: ANN202
            def account() -> None:
                held.append(claims.lock.held)
                usage.set(usage.get() + 7)

            return account

        assert claims.ensure(0, prepare) is True
        assert held == [True] and usage.get() == 7
        assert claims.state(0) is ShardState.LOCAL
        assert claims.ensure(0, prepare) is False and usage.get() == 7  # ready: nothing reruns


def test_forked_children_freeze_the_heap_they_inherit(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"], None):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            try:
                os.write(write, str(gc.get_freeze_count()).encode())
            finally:
                os._exit(0)
        os.close(write)
        frozen = int(os.read(read, 64) or b"0")
        os.close(read)
        os.waitpid(pid, 0)
    assert frozen > 1000  # the parent's objects (numpy, this test run) are frozen in the child
