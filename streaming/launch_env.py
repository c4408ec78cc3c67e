"""The job's launch variables (`RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE`), filled in from
`torch.distributed` where a launcher left `RANK` out.

torchrun sets all three, and every rank's place follows from them alone. Other launchers do
not: Lightning's `strategy="ddp"` sets `WORLD_SIZE` and `LOCAL_RANK`, its `ddp_spawn` sets
none. Without `RANK` every process of such a job read as rank 0 of its node: they took the same
samples, and half the data was never seen, silently (the reference crashed on a shared-memory
name instead). So when `RANK` is missing:

* with `torch.distributed` initialised, its rank and world size are used, and the ranks that
  share this machine's node-local state (`/dev/shm`, the temp dir) are counted once, by one
  `all_gather_object` over the job (the reference's constructor holds a `dist.barrier()`, so
  its ranks build their datasets together too), unless `LOCAL_WORLD_SIZE` is given;
* without it, a `WORLD_SIZE` above 1 cannot be placed: `MissingRankError` says what to set.

A launcher that sets `RANK` is taken at its word, as in the reference (`LOCAL_WORLD_SIZE`
missing then means one rank per node).
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping
from typing import Any

from streaming.errors import StreamingError

__all__ = ["MissingRankError", "launch_env"]

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")

# The variables filled in for this process, per (rank, world size) of the process group: the
# gather runs once, and every later dataset (and the loader's checkpoint) sees the same world.
# DataLoader workers forked after it inherit it.
_filled: dict[tuple[int, int], dict[str, str]] = {}


class MissingRankError(StreamingError, ValueError):
    """`WORLD_SIZE` says several processes, but nothing says which one this is."""


def _initialised_dist() -> Any:
    """`torch.distributed` when a process group is up in this process, else None. Never imports
    torch itself (a torch-free user has no group)."""
    if "torch.distributed" not in sys.modules:
        return None
    dist = sys.modules["torch.distributed"]
    return dist if dist.is_available() and dist.is_initialized() else None


def _in_dataloader_worker() -> bool:
    info = sys.modules.get("torch.utils.data")
    return info is not None and info.get_worker_info() is not None


def machine_key() -> str:
    """What ranks that share node-local state have in common: the host, its boot, and the
    devices of `/dev/shm` and of the temp dir (containers on one host have their own)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    devices = []
    for path in ("/dev/shm", tempfile.gettempdir()):
        try:
            st = os.stat(path)
            devices.append(f"{st.st_dev}:{st.st_ino}")
        except OSError:
            devices.append("")
    return "|".join([socket.gethostname(), boot, *devices])


def ranks_per_machine(keys: list[str], rank: int) -> int:
    """How many ranks share `rank`'s machine, given each rank's `machine_key`.

    Raises:
        MissingRankError: machines hold different numbers of ranks, or a machine's ranks are
            not consecutive (rank // ranks_per_node must be its node).
    """
    counts = Counter(keys)
    local = counts[keys[rank]]
    mine = [r for r, key in enumerate(keys) if key == keys[rank]]
    if len(set(counts.values())) > 1 or mine != list(range(mine[0], mine[0] + local)) or \
            mine[0] % local:
        raise MissingRankError(
            f"The {len(keys)} ranks of this job sit on machines as {sorted(counts.values())} "
            f"(this machine: ranks {mine}); every node must hold the same number of "
            "consecutive ranks. Set RANK, WORLD_SIZE and LOCAL_WORLD_SIZE for each process "
            "(as torchrun does).")
    return local


def _gathered_ranks_per_machine(dist: Any, rank: int, world: int) -> int:
    keys: list[Any] = [None] * world
    try:
        dist.all_gather_object(keys, machine_key())
    except Exception as err:  # a backend that cannot gather objects here (NCCL, no device)
        raise MissingRankError(
            f"RANK and LOCAL_WORLD_SIZE are not set, and counting the ranks of this machine "
            f"over torch.distributed failed ({type(err).__name__}: {err}). Set RANK, "
            "WORLD_SIZE and LOCAL_WORLD_SIZE for each process (as torchrun does).") from err
    return ranks_per_machine([str(key) for key in keys], rank)


def launch_env(env: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """`env` (default `os.environ`), with the launch variables filled in when `RANK` is missing
    (see the module's docstring); `env` itself when nothing is missing.

    Raises:
        MissingRankError: `WORLD_SIZE` above 1 without `RANK` or a process group, or ranks that
            do not sit on their machines as nodes must.
    """
    env = os.environ if env is None else env
    if "RANK" in env:
        return env
    dist = _initialised_dist()
    if dist is None:
        try:
            world = int(env.get("WORLD_SIZE") or 1)
        except ValueError:
            world = 1
        if world > 1:
            raise MissingRankError(
                f"WORLD_SIZE is {world} but RANK is not set and torch.distributed is not "
                "initialised, so this process cannot tell which rank it is (each would read "
                "the samples of rank 0). Set RANK and LOCAL_WORLD_SIZE for each process (as "
                "torchrun does), or build the dataset after init_process_group.")
        return env
    rank, world = dist.get_rank(), dist.get_world_size()
    filled = _filled.get((rank, world))
    if filled is None:
        filled = {"RANK": str(rank), "WORLD_SIZE": str(world)}
        if "LOCAL_WORLD_SIZE" not in env and world > 1:
            if _in_dataloader_worker():  # no collectives from a worker: its parent's count
                return {**env, **filled}
            filled["LOCAL_WORLD_SIZE"] = str(_gathered_ranks_per_machine(dist, rank, world))
        _filled[(rank, world)] = filled
    return {**env, **filled}
