"""`PlanConfig`: everything the planner needs about a dataset, as one frozen value.

`from_dataset` documents (and is the only code that reads) the dataset attributes the planner
depends on, so the runtime's `StreamingDataset` only has to provide those. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.order.resample import Resampled, StreamLayout, resample
from streaming.order.shuffle import get_shuffle

__all__ = ["PlanConfig"]

_NEED_BATCH_SIZE = ('Please pass `batch_size` to StreamingDataset. It should be set the same as '
                    'the DataLoader, and is the number of samples per batch, for each device. It '
                    'is necessary for deterministic resumption and optimal performance.')


@dataclass(frozen=True)
class PlanConfig:
    """A dataset's order-relevant configuration (names as on the reference's dataset).

    `proportions`/`chooses` are each stream's derived weights (`apply_weights`). The dataset's
    lazy defaults (`num_canonical_nodes`, `shuffle_block_size`) must already be resolved.
    """

    layout: StreamLayout
    proportions: tuple[float, ...]
    chooses: tuple[int, ...]
    epoch_size: int
    batch_size: int
    num_canonical_nodes: int
    shuffle: bool = False
    shuffle_algo: str = 'py1e'
    shuffle_seed: int = 9176
    shuffle_block_size: int = 1 << 18
    partition_algo: str = 'relaxed'
    sampling_method: str = 'balanced'
    sampling_granularity: int = 1
    initial_physical_nodes: int | None = None
    epoch_seed_change: bool = False

    @classmethod
    def from_dataset(cls, dataset: Any) -> PlanConfig:
        """Read the planner's inputs off a dataset object.

        Attributes read: `streams[i].proportion`, `streams[i].choose` (derived weights),
        `samples_per_shard`, `sample_offset_per_shard`, `shard_offset_per_stream`,
        `shards_per_stream`, `epoch_size`, `batch_size`, `num_canonical_nodes`, `shuffle`,
        `shuffle_algo`, `shuffle_seed`, `shuffle_block_size`, `partition_algo`,
        `sampling_method`, `sampling_granularity`, `initial_physical_nodes`,
        `epoch_seed_change`.

        Raises:
            RuntimeError: `num_canonical_nodes` is None (defaults not resolved yet).
            ValueError: `batch_size` is not an int.
            TypeError: shuffling with a `shuffle_block_size` that is not an int.
        """
        if dataset.num_canonical_nodes is None:
            raise RuntimeError('`num_canonical_nodes` can never be None. Provide a positive '
                               'integer.')
        if not isinstance(dataset.batch_size, int):
            raise ValueError(_NEED_BATCH_SIZE)
        if dataset.shuffle and not isinstance(dataset.shuffle_block_size, int):
            raise TypeError(f'Dataset `shuffle_block_size` must be an integer. Got '
                            f'{type(dataset.shuffle_block_size)} instead.')
        layout = StreamLayout(*(np.asarray(getattr(dataset, name), np.int64) for name in (
            'samples_per_shard', 'sample_offset_per_shard', 'shard_offset_per_stream',
            'shards_per_stream')))
        return cls(
            layout=layout,
            proportions=tuple(stream.proportion for stream in dataset.streams),
            chooses=tuple(stream.choose for stream in dataset.streams),
            epoch_size=int(dataset.epoch_size),
            batch_size=dataset.batch_size,
            num_canonical_nodes=dataset.num_canonical_nodes,
            shuffle=bool(dataset.shuffle),
            shuffle_algo=dataset.shuffle_algo,
            shuffle_seed=dataset.shuffle_seed,
            shuffle_block_size=dataset.shuffle_block_size,
            partition_algo=dataset.partition_algo,
            sampling_method=dataset.sampling_method,
            sampling_granularity=dataset.sampling_granularity,
            initial_physical_nodes=dataset.initial_physical_nodes,
            epoch_seed_change=bool(dataset.epoch_seed_change),
        )

    def resample(self, epoch: int, stream_id: int | None = None) -> Resampled:
        """This epoch's resampling of every stream, or of one."""
        return resample(self.layout, self.chooses, self.sampling_granularity, self.shuffle_seed,
                        epoch, self.sampling_method == 'balanced', self.epoch_seed_change,
                        stream_id)

    def id_table(self, resampled: Resampled, epoch: int,
                 block_size: int) -> NDArray[np.signedinteger] | None:
        """Underlying sample id of each position of the epoch, before partitioning.

        Composes the shuffle (if enabled, with `block_size`) with the resampling table, so the
        partition reads final ids directly. None means positions are the ids themselves.
        """
        if not self.shuffle:
            if resampled.ids is None and not resampled.offset:
                return None
            return resampled.materialize()
        order = get_shuffle(self.shuffle_algo, resampled.units, self.num_canonical_nodes,
                            self.shuffle_seed, epoch, block_size)
        if resampled.ids is not None:
            return np.take(resampled.ids, order)
        if resampled.offset:
            return np.add(order, resampled.offset, dtype=np.int64)
        return order
