"""Per-epoch resampling: the epoch's "big" ids and the underlying sample each one stands for.

The logic of the reference's `StreamingDataset.resample_streams` (spec §4.4) on plain arrays.
Whole repeats of a shard are spans of consecutive ids (no per-sample work); only shards with a
fractional part draw, one `choice` per shard, as the reference does. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from streaming.order.rng import sampling_rng
from streaming.order.sampling import get_sampling
from streaming.order.shuffle.common import fill_spans

__all__ = ["Resampled", "StreamLayout", "exclusive_cumsum", "resample", "resample_streams"]


class StreamLayout(NamedTuple):
    """Where each stream's shards and samples sit in the dataset's flat arrays."""

    samples_per_shard: NDArray[np.int64]
    sample_offset_per_shard: NDArray[np.int64]
    shard_offset_per_stream: NDArray[np.int64]
    shards_per_stream: NDArray[np.int64]

    @classmethod
    def from_shard_sizes(cls, shard_sizes: Sequence[Sequence[int] | NDArray[np.int64]]
                         ) -> StreamLayout:
        """The layout of streams given, per stream, the sample count of each shard."""
        sizes = np.concatenate([np.asarray(stream, np.int64).reshape(-1) for stream in shard_sizes]
                               or [np.zeros(0, np.int64)])
        counts = np.array([len(stream) for stream in shard_sizes], np.int64)
        return cls(sizes, exclusive_cumsum(sizes), exclusive_cumsum(counts), counts)

    @property
    def samples_per_stream(self) -> NDArray[np.int64]:
        """Each stream's sample count (0 for a stream without shards)."""
        ends = np.zeros(len(self.samples_per_shard) + 1, np.int64)
        np.cumsum(self.samples_per_shard, out=ends[1:])
        first = self.shard_offset_per_stream
        return ends[first + self.shards_per_stream] - ends[first]


def exclusive_cumsum(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """Where each item starts when items of these sizes are laid end to end."""
    out = np.zeros(len(values), np.int64)
    np.cumsum(values[:-1], out=out[1:])
    return out


class Resampled(NamedTuple):
    """One epoch's resampling of some streams.

    `units` are the shuffle units (sizes, in order); big id `k` stands for underlying sample
    `ids[k]`, or `offset + k` when `ids` is None (every shard taken exactly once).
    """

    units: NDArray[np.int64]
    ids: NDArray[np.int64] | None
    offset: int

    def __len__(self) -> int:
        return int(self.units.sum())

    def materialize(self) -> NDArray[np.int64]:
        """The big-to-underlying id table as an array."""
        if self.ids is not None:
            return self.ids
        return self.offset + np.arange(len(self), dtype=np.int64)


def _stream_shards(layout: StreamLayout, stream_ids: Sequence[int]) -> NDArray[np.int64]:
    return np.concatenate([
        layout.shard_offset_per_stream[i] + np.arange(layout.shards_per_stream[i], dtype=np.int64)
        for i in stream_ids])


def resample(layout: StreamLayout, chooses: Sequence[int], granularity: int, seed: int,
             epoch: int, balanced: bool, epoch_seed_change: bool,
             stream_id: int | None = None) -> Resampled:
    """Resample all streams (`stream_id` None) or one, for `epoch`.

    Generator calls: per stream, `get_sampling` (its own generator); then with
    `sampling_rng(seed, epoch, balanced)` (one for the whole call), for each shard in order with
    a fractional part `r > 0` of `s` samples: `choice(s, r, False)`.

    Args:
        layout: The dataset's shard/stream bookkeeping.
        chooses: Samples each stream contributes per epoch (`StreamWeights.choose`).
        granularity: `sampling_granularity`.
        seed: Shuffle seed.
        epoch: Epoch.
        balanced: `sampling_method == 'balanced'` (the draws change per epoch).
        epoch_seed_change: Whether per-shard counts change per epoch (`get_sampling`'s
            `use_epoch`).
        stream_id: Resample only this stream.

    Raises:
        ValueError: nothing is chosen at all (the reference fails concatenating nothing).
    """
    stream_ids = range(len(chooses)) if stream_id is None else [stream_id]
    counts = []
    for i in stream_ids:
        first = int(layout.shard_offset_per_stream[i])
        sizes = layout.samples_per_shard[first:first + int(layout.shards_per_stream[i])]
        counts.append(get_sampling(sizes, chooses[i], granularity, seed, epoch,
                                   epoch_seed_change))
    shards = _stream_shards(layout, stream_ids)
    chosen = np.concatenate(counts).astype(np.int64)
    sizes = layout.samples_per_shard[shards]
    offsets = layout.sample_offset_per_shard[shards]
    if not len(shards) or not chosen.sum():
        # The reference's words first (code may match them), then what they mean here.
        which = "no stream has a" if stream_id is None else f"stream {stream_id} has no"
        raise ValueError(
            f"need at least one array to concatenate: {which} sample chosen in epoch "
            f"{epoch} (a `choose` of 0, or an `epoch_size` too small to give it one). Batching "
            f"methods that lay out batches per stream need every stream to contribute: drop "
            f"the stream or raise its weight or the epoch size.")
    if np.array_equal(chosen, sizes) and np.array_equal(np.diff(offsets), sizes[:-1]):
        return Resampled(sizes[sizes > 0], None, int(offsets[0]))
    with np.errstate(divide='ignore', invalid='ignore'):
        full = np.where(sizes > 0, chosen // np.maximum(sizes, 1), 0)
        partial = np.where(sizes > 0, chosen % np.maximum(sizes, 1), 0)
    per_shard = full + (partial > 0)
    units = np.repeat(sizes, per_shard)
    ends = np.cumsum(per_shard)
    units[ends[partial > 0] - 1] = partial[partial > 0]
    unit_begins = np.repeat(offsets, per_shard)
    ids = np.empty(int(units.sum()), np.int64)
    fill_spans(ids, unit_begins, units)
    _draw_partials(ids, units, ends, sizes, offsets, partial,
                   sampling_rng(seed, epoch, balanced))
    return Resampled(units, ids, 0)


def _draw_partials(ids: NDArray[np.int64], units: NDArray[np.int64], ends: NDArray[np.int64],
                   sizes: NDArray[np.int64], offsets: NDArray[np.int64],
                   partial: NDArray[np.int64], rng: np.random.Generator) -> None:
    """Overwrite each shard's partial unit with a sorted random subset of the shard."""
    starts = np.cumsum(units) - units
    shards = np.flatnonzero(partial).tolist()
    positions = starts[ends[shards] - 1].tolist()
    for shard, position in zip(shards, positions):
        size, count = int(sizes[shard]), int(partial[shard])
        picked = rng.choice(size, count, False)
        picked.sort()
        ids[position:position + count] = picked + offsets[shard]


def resample_streams(layout: StreamLayout, chooses: Sequence[int], granularity: int, seed: int,
                     epoch: int, balanced: bool, epoch_seed_change: bool,
                     stream_id: int | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The reference's `resample_streams` return value: `(shuffle_units, sample_ids)`.

    See `resample` for the arguments and generator calls.
    """
    out = resample(layout, chooses, granularity, seed, epoch, balanced, epoch_seed_change,
                   stream_id)
    return out.units, out.materialize()
