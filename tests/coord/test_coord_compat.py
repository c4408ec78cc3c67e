"""`streaming.base.shared` and `streaming.base.constant`: the reference's documented behaviour."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import re
import tempfile
from unittest.mock import MagicMock, patch

import numpy as np
import pytest
from coord_workers import compat_barrier_rounds

from streaming.base import constant
from streaming.base.shared import (
    SharedArray,
    SharedBarrier,
    SharedMemory,
    SharedScalar,
    _get_path as exported_get_path,
    get_shm_prefix,
)
from streaming.base.shared.prefix import (
    _check_and_find,
    _check_and_find_retrying,
    _check_self,
    _each_prefix_int,
    _get_path,
    _pack_locals,
    _unpack_locals,
)
from streaming.coord.shm import block_exists
from streaming.errors import CoordinationError


class Leader:
    is_local_leader = True


def _name(tag: str) -> str:
    return f"sstest_{os.getpid()}_{tag}"


def test_constants() -> None:
    assert constant.SHM_TO_CLEAN == [
        "locals",
        "barrier",
        "next_epoch",
        "cache_usage",
        "shard_states",
        "shard_access_times",
        "resume",
        "epoch_shape",
        "epoch_data",
    ]
    assert (constant.BARRIER_FILELOCK, constant.CACHE_FILELOCK) == (
        "barrier_filelock",
        "cache_filelock",
    )
    assert (constant.TICK, constant.DEFAULT_TIMEOUT) == (0.007, 60.0)
    assert set(constant.__all__) == {
        "LOCALS",
        "BARRIER",
        "NEXT_EPOCH",
        "CACHE_USAGE",
        "SHARD_STATES",
        "SHARD_ACCESS_TIMES",
        "RESUME",
        "EPOCH_SHAPE",
        "EPOCH_DATA",
        "SHM_TO_CLEAN",
        "BARRIER_FILELOCK",
        "CACHE_FILELOCK",
        "TICK",
        "DEFAULT_TIMEOUT",
    }


def test_prefix_helpers() -> None:
    assert _get_path(0, "resume") == "000000_resume" and exported_get_path is _get_path
    assert _get_path(12, "locals") == "000012_locals"
    it = _each_prefix_int()
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    packed = _pack_locals(["/a", "/b/c"], 7)
    assert packed[:4] == np.int32(len(packed)).tobytes()
    assert packed[4:] == b"/a\0/b/c\x007"
    assert _unpack_locals(packed + b"\0" * 10) == (["/a", "/b/c"], 7)
    assert _unpack_locals(b"\0" * 16) == ([], 0)  # unregistered (zeroed) block
    with pytest.raises(
        ValueError, match=re.escape("Reused local directory: ['/x']. Provide a different one.")
    ):
        _check_self(["/x", "/y", "/x"])
    with pytest.raises(ValueError, match="at least zero retries"):
        _check_and_find_retrying(["/x"], [None], "locals", -1)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@patch("streaming.base.shared.array.SharedMemory")
def test_shared_array_size_is_an_int(mock_shared_memory: MagicMock, dtype: type) -> None:
    SharedArray(3, dtype=dtype, name="test_shared_array")
    mock_shared_memory.assert_called_once()
    size = mock_shared_memory.call_args[1]["size"]
    assert isinstance(size, int) and size == 3 * np.dtype(dtype).itemsize


def test_check_and_find_skips_prefixes_with_lock_files() -> None:
    bf_path = os.path.join(tempfile.gettempdir(), "000000_barrier_filelock")
    with (
        patch("os.path.exists") as exists,
        patch("streaming.base.shared.prefix.SharedMemory", side_effect=FileNotFoundError),
    ):
        exists.side_effect = lambda path: path == bf_path
        assert _check_and_find(["local_dir"], [None], constant.LOCALS) == 1


@patch.object(SharedMemory, "__init__", side_effect=[PermissionError("x"), FileNotFoundError("y")])
def test_check_and_find_skips_unreadable_prefixes(mock_init: MagicMock) -> None:
    with patch("os.path.exists", return_value=False):
        assert _check_and_find(["local"], [None], constant.LOCALS) == 1


def test_get_shm_prefix_reused_dirs(tmp_path) -> None:
    local, remote = str(tmp_path / "local"), str(tmp_path / "remote")
    with pytest.raises(ValueError, match="Reused local directory.*Provide a different one."):
        get_shm_prefix([local, local], [remote, remote], Leader())
    prefix, shm = get_shm_prefix([local, remote], [local, remote], Leader())
    assert shm.name == f"{prefix:06}_locals" and _unpack_locals(bytes(shm.buf)) == (
        [local, remote],
        prefix,
    )
    with pytest.raises(ValueError, match="Reused local directory.*vs.*Provide a different one."):
        get_shm_prefix([local, remote], [local, remote], Leader(), retry=2)
    shm.cleanup()  # released: the directories are free again
    _again, shm2 = get_shm_prefix([local, remote], [local, remote], Leader())
    shm2.cleanup()
    # Local-only datasets may share a directory.
    p1, s1 = get_shm_prefix([local], [None], Leader())
    p2, s2 = get_shm_prefix([local], [None], Leader())
    assert p2 > p1
    s1.cleanup()
    s2.cleanup()


def test_get_shm_prefix_takes_another_when_a_job_registers_it_first(tmp_path) -> None:
    """Another job creating the prefix found free between our scan and our create used to be a
    FileExistsError (seen with the reference running beside the suite); alone, we scan again."""
    from streaming.base.shared import prefix as module

    real = module._check_and_find_retrying
    taken: list[SharedMemory] = []

    def scan_then_lose_the_race(local, remote, shm_name, retry):
        found = real(local, remote, shm_name, retry)
        if not taken and shm_name == constant.LOCALS:
            data = _pack_locals([str(tmp_path / "theirs")], found)
            other = SharedMemory(f"{found:06}_{constant.LOCALS}", True, len(data))
            other.buf[:len(data)] = data
            taken.append(other)
        return found

    with patch.object(module, "_check_and_find_retrying", scan_then_lose_the_race):
        prefix, shm = get_shm_prefix([str(tmp_path / "ours")], [None], Leader())
    try:
        lost = int(taken[0].name.split("_")[0])
        assert prefix > lost and shm.name == f"{prefix:06}_locals"
        assert _unpack_locals(bytes(shm.buf)) == ([str(tmp_path / "ours")], prefix)
    finally:
        shm.cleanup()
        taken[0].cleanup()


def test_shared_memory_create_attach_cleanup_and_pickle() -> None:
    name = _name("mem")
    created = SharedMemory(name, True, 16, auto_cleanup=False)
    try:
        assert created.created and created.size == 16
        created.buf[:3] = b"abc"
        attached = SharedMemory(name, False, auto_cleanup=False)
        either = SharedMemory(name, None, 16, auto_cleanup=False)
        assert bytes(attached.buf[:3]) == bytes(either.buf[:3]) == b"abc"
        assert not attached.created and not either.created
        clone = pickle.loads(pickle.dumps(created))
        assert bytes(clone.buf[:3]) == b"abc" and not clone.created
        for obj in (attached, either, clone):
            obj.cleanup()
        assert bytes(created.buf[:3]) == b"abc"  # attachers never unlink
        with pytest.raises(FileExistsError):
            SharedMemory(name, True, 16, auto_cleanup=False)
    finally:
        created.cleanup()
    created.cleanup()  # idempotent
    with pytest.raises(FileNotFoundError):
        SharedMemory(name, False, auto_cleanup=False)
    with pytest.raises(ValueError):
        SharedMemory(None, False)
    anonymous = SharedMemory(create=True, size=8, auto_cleanup=False)
    assert anonymous.name.startswith("psm_")
    anonymous.cleanup()


def test_shared_scalar_and_array() -> None:
    scalar = SharedScalar(np.int64, _name("scalar"))
    scalar.set(41)
    assert SharedScalar(np.int64, _name("scalar")).get() == 41
    arr = SharedArray((2, 2), np.uint8, _name("arr"))
    arr[1, 1] = 3
    assert len(arr) == 2 and arr.numpy().tolist() == [[0, 0], [0, 3]] and arr.shape == (2, 2)
    scalar.arr.shm.cleanup()
    arr.shm.cleanup()


def test_shared_barrier_properties(tmp_path) -> None:
    barrier = SharedBarrier(str(tmp_path / "missing_dir" / "lock"), _name("barrier_props"))
    assert barrier._arr.shape == (3,)
    assert (barrier.num_enter, barrier.num_exit, barrier.flag) == (0, -1, True)
    barrier.num_enter, barrier.num_exit, barrier.flag = 3, 4, False
    assert (barrier.num_enter, barrier.num_exit, barrier.flag) == (3, 4, False)
    again = SharedBarrier(
        str(tmp_path / "lock"), _name("barrier_props")
    )  # resets, as the reference
    try:
        assert (again.num_enter, again.num_exit, again.flag) == (0, -1, True)
        with pytest.raises(CoordinationError, match="1 of 2 entered"):
            again(2, timeout=0.1)
    finally:
        again._arr.shm.cleanup()
        barrier._arr.shm.cleanup()
    assert not block_exists(_name("barrier_props"))


@pytest.mark.parametrize("num_process", [2, 3])
def test_shared_barrier_across_processes(
    tmp_path, ctx: mp.context.BaseContext, num_process: int
) -> None:
    barrier = SharedBarrier(str(tmp_path / "lock"), _name(f"barrier_{ctx.get_start_method()}"))
    with ctx.Manager() as manager:
        log = manager.list()
        procs = [
            ctx.Process(target=compat_barrier_rounds, args=(barrier, log, num_process))
            for _ in range(num_process)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * num_process
        assert (
            list(log) == ["hit"] * num_process + ["passed"] * num_process + ["again"] * num_process
        )
    barrier._arr.shm.cleanup()
