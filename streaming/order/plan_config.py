"""`PlanConfig`: everything the batching methods need about a dataset, as one frozen value.

Built by `streaming.order.plan.plan_config` (the runtime and the CLI) or, for the reference's
dataset-reading entry points, by `streaming.base.batching`. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.order.resample import Resampled, StreamLayout, resample
from streaming.order.shuffle import get_shuffle

__all__ = ["PlanConfig"]


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
    shuffle_block_size: int = SHUFFLE_BLOCK_SIZE
    partition_algo: str = 'relaxed'
    sampling_method: str = 'balanced'
    sampling_granularity: int = 1
    initial_physical_nodes: int | None = None
    epoch_seed_change: bool = False

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
