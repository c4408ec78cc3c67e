"""Dead peers: a barrier with a dead member, and a `Latch` whose holder died, fail at once."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from streaming.coord import Namespace, open_namespace
from streaming.coord.barrier import LATCH_SLOTS, MAX_MEMBERS, Latch, once_per_node
from streaming.errors import CoordinationError

FORK = mp.get_context("fork")


@pytest.fixture
def ns(coord_tmp: str) -> Iterator[Namespace]:
    with open_namespace([f"{coord_tmp}/data"]) as namespace:
        yield namespace


def _until(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.005)


def _join_and_sleep(barrier: object) -> None:
    barrier.join()  # type: ignore[attr-defined]
    time.sleep(60)


def _join_then_arrive(barrier: object, delay: float) -> None:
    barrier.join()  # type: ignore[attr-defined]
    time.sleep(delay)
    barrier.wait(2, timeout=10)  # type: ignore[attr-defined]


def test_a_killed_member_fails_the_wait_at_once(ns: Namespace) -> None:
    barrier = ns.barrier(timeout=60)
    barrier.join()
    child = FORK.Process(target=_join_and_sleep, args=(barrier,))
    child.start()
    _until(lambda: child.pid in barrier.members())
    child.kill()  # not reaped yet: a zombie counts as dead
    started = time.monotonic()
    with pytest.raises(CoordinationError,
                       match=rf"1 of 2 participants arrived.*member process {child.pid} is no "
                             "longer running"):
        barrier.wait(2)
    assert time.monotonic() - started < 30  # not the 60 s timeout
    assert barrier.array.numpy()[0] == 0  # the arrival was withdrawn
    child.join()
    barrier.join()  # a new member (a restarted rank) forgets the dead one
    assert barrier.members() == [os.getpid()]
    assert barrier.wait(1) == 1


def test_live_members_wait_for_each_other(ns: Namespace) -> None:
    barrier = ns.barrier(timeout=20)
    barrier.join()
    barrier.join()  # idempotent
    child = FORK.Process(target=_join_then_arrive, args=(barrier, 0.6))
    child.start()
    assert barrier.wait(2) == 1  # several liveness checks passed while the child slept
    child.join(10)
    assert child.exitcode == 0
    assert sorted(barrier.members()) == sorted([os.getpid(), child.pid])


def test_a_full_member_table_only_loses_tracking(ns: Namespace) -> None:
    barrier = ns.barrier(timeout=0.3)
    barrier.array.numpy()[3:] = np.tile([1, 0], MAX_MEMBERS)  # pid 1 is always alive
    assert barrier.join() is False
    with pytest.raises(CoordinationError, match="Timed out"):
        barrier.wait(2)


def _hold_and_die(latch: Latch) -> None:
    latch.hold()
    os._exit(0)


def test_latch_fails_fast_when_its_holder_died(ns: Namespace) -> None:
    latch = Latch(ns.array("setup", np.int64, LATCH_SLOTS))
    child = FORK.Process(target=_hold_and_die, args=(latch,))
    child.start()
    child.join()
    started = time.monotonic()
    with pytest.raises(CoordinationError, match=rf"set-up: process {child.pid}.* no longer"):
        latch.wait(60, "set-up")
    assert time.monotonic() - started < 30  # not the 60 s timeout


def test_once_per_node_runs_the_job_once_and_reports_its_failure(ns: Namespace) -> None:
    latch = Latch(ns.array("setup", np.int64, LATCH_SLOTS))
    with pytest.raises(CoordinationError, match="Timed out .* set-up"):
        once_per_node(latch, False, lambda: None, "set-up", timeout=0.1)  # nobody holds it
    ran: list[int] = []

    def broken() -> None:
        ran.append(1)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        once_per_node(latch, True, broken, "set-up")
    with pytest.raises(CoordinationError, match=f"set-up failed in process {os.getpid()}"):
        once_per_node(latch, False, broken, "set-up")
    assert ran == [1]  # waiters never run the job
    other = Latch(ns.array("setup2", np.int64, LATCH_SLOTS))
    once_per_node(other, True, lambda: ran.append(2), "set-up")
    once_per_node(other, False, lambda: ran.append(3), "set-up", timeout=0)
    assert ran == [1, 2]
