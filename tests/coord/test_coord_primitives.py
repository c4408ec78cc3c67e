"""Names, waits, shared-memory blocks, shared arrays and the cross-process lock."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import threading
import time
from typing import Any

import numpy as np
import pytest
from coord_workers import lock_increments

from streaming.coord import FileLock, SharedArray, ShmBlock
from streaming.coord.liveness import identity, is_alive
from streaming.coord.names import job_key, namespace_name
from streaming.coord.shm import block_exists, list_blocks, unlink_block
from streaming.coord.wait import wait_until
from streaming.errors import CoordinationError


def _name(tag: str) -> str:
    return f"sstest_{os.getpid()}_{tag}"


# -- names ---------------------------------------------------------------------------------------


def test_job_key_single_process_is_the_pid() -> None:
    assert job_key({}, 123) == "pid=123"
    assert job_key({"MASTER_ADDR": "h", "MASTER_PORT": "1", "WORLD_SIZE": "1"}, 5) == "pid=5"


def test_job_key_is_shared_by_the_ranks_of_a_node_only() -> None:
    env = {"MASTER_ADDR": "h", "MASTER_PORT": "29500", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}
    keys = [job_key({**env, "RANK": str(r)}, pid=100 + r) for r in range(4)]
    assert keys[0] == keys[1] != keys[2] == keys[3]
    # LOCAL_WORLD_SIZE unset: every rank is its own node, as in the reference.
    solo = {k: v for k, v in env.items() if k != "LOCAL_WORLD_SIZE"}
    assert len({job_key({**solo, "RANK": str(r)}, 1) for r in range(4)}) == 4
    other_run = job_key({**env, "RANK": "0", "TORCHELASTIC_RUN_ID": "b"}, 1)
    assert other_run != keys[0]


def test_current_pid_follows_a_fork_without_asking_the_kernel_each_time() -> None:
    from streaming.coord.current import current_pid

    assert current_pid() == os.getpid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(write, f"{current_pid()} {os.getpid()}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as got:
        seen, real = got.read().split()
    os.waitpid(child, 0)
    assert int(seen) == int(real) == child != current_pid()


def test_namespace_name_is_deterministic_and_scoped() -> None:
    a = namespace_name(["/x", "/y"], ["s3://a", None], "job", 1000)
    assert a == namespace_name(["/y", "/x"], [None, "s3://a"], "job", 1000)
    assert a.startswith("ss_1000_") and len(a) == len("ss_1000_") + 16
    assert a != namespace_name(["/x", "/y"], ["s3://a", None], "job2", 1000)
    assert a != namespace_name(["/x", "/y"], ["s3://a", None], "job", 1001)
    assert a != namespace_name(["/x", "/y"], ["s3://b", None], "job", 1000)
    assert a != namespace_name(["/x", "/y"], ["s3://a", None], "job", 1000, instance=1)


# -- waiting and liveness -----------------------------------------------------------------------


def test_wait_until_returns_the_value_and_polls_at_least_once() -> None:
    assert wait_until(lambda: 5, timeout=0, what=lambda: "x") == 5
    box = {"n": 0}

    def poll() -> int | None:
        box["n"] += 1
        return box["n"] if box["n"] == 4 else None

    assert wait_until(poll, timeout=5, what=lambda: "x") == 4


def test_wait_until_deadline_says_what_it_waited_for() -> None:
    start = time.monotonic()
    with pytest.raises(CoordinationError, match=r"waiting for the moon \(3 of 4\)"):
        wait_until(lambda: None, timeout=0.1, what=lambda: "the moon (3 of 4)")
    assert 0.1 <= time.monotonic() - start < 30  # waited out its deadline, then stopped


def test_liveness_detects_exit_zombies_and_recycled_pids() -> None:
    me = identity()
    assert me[0] == os.getpid() and is_alive(*me)
    assert not is_alive(me[0], me[1] + 1)  # same pid, different start: recycled
    proc = mp.get_context("fork").Process(target=time.sleep, args=(0,))
    proc.start()
    deadline = time.monotonic() + 5
    while is_alive(proc.pid) and time.monotonic() < deadline:  # exited but not reaped: zombie
        time.sleep(0.01)
    assert not is_alive(proc.pid)
    proc.join()
    assert not is_alive(proc.pid)
    assert not is_alive(0) and not is_alive(-1)


# -- shared-memory blocks -----------------------------------------------------------------------


def test_block_create_attach_size_and_permissions() -> None:
    name = _name("blk")
    block = ShmBlock.create(name, 100)
    try:
        assert block.created and block.size == 100 and bytes(block.buf[:4]) == b"\0" * 4
        assert os.stat(f"/dev/shm/{name}").st_mode & 0o777 == 0o600
        with pytest.raises(FileExistsError):
            ShmBlock.create(name, 100)
        other = ShmBlock.attach(name, 100)
        other.buf[0] = 7
        assert block.buf[0] == 7 and not other.created
        with pytest.raises(CoordinationError, match="has 100 bytes, expected 64"):
            ShmBlock.attach(name, 64)
        readonly = ShmBlock.attach(name, readonly=True)
        view = np.frombuffer(readonly.buf, np.uint8)
        assert view[0] == 7 and not view.flags.writeable
        with pytest.raises(ValueError):
            view[0] = 1
        assert name in list_blocks("sstest_", os.getuid())
        other.close()
        block.close()  # exported views keep the mapping until they die
        assert view[0] == 7
    finally:
        assert unlink_block(name)
    assert not block_exists(name) and not unlink_block(name)
    with pytest.raises(FileNotFoundError):
        ShmBlock.attach(name)


def _new_array(name: str, dtype: Any, shape: tuple[int, ...], fill: int = 0) -> SharedArray:
    """A block made as a namespace makes one (see `Namespace.array`), wrapped."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    arr = SharedArray(ShmBlock.create(name, size), dtype, shape)
    arr.numpy()[...] = fill
    return arr


