"""The golden vectors of the spec (§6.6), recorded from MosaicML Streaming 0.13.0.

End-to-end cases use the 30-sample dataset (6 shards of 5) and the two-stream dataset (6 + 9
samples in shards of 5) rebuilt from shard sizes alone; a single process yields its worker's
batches in order, skipping padding.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from order_fakes import fake_dataset, yielded

from streaming.base.batching import generate_work
from streaming.order import World, get_partitions, get_sampling, get_shuffle

PARTITIONS = [
    (('orig', 10, 2, 1, 1, 1, 2), [[[[[0, 5], [1, 6], [2, 7], [3, 8], [4, 9]]]]]),
    (('orig', 13, 4, 2, 2, 2, 2), [[[[[0, 1]], [[2, 2]]], [[[6, 7]], [[8, 8]]]],
                                   [[[[3, 4]], [[5, 5]]], [[[9, 10]], [[11, 12]]]]]),
    (('orig', 13, 4, 2, 2, 2, 2, 5), [[[[[1, 2]], [[2, -1]]], [[[7, 8]], [[8, -1]]]],
                                      [[[[4, 5]], [[5, -1]]], [[[10, 11]], [[12, -1]]]]]),
    (('orig', 11, 1, 2, 1, 1, 3), [[[[[0, 2, 4], [6, 8, 10]]]], [[[[1, 3, 5], [7, 9, 9]]]]]),
    (('relaxed', 24, 3, 2, 2, 1, 3, 0, 3),
     [[[[[0, 2, 1], [4, 6, 5]]], [[[3, 8, 10], [7, 12, 14]]]],
      [[[[9, 11, 16], [13, 15, 20]]], [[[18, 17, 19], [22, 21, 23]]]]]),
]

SHUFFLES = {
    'naive': ([5, 2, 0, 6, 8, 7, 9, 11, 10, 15, 13, 1, 17, 14, 12, 3, 16, 4],
              [7, 13, 16, 3, 12, 11, 4, 2, 8, 10, 15, 6, 9, 5, 14, 1, 17, 0]),
    'py1s': ([4, 5, 7, 6, 3, 10, 9, 8, 11, 14, 17, 12, 15, 16, 13, 2, 0, 1],
             [3, 6, 7, 5, 4, 8, 11, 9, 10, 2, 0, 1, 16, 13, 15, 17, 14, 12]),
    'py2s': ([4, 5, 7, 6, 3, 11, 9, 10, 8, 2, 1, 0, 12, 13, 14, 15, 16, 17],
             [7, 6, 5, 4, 3, 10, 8, 11, 9, 17, 15, 16, 14, 12, 13, 1, 0, 2]),
    'py1br': ([5, 4, 6, 3, 7, 8, 9, 10, 11, 12, 14, 2, 0, 17, 1, 15, 16, 13],
              [7, 6, 3, 5, 8, 4, 10, 11, 9, 13, 1, 12, 0, 2, 14, 15, 16, 17]),
    'py1e': ([4, 5, 7, 6, 9, 3, 10, 8, 11, 15, 17, 14, 12, 13, 16, 2, 1, 0],
             [3, 6, 7, 5, 8, 4, 11, 9, 10, 2, 13, 1, 0, 17, 16, 15, 14, 12]),
}

THIRTY = [[5] * 6]
PY1S_64 = (list(range(5, 15)) + list(range(25, 30)) + list(range(15, 20)) + list(range(5))
           + list(range(20, 25)))


def _yield(shards: list[list[int]], weights: list[dict[str, Any]] | None = None, *,
           epoch: int = 0, method: str = 'random', **options: Any) -> list[int]:
    options.setdefault('batch_size', 4)
    dataset = fake_dataset(shards, weights, **options)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return yielded(generate_work(method, dataset, World(1, 1, 1, 0), epoch, 0))


@pytest.mark.parametrize(('args', 'expected'), PARTITIONS)
def test_partition_vectors(args: tuple, expected: list) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        assert get_partitions(*args).tolist() == expected


@pytest.mark.parametrize('algo', sorted(SHUFFLES))
def test_shuffle_vectors(algo: str) -> None:
    sizes = np.array([3, 5, 4, 6], np.int64)
    for epoch, expected in enumerate(SHUFFLES[algo]):
        assert get_shuffle(algo, sizes, 2, 9176, epoch, 8).tolist() == expected


def test_sampling_vectors() -> None:
    sizes = np.array([10, 7, 5], np.int64)
    assert get_sampling(sizes, 9, 2, 1234, 0, True).tolist() == [2, 4, 3]
    assert get_sampling(sizes, 9, 2, 1234, 1, True).tolist() == [4, 2, 3]
    assert get_sampling(sizes, 9, 2, 1234, 1, False).tolist() == [2, 4, 3]
    assert get_sampling(sizes, 44, 1, 1, 0, True).tolist() == [20, 14, 10]


@pytest.mark.parametrize(('options', 'expected'), [
    ({}, list(range(30))),
    ({'shuffle': True}, [10, 25, 16, 22, 23, 17, 11, 4, 7, 6, 15, 9, 21, 13, 24, 8, 27, 3, 26, 14,
                         0, 20, 5, 2, 29, 12, 19, 18, 1, 28]),
    ({'shuffle': True, 'shuffle_algo': 'py1br'},
     [18, 12, 15, 20, 2, 13, 8, 3, 4, 10, 9, 6, 28, 26, 16, 27, 25, 7, 1, 22, 0, 11, 21, 29, 5,
      19, 14, 23, 17, 24]),
    ({'shuffle': True, 'shuffle_algo': 'naive'},
     [23, 21, 2, 8, 28, 0, 6, 18, 10, 5, 7, 22, 20, 25, 27, 26, 1, 11, 9, 19, 24, 13, 17, 14, 29,
      15, 12, 3, 16, 4]),
    ({'shuffle': True, 'shuffle_algo': 'py1s'}, (PY1S_64 * 3)[:64]),
    ({'shuffle': True, 'shuffle_block_size': 10, 'shuffle_seed': 42},
     [22, 24, 20, 21, 23, 27, 25, 29, 0, 28, 26, 1, 3, 4, 5, 7, 9, 2, 6, 8, 10, 13, 14, 11, 12,
      15, 16, 18, 17, 19]),
    ({'shuffle': True, 'num_canonical_nodes': 2, 'shuffle_block_size': 10},
     [27, 22, 26, 21, 28, 1, 25, 23, 29, 24, 13, 20, 12, 3, 10, 2, 9, 4, 11, 0, 14, 15, 7, 17, 6,
      19, 5, 16, 8, 18]),
    ({'num_canonical_nodes': 3}, [i + 10 * j for i in range(10) for j in range(3)]),
    ({'epoch_size': 12}, [3, 4, 5, 7, 8, 9, 13, 19, 20, 21, 24, 29]),
])
def test_thirty_samples(options: dict[str, Any], expected: list[int]) -> None:
    assert _yield(THIRTY, **options) == expected


def test_thirty_samples_two_epochs() -> None:
    options = {'epoch_size': 12, 'shuffle': True, 'shuffle_block_size': 10}
    assert _yield(THIRTY, **options) == [19, 13, 29, 20, 24, 3, 21, 5, 4, 9, 7, 8]
    assert _yield(THIRTY, epoch=1, **options) == [16, 4, 3, 12, 15, 19, 23, 8, 22, 20, 25, 21]
    fixed = _yield(THIRTY, epoch=1, sampling_method='fixed', **options)
    assert fixed == [29, 4, 3, 21, 19, 8, 13, 7, 5, 20, 24, 9]


def test_fake_world_generate_work() -> None:
    dataset = fake_dataset(THIRTY, batch_size=2, shuffle=True, shuffle_block_size=10,
                           num_canonical_nodes=2)
    world = World(2, 2, 2, 0)
    assert generate_work('random', dataset, world, 0, 0).tolist() == [
        [[[[27, 28], [9, 14]], [[29, 12], [6, 8]]], [[[26, 25], [11, 7]], [[13, 10], [5, 5]]]],
        [[[[22, 1], [4, 15]], [[24, 3], [19, 18]]], [[[21, 23], [0, 17]], [[20, 2], [16, 16]]]]]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        resumed = generate_work('random', dataset, world, 0, 6).tolist()
    assert resumed == [
        [[[[25, 13], [7, 5]], [[10, 11], [-1, -1]]], [[[29, 12], [6, 8]], [[9, 14], [-1, -1]]]],
        [[[[23, 20], [17, 16]], [[2, 0], [-1, -1]]], [[[24, 3], [19, 18]], [[4, 15], [-1, -1]]]]]


# Two streams: ids 0..5 are values 100..105, ids 6..14 are values 200..208.
TWO = [[5, 1], [5, 4]]


def _values(ids: list[int]) -> list[int]:
    return [100 + i if i < 6 else 194 + i for i in ids]


def test_two_streams_weighted() -> None:
    dataset = fake_dataset(TWO, [{'proportion': 1}, {'proportion': 3}], epoch_size=10)
    weights = [(s.proportion, s.repeat, s.choose) for s in dataset.streams]
    assert weights == [(0.25, 1 / 3, 2), (0.75, 8 / 9, 8)]
    assert _values(_yield(TWO, [{'proportion': 1}, {'proportion': 3}], epoch_size=10)) == [
        103, 104, 200, 202, 203, 204, 205, 206, 207, 208]
    absolute = [{'repeat': 1.5}, {'choose': 4}]
    assert fake_dataset(TWO, absolute).epoch_size == 13
    assert _values(_yield(TWO, absolute)) == [100, 101, 102, 103, 104, 103, 104, 105, 105, 200,
                                              201, 205, 208]


@pytest.mark.parametrize(('method', 'expected'), [
    ('stratified', [101, 201, 202, 102, 204, 203, 104, 200, 207, 103, 206, 205]),
    ('per_stream', [201, 202, 204, 101, 102, 104, 103, 100, 105, 203, 200, 207, 206, 205, 208]),
    ('device_per_stream',
     [201, 202, 204, 101, 102, 104, 103, 100, 105, 203, 200, 207, 206, 205, 208]),
])
def test_two_streams_batching(method: str, expected: list[int]) -> None:
    got = _yield(TWO, method=method, batch_size=3, shuffle=True, shuffle_block_size=10)
    assert _values(got) == expected
