"""The reference's sizes and runtime values of `StreamingDataset` (`size`, `epoch_size`,
`length`, `predownload`, `next_epoch`, `cache_usage`...), as views of the state its `__init__`
builds. Mixed into `StreamingDataset`; before `__init__` has run, the settable ones act as plain
attributes (`streaming.dataset_fields`), as subclasses written for the reference expect."""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import TYPE_CHECKING, Any

from streaming.dataset_fields import before_init, early_value, set_early

if TYPE_CHECKING:
    from streaming.cache.node_cache import NodeCache
    from streaming.dataset_config import DatasetConfig
    from streaming.order import StreamTable, World
    from streaming.stream import Stream

__all__ = ["SizeViews"]


class SizeViews:
    """Mixed into `StreamingDataset`, which sets what is declared here."""

    num_samples: int
    streams: list[Stream]
    _ss_config: DatasetConfig
    _ss_table: StreamTable
    _ss_cache: NodeCache
    _parallel_world: World
    _next_epoch: Any  # a `SharedScalar`

    @property
    def size(self) -> int:
        """Unique underlying samples (all streams)."""
        return self.num_samples

    @property
    def epoch_size(self) -> int:
        """Samples per epoch over all streams and devices (after stream weighting)."""
        return self._ss_table.epoch_size

    @property
    def length(self) -> int:
        """Samples this device sees per epoch (what `len()` says; settable, as in the
        reference, where it was a plain attribute: the epoch itself does not change)."""
        if before_init(self):
            return early_value(self, "length")
        given = self.__dict__.get("_ss_length")
        if given is not None:
            return given
        return math.ceil(self.epoch_size / self._parallel_world.num_ranks)

    @length.setter
    def length(self, value: int) -> None:
        if before_init(self):  # a plain attribute until `__init__` decides it
            set_early(self, "length", value)
            return
        self._ss_length = operator.index(value)

    def __len__(self) -> int:
        """Samples this device sees per epoch."""
        return self.length

    @property
    def num_streams(self) -> int:
        return len(self.streams)

    @num_streams.setter
    def num_streams(self, value: int) -> None:
        """Kept assignable for subclasses that set it as the reference's `__init__` does; the
        count is the streams', so only that count is accepted."""
        if before_init(self) or value == len(self.streams):
            return
        raise ValueError(f"`num_streams` is the number of streams ({len(self.streams)}), not "
                         f"{value}: pass the streams you want to the constructor.")

    @property
    def predownload(self) -> int:
        """Samples a worker may prepare ahead (default: 8 batches, 64 without a batch size)."""
        if before_init(self):
            return early_value(self, "predownload")
        return self._ss_config.resolved_predownload

    @predownload.setter
    def predownload(self, value: int | None) -> None:
        if before_init(self):  # a plain attribute until `__init__` decides it
            set_early(self, "predownload", value)
            return
        self._ss_config = dataclasses.replace(self._ss_config, predownload=value)

    @property
    def epoch_seed_change(self) -> bool:
        """Whether the sample choice changes every epoch (balanced sampling with shuffle)."""
        return self._ss_config.order.epoch_seed_change

    @property
    def next_epoch(self) -> int:
        return int(self._next_epoch.get())

    @next_epoch.setter
    def next_epoch(self, value: int) -> None:
        self._next_epoch.set(value)

    def set_epoch(self, epoch: int) -> None:
        """Make `epoch` the next one iterated: `DistributedSampler`'s convention, which HF's
        Trainer and accelerate call on a dataset at each epoch's start. A run resumed in a new
        process then gets that epoch's order, not epoch 0's again. A checkpoint loaded for
        `epoch` or a later one still decides where the next iteration starts.

        Raises:
            ValueError: `epoch` is negative or not an integer.
        """
        try:
            value = operator.index(epoch)  # numpy integers too
        except TypeError:
            value = -1
        if isinstance(epoch, bool) or value < 0:
            raise ValueError(f"`epoch` must be a non-negative integer, but got: {epoch!r}.")
        self.next_epoch = value

    @property
    def cache_usage(self) -> int:
        return int(self._ss_cache.usage.get())

    @cache_usage.setter
    def cache_usage(self, value: int) -> None:
        self._ss_cache.usage.set(value)
