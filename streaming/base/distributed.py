"""Rank helpers and thin torch.distributed wrappers (the reference's `streaming.base.distributed`).

Rank and world size come only from the launcher's environment variables, never from torch. The
collective wrappers are no-ops unless torch.distributed is available and initialised; torch is
imported inside the functions that need it, so importing this module is free.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:  # pragma: no cover
    from torch import Tensor

__all__ = [
    "all_gather",
    "all_gather_object",
    "barrier",
    "broadcast",
    "get_local_rank",
    "get_local_world_size",
    "get_rank",
    "get_world_size",
    "maybe_init_dist",
]

TObj = TypeVar("TObj")


def get_rank() -> int:
    """Global rank of this process, from `RANK` (0 when unset)."""
    return int(os.environ.get("RANK", 0))


def get_world_size() -> int:
    """Number of processes in the job, from `WORLD_SIZE` (1 when unset)."""
    return int(os.environ.get("WORLD_SIZE", 1))


def get_local_rank() -> int:
    """Rank of this process within its node, from `LOCAL_RANK` (0 when unset)."""
    return int(os.environ.get("LOCAL_RANK", 0))


def get_local_world_size() -> int:
    """Processes on this node, from `LOCAL_WORLD_SIZE` (1 when unset)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", 1))


def _dist() -> Any:
    """torch.distributed if it is importable, available and initialised, else None."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def barrier() -> None:
    """Wait for every rank; a no-op without an initialised process group."""
    dist = _dist()
    if dist is not None:
        dist.barrier()


def broadcast(tensor: Tensor, src: int) -> None:
    """Broadcast `tensor` from rank `src` in place; a no-op without a process group."""
    dist = _dist()
    if dist is not None:
        dist.broadcast(tensor, src)


def all_gather(tensor_list: list[Tensor], tensor: Tensor) -> None:
    """Gather `tensor` from every rank into `tensor_list`; a no-op without a process group."""
    dist = _dist()
    if dist is not None:
        dist.all_gather(tensor_list, tensor)


def all_gather_object(obj: TObj) -> list[TObj]:
    """Collect one picklable object per rank, indexed by rank.

    Raises:
        RuntimeError: `WORLD_SIZE` > 1 but there is no initialised process group to gather with.
    """
    dist = _dist()
    if dist is not None:
        gathered: list[Any] = [0 for _ in range(get_world_size())]
        dist.all_gather_object(gathered, obj)
        return cast("list[TObj]", gathered)
    world_size = get_world_size()
    if world_size == 1:
        return [obj]
    raise RuntimeError(
        f'The world_size({world_size}) > 1, but the distributed package is not available '
        'or has not been initialized. Please check you have initialized the distributed '
        'runtime and that PyTorch has been built with distributed support.')


def maybe_init_dist() -> bool:
    """Initialise torch.distributed from the environment if the job needs it and nobody has.

    Uses NCCL when CUDA and NCCL are available, else gloo, with env:// rendezvous (so
    `MASTER_ADDR`/`MASTER_PORT` must be set).

    Returns:
        Whether this call created the process group (the caller then destroys it).
    """
    if get_world_size() == 1:
        return False
    import torch
    import torch.distributed as dist
    if not dist.is_available() or dist.is_initialized():
        return False
    backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    dist.init_process_group(backend=backend, rank=get_rank(), world_size=get_world_size())
    return True
