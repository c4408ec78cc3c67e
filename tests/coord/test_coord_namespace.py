"""Namespaces: job scoping, stale reclaim, 'Reused local directory', release, leaks, plan board."""

from __future__ import annotations

import gc
import logging
import multiprocessing as mp
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from coord_workers import attach_and_report, attach_then_wait, hold_namespace, read_plan

from streaming.coord import ShmBlock, open_namespace
from streaming.coord.records import read_record
from streaming.coord.shm import list_blocks
from streaming.errors import CoordinationError

JOB_A = {
    "WORLD_SIZE": "2",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "1111",
    "RANK": "0",
    "LOCAL_WORLD_SIZE": "2",
}
JOB_B = {**JOB_A, "MASTER_PORT": "2222"}


def _start_holder(tmp: str, local: str, remote: str | None, env: dict) -> tuple[mp.Process, str]:
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=hold_namespace, args=(tmp, local, remote, env, there))
    proc.start()
    assert here.poll(30), "holder did not start"
    return proc, here.recv()


def _kill(proc: mp.Process) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()


def _shm(prefix: str) -> list[str]:
    return list_blocks(prefix)


def test_ranks_of_one_job_share_a_namespace(coord_tmp: str) -> None:
    local = f"{coord_tmp}/data"
    proc, name = _start_holder(coord_tmp, local, "s3://b/d", JOB_A)
    try:
        rank1 = open_namespace([local], ["s3://b/d"], env={**JOB_A, "RANK": "1"})
        assert rank1.name == name
        assert rank1.array("marker", np.int64, 4).numpy().tolist() == [7] * 4
        assert sorted(rank1.holders()) == sorted([proc.pid, os.getpid()])
        rank1.close()
        assert _shm(f"{name}_")  # the other rank still holds it
    finally:
        _kill(proc)


def test_stale_namespace_of_a_killed_job_is_reclaimed(coord_tmp: str) -> None:
    local = f"{coord_tmp}/data"
    proc, name = _start_holder(coord_tmp, local, "s3://b/d", JOB_A)
    _kill(proc)
    assert _shm(f"{name}_") == [f"{name}_marker"]  # left behind by SIGKILL
    ns = open_namespace([local], ["s3://b/d"], env=JOB_A)  # same job key: same name
    assert ns.name == name
    assert _shm(f"{name}_") == []  # reclaimed, not attached
    assert ns.array("marker", np.int64, 4).numpy().tolist() == [0] * 4
    assert ns.holders() == [os.getpid()]
    ns.close()
    assert _shm(f"{name}_") == [] and read_record(ns.state_dir, name) is None


def test_live_job_with_the_same_local_and_remote_is_refused(coord_tmp: str) -> None:
    local = f"{coord_tmp}/data"
    proc, name = _start_holder(coord_tmp, local, "s3://b/d", JOB_A)
    try:
        with pytest.raises(
            ValueError, match=r"^Reused local directory: .* vs .*Provide a different one"
        ):
            open_namespace([local], ["s3://b/d"], env=JOB_B)
        # A local-only dataset may share the directory, as in the reference.
        open_namespace([local], [None], env=JOB_B).close()
    finally:
        _kill(proc)
    ns = open_namespace([local], ["s3://b/d"], env=JOB_B)  # the other job died: reclaim silently
    assert ns.name != name and _shm(f"{name}_") == []
    assert read_record(ns.state_dir, name) is None
    ns.close()


def test_same_process_reuse_rules(coord_tmp: str) -> None:
    local = f"{coord_tmp}/data"
    with pytest.raises(
        ValueError, match=r"^Reused local directory: \['.*'\]. Provide a different one.$"
    ):
        open_namespace([local, local], ["s3://a", "s3://b"])
    first = open_namespace([local], ["s3://b/d"])
    with pytest.raises(ValueError, match="Reused local directory.*vs.*Provide a different one."):
        open_namespace([local], ["s3://b/d"])
    first.close()
    open_namespace([local], ["s3://b/d"]).close()  # fine once the first is closed
    a, b = open_namespace([local]), open_namespace([local])  # local-only: allowed, kept apart
    assert a.name != b.name
    a.close()
    b.close()


