"""The reusable barrier across real processes (fork and spawn), and its deadline errors."""

from __future__ import annotations

import multiprocessing as mp
import re
import time

import numpy as np
import pytest
from coord_workers import barrier_rounds

from streaming.coord import open_namespace
from streaming.errors import CoordinationError


def test_barrier_holds_everyone_until_all_arrive(
    coord_tmp: str, ctx: mp.context.BaseContext
) -> None:
    n, rounds = 3, 4
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        barrier = ns.barrier()
        arrivals = ns.array("arrivals", np.int64, 2 * rounds)
        lock = ns.lock("arrivals")
        procs = [
            ctx.Process(target=barrier_rounds, args=(barrier, arrivals, lock, n, rounds))
            for _ in range(n - 1)
        ]
        for p in procs:
            p.start()
        barrier_rounds(barrier, arrivals, lock, n, rounds)
        for p in procs:
            p.join(30)
        assert [p.exitcode for p in procs] == [0] * (n - 1)
        seen = arrivals.numpy().reshape(rounds, 2)
        # Every process of every round saw all n arrivals once past the barrier.
        assert seen[:, 0].tolist() == [n] * rounds
        assert seen[:, 1].tolist() == [n] * rounds
        assert barrier.generation == rounds


def test_barrier_deadline_reports_arrivals_and_recovers(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        barrier = ns.barrier(timeout=0.2)
        start = time.monotonic()
        with pytest.raises(CoordinationError, match=r"barrier .* 1 of 2 participants arrived"):
            barrier.wait(2)
        assert time.monotonic() - start < 30  # the 0.2 s deadline, not a wait for ever
        assert barrier.array.numpy()[0] == 0  # the timed-out arrival was withdrawn
        assert barrier.wait(1) == 1  # and the barrier still works


def test_a_long_wait_says_so_before_its_deadline(coord_tmp: str, monkeypatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """A participant that is alive but never arrives (a rank that does not iterate) left the
    others silent until the deadline (10 minutes)."""
    import streaming.coord.barrier as barrier_module

    monkeypatch.setattr(barrier_module, "WAITING_AFTER", 0.05)
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        barrier = ns.barrier(timeout=0.5)
        with caplog.at_level("WARNING", logger="streaming.coord.barrier"), \
                pytest.raises(CoordinationError):
            barrier.wait(2)
    assert re.search(r"Still waiting after \d+ s \(limit 0.5 s\) for barrier", caplog.text)
    assert "1 of 2 participants arrived" in caplog.text and "every rank of a node" in caplog.text


def test_the_epoch_wait_has_no_limit_unless_one_is_set(coord_tmp: str, monkeypatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """A rank may spend any time between epochs (evaluation, a checkpoint): the others waited
    600 s, then failed. Unset, the epoch wait lasts while its members live (as the
    reference's), saying so; `STREAMING_EPOCH_WAIT_TIMEOUT` bounds it."""
    import math

    import streaming.coord.barrier as barrier_module
    from streaming.defaults import EPOCH_WAIT_ENV, epoch_wait_timeout

    monkeypatch.delenv(EPOCH_WAIT_ENV, raising=False)
    assert epoch_wait_timeout() == math.inf
    monkeypatch.setenv(EPOCH_WAIT_ENV, "90")
    assert epoch_wait_timeout() == 90.0
    for bad in ("0", "-3", "soon"):
        monkeypatch.setenv(EPOCH_WAIT_ENV, bad)
        with pytest.raises(ValueError):
            epoch_wait_timeout()
    monkeypatch.setattr(barrier_module, "WAITING_AFTER", 0.05)
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        barrier = ns.barrier(timeout=math.inf)
        late = mp.get_context("fork").Process(target=_arrive_late, args=(barrier, 1.0))
        late.start()
        with caplog.at_level("WARNING", logger="streaming.coord.barrier"):
            assert barrier.wait(2) == 1
        late.join(30)
    assert re.search(r"Still waiting after \d+ s \(no limit\) for barrier", caplog.text)


def _arrive_late(barrier, seconds: float) -> None:
    time.sleep(seconds)  # a rank busy between epochs
    barrier.wait(2)


def test_barrier_rejects_disagreeing_participant_counts(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        barrier = ns.barrier()
        proc = mp.get_context("fork").Process(target=barrier.wait, args=(3, 5.0))
        proc.start()
        deadline = time.monotonic() + 10
        while barrier.array.numpy()[0] != 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        with pytest.raises(CoordinationError, match="expects 2 participants but the 1 already"):
            barrier.wait(2)
        proc.kill()
        proc.join()
