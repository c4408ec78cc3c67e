"""A dataset stand-in carrying exactly the attributes the planner reads (no files, no torch)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from streaming.order.defaults import resolve_num_canonical_nodes, resolve_shuffle_block_size
from streaming.order.weighting import StreamWeights, apply_weights

__all__ = ["fake_dataset", "yielded"]


def fake_dataset(shards: list[list[int]], weights: list[dict[str, Any]] | None = None, *,
                 epoch_size: int | None = None, num_physical_nodes: int = 1,
                 weight_seed: int | None = None, **options: Any) -> SimpleNamespace:
    """A dataset of `shards[i]` = shard sizes of stream i, weighted like the reference does.

    `options` override the reference's constructor defaults (`shuffle`, `shuffle_algo`,
    `shuffle_seed`, `batch_size`, `num_canonical_nodes`, ...); lazy defaults are resolved for
    `num_physical_nodes` as the reference's first `__iter__` would. Weights are derived with
    `weight_seed` (the shuffle seed at construction; defaults to `shuffle_seed`).
    """
    sizes = [np.asarray(s, np.int64) for s in shards]
    samples_per_shard = np.concatenate(sizes)
    shards_per_stream = np.array([len(s) for s in sizes], np.int64)
    samples_per_stream = np.array([int(s.sum()) for s in sizes], np.int64)
    config = dict(shuffle=False, shuffle_algo='py1e', shuffle_seed=9176, shuffle_block_size=None,
                  num_canonical_nodes=None, batch_size=None, partition_algo='relaxed',
                  sampling_method='balanced', sampling_granularity=1, initial_physical_nodes=None,
                  batching_method='random')
    config.update(options)
    given = [StreamWeights(**w) for w in (weights or [{}] * len(sizes))]
    seed = config['shuffle_seed'] if weight_seed is None else weight_seed
    derived, size = apply_weights(given, samples_per_stream, epoch_size, seed)
    config['num_canonical_nodes'] = resolve_num_canonical_nodes(
        config['num_canonical_nodes'], config['shuffle_algo'], num_physical_nodes)
    config['shuffle_block_size'] = resolve_shuffle_block_size(config['shuffle_block_size'],
                                                              config['num_canonical_nodes'])
    return SimpleNamespace(
        streams=[SimpleNamespace(proportion=w.proportion, repeat=w.repeat, choose=w.choose)
                 for w in derived],
        num_streams=len(sizes),
        samples_per_shard=samples_per_shard,
        sample_offset_per_shard=np.cumsum(samples_per_shard) - samples_per_shard,
        shards_per_stream=shards_per_stream,
        shard_offset_per_stream=np.cumsum(shards_per_stream) - shards_per_stream,
        samples_per_stream=samples_per_stream,
        epoch_size=size,
        **{'epoch_seed_change': config['shuffle'] and config['sampling_method'] == 'balanced',
           **config},
    )


def yielded(work: np.ndarray, node: int = 0, rank: int = 0, worker: int = 0) -> list[int]:
    """What one worker yields: its batches in order, padding skipped."""
    ids = work[node, rank, worker].reshape(-1)
    return ids[ids != -1].tolist()
