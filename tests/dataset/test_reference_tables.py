"""The reference's algorithm tables serve datasets: a partition algorithm in
`streaming.base.partition.algos` or a batching method in `streaming.base.batching.batching_methods`
that the user added (or replaced) is what the dataset calls, as in the reference."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import streaming.base.batching as batching
import streaming.base.partition as partition
from streaming import StreamingDataset
from streaming.base.partition import get_partitions


@pytest.fixture
def tables() -> Iterator[None]:
    saved = dict(partition.algos), dict(batching.batching_methods)
    yield
    for table, before in zip((partition.algos, batching.batching_methods), saved):
        table.clear()
        table.update(before)


def test_a_partition_algorithm_of_the_users_own_is_called(ints30, cache_dir, tables) -> None:
    calls = []
    orig = partition.algos["orig"]

    def reversed_orig(*args):
        calls.append(args)
        ids = orig(*args)
        return np.where(ids != -1, args[0] - 1 - ids, -1)  # the samples in reverse

    partition.algos["backwards"] = reversed_orig
    assert get_partitions("backwards", 8, 1, 1, 1, 1, 2).ravel().tolist() == list(range(7, -1, -1))
    assert calls[-1] == (8, 1, 1, 1, 1, 2, 0, None)  # the reference's arguments
    dataset = StreamingDataset(local=ints30, batch_size=2, partition_algo="backwards",
                               num_canonical_nodes=1)
    assert [s["v"] for s in dataset] == list(range(29, -1, -1))
    shuffled = StreamingDataset(local=ints30, batch_size=2, partition_algo="backwards",
                                num_canonical_nodes=1, shuffle=True)  # the shuffle composed in
    order = [s["v"] for s in shuffled]
    assert sorted(order) == list(range(30)) and order != list(range(29, -1, -1))
    partition.algos["orig"] = reversed_orig  # replacing ours works the same way
    dataset = StreamingDataset(local=ints30, batch_size=2, partition_algo="orig",
                               num_canonical_nodes=1)
    assert [s["v"] for s in dataset] == list(range(29, -1, -1))


def test_the_shipped_partitions_stay_ours(ints30, tables) -> None:
    dataset = StreamingDataset(local=ints30, batch_size=2, num_canonical_nodes=1)
    assert [s["v"] for s in dataset] == list(range(30))
    with pytest.raises(KeyError, match="partition_algo 'nope'"):
        get_partitions("nope", 8, 1, 1, 1, 1, 2)


def test_a_batching_method_of_the_users_own_is_called(ints30, tables) -> None:
    seen = []
    shipped = batching.batching_methods["random"]

    def pairs_swapped(dataset, world, epoch, sample_in_epoch):
        seen.append((type(dataset).__name__, epoch, sample_in_epoch))
        ids = shipped(dataset, world, epoch, sample_in_epoch)
        return ids[..., ::-1]  # each batch of 2 in the other order

    with pytest.raises(ValueError, match="Invalid batching method: swapped"):
        StreamingDataset(local=ints30, batch_size=2, batching_method="swapped")
    batching.batching_methods["swapped"] = pairs_swapped
    dataset = StreamingDataset(local=ints30, batch_size=2, batching_method="swapped",
                               num_canonical_nodes=1)
    expected = [v for i in range(0, 30, 2) for v in (i + 1, i)]
    assert [s["v"] for s in dataset] == expected
    assert seen == [("StreamingDataset", 0, 0)]
    batching.batching_methods["random"] = pairs_swapped  # replacing ours
    dataset = StreamingDataset(local=ints30, batch_size=2, num_canonical_nodes=1)
    assert [s["v"] for s in dataset] == expected
    batching.batching_methods["random"] = shipped  # put back: ours again
    dataset = StreamingDataset(local=ints30, batch_size=2, num_canonical_nodes=1)
    assert [s["v"] for s in dataset] == list(range(30))


def test_a_method_missing_where_the_epoch_is_planned_says_where_to_register_it(
        ints30, tables) -> None:
    """A spawned DataLoader worker imports the main module anew: a method registered under
    `if __name__ == '__main__':` is missing there (a bare KeyError before)."""
    batching.batching_methods["mine"] = batching.batching_methods["random"]
    dataset = StreamingDataset(local=ints30, batch_size=2, batching_method="mine")
    del batching.batching_methods["mine"]  # what the worker's fresh import sees
    with pytest.raises(ValueError, match="register a method of your own at module level"):
        next(iter(dataset))