def test_shared_array_attach_and_pickle(ctx: mp.context.BaseContext) -> None:
    name = _name(f"arr_{ctx.get_start_method()}")
    arr = _new_array(name, np.uint64, (2, 3), fill=5)
    try:
        assert arr.created and arr.numpy().tolist() == [[5] * 3] * 2
        same = SharedArray(ShmBlock.attach(name, 48), np.uint64, (2, 3))
        assert not same.created
        same[1, 2] = 9
        assert arr[1, 2] == 9 and len(arr) == 2
        with pytest.raises(CoordinationError):  # another layout under the name
            ShmBlock.attach(name, 72)
        with pytest.raises(ValueError, match="holds 48 bytes, not the 72"):
            SharedArray(ShmBlock.attach(name), np.uint64, (3, 3))
        clone = pickle.loads(pickle.dumps(arr))
        assert clone.numpy().tolist() == arr.numpy().tolist()
        proc = ctx.Process(target=_bump, args=(arr,))
        proc.start()
        proc.join(30)
        assert proc.exitcode == 0 and arr[0, 0] == 6
    finally:
        arr.unlink()


def _bump(arr: SharedArray) -> None:
    arr[0, 0] += 1


# -- locks --------------------------------------------------------------------------------------


def test_lock_mutual_exclusion_across_processes(tmp_path, ctx: mp.context.BaseContext) -> None:
    lock = FileLock(str(tmp_path / "x.lock"), timeout=20)
    counter = _new_array(_name(f"ctr_{ctx.get_start_method()}"), np.int64, (1,))
    try:
        procs = [ctx.Process(target=lock_increments, args=(lock, counter, 150)) for _ in range(3)]
        for p in procs:
            p.start()
        lock_increments(lock, counter, 150)
        for p in procs:
            p.join(30)
        assert [p.exitcode for p in procs] == [0, 0, 0]
        assert counter[0] == 600
    finally:
        counter.unlink()


def test_lock_is_not_inherited_across_fork(tmp_path) -> None:
    lock = FileLock(str(tmp_path / "x.lock"))
    ready, go = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            ready.set()
            go.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    ready.wait(10)
    q = mp.get_context("fork").Queue()
    child = mp.get_context("fork").Process(target=_try_lock, args=(lock, q))
    child.start()  # forked while another thread of ours holds the lock
    assert q.get(timeout=10) == "timeout"  # the child does not think it holds it...
    go.set()
    holder.join()
    assert q.get(timeout=10) == "acquired"  # ...and gets it once we let go
    child.join(10)
    assert child.exitcode == 0


def _try_lock(lock: FileLock, q: mp.Queue) -> None:
    try:
        lock.acquire(timeout=0.3)
        q.put("acquired-early")
        return
    except CoordinationError:
        q.put("timeout")
    lock.acquire(timeout=10)
    q.put("acquired")
    lock.release()


def test_lock_survives_deletion_of_its_file(tmp_path) -> None:
    path = str(tmp_path / "x.lock")
    first, second = FileLock(path), FileLock(path)
    first.acquire()
    os.unlink(path)  # a teardown removed the file while we hold it
    second.acquire(timeout=1)  # locks the new file; the old one is gone
    assert second.held
    second.release()
    first.release()
    with pytest.raises(RuntimeError, match="not held"):
        first.release()


def _descriptors_of(path: str) -> list[int]:
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith(path):
                found.append(int(name))
        except OSError:  # the listing's own descriptor, closed meanwhile
            pass
    return found


def test_lock_keeps_one_descriptor_open_between_acquisitions(tmp_path) -> None:
    """Each acquisition is a `flock` and a `stat`, not an open and a close: the file stays
    open (once) until `close()` or the object goes."""
    path = str(tmp_path / "x.lock")
    lock = FileLock(path)
    with lock:
        opened = _descriptors_of(path)
    for _ in range(5):
        with lock:
            pass
    assert len(opened) == 1 and _descriptors_of(path) == opened
    lock.close()
    assert _descriptors_of(path) == []
    with lock:  # opened again on demand
        assert len(_descriptors_of(path)) == 1
    with lock, pytest.raises(RuntimeError, match="held"):
        lock.close()
    del lock
    assert _descriptors_of(path) == []


