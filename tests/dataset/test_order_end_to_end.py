"""The spec's end-to-end golden vectors (from running the reference 0.13.0), through real files.

30 samples {'v': i} in 6 MDS shards of 5, one process, batch_size=4 unless noted.
"""

from __future__ import annotations

import pytest

from streaming import Stream, StreamingDataset

SHUFFLED = {
    (): [10, 25, 16, 22, 23, 17, 11, 4, 7, 6, 15, 9, 21, 13, 24, 8, 27, 3, 26, 14, 0, 20, 5, 2,
         29, 12, 19, 18, 1, 28],
    (("shuffle_algo", "py1br"),): [18, 12, 15, 20, 2, 13, 8, 3, 4, 10, 9, 6, 28, 26, 16, 27, 25,
                                   7, 1, 22, 0, 11, 21, 29, 5, 19, 14, 23, 17, 24],
    (("shuffle_algo", "naive"),): [23, 21, 2, 8, 28, 0, 6, 18, 10, 5, 7, 22, 20, 25, 27, 26, 1,
                                   11, 9, 19, 24, 13, 17, 14, 29, 15, 12, 3, 16, 4],
    (("shuffle_block_size", 10), ("shuffle_seed", 42)): [
        22, 24, 20, 21, 23, 27, 25, 29, 0, 28, 26, 1, 3, 4, 5, 7, 9, 2, 6, 8, 10, 13, 14, 11, 12,
        15, 16, 18, 17, 19],
    (("num_canonical_nodes", 2), ("shuffle_block_size", 10)): [
        27, 22, 26, 21, 28, 1, 25, 23, 29, 24, 13, 20, 12, 3, 10, 2, 9, 4, 11, 0, 14, 15, 7, 17,
        6, 19, 5, 16, 8, 18],
}


def values(ds) -> list[int]:
    return [int(sample["v"]) for sample in ds]


def test_no_shuffle_is_in_order(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        assert values(ds) == list(range(30))


@pytest.mark.parametrize("extra", list(SHUFFLED), ids=lambda e: str(dict(e)) or "py1e")
def test_shuffles_match_reference(ints30, cache_dir, extra) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4, shuffle=True,
                          **dict(extra)) as ds:
        assert values(ds) == SHUFFLED[extra]


def test_py1s_default_ncn_pads_to_64(ints30, cache_dir) -> None:
    block = list(range(5, 15)) + list(range(25, 30)) + list(range(15, 20)) + list(range(0, 5)) \
        + list(range(20, 25))
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4, shuffle=True,
                          shuffle_algo="py1s") as ds:
        assert values(ds) == (block * 3)[:64]


def test_three_canonical_nodes_interleave(ints30, cache_dir) -> None:
    expected = [x for i in range(10) for x in (i, 10 + i, 20 + i)]
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4,
                          num_canonical_nodes=3) as ds:
        assert values(ds) == expected


def test_epoch_size_subsample(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4, epoch_size=12) as ds:
        assert values(ds) == [3, 4, 5, 7, 8, 9, 13, 19, 20, 21, 24, 29]


@pytest.mark.parametrize("method,second", [
    ("balanced", [16, 4, 3, 12, 15, 19, 23, 8, 22, 20, 25, 21]),
    ("fixed", [29, 4, 3, 21, 19, 8, 13, 7, 5, 20, 24, 9]),
])
def test_epoch_size_two_epochs(ints30, cache_dir, method, second) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4, epoch_size=12,
                          shuffle=True, shuffle_block_size=10, sampling_method=method) as ds:
        assert values(ds) == [19, 13, 29, 20, 24, 3, 21, 5, 4, 9, 7, 8]
        assert values(ds) == second


@pytest.fixture
def two_streams(make_ints):
    return make_ints(range(100, 106)), make_ints(range(200, 209))


def test_proportions_with_epoch_size(two_streams, cache_dir) -> None:
    a, b = two_streams
    streams = [Stream(remote=a, local=cache_dir(), proportion=1),
               Stream(remote=b, local=cache_dir(), proportion=3)]
    with StreamingDataset(streams=streams, batch_size=4, epoch_size=10) as ds:
        assert values(ds) == [103, 104, 200, 202, 203, 204, 205, 206, 207, 208]
        assert (streams[0].proportion, streams[0].choose) == (0.25, 2)
        assert streams[0].repeat == pytest.approx(1 / 3)
        assert (streams[1].proportion, streams[1].choose) == (0.75, 8)
        assert streams[1].repeat == pytest.approx(8 / 9)


def _repeat_choose(a, b, cache_dir):
    return [Stream(remote=a, local=cache_dir(), repeat=1.5),
            Stream(remote=b, local=cache_dir(), choose=4)]


def test_repeat_and_choose(two_streams, cache_dir) -> None:
    with StreamingDataset(streams=_repeat_choose(*two_streams, cache_dir), batch_size=4) as ds:
        assert ds.epoch_size == 13
        assert values(ds) == [100, 101, 102, 103, 104, 103, 104, 105, 105, 200, 201, 205, 208]


@pytest.mark.parametrize("method,expected", [
    ("stratified", [101, 201, 202, 102, 204, 203, 104, 200, 207, 103, 206, 205]),
    ("per_stream", [201, 202, 204, 101, 102, 104, 103, 100, 105, 203, 200, 207, 206, 205, 208]),
    ("device_per_stream",
     [201, 202, 204, 101, 102, 104, 103, 100, 105, 203, 200, 207, 206, 205, 208]),
])
def test_batching_methods(two_streams, cache_dir, method, expected) -> None:
    streams = [Stream(remote=remote, local=cache_dir()) for remote in two_streams]
    with StreamingDataset(streams=streams, batch_size=3,
                          shuffle=True, shuffle_block_size=10, batching_method=method) as ds:
        assert values(ds) == expected
