"""Where this process sits in the job: nodes, ranks per node and dataloader workers per rank.

`World` carries the reference's fields and methods (`streaming.base.world.World`). Only
`detect`/`detect_workers` look outside the object (environment variables, torch worker info, with
torch imported lazily); everything else is plain arithmetic so tests can sweep any topology.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from streaming.order.defaults import check_whole

__all__ = ["World"]


def _worker_info() -> tuple[int, int]:
    """This dataloader worker's id and the worker count of its rank (0 of 1 outside workers)."""
    try:
        from torch.utils.data import get_worker_info
    except ImportError:  # pragma: no cover - torch is a dependency, but keep order/ importable
        return 0, 1
    info = get_worker_info()
    return (info.id, info.num_workers) if info else (0, 1)


class World:
    """Nodes, ranks and workers of a run, seen from one worker.

    Counts (`num_nodes`, `num_ranks`, `num_workers`) are global; `workers_per_rank` is the
    DataLoader's `num_workers` (or 1 when iterating in the main process).

    Args:
        num_nodes: Physical nodes in the job.
        ranks_per_node: Ranks (devices) on each node; every node has the same number.
        workers_per_rank: Dataloader workers per rank.
        worker: Global index of this worker, `rank * workers_per_rank + worker_of_rank`.
    """

    def __init__(self, num_nodes: int, ranks_per_node: int, workers_per_rank: int,
                 worker: int) -> None:
        # Same attribute order as the reference, so `to_json()` keys line up with it.
        self.node = worker // (ranks_per_node * workers_per_rank)
        self.num_nodes = num_nodes
        self.is_multinode = num_nodes > 1

        self.rank = worker // workers_per_rank
        self.num_ranks = num_nodes * ranks_per_node
        self.rank_of_node = self.rank % ranks_per_node
        self.ranks_per_node = ranks_per_node

        self.worker = worker
        self.num_workers = num_nodes * ranks_per_node * workers_per_rank
        self.worker_of_node = self.worker % (ranks_per_node * workers_per_rank)
        self.workers_per_node = ranks_per_node * workers_per_rank
        self.worker_of_rank = self.worker % workers_per_rank
        self.workers_per_rank = workers_per_rank
        self.is_leader = not worker
        self.is_local_leader = not self.worker_of_node

    def __repr__(self) -> str:
        return (f"World(num_nodes={self.num_nodes}, ranks_per_node={self.ranks_per_node}, "
                f"workers_per_rank={self.workers_per_rank}, worker={self.worker})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, World):
            return NotImplemented
        return self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash((self.num_nodes, self.ranks_per_node, self.workers_per_rank, self.worker))

    def to_json(self) -> dict[str, Any]:
        """All derived fields as a plain dict (the reference's `to_json`)."""
        return dict(self.__dict__)

    @classmethod
    def _get_worker_info(cls) -> tuple[int, int]:
        """Worker id and count from torch (0 of 1 in the main process)."""
        return _worker_info()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None,
                 worker_info: tuple[int, int] = (0, 1)) -> World:
        """Build the world from launcher variables, as `detect` does, but from explicit inputs.

        Args:
            env: Mapping with `RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE` (missing ones default to
                0, 1, 1). Defaults to `os.environ`.
            worker_info: `(worker_of_rank, workers_per_rank)`.
        """
        env = os.environ if env is None else env
        rank = int(env.get("RANK", 0))
        ranks_per_node = int(env.get("LOCAL_WORLD_SIZE", 1))
        num_nodes = int(env.get("WORLD_SIZE", 1)) // ranks_per_node
        worker_of_rank, workers_per_rank = worker_info
        worker = rank * workers_per_rank + worker_of_rank
        return cls(num_nodes, ranks_per_node, workers_per_rank, worker)

    @classmethod
    def detect(cls) -> World:
        """The world of the calling process: the launch variables (filled in from
        torch.distributed where a launcher left `RANK` out: `launch_env`) plus torch worker
        info.

        Raises:
            MissingRankError: `WORLD_SIZE` above 1 with no way to tell this process's rank.
        """
        from streaming.launch_env import launch_env

        return cls.from_env(launch_env(), cls._get_worker_info())

    def copy(self) -> World:
        """An independent copy with the same layout."""
        return World(self.num_nodes, self.ranks_per_node, self.workers_per_rank, self.worker)

    def replicate(self, replication: int) -> World:
        """The world as seen by sample assignment when `replication` consecutive ranks share data.

        Raises:
            ValueError: `replication` is not positive or does not divide the number of ranks.
        """
        check_whole(replication, "Replication factor must be positive and a whole number of "
                                 f"ranks, got {replication!r}.")
        if replication <= 0:
            raise ValueError('Replication factor must be positive.')
        if self.num_ranks % replication:
            raise ValueError('World size must be divisible by your replication factor.')
        rank = self.rank // replication
        num_ranks = self.num_ranks // replication
        worker = rank * self.workers_per_rank + self.worker_of_rank
        num_nodes = num_ranks // self.ranks_per_node if num_ranks % self.ranks_per_node == 0 else 1
        return World(num_nodes, num_ranks // num_nodes, self.workers_per_rank, worker)

    def detect_workers(self) -> World:
        """Same ranks, with the dataloader worker layout of the calling process re-detected."""
        worker_of_rank, workers_per_rank = self._get_worker_info()
        worker = self.rank * workers_per_rank + worker_of_rank
        return World(self.num_nodes, self.ranks_per_node, workers_per_rank, worker)
