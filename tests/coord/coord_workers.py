"""Child-process bodies for the coordination tests (module level, so spawn can import them)."""

from __future__ import annotations

import os
import random
import time
from typing import Any

import numpy as np

from streaming.coord import Barrier, FileLock, ShardClaims, SharedArray, open_namespace


def isolate_tmp(tmp: str) -> None:
    """Point this (spawned) process's temp dir where the parent's is."""
    import tempfile

    os.environ["TMPDIR"] = tmp
    tempfile.tempdir = None


def barrier_rounds(
    barrier: Barrier, arrivals: SharedArray, lock: FileLock, n: int, rounds: int
) -> None:
    """Before each round count an arrival; after it, record how many had arrived."""
    for r in range(rounds):
        time.sleep(random.random() * 0.02)
        with lock:
            arrivals[2 * r] += 1
        barrier.wait(n, timeout=20)
        seen = int(arrivals[2 * r])
        with lock:
            arrivals[2 * r + 1] = min(int(arrivals[2 * r + 1]) or n, seen)  # min over processes


def lock_increments(lock: FileLock, counter: SharedArray, times: int) -> None:
    """A non-atomic read-modify-write that only the lock keeps correct."""
    for _ in range(times):
        with lock:
            value = int(counter[0])
            time.sleep(0)
            counter[0] = value + 1


def race_prepare(claims: ShardClaims, start: Barrier, n: int, log_path: str, seed: int) -> None:
    """Start together, then prepare every shard in a random order, logging each preparation."""
    start.wait(n, timeout=30)
    order = list(range(len(claims)))
    random.Random(seed).shuffle(order)

    def prepare_one(shard: int) -> None:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{shard} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        time.sleep(0.002)

    for shard in order:
        claims.ensure(shard, lambda s=shard: prepare_one(s), timeout=20)


def claim_and_hang(claims: ShardClaims, shard: int, ready_path: str, fail: bool = False) -> None:
    """Claim a shard, say so, then hang (to be killed) or, once `<ready_path>.go` exists, fail
    the preparation."""
    outcome = claims.claim(shard)
    with open(ready_path, "w") as f:
        f.write(outcome.value)
    if fail:
        deadline = time.monotonic() + 120
        while not os.path.exists(f"{ready_path}.go") and time.monotonic() < deadline:
            time.sleep(0.01)
        claims.finish(shard, ok=False)
        return
    time.sleep(60)


def hold_namespace(
    tmp: str, local: str, remote: str | None, env: dict[str, str], ready: Any
) -> None:
    """Open a namespace, make a marked array, report, then live until killed."""
    isolate_tmp(tmp)
    ns = open_namespace([local], [remote], env=env)
    arr = ns.array("marker", np.int64, 4)
    arr[:] = 7
    ready.send(ns.name)
    time.sleep(60)


def read_plan(board: Any, conn: Any) -> None:
    """Read the published plan, report it, then watch for the leader's later write."""
    view = board.read(timeout=20)
    conn.send((view.tolist(), bool(view.flags.writeable)))
    conn.recv()  # the leader has written into its own mapping
    deadline = time.monotonic() + 10
    while view.flat[0] != -42 and time.monotonic() < deadline:
        time.sleep(0.001)
    conn.send(int(view.flat[0]))


def attach_and_report(ns: Any, conn: Any) -> None:
    """Use a pickled namespace in a worker: attach lazily, report holders, then release."""
    arr = ns.array("data", np.int64, 3)
    conn.send((arr.numpy().tolist(), sorted(ns.holders())))
    arr[1] = 99
    del arr
    ns.close()
    conn.send("closed")


def compat_barrier_rounds(barrier: Any, log: Any, n: int) -> None:
    """The reference test's body: log, barrier, log, barrier, log."""
    time.sleep(random.random() * 0.05)
    log.append("hit")
    barrier(n)
    log.append("passed")
    barrier(n)
    log.append("again")


def attach_then_wait(ns: Any, conn: Any) -> None:
    """Attach, report, wait for the go-ahead, then return normally (never calling close)."""
    arr = ns.array("data", np.int64, 3)
    conn.send(int(arr[0]))
    conn.recv()