def test_closing_a_lock_another_thread_is_taking_is_refused(tmp_path) -> None:
    """A thread inside `acquire` (waiting for another process's hold) keeps its descriptor:
    `close()` from elsewhere says the lock is busy instead of closing it under the waiter."""
    path = str(tmp_path / "x.lock")
    lock, other = FileLock(path, timeout=30), FileLock(path)
    with lock:
        pass
    other.acquire()  # as another process would (its own open file)
    taken = threading.Event()

    def take() -> None:
        with lock:
            taken.set()

    waiter = threading.Thread(target=take)
    waiter.start()
    wait_until(lambda: lock._thread_lock.locked(), timeout=10, what="the waiter")
    with pytest.raises(RuntimeError, match="held"):
        lock.close()
    other.release()
    waiter.join(30)
    assert taken.is_set()


def test_a_lock_dropped_forgets_its_descriptor_before_closing_it(tmp_path) -> None:
    """A fork during `__del__`'s close must not find the number among the open locks (the
    child's at-fork hook would close it again: by then maybe another file of the child)."""
    from streaming.coord import lock as lock_module

    lock = FileLock(str(tmp_path / "x.lock"))
    with lock:
        pass
    assert lock in lock_module._OPEN
    fd = lock._fd
    assert fd is not None
    lock.__del__()
    assert lock._fd is None and lock not in lock_module._OPEN
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_kept_descriptor_of_a_deleted_lock_file_is_not_locked_alone(tmp_path) -> None:
    """The file deleted (a namespace teardown) and made again by another lock between two
    acquisitions: the lock locks the file at its path now, not the one it kept open."""
    path = str(tmp_path / "x.lock")
    first, second = FileLock(path, timeout=0.3), FileLock(path)
    with first:
        pass
    os.unlink(path)
    with second:
        with pytest.raises(CoordinationError, match="x.lock"):
            first.acquire()
        assert not first.held
    with first:
        assert first.held


_DIES_HOLDING = """
import os, sys, time
from streaming.coord.lock import FileLock
lock = FileLock(sys.argv[1])
with lock:  # its file is kept open from here on
    pass
child = os.fork()
if child == 0:  # inherits the open lock file, and outlives its parent
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)  # (the test reads its parent's output to the end)
    time.sleep(120)
    os._exit(0)
print(child, flush=True)
lock.acquire()
os._exit(0)  # dies holding the lock
"""


def test_a_lock_held_by_a_dead_parent_is_not_kept_by_its_forked_child(tmp_path) -> None:
    """A forked child closes the lock files it inherited: had it kept the parent's open file,
    the parent's `flock` would outlive the parent for as long as the child runs."""
    import subprocess
    import sys

    path = str(tmp_path / "x.lock")
    done = subprocess.run([sys.executable, "-c", _DIES_HOLDING, path], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    child = int(done.stdout.split()[0])
    try:
        assert is_alive(child)
        lock = FileLock(path, timeout=10)
        with lock:
            assert lock.held
    finally:
        os.kill(child, 9)


def test_lock_timeout_names_the_lock_and_pickles_by_path(tmp_path) -> None:
    lock = FileLock(str(tmp_path / "x.lock"), timeout=0.05)
    clone = pickle.loads(pickle.dumps(lock))
    with lock, pytest.raises(CoordinationError, match="x.lock"):
        clone.acquire()
    with clone:
        assert clone.held and not lock.held


def test_lock_reentry_fails_fast_instead_of_deadlocking(tmp_path) -> None:
    lock = FileLock(str(tmp_path / "x.lock"), timeout=30)
    start = time.monotonic()
    with lock, pytest.raises(CoordinationError, match="not reentrant"):
        lock.acquire()
    assert time.monotonic() - start < 15 and not lock.held  # not the 30 s timeout


def test_a_block_dev_shm_cannot_hold_is_a_clear_enospc(monkeypatch) -> None:
    """A block larger than the room left in /dev/shm, written whole, ended the process with a
    SIGBUS and no Python error (Docker's 64 MiB default, filled by other jobs)."""
    import errno

    from streaming.coord import shm

    name = shm.random_name()
    monkeypatch.setattr(shm, "_free_bytes", lambda: 1000)
    with pytest.raises(OSError, match=r"No room in /dev/shm for shared block .* \(4,096 bytes; "
                                      r"1,000 bytes free\).*--shm-size") as info:
        ShmBlock.create(name, 4096)
    assert info.value.errno == errno.ENOSPC
    assert not shm.block_exists(name)  # nothing left behind

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shm, "_free_bytes", lambda: None)
    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError, match="No room in /dev/shm") as info:
        ShmBlock.create(name, 4096, reserve=True)
    assert info.value.errno == errno.ENOSPC and not shm.block_exists(name)
    block = ShmBlock.create(name, 4096)  # sparse, with the room unknown: made
    monkeypatch.setattr(shm, "_free_bytes", lambda: 0)
    with pytest.raises(FileExistsError):  # an existing block is for attaching, room or not
        ShmBlock.create(name, 4096)
    block.close()
    block.unlink()