def test_a_rank_rebuilding_never_adopts_what_a_peer_still_holds_local_only(
        coord_tmp: str) -> None:
    local = f"{coord_tmp}/data"
    proc, name = _start_holder(coord_tmp, local, None, JOB_A)  # rank 0's first dataset
    try:
        rank1 = {**JOB_A, "RANK": "1"}
        first = open_namespace([local], [None], env=rank1)
        assert first.name == name  # the ranks' first datasets pair up
        first.close()
        second = open_namespace([local], [None], env=rank1)  # rank 0 still holds the first
        assert second.name != name
        assert second.array("marker", np.int64, 4).numpy().tolist() == [0] * 4  # fresh state
        second.close()
    finally:
        _kill(proc)


def test_a_rank_rebuilding_with_a_remote_waits_for_peers_to_drop_the_old_one(
        coord_tmp: str, caplog: pytest.LogCaptureFixture) -> None:
    local = f"{coord_tmp}/data"
    proc, name = _start_holder(coord_tmp, local, "s3://b/d", JOB_A)
    rank1 = {**JOB_A, "RANK": "1"}
    open_namespace([local], ["s3://b/d"], env=rank1).close()  # rank 1's first, dropped
    opened: list = []
    caplog.set_level(logging.INFO, logger="streaming.coord.opening")
    thread = threading.Thread(
        target=lambda: opened.append(open_namespace([local], ["s3://b/d"], env=rank1)))
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while "still hold an earlier dataset" not in caplog.text:
            assert time.monotonic() < deadline and thread.is_alive(), caplog.text
            time.sleep(0.01)
        assert not opened  # it waits: the cache must not have two live owners
    finally:
        _kill(proc)  # rank 0 drops its first dataset
    thread.join(60)
    assert opened and opened[0].name != name
    assert _shm(f"{name}_") == []  # the old one is gone, not adopted
    opened[0].close()


