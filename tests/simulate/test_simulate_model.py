"""The simulator's model on cases whose answer is known without it: what each node downloads
(from the real plan), network- and compute-bound times, the cache limit, bad settings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streaming.order.plan import OrderOptions
from streaming.order.request import PlanRequest, StreamSpec, plan_request
from streaming.simulate import SimConfig, SimStream, simulate


def _needed_bytes(stream: SimStream, config: SimConfig) -> list[int]:
    """Per node, the bytes of the shards its plan touches: what it must download once."""
    planned = plan_request(PlanRequest(
        [StreamSpec(stream.samples)], OrderOptions(
            batch_size=config.batch_size, shuffle=config.shuffle,
            shuffle_algo=config.shuffle_algo, num_canonical_nodes=config.num_canonical_nodes),
        config.nodes, config.ranks_per_node, config.readers_per_rank))
    out = []
    for node in planned.ids:
        ids = node[node >= 0]
        shards = np.unique(np.searchsorted(planned.shard_offsets, ids, "right") - 1)
        out.append(int(stream.fetch_bytes[shards].sum()))
    return out


@settings(max_examples=25, deadline=None)
@given(nodes=st.sampled_from([1, 2, 4]), ranks=st.integers(1, 3), workers=st.integers(0, 3),
       batch=st.integers(1, 16), shards=st.integers(4, 40), per_shard=st.integers(5, 60),
       shuffle=st.booleans(), bandwidth=st.sampled_from([None, 1e6]))
def test_every_node_downloads_exactly_the_shards_its_plan_reads(nodes, ranks, workers, batch,
                                                                shards, per_shard, shuffle,
                                                                bandwidth):
    rng = np.random.default_rng(shards * per_shard)
    sizes = rng.integers(1, per_shard + 1, shards)
    stream = SimStream(sizes, sizes * 1000, sizes * 1000, sizes * 1000)
    config = SimConfig(nodes=nodes, ranks_per_node=ranks, workers=workers, batch_size=batch,
                       shuffle=shuffle, bandwidth=bandwidth, num_canonical_nodes=4)
    if int(sizes.sum()) < nodes * ranks * max(workers, 1):
        with pytest.raises(ValueError, match="readers"):
            simulate([stream], config)
        return
    result = simulate([stream], config)
    epoch = result.epochs[0]
    assert [n.fetch_bytes for n in epoch.nodes] == _needed_bytes(stream, config)
    assert all(n.evictions == 0 and n.refetches == 0 for n in epoch.nodes)
    assert sum(n.samples for n in epoch.nodes) >= result.samples_per_epoch  # + padding repeats


def test_a_network_bound_epoch_takes_its_bytes_over_the_bandwidth():
    stream = SimStream.synthetic(50, 100, 1_000_000)
    result = simulate([stream], SimConfig(workers=1, batch_size=10, bandwidth=10e6))
    assert result.seconds == pytest.approx(50 * 1_000_000 / 10e6, rel=0.02)
    assert result.first_batch_seconds == pytest.approx(1_000_000 / 10e6, rel=0.01)
    assert result.stall_fraction > 0.95


def test_a_compute_bound_epoch_takes_its_steps_and_waits_only_for_the_first_shard():
    stream = SimStream.synthetic(20, 100, 100_000)
    result = simulate([stream], SimConfig(workers=2, batch_size=10, bandwidth=100e6,
                                          step_seconds_per_sample=1e-3, startup_seconds=0.5))
    assert result.seconds == pytest.approx(0.5 + 0.001 + 2000 * 1e-3, rel=0.01)
    assert result.first_batch_seconds == pytest.approx(0.5 + 0.001, rel=0.01)
    assert result.samples_per_second == pytest.approx(2000 / result.seconds)


def test_latency_delays_every_fetch_and_concurrency_hides_it():
    stream = SimStream.synthetic(100, 10, 1000)
    one = simulate([stream], SimConfig(workers=1, batch_size=10, latency=0.05, max_fetches=1))
    many = simulate([stream], SimConfig(workers=1, batch_size=10, latency=0.05))
    assert one.first_batch_seconds == pytest.approx(0.05)
    assert one.seconds == pytest.approx(100 * 0.05, rel=0.01)  # one fetch at a time
    assert many.seconds < one.seconds / 2  # the link sizer doubled the fetches in flight


def test_a_cache_limit_is_never_exceeded_and_evicts():
    stream = SimStream.synthetic(30, 100, 100_000)
    limit = 600_000
    result = simulate([stream], SimConfig(workers=2, batch_size=10, bandwidth=50e6,
                                          cache_limit=limit, shuffle=True))
    node = result.epochs[0].nodes[0]
    assert node.peak_cache_bytes <= limit
    assert max(max(u) for u in result.timeline["cache_bytes"]) <= limit
    assert node.evictions > 0
    assert node.fetch_bytes == node.fetches * 100_000
    assert node.fetches == 30 + node.refetches


def test_a_second_epoch_downloads_nothing_when_everything_stayed_cached():
    stream = SimStream.synthetic(10, 100, 100_000)
    result = simulate([stream], SimConfig(workers=2, batch_size=10, bandwidth=1e6, epochs=2))
    first, second = result.epochs
    assert first.nodes[0].fetch_bytes == 1_000_000
    assert second.nodes[0].fetch_bytes == 0
    assert second.seconds < first.seconds / 10


def test_compressed_shards_move_their_compressed_bytes_and_reserve_both_forms():
    stream = SimStream.synthetic(10, 100, 400_000, compressed_bytes=100_000)
    result = simulate([stream], SimConfig(workers=1, batch_size=10, bandwidth=1e6))
    node = result.epochs[0].nodes[0]
    assert node.fetch_bytes == 1_000_000
    assert node.peak_cache_bytes == 4_000_000
    assert result.seconds == pytest.approx(1.0, rel=0.02)


def test_streams_mix_by_proportion_through_the_real_planner():
    small = SimStream.synthetic(5, 100, 10_000, proportion=0.5)
    large = SimStream.synthetic(50, 100, 10_000, proportion=0.5)
    result = simulate([small, large], SimConfig(workers=1, batch_size=10, epoch_size=1000))
    assert result.samples_per_epoch == 1000
    assert result.epochs[0].nodes[0].fetches <= 5 + 50


def test_the_same_configuration_gives_the_same_prediction():
    stream = SimStream.synthetic(40, 100, 100_000)
    config = SimConfig(nodes=2, ranks_per_node=2, workers=2, batch_size=8, bandwidth=20e6,
                       cache_limit=1_000_000, shuffle=True, latency=0.01)
    a, b = simulate([stream], config), simulate([stream], config)
    assert a.to_json() | {"wall_seconds": 0} == b.to_json() | {"wall_seconds": 0}


@pytest.mark.parametrize(("settings_", "message"), [
    ({"bandwidth": 0}, "bandwidth"),
    ({"bandwidth": float("inf")}, "bandwidth"),
    ({"latency": -1}, "latency"),
    ({"step_seconds_per_sample": float("nan")}, "step_seconds_per_sample"),
    ({"batch_size": 0}, "batch_size"),
    ({"workers": -1}, "workers"),
    ({"cache_limit": -5}, "cache_limit"),
    ({"cache_limit": float("nan")}, "NaN"),
    ({"predownload": 2.5}, "predownload"),
    ({"cache_limit": 300_000}, "four times the largest shard"),
    ({"workers": 64, "ranks_per_node": 8}, "readers"),
])
def test_impossible_settings_are_refused_with_a_message(settings_, message):
    stream = SimStream.synthetic(10, 10, 100_000)
    with pytest.raises(ValueError, match=message):
        simulate([stream], SimConfig(batch_size=4), **settings_)


def test_settings_read_as_the_dataset_and_the_dataloader_read_them():
    """`epoch_size="1k"` and `prefetch_factor=None` failed with a TypeError, `cache_limit=0`
    was refused: the dataset reads 1,000 samples, no cache limit, and the DataLoader's
    default of 2."""
    config = SimConfig(batch_size=4, epoch_size="1k", cache_limit=0, prefetch_factor=None,
                       bandwidth="10mb", predownload=8.0)
    assert (config.epoch_size, config.cache_limit, config.prefetch_factor, config.bandwidth,
            config.predownload) == (1000, None, 2, 10 << 20, 8)


def test_a_cache_no_read_can_fit_in_fails_clearly_instead_of_hanging():
    # Four times the largest shard passes the dataset's check, but eight readers each holding
    # a shard leave no room for the next one: refused up front, as the dataset refuses it
    # when its epoch starts (`check_readers_fit`).
    stream = SimStream.synthetic(64, 10, 100_000)
    with pytest.raises(ValueError, match="each of this node's 8 readers"):
        simulate([stream], SimConfig(ranks_per_node=2, workers=4, batch_size=10,
                                     cache_limit=400_000, shuffle=True, predownload=1))


def test_streams_must_have_shards_and_sizes_must_agree():
    with pytest.raises(ValueError, match="no shards"):
        SimStream(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                  np.zeros(0, np.int64))
    with pytest.raises(ValueError, match="one entry per shard"):
        SimStream(np.ones(2, np.int64), np.ones(3, np.int64), np.ones(2, np.int64),
                  np.ones(2, np.int64))
    with pytest.raises(ValueError, match="No stream"):
        simulate([], SimConfig())


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 50), min_size=1, max_size=40), seed=st.integers(0, 99))
def test_the_shard_locator_agrees_with_a_binary_search(sizes, seed):
    from streaming.simulate.readers import ShardLocator

    sizes_ = np.array(sizes, np.int64)
    total = int(sizes_.sum())
    if not total:
        return
    offsets = np.concatenate(([0], np.cumsum(sizes_)[:-1]))
    ids = np.random.default_rng(seed).integers(0, total, 500)
    ids = np.concatenate((ids, np.arange(total)))
    locate = ShardLocator(offsets, total)
    assert locate.table is not None
    assert np.array_equal(locate(ids), np.searchsorted(offsets, ids, "right") - 1)


def test_a_shard_with_a_metadata_file_is_two_fetches_each_paying_the_latency(tmp_path):
    """A JSONL shard is its data file and its `.meta`, which the cache fetches one after the
    other: the simulator counts both fetches and both latencies, as the runtime does."""
    from streaming import JSONWriter, MDSWriter
    from streaming.simulate.shards import stream_of_dataset

    for writer, name in ((JSONWriter, "jsonl"), (MDSWriter, "mds")):
        with writer(out=str(tmp_path / name), columns={"a": "int", "s": "str"},
                    size_limit=1 << 10) as out:
            for i in range(50):
                out.write({"a": i, "s": "y" * i})
    jsonl, mds = stream_of_dataset(str(tmp_path / "jsonl")), stream_of_dataset(str(tmp_path / "mds"))
    assert (jsonl.meta_fetch_bytes > 0).all() and not mds.meta_fetch_bytes.any()
    config = SimConfig(workers=0, batch_size=4, latency=0.1)
    for stream, files in ((jsonl, 2), (mds, 1)):
        result = simulate([stream], config)
        shards = len(stream.samples)
        assert result.epochs[0].nodes[0].fetches == files * shards
        assert result.epochs[0].nodes[0].fetch_bytes == int(stream.fetch_bytes.sum())
        assert result.seconds == pytest.approx(files * shards * 0.1, rel=0.01)


def test_a_prefetch_window_of_thousands_of_shards_runs_at_unlimited_bandwidth():
    # Batch 256 predownloads 2,048 samples: 205 shards of 10 at once, each finishing at the
    # instant it starts. Finishing inside the call that started it nested a call chain per
    # shard until RecursionError.
    result = simulate([SimStream.synthetic(2_000, 10, 1_000)], batch_size=256, workers=8)
    node = result.epochs[0].nodes[0]
    assert node.fetches == 2_000
    assert result.samples_per_epoch == 20_000


@pytest.mark.parametrize("bandwidth", [None, 1e6])
def test_a_cache_limit_holds_with_compressed_shards(bandwidth):
    # A prepared shard holds its raw form only: counting a victim as freeing raw + zip bytes
    # (what is reserved while it is fetched) let the usage pass the limit by a shard's zip.
    stream = SimStream.synthetic(40, 100, 40_000, compressed_bytes=12_000)
    limit = 300_000
    result = simulate([stream], SimConfig(workers=2, batch_size=8, bandwidth=bandwidth,
                                          cache_limit=limit))
    node = result.epochs[0].nodes[0]
    assert node.evictions > 0
    assert node.peak_cache_bytes <= limit


def test_settings_are_taken_as_a_dataset_takes_them():
    config = SimConfig(cache_limit="1mb", bandwidth="500mb", nodes=np.int64(2),
                       batch_size=np.int32(8))
    assert (config.cache_limit, config.bandwidth) == (1 << 20, 500 << 20)
    assert (config.nodes, config.batch_size) == (2, 8)
    assert type(config.nodes) is int and type(config.batch_size) is int


@pytest.mark.parametrize("settings_", [{"latency": None}, {"batch_size": True},
                                       {"workers": 2.0}, {"cache_limit": "lots"}])
def test_settings_of_the_wrong_type_get_a_message(settings_):
    with pytest.raises(ValueError, match="must be|Unsupported"):
        SimConfig(**settings_)


def test_progress_counts_every_simulated_sample():
    seen: list[int] = []
    result = simulate([SimStream.synthetic(20, 50, 10_000)], batch_size=8, workers=2, epochs=2,
                      progress=seen.append)
    assert seen and all(n > 0 for n in seen)
    assert sum(seen) == 2 * result.samples_per_epoch
