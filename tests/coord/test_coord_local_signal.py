"""`LocalSignal` wakes a waiting thread at the change, not at its next poll; and a claim
finished by a thread of this process wakes a waiter of the same process at once."""

from __future__ import annotations

import threading
import time

from streaming.coord import Outcome, open_namespace
from streaming.coord.claims import CHANGES
from streaming.coord.wait import LocalSignal


def test_a_notice_wakes_a_long_sleep():
    signal = LocalSignal()
    seen = signal.generation
    done = threading.Event()

    def waiter() -> None:
        signal.sleep(120.0, seen)
        done.set()

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    while not done.is_set():  # notify until the waiter is inside its sleep and wakes
        signal.notify()
        done.wait(0.01)
    thread.join(60)
    assert not thread.is_alive()


def test_a_notice_between_poll_and_sleep_is_not_missed():
    signal = LocalSignal()
    seen = signal.generation
    signal.notify()
    start = time.monotonic()
    signal.sleep(120.0, seen)  # the change came after `seen` was read: no wait at all
    assert time.monotonic() - start < 60


def test_claim_waits_sleep_on_the_signal_that_finishing_notifies(coord_tmp, monkeypatch):
    slept = threading.Event()
    real = CHANGES.sleep

    def spy(seconds: float, seen: int) -> None:
        slept.set()
        real(seconds, seen)

    monkeypatch.setattr(CHANGES, "sleep", spy)
    with open_namespace([f"{coord_tmp}/data"], ["s3://bucket/data"]) as ns:
        claims = ns.claims(2)
        assert claims.claim(0) is Outcome.GRANTED  # a "prefetch thread" holds shard 0
        outcome: list[Outcome] = []
        waiter = threading.Thread(target=lambda: outcome.append(claims.wait(0, timeout=120)))
        waiter.start()
        assert slept.wait(60)  # the reader waits on the signal
        before = CHANGES.generation
        claims.finish(0, ok=True)
        assert CHANGES.generation > before  # ... which finishing notifies
        waiter.join(60)
    assert outcome == [Outcome.READY]