def test_a_peer_that_never_drops_the_old_dataset_fails_with_a_clear_error(
        coord_tmp: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from streaming.coord import opening

    monkeypatch.setattr(opening, "NODE_WAIT_TIMEOUT", 0.6)
    monkeypatch.setattr(opening, "_WARN_AFTER", 0.2)
    local = f"{coord_tmp}/data"
    proc, name = _start_holder(coord_tmp, local, "s3://b/d", JOB_A)
    try:
        rank1 = {**JOB_A, "RANK": "1"}
        open_namespace([local], ["s3://b/d"], env=rank1).close()
        with pytest.raises(ValueError, match=rf"^Reused local directory: .*Processes \[{proc.pid}\] "
                           r"of this job on this node still hold an earlier dataset .* after 0.6 s"):
            open_namespace([local], ["s3://b/d"], env=rank1)
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert warnings and "in the same order" in warnings[0].getMessage()
    finally:
        _kill(proc)


def test_close_interrupted_by_a_signal_handler_still_releases(coord_tmp: str,
                                                               monkeypatch) -> None:
    """torch's DataLoader raises RuntimeError from SIGCHLD when a worker was killed; landing in
    the middle of close() must not leave this process registered (it could not reopen)."""
    from streaming.coord import release as namespace_module

    local = f"{coord_tmp}/data"
    first = open_namespace([local], ["s3://b/d"])
    real = namespace_module.read_record
    calls: list[int] = []

    def interrupted(*args: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("DataLoader worker (pid 1) is killed by signal: Killed.")
        return real(*args)

    monkeypatch.setattr(namespace_module, "read_record", interrupted)
    first.close()
    monkeypatch.setattr(namespace_module, "read_record", real)
    assert len(calls) == 2
    open_namespace([local], ["s3://b/d"]).close()  # released: reopening is allowed


def test_workers_attach_lazily_and_the_last_holder_cleans_up(
    coord_tmp: str, ctx: mp.context.BaseContext
) -> None:
    ns = open_namespace([f"{coord_tmp}/data"], ["s3://b/d"])
    arr = ns.array("data", np.int64, 3, fill=4)
    here, there = ctx.Pipe()
    proc = ctx.Process(target=attach_and_report, args=(pickle.loads(pickle.dumps(ns)), there))
    proc.start()
    assert here.poll(30), "worker died"
    values, holders = here.recv()
    assert values == [4, 4, 4] and holders == sorted([os.getpid(), proc.pid])
    assert here.recv() == "closed"
    proc.join(30)
    assert proc.exitcode == 0 and arr[1] == 99
    assert ns.holders() == [os.getpid()]  # the worker's close did not tear down our namespace
    del arr
    blocks = _shm(f"{ns.name}_")
    assert blocks
    ns.close()
    assert _shm(f"{ns.name}_") == []
    assert sorted(os.listdir(ns.state_dir)) == ["registry.lock", "swept"]


def test_a_worker_outliving_its_creator_releases_at_exit(
    coord_tmp: str, ctx: mp.context.BaseContext
) -> None:
    ns = open_namespace([f"{coord_tmp}/data"], ["s3://b/d"])
    name = ns.name
    ns.array("data", np.int64, 3, fill=2)
    here, there = ctx.Pipe()
    proc = ctx.Process(target=attach_then_wait, args=(ns, there))
    proc.start()
    assert here.poll(30) and here.recv() == 2
    ns.close()  # the creator lets go first: the worker still holds the namespace
    assert _shm(f"{name}_")
    here.send("exit")
    proc.join(30)
    assert proc.exitcode == 0
    assert _shm(f"{name}_") == [] and read_record(ns.state_dir, name) is None


def _fds() -> int:
    # Collect first: an object an earlier test left in a reference cycle may still hold a file,
    # and closing it during the loop would hide a leak of the same size (and did fail CI once,
    # counting 42 after and 44 before).
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def _cycle(tmp: str, i: int, close: bool) -> str:
    ns = open_namespace([f"{tmp}/d{i % 3}"], [f"s3://b/{i % 3}"])
    claims = ns.claims(16)
    claims.ensure(i % 16, lambda: None)
    ns.scalar("cache_usage").set(i)
    ns.barrier().wait(1)
    board = ns.board()
    board.publish(np.arange(i % 7 + 1))
    assert board.read()[-1] == i % 7
    with ns.lock("cache"):
        pass
    if close:
        ns.close()
    return ns.name


@pytest.mark.slow  # about 3 s alone, more on a loaded machine
def test_500_namespaces_leak_no_descriptors_or_shared_memory(coord_tmp: str) -> None:
    _cycle(coord_tmp, 0, True)  # warm up lazily opened interpreter state
    fds, files = _fds(), len(os.listdir(f"{coord_tmp}"))
    names = {_cycle(coord_tmp, i, close=i % 2 == 0) for i in range(500)}  # half just dropped
    assert _fds() <= fds  # a leak of one descriptor per cycle would add 250 or more
    assert len(names) == 500  # each a new generation of its (local, remote), created and removed
    assert [b for b in os.listdir("/dev/shm") if b.startswith(tuple(names))] == []
    state_dir = os.path.join(coord_tmp, f"shardstream-{os.getuid()}")
    assert sorted(os.listdir(state_dir)) == ["registry.lock", "swept"]
    assert len(os.listdir(coord_tmp)) == files


def test_plan_board_is_one_shared_read_only_mapping(
    coord_tmp: str, ctx: mp.context.BaseContext
) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        board = ns.board()
        plan = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
        assert board.publish(plan - 1) == 1
        assert board.publish(plan) == 2  # a new generation replaces the old block
        assert _shm(board.block_name(1)) == [] and _shm(board.block_name(2))
        here, there = ctx.Pipe()
        proc = ctx.Process(target=read_plan, args=(board, there))
        proc.start()
        assert here.poll(30), "reader died"
        values, writeable = here.recv()
        assert values == plan.tolist() and writeable is False
        # Write through another mapping of the published block: the worker's view sees it, so
        # it maps the same pages rather than holding a copy.
        leader = ShmBlock.attach(board.block_name(2))
        np.frombuffer(leader.buf, np.int64)[0] = -42
        here.send("written")
        assert here.poll(30) and here.recv() == -42
        proc.join(30)
        assert proc.exitcode == 0
        leader.close()
        mine = board.read()
        assert mine[0, 0, 0] == -42 and not mine.flags.writeable
        empty = board.read(min_generation=board.publish(np.empty((0, 5))))
        assert empty.shape == (0, 5)


NO_TRACKER_SCRIPT = textwrap.dedent(
    """
    import multiprocessing as mp, pickle, sys
    import numpy as np
    from streaming.coord import open_namespace
    from streaming.base.shared import SharedArray, SharedBarrier, SharedMemory

    def child(ns, arr):
        ns.array("a", np.int64, 4)[0] += 1
        arr[1] += 1
        SharedMemory(arr.shm.name, False).buf[2] = 5

    if __name__ == "__main__":
        ns = open_namespace([sys.argv[1]], ["s3://b/d"])
        ns.array("a", np.int64, 4)
        compat = SharedArray(4, np.int64, sys.argv[2])
        SharedBarrier(sys.argv[1] + ".lock", sys.argv[2] + "_b")(1)
        for method in ("fork", "spawn"):
            p = mp.get_context(method).Process(target=child, args=(ns, compat))
            p.start(); p.join()
            assert p.exitcode == 0
        assert ns.array("a", np.int64, 4)[0] == 2 and compat[1] == 2
        print(ns.name)
    """
)


def test_no_resource_tracker_warnings_or_leftovers_at_exit(coord_tmp: str, tmp_path) -> None:
    script = tmp_path / "script.py"
    script.write_text(NO_TRACKER_SCRIPT)
    compat_name = f"sstest_{os.getpid()}_compat"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    result = subprocess.run(
        [sys.executable, str(script), f"{coord_tmp}/data", compat_name],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "resource_tracker" not in result.stderr and "leaked" not in result.stderr
    assert result.stderr == ""
    name = result.stdout.strip()
    assert name.startswith("ss_") and _shm(f"{name}_") == []  # released at exit
    assert _shm(compat_name) == []


def test_factories_initialise_only_on_creation(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        never = np.iinfo(np.uint64).max
        times = ns.array("access_times", np.uint64, 4, fill=never)
        assert times.created and times.numpy().tolist() == [never] * 4
        times[0] = 5
        again = ns.array("access_times", np.uint64, 4, fill=never)
        assert not again.created and again[0] == 5
        usage = ns.scalar("cache_usage")
        assert usage.add(10, ns.lock("cache")) == 10
        with ns.lock("cache") as held:
            assert usage.add(-3, None) == 7 and held.held
        assert ns.scalar("cache_usage").get() == 7
        with pytest.raises(CoordinationError, match="has 8 bytes, expected 16"):
            ns.array("cache_usage", np.int64, 2)  # same name, other layout
    assert ns.closed
    with pytest.raises(CoordinationError, match="closed"):
        ns.array("x", np.int64, 1)


def test_ranks_of_one_node_with_different_locals_fail_fast_and_say_why(
        coord_tmp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from streaming.coord import barrier
    from streaming.coord.records import split_node_message

    proc, theirs = _start_holder(coord_tmp, f"{coord_tmp}/rank0", "s3://b/d", JOB_A)
    rank1 = open_namespace([f"{coord_tmp}/rank1"], ["s3://b/d"], env={**JOB_A, "RANK": "1"})
    other = open_namespace([f"{coord_tmp}/eval"], ["s3://b/eval"], env={**JOB_A, "RANK": "1"})
    try:
        assert rank1.name != theirs
        why = split_node_message(rank1.state_dir, rank1.name)
        assert why and f"{coord_tmp}/rank0" in why and str(proc.pid) in why
        assert split_node_message(other.state_dir, other.name) is None  # another remote: fine
        monkeypatch.setattr(barrier, "STRANDED_GRACE", 0.0)
        monkeypatch.setattr(barrier, "STRANDED_PERIOD", 0.0)
        with pytest.raises(CoordinationError, match="different local directories"):
            rank1.barrier("epoch", timeout=60).wait(2)
    finally:
        rank1.close()
        other.close()
        _kill(proc)


def test_only_namespaces_left_to_others_wait_for_the_exit_hook(coord_tmp: str) -> None:
    """A namespace reclaimed at close is forgotten; one a live worker still holds is kept for
    the exit hook, which reclaims it once that worker is dead."""
    from streaming.coord import release

    closed = open_namespace([f"{coord_tmp}/a"], ["s3://b/a"])
    closed.close()
    assert (closed.state_dir, closed.name) not in release._held
    shared = open_namespace([f"{coord_tmp}/b"], ["s3://b/b"])
    shared.array("x", "uint8", 1)
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=attach_then_wait, args=(shared, there))
    proc.start()
    try:
        assert here.poll(30) and here.recv() == 0
        shared.close()  # the worker still holds it
        assert (shared.state_dir, shared.name) in release._held
        proc.kill()  # like multiprocessing's terminate() of a daemonic worker at exit
        proc.join(30)
        release._reclaim_dead_at_exit()
        assert read_record(shared.state_dir, shared.name) is None
        assert list_blocks(f"{shared.name}_") == []
    finally:
        proc.kill()
        proc.join()


@pytest.mark.parametrize("message", ["", "ValueError: stream 1 is too small", "é" * 13])
def test_a_published_failure_is_raised_by_its_readers(coord_tmp: str, message: str) -> None:
    from streaming.coord.board import PublishedFailure

    with open_namespace([f"{coord_tmp}/data"]) as ns:
        board = ns.board()
        board.publish(np.arange(3))
        generation = board.publish_failure(message)
        assert generation == 2
        with pytest.raises(PublishedFailure) as caught:
            board.read(min_generation=2, timeout=5)
        assert str(caught.value) == message and isinstance(caught.value, ValueError)
        assert board.publish(np.arange(4)) == 3  # the next epoch's plan, as usual
        assert board.read(min_generation=3).tolist() == [0, 1, 2, 3]


def test_a_published_failure_is_also_the_leaders_builtin_type(coord_tmp: str) -> None:
    """Only the leader raises its planning error itself; the other ranks of its node raised a
    `PublishedFailure` that `except KeyError:` did not catch. It is now both, and pickles by
    name (torch sends a worker's error class to the loader's process)."""
    import pickle

    from streaming.coord.board import PublishedFailure

    with open_namespace([f"{coord_tmp}/data"]) as ns:
        board = ns.board()
        board.publish_failure("KeyError: 'py1x'")
        with pytest.raises(KeyError) as caught:
            board.read(min_generation=1, timeout=5)
    failure = caught.value
    assert isinstance(failure, PublishedFailure) and str(failure) == "KeyError: 'py1x'"
    again = pickle.loads(pickle.dumps(failure))
    assert type(again) is type(failure) and str(again) == str(failure)
    script = "import pickle, sys; print(type(pickle.loads(sys.stdin.buffer.read())).__mro__[1])"
    out = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(failure),
                         capture_output=True, check=True)
    assert b"PublishedFailure" in out.stdout  # made on demand in a new process
