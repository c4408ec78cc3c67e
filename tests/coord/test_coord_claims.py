"""Exactly one preparation per shard per node, with dead-preparer takeover and deadlines."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections import Counter

import pytest
from coord_workers import claim_and_hang, race_prepare

from streaming.coord import FileLock, Outcome, ShardState, open_namespace
from streaming.coord.states import Event, InvalidTransition
from streaming.errors import CoordinationError


def _wait_for_file(path: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) or not _read(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)
    return _read(path)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def test_racing_processes_prepare_each_shard_exactly_once(
    coord_tmp: str, ctx: mp.context.BaseContext
) -> None:
    num_shards, workers = 40, 4
    log = f"{coord_tmp}/prepared.log"
    with open_namespace([f"{coord_tmp}/data"], ["s3://bucket/data"]) as ns:
        claims = ns.claims(num_shards)
        start = ns.barrier("start")
        procs = [
            ctx.Process(target=race_prepare, args=(claims, start, workers, log, seed))
            for seed in range(workers)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * workers
        lines = _read(log).split()
        shards = Counter(int(x) for x in lines[::2])
        assert shards == Counter(range(num_shards))  # every shard exactly once
        assert len(set(lines[1::2])) > 1  # and the work really was shared
        assert all(claims.state(i) is ShardState.LOCAL for i in range(num_shards))
        assert not claims.owners.numpy().any()


def test_a_dead_preparer_is_taken_over_without_waiting(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"], ["s3://bucket/data"]) as ns:
        claims = ns.claims(2)
        ready = f"{coord_tmp}/ready"
        child = mp.get_context("fork").Process(target=claim_and_hang, args=(claims, 0, ready))
        child.start()
        assert _wait_for_file(ready) == Outcome.GRANTED.value
        assert claims.state(0) is ShardState.PREPARING and claims.owners[0][0] == child.pid
        os.kill(child.pid, signal.SIGKILL)  # not reaped yet: a zombie must count as dead
        ran = []
        start = time.monotonic()
        assert claims.ensure(0, lambda: ran.append(1), timeout=20) is True
        assert time.monotonic() - start < 15 and ran == [1]  # not the 20 s timeout
        assert claims.state(0) is ShardState.LOCAL
        child.join()


def test_a_waiter_retries_after_a_failed_preparation(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"], ["s3://bucket/data"]) as ns:
        claims = ns.claims(1)
        ready = f"{coord_tmp}/ready"
        child = mp.get_context("spawn").Process(
            target=claim_and_hang, args=(claims, 0, ready, True)
        )
        child.start()
        _wait_for_file(ready)
        assert claims.claim(0) is Outcome.BUSY  # the child is alive and preparing
        open(f"{ready}.go", "w").close()  # now it fails its preparation
        ran = []
        assert claims.ensure(0, lambda: ran.append(1), timeout=20) is True  # child failed: retry
        assert ran == [1] and claims.state(0) is ShardState.LOCAL
        child.join(20)
        assert child.exitcode == 0


def test_waiting_on_a_live_preparer_has_a_deadline(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"], ["s3://bucket/data"]) as ns:
        claims = ns.claims(1)
        ready = f"{coord_tmp}/ready"
        child = mp.get_context("fork").Process(target=claim_and_hang, args=(claims, 0, ready))
        child.start()
        try:
            _wait_for_file(ready)
            with pytest.raises(
                CoordinationError, match=f"shard 0 to be prepared by pid {child.pid}"
            ):
                claims.ensure(0, lambda: None, timeout=0.2)
        finally:
            child.kill()
            child.join()


def test_failed_preparation_propagates_and_releases_the_claim(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        claims = ns.claims(3)

        def boom() -> None:
            raise OSError("download failed")

        with pytest.raises(OSError, match="download failed"):
            claims.ensure(1, boom)
        assert claims.state(1) is ShardState.REMOTE and not claims.owners[1].any()
        assert claims.ensure(1, lambda: None) is True
        assert claims.ensure(1, lambda: pytest.fail("prepared twice")) is False
        assert claims.evict(1) is Outcome.DONE and claims.state(1) is ShardState.REMOTE
        assert claims.claim(2) is Outcome.GRANTED
        assert claims.evict(2) is Outcome.BUSY
        claims.finish(2, ok=True)
        with pytest.raises(InvalidTransition):
            claims.finish(2, ok=True)
        assert claims.ensure(2, lambda: None, reprepare=True) is True


def test_a_preparer_whose_pid_was_recycled_is_taken_over(coord_tmp: str) -> None:
    """Owners are (pid, start time): a live process that got the dead preparer's pid is not
    mistaken for it (its waiters stalled until their deadline, now as long as a fetch's
    attempts)."""
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        claims = ns.claims(2)
        with claims.lock:
            assert claims.apply(0, Event.CLAIM) is Outcome.GRANTED
        pid, start = claims.owners[0].tolist()
        assert pid == os.getpid() and start > 0
        claims.owners.numpy()[0] = (pid, start + 1)  # the same pid, another process's start
        assert claims.claim(0) is Outcome.GRANTED  # taken over at once, not BUSY
        claims.finish(0, ok=True)
        assert claims.state(0) is ShardState.LOCAL


def test_a_shard_a_live_process_prepares_is_busy_without_the_lock(coord_tmp: str) -> None:
    """A reader that caught up with the prefetch thread asks at every shard: while the shard's
    preparer is alive, the answer (wait) needs no lock, so it is given even while another
    process holds the lock for long."""
    with open_namespace([f"{coord_tmp}/data"], ["s3://bucket/data"]) as ns:
        claims = ns.claims(2)
        assert claims.claim(0) is Outcome.GRANTED  # this process prepares shard 0
        holder = FileLock(claims.lock.path)
        claims.lock.timeout = 0.2
        with holder:  # (another FileLock of the same file excludes this one as a process's)
            assert claims.claim(0) is Outcome.BUSY
            with pytest.raises(CoordinationError):  # a claim that needs the lock waits for it
                claims.claim(1)
        claims.finish(0, ok=True)
        assert claims.claim(0) is Outcome.READY
