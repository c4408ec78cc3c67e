"""Reference-compatible integer shared-memory prefixes (`NNNNNN_<name>`) for old code and tests.

Our runtime uses job-scoped namespaces (`streaming.coord.namespace`); this module keeps the
reference's functions and their documented behaviour, with two fixes: blocks attached while
probing are closed again (the reference leaked their descriptors), and a conflicting `locals`
block that no live process maps (left by a crash) is not a conflict.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from tempfile import gettempdir
from time import sleep
from typing import Any

import numpy as np

from streaming.base._reimports import reimported as _reimported
from streaming.base.constant import BARRIER_FILELOCK, CACHE_FILELOCK, LOCALS, SHM_TO_CLEAN, TICK
from streaming.base.shared.memory import SharedMemory
from streaming.coord.liveness import mapped_shm_paths
from streaming.coord.opening import check_self
from streaming.coord.shm import SHM_DIR

__all__ = ["get_shm_prefix"]


def _each_prefix_int() -> Iterator[int]:
    """Yield 0, 1, 2, ... : the prefixes to probe, in order."""
    prefix_int = 0
    while True:
        yield prefix_int
        prefix_int += 1


def _get_path(prefix_int: int, name: str) -> str:
    """The shared-memory (or lock-file) name of `name` under a prefix: `f'{prefix:06}_{name}'`."""
    return f"{prefix_int:06}_{name}"


def _pack_locals(dirnames: list[str], prefix_int: int) -> bytes:
    """Encode local dirs and prefix: int32 total size, then NUL-joined dirs, NUL, prefix digits."""
    data = ("\0".join(dirnames) + f"\0{prefix_int}").encode("utf-8")
    return np.int32(4 + len(data)).tobytes() + data


def _unpack_locals(data: bytes) -> tuple[list[str], int]:
    """Decode `_pack_locals` output (a zeroed size means "unregistered": no dirs, prefix 0)."""
    size = int(np.frombuffer(data[:4], np.int32)[0])
    parts = data[4:size].decode("utf-8").split("\0")
    return parts[:-1], int(parts[-1] or 0)


def _check_self(streams_local: list[str]) -> None:
    """Raise `ValueError('Reused local directory: [...]. Provide a different one.')`."""
    check_self(streams_local)


def _lock_file_exists(prefix_int: int) -> bool:
    try:
        return any(
            os.path.exists(os.path.join(gettempdir(), _get_path(prefix_int, lock)))
            for lock in (BARRIER_FILELOCK, CACHE_FILELOCK)
        )
    except PermissionError:
        return True


def _held_by_live_process(name: str) -> bool:
    mapped = mapped_shm_paths()
    return mapped is None or f"{SHM_DIR}/{name}" in mapped


def _check_and_find(
    streams_local: list[str], streams_remote: list[str | None], shm_name: str
) -> int:
    """The first prefix free for `shm_name`, checking registered local dirs on the way.

    Prefixes with a lock file in the temp dir, or whose block we may not open, are skipped. For
    `LOCALS`, a registered block sharing one of our local dirs where our remote is set raises
    `ValueError('Reused local directory: ... vs ...')`, unless no live process maps that block.
    """
    prefix_int = 0
    for prefix_int in _each_prefix_int():
        if _lock_file_exists(prefix_int):
            continue
        name = _get_path(prefix_int, shm_name)
        try:
            shm = SharedMemory(name, False, auto_cleanup=False)
        except PermissionError:
            continue
        except FileNotFoundError:
            break
        if shm_name != LOCALS:
            shm.cleanup()
            continue
        their_locals, _ = _unpack_locals(bytes(shm.buf))
        shm.cleanup()
        clash = [
            local
            for local, remote in zip(streams_local, streams_remote, strict=False)
            if remote is not None and local in their_locals
        ]
        if clash and _held_by_live_process(name):
            raise ValueError(
                f"Reused local directory: {streams_local} vs {their_locals}. Provide a different "
                f"one. If using a unique local directory, try deleting the local directory and "
                f"call `streaming.base.util.clean_stale_shared_memory()` only once in your script "
                f"to clean up the stale shared memory before instantiation of `StreamingDataset`."
            )
    return prefix_int


def _check_and_find_retrying(
    streams_local: list[str], streams_remote: list[str | None], shm_name: str, retry: int
) -> int:
    """`_check_and_find`, retried up to `retry` more times (a TICK apart) on a conflict."""
    if retry < 0:
        raise ValueError(f"Specify at least zero retries (provided {retry}).")
    for attempt in range(retry + 1):
        try:
            return _check_and_find(streams_local, streams_remote, shm_name)
        except ValueError:
            if attempt == retry:
                raise
            sleep(TICK)
    raise AssertionError("unreachable")  # pragma: no cover


def _distributed() -> bool:
    dist = sys.modules.get("torch.distributed")  # never import torch just to find it unused
    return dist is not None and dist.is_available() and dist.is_initialized()


def _dist_barrier() -> None:
    if _distributed():
        sys.modules["torch.distributed"].barrier()


def get_shm_prefix(
    streams_local: list[str], streams_remote: list[str | None], world: Any, retry: int = 100
) -> tuple[int, SharedMemory]:
    """Register (local leader) or look up (other ranks) the prefix of a dataset's shared objects.

    Args:
        streams_local: Local dir of each stream.
        streams_remote: Remote of each stream.
        world: Object with `is_local_leader` (a `World`).
        retry: Extra attempts on a local-directory conflict.

    Returns:
        The prefix and the `locals` block registering our dirs.

    Raises:
        ValueError: Duplicate dirs among our streams, or dirs used by a live dataset.
        RuntimeError: The local leader registered something else.
    """
    _check_self(streams_local)

    def find() -> int:
        return max(_check_and_find_retrying(streams_local, streams_remote, name, retry)
                   for name in SHM_TO_CLEAN)

    prefix_int = find()
    _dist_barrier()
    leader = bool(getattr(world, "is_local_leader", True))
    if leader:
        for attempt in range(retry + 1):
            data = _pack_locals(streams_local, prefix_int)
            try:
                shm = SharedMemory(_get_path(prefix_int, LOCALS), True, len(data))
                break
            except FileExistsError:
                # Another job registered this prefix between our scan and our create. Alone
                # (no process group) we scan again; the reference failed here. With one, the
                # other ranks already hold this prefix, so it is an error for every rank.
                if _distributed() or attempt == retry:
                    raise
                prefix_int = find()
        shm.buf[: len(data)] = data
    name = _get_path(prefix_int, LOCALS)
    _dist_barrier()
    if not leader:
        try:
            shm = SharedMemory(name, False)
        except FileNotFoundError:
            raise RuntimeError(
                f"Internal error: shared memory prefix={prefix_int} was not registered by local "
                f"leader. This may be because you specified different ``local`` parameters from "
                f"different ranks."
            ) from None
        their_locals, their_prefix_int = _unpack_locals(bytes(shm.buf))
        if streams_local != their_locals or prefix_int != their_prefix_int:
            raise RuntimeError(
                f"Internal error: shared memory registered does not match local leader as "
                f"streams_local or prefix_int not match. local leader: {their_locals} and "
                f"{their_prefix_int}. expected: {streams_local} and {prefix_int}."
            )
    return prefix_int, shm

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
