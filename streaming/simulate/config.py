"""The simulated run: a world, the order knobs, the cache, the link and the training step.

One typed record, checked once when made, so an impossible setting (bandwidth 0, a cache smaller
than a shard, more workers than samples) fails with a message before any event is simulated,
never as a hang or a division by zero deep in the model.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from streaming.order.plan import OrderOptions
from streaming.units import bytes_to_int, number_abbrev_to_int

__all__ = ["SimConfig"]


@dataclass(frozen=True)
class SimConfig:
    """How the simulated job is laid out and how fast its parts are.

    The order knobs are flat, with `StreamingDataset`'s names and defaults, as a dataset takes
    them; `options()` turns them into the planner's `OrderOptions`. The rest describes the
    machines.

    Attributes:
        nodes, ranks_per_node, workers: the world (`workers=0`: each rank reads in its main
            process, as a DataLoader with `num_workers=0`).
        batch_size: per-device batch size.
        predownload: samples each worker may prepare ahead of its reads (None: the dataset's
            default of 8 batches).
        cache_limit: bytes the node cache may hold (None: unlimited); a number or a size such
            as ``"50gb"``, as `StreamingDataset` takes it.
        bandwidth: bytes per second of each node's link to the remote (None: unlimited; a
            size such as ``"500mb"`` reads as that many bytes per second);
            concurrent fetches share it equally.
        latency: seconds from a fetch's request to its first byte.
        step_seconds_per_sample: the training step's time per sample of a device's batch.
        decode_seconds_per_sample: a worker's time to read and collate one sample.
        startup_seconds: time from the start of each epoch (`iter(loader)`) until its workers
            start reading (worker start-up); charged every epoch. A one-off launch cost adds
            a constant to every time and is not modelled.
        prefetch_factor: batches each DataLoader worker may have ready ahead of the step.
        max_fetches: the most fetches a worker runs at once (the runtime's cap).
        epochs: epochs to run back to back (the cache carries over).
    """

    nodes: int = 1
    ranks_per_node: int = 1
    workers: int = 8
    batch_size: int = 32
    shuffle: bool = False
    shuffle_algo: str = "py1e"
    shuffle_seed: int = 9176
    shuffle_block_size: int | None = None
    num_canonical_nodes: int | None = None
    partition_algo: str = "relaxed"
    batching_method: str = "random"
    sampling_method: str = "balanced"
    sampling_granularity: int = 1
    epoch_size: int | None = None
    predownload: int | None = None
    cache_limit: int | None = None
    bandwidth: float | None = None
    latency: float = 0.0
    step_seconds_per_sample: float = 0.0
    decode_seconds_per_sample: float = 0.0
    startup_seconds: float = 0.0
    prefetch_factor: int = 2  # None (a DataLoader's spelling of its default) reads as 2
    max_fetches: int = 16
    epochs: int = 1

    def __post_init__(self) -> None:
        self._normalise()
        for name in ("nodes", "ranks_per_node", "batch_size", "epochs", "max_fetches"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"`{name}` must be a positive integer, got "
                                 f"{getattr(self, name)!r}.")
        if not isinstance(self.workers, int) or isinstance(self.workers, bool) or self.workers < 0:
            raise ValueError(f"`workers` must be an integer, 0 or more, got {self.workers!r}.")
        if self.workers and self.prefetch_factor < 1:
            raise ValueError("`prefetch_factor` must be at least 1 with workers, got "
                             f"{self.prefetch_factor}.")
        if self.predownload is not None and (
                not _whole(self.predownload) or self.predownload < 0):
            raise ValueError(f"`predownload` must be a whole number, 0 or more, got "
                             f"{self.predownload!r}.")
        if self.cache_limit is not None and self.cache_limit <= 0:
            raise ValueError(f"`cache_limit` must be a positive number of bytes, got "
                             f"{self.cache_limit}.")
        if self.bandwidth is not None and not (self.bandwidth > 0 and math.isfinite(
                self.bandwidth)):
            raise ValueError(f"`bandwidth` must be a positive number of bytes per second (or "
                             f"None for unlimited), got {self.bandwidth}: nothing could ever "
                             f"be fetched.")
        for name in ("latency", "step_seconds_per_sample", "decode_seconds_per_sample",
                     "startup_seconds"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"`{name}` must be a finite number of seconds >= 0, got "
                                 f"{value}.")
        self.options()  # the order knobs, checked now as a dataset checks them

    def _normalise(self) -> None:
        """Take what a dataset takes: numpy integers as counts, and sizes as text (``"50gb"``
        for `cache_limit`, ``"500mb"`` per second for `bandwidth`), stored as plain numbers."""
        for name in ("nodes", "ranks_per_node", "workers", "batch_size", "epochs", "max_fetches",
                     "prefetch_factor", "predownload", "shuffle_seed", "shuffle_block_size",
                     "num_canonical_nodes", "sampling_granularity", "epoch_size"):
            value = getattr(self, name)
            if isinstance(value, np.integer):
                object.__setattr__(self, name, int(value))
        # As `StreamingDataset` parses them: "1k" samples, "50gb" (or 0: none) of cache.
        if self.epoch_size:
            object.__setattr__(self, "epoch_size", number_abbrev_to_int(self.epoch_size))
        object.__setattr__(self, "cache_limit",
                           bytes_to_int(self.cache_limit) if self.cache_limit else None)
        if isinstance(self.bandwidth, str):
            object.__setattr__(self, "bandwidth", bytes_to_int(self.bandwidth))
        elif isinstance(self.bandwidth, np.generic):
            object.__setattr__(self, "bandwidth", self.bandwidth.item())
        if _whole(self.predownload):  # 8.0, as the dataset takes it
            object.__setattr__(self, "predownload", int(self.predownload))  # type: ignore[arg-type]
        if self.prefetch_factor is None:  # a DataLoader's default
            object.__setattr__(self, "prefetch_factor", 2)

    def options(self) -> OrderOptions:
        """The order knobs as the planner takes them (checked there, as a dataset's are)."""
        return OrderOptions(
            shuffle=self.shuffle, shuffle_algo=self.shuffle_algo, shuffle_seed=self.shuffle_seed,
            shuffle_block_size=self.shuffle_block_size,
            num_canonical_nodes=self.num_canonical_nodes, partition_algo=self.partition_algo,
            sampling_method=self.sampling_method,
            sampling_granularity=self.sampling_granularity,
            batching_method=self.batching_method, batch_size=self.batch_size,
            epoch_size=self.epoch_size)

    @property
    def window(self) -> int:
        """Samples ahead of its reads a worker may prepare (the dataset's `predownload`)."""
        if self.predownload is not None:
            return max(self.predownload, 1)
        return 8 * self.batch_size

    @property
    def readers_per_rank(self) -> int:
        """Readers per rank: its workers, or the main process itself."""
        return max(self.workers, 1)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _whole(value: Any) -> bool:
    """Whether `value` is a whole number (``8`` or ``8.0``, not ``2.5`` or True)."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value) and float(value).is_integer())
