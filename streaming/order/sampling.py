"""How many samples each shard of a stream contributes to an epoch (`get_sampling`).

Whole repeats are exact; the fractional remainder is drawn in picks of `granularity` samples
from a seeded permutation of picks (spec §6.4). Vectorised: the reference's walk over the picks
becomes a cumulative sum. Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streaming.order.rng import sampling_rng

__all__ = ["get_sampling"]


def _check(choose: int, granularity: int, seed: int, epoch: int) -> None:
    if choose < 0:
        raise ValueError(f'`choose` must be a non-negative integer, but got: {choose}.')
    if granularity <= 0:
        raise ValueError(f'`granularity` must be a positive integer, but got: {granularity}.')
    if seed < 0:
        raise ValueError(f'`seed` must be a non-negative integer, but got: {seed}.')
    if epoch < 0:
        # The reference forgot the f-prefix; keep its exact text.
        raise ValueError('`epoch` must be a non-negative integer, but got: {epoch}.')


def get_sampling(samples_per_shard: NDArray[np.int64], choose: int, granularity: int, seed: int,
                 epoch: int, use_epoch: bool) -> NDArray[np.int64]:
    """Samples to draw from each shard so that the stream contributes `choose` in total.

    Generator calls (only when `choose` is not a multiple of the stream's size):
    `sampling_rng(seed, epoch, use_epoch).permutation(number of picks)`.

    Args:
        samples_per_shard: The stream's shard sizes.
        choose: Samples the stream contributes this epoch.
        granularity: Samples drawn from one shard at a time in the fractional part.
        seed: Shuffle seed.
        epoch: Epoch, mixed into the seed when `use_epoch`.
        use_epoch: Whether the choice changes every epoch (balanced sampling with shuffling).

    Returns:
        int64 per-shard counts, each at most `(choose // total + 1)` times the shard size.

    Raises:
        ValueError: negative `choose`, `seed` or `epoch`, or non-positive `granularity`.
    """
    _check(choose, granularity, seed, epoch)
    num_samples = samples_per_shard.sum()  # a numpy scalar, as sum() gave, at numpy speed
    if not choose % num_samples:
        return samples_per_shard * choose // num_samples

    num_shards = len(samples_per_shard)
    picks_per_shard = (samples_per_shard + granularity - 1) // granularity
    num_picks = picks_per_shard.sum()
    pick_shard_ids = np.repeat(np.arange(num_shards), picks_per_shard)
    samples_per_pick = np.repeat(np.full(num_shards, granularity), picks_per_shard)
    # Same fancy assignment as the reference, including its behaviour for empty shards.
    samples_per_pick[np.cumsum(picks_per_shard) - 1] = \
        samples_per_shard - (picks_per_shard - 1) * granularity
    pick_ordering = sampling_rng(seed, epoch, use_epoch).permutation(num_picks)

    choose_per_shard = samples_per_shard * (choose // num_samples)
    remaining = choose % num_samples
    sizes = samples_per_pick[pick_ordering]
    before = np.cumsum(sizes) - sizes
    taken = np.clip(remaining - before, 0, sizes)
    used = taken > 0
    np.add.at(choose_per_shard, pick_shard_ids[pick_ordering[used]], taken[used])
    return choose_per_shard
