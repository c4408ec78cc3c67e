"""Property tests of the planner over random worlds and configurations (hypothesis).

The promises: every sample once per epoch (up to the documented padding repeats), a global order
that depends only on the canonical node count, and resumption on any other world yielding
exactly the samples not consumed yet.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from order_fakes import fake_dataset

from streaming.base.batching import generate_work
from streaming.order import World, get_shuffle
from streaming.order.sampling import get_sampling

ALGOS = ['py1e', 'py1br', 'py1s', 'py2s', 'naive', 'py1b']
SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def epochs(draw: st.DrawFn) -> dict[str, Any]:
    """A single-stream dataset config: shard sizes, canonical nodes, shuffle."""
    ncn = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12]))
    shards = draw(st.lists(st.integers(1, 60), min_size=1, max_size=30))
    if sum(shards) < ncn:
        shards.append(ncn)
    return {'shards': [shards], 'num_canonical_nodes': ncn,
            'shuffle': draw(st.booleans()), 'shuffle_algo': draw(st.sampled_from(ALGOS)),
            'shuffle_seed': draw(st.integers(0, 10**6)),
            'shuffle_block_size': draw(st.sampled_from([8, 50, 1000])),
            'epoch': draw(st.integers(0, 3))}


def _worlds(ncn: int) -> st.SearchStrategy[tuple[int, int, int, int]]:
    """(nodes, ranks per node, workers per rank, batch size) with nodes dividing ncn."""
    nodes = st.sampled_from([p for p in range(1, ncn + 1) if ncn % p == 0])
    return st.tuples(nodes, st.integers(1, 4), st.integers(1, 3), st.integers(1, 5))


def _plan(config: dict[str, Any], world: tuple[int, int, int, int],
          sample_in_epoch: int = 0) -> np.ndarray:
    nodes, ranks, workers, batch = world
    options = {k: v for k, v in config.items() if k not in ('shards', 'epoch')}
    dataset = fake_dataset(config['shards'], batch_size=batch, **options)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return generate_work('random', dataset, World(nodes, ranks, workers, 0),
                             config['epoch'], sample_in_epoch)


def _traversal(work: np.ndarray) -> np.ndarray:
    """The whole job's consumption order: batch by batch, worker by worker, node, rank, slot."""
    return work.transpose(3, 2, 0, 1, 4).reshape(-1)


def _canonical(config: dict[str, Any]) -> np.ndarray:
    """The world-independent sample sequence (what one rank with batch 1 walks)."""
    return _traversal(_plan(config, (1, 1, 1, 1)))


@SETTINGS
@given(data=st.data(), config=epochs())
def test_every_sample_once_per_epoch(data: st.DataObject, config: dict[str, Any]) -> None:
    world = data.draw(_worlds(config['num_canonical_nodes']))
    nodes, ranks, _, _ = world
    ids = _plan(config, world).reshape(-1)
    ids = ids[ids >= 0]
    num_samples, ncn = sum(config['shards'][0]), config['num_canonical_nodes']
    counts = np.bincount(ids, minlength=num_samples)
    assert len(counts) == num_samples and counts.min() >= 1
    # Repeats only pad short canonical rows and uneven ranks.
    assert len(ids) - num_samples <= ncn + nodes * (ranks - 1)
    if num_samples % ncn == 0 and (num_samples // nodes) % ranks == 0:
        assert counts.max() == 1


@SETTINGS
@given(data=st.data(), config=epochs())
def test_global_order_depends_only_on_canonical_nodes(data: st.DataObject,
                                                      config: dict[str, Any]) -> None:
    world = data.draw(_worlds(config['num_canonical_nodes']))
    nodes, ranks, _, batch = world
    canonical = _canonical(config)
    walked = _traversal(_plan(config, world))
    step = nodes * ranks * batch  # one worker round: a chunk of the canonical sequence
    whole = (len(canonical) // nodes // ranks) * ranks * nodes // step * step
    assert whole <= len(walked)
    expected = np.sort(canonical[:whole].reshape(-1, step), axis=1)
    np.testing.assert_array_equal(np.sort(walked[:whole].reshape(-1, step), axis=1), expected)


@SETTINGS
@given(data=st.data(), config=epochs())
def test_resume_on_another_world_yields_the_rest(data: st.DataObject,
                                                 config: dict[str, Any]) -> None:
    ncn = config['num_canonical_nodes']
    first, second = data.draw(_worlds(ncn)), data.draw(_worlds(ncn))
    canonical = _canonical(config)
    global_batch = first[0] * first[1] * first[3]
    num_samples = sum(config['shards'][0])
    done = data.draw(st.integers(0, num_samples // global_batch)) * global_batch
    consumed = _traversal(_plan(config, first))[:done]
    assert set(consumed.tolist()) == set(canonical[:done].tolist())
    # The resumed world drops whole rounds of its physical nodes (rounding down).
    dropped = done - done % second[0]
    rest = _plan(config, second, sample_in_epoch=done).reshape(-1)
    rest = set(rest[rest >= 0].tolist())
    assert rest == set(canonical[dropped:].tolist())
    assert rest | set(consumed.tolist()) == set(canonical.tolist())
    if dropped == done and len(set(canonical.tolist())) == len(canonical):  # no repeats
        assert not rest & set(consumed.tolist())


@SETTINGS
@given(config=epochs(), ranks=st.integers(1, 3), workers=st.integers(1, 3),
       data=st.data())
def test_relaxed_keeps_global_batches_on_any_node_count(config: dict[str, Any], ranks: int,
                                                        workers: int,
                                                        data: st.DataObject) -> None:
    ncn = config['num_canonical_nodes']
    initial = data.draw(st.sampled_from([p for p in range(1, ncn + 1) if ncn % p == 0]))
    # Node counts that neither divide nor are divided by ncn: `orig` could not run there.
    others = [p for p in range(2, 9) if ncn % p and p % ncn]
    if not others:
        return
    nodes = data.draw(st.sampled_from(others))
    global_batch = initial * nodes * ranks * data.draw(st.integers(1, 2))
    config = dict(config, initial_physical_nodes=initial)
    before = _plan(config, (initial, ranks, workers, global_batch // (initial * ranks)))
    after = _plan(config, (nodes, ranks, workers, global_batch // (nodes * ranks)))
    np.testing.assert_array_equal(_traversal(after), _traversal(before))


@SETTINGS
@given(sizes=st.lists(st.integers(0, 40), max_size=25), ncn=st.integers(1, 9),
       algo=st.sampled_from(ALGOS), seed=st.integers(0, 2**31), block=st.integers(2, 200))
def test_shuffle_is_a_node_preserving_permutation(sizes: list[int], ncn: int, algo: str,
                                                  seed: int, block: int) -> None:
    shard_sizes = np.array(sizes, np.int64)
    total = int(shard_sizes.sum())
    if algo == 'py1e' and total < ncn:
        with pytest.raises(ValueError, match='assigned to a canonical node is 0'):
            get_shuffle(algo, shard_sizes, ncn, seed, 0, block)
        return
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        epochs_ = [get_shuffle(algo, shard_sizes, ncn, seed, epoch, block) for epoch in range(3)]
    bounds = [total * i // ncn for i in range(ncn + 1)]
    for ids in epochs_:
        assert ids.dtype == np.int64 and np.array_equal(np.sort(ids), np.arange(total))
    if algo != 'naive':
        for begin, end in zip(bounds[:-1], bounds[1:]):
            parts = [np.sort(ids[begin:end]) for ids in epochs_]
            assert all(np.array_equal(parts[0], part) for part in parts[1:])


@SETTINGS
@given(sizes=st.lists(st.integers(1, 50), min_size=1, max_size=12), data=st.data(),
       granularity=st.integers(1, 9), seed=st.integers(0, 10**6), epoch=st.integers(0, 5))
def test_sampling_sums_to_choose(sizes: list[int], data: st.DataObject, granularity: int,
                                 seed: int, epoch: int) -> None:
    shard_sizes = np.array(sizes, np.int64)
    choose = data.draw(st.integers(0, 3 * int(shard_sizes.sum())))
    counts = get_sampling(shard_sizes, choose, granularity, seed, epoch, True)
    assert counts.sum() == choose
    whole = choose // shard_sizes.sum()
    assert np.all(counts >= whole * shard_sizes) and np.all(counts <= (whole + 1) * shard_sizes)


@SETTINGS
@given(samples=st.integers(1, 400), ncn=st.sampled_from([1, 2, 3, 4, 8]),
       nodes=st.sampled_from([1, 2, 4, 8]), ranks=st.integers(1, 5), workers=st.integers(1, 3),
       batch=st.integers(1, 4))
def test_resume_limit_is_the_padded_epoch(samples: int, ncn: int, nodes: int, ranks: int,
                                          workers: int, batch: int) -> None:
    """A checkpoint at the very end of an epoch (every padded sample counted) is within the
    limit, and resuming from the limit leaves nothing of the epoch."""
    from streaming.order.partition import get_partitions, resume_limit

    if max(ncn, nodes) % min(ncn, nodes):
        return
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:
            whole = get_partitions('orig', samples, ncn, nodes, ranks, workers, batch)
        except ValueError:  # the reference's own geometry errors (too few samples to stripe)
            return
        limit = resume_limit(samples, nodes * ranks, ncn, nodes)
        assert int((whole != -1).sum()) <= limit
    plain = resume_limit(samples, nodes * ranks)
    assert limit >= plain  # never below the reference's bound
    if limit - limit % nodes <= plain:  # where the reference's partition accepts the position
        rest = get_partitions('orig', samples, ncn, nodes, ranks, workers, batch,
                              limit - limit % nodes)
        assert not (rest != -1).any()


@given(samples=st.integers(1, 3000), data=st.data(), ranks=st.integers(1, 4),
       workers=st.integers(1, 3), batch=st.integers(1, 5), drop=st.integers(0, 200),
       shuffled=st.booleans())
@settings(max_examples=300, deadline=None)
def test_orig_groups_of_nodes_equal_the_node_by_node_layout(
        samples: int, data: st.DataObject, ranks: int, workers: int, batch: int, drop: int,
        shuffled: bool) -> None:
    """Short node sequences are read and laid out a group of nodes at a time; long ones node by
    node: both must give the same partition (with and without an id table, more or fewer
    physical than canonical nodes, padding columns, short rows and the cyclic fallback)."""
    from streaming.order.partition import orig

    base = data.draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
    ncn, nodes = (base, base * data.draw(st.sampled_from([1, 2, 3]))) if data.draw(
        st.booleans()) else (base * data.draw(st.sampled_from([1, 2, 5])), base)
    table = np.random.default_rng(samples).permutation(samples) if shuffled else None
    args = (samples, ncn, nodes, ranks, workers, batch, drop)
    def outcome() -> Any:  # the partition, or the reference's error for this geometry
        try:
            return orig.partition_orig(*args, table=table)
        except ValueError as err:
            return str(err)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grouped = outcome()
        saved = orig._GROUP_IDS
        orig._GROUP_IDS = 0  # every node alone
        try:
            alone = outcome()
        finally:
            orig._GROUP_IDS = saved
    if isinstance(grouped, str) or isinstance(alone, str):
        assert grouped == alone  # the same error either way
    else:
        np.testing.assert_array_equal(grouped, alone)


@given(st.lists(st.lists(st.integers(0, 50), max_size=6), min_size=1, max_size=6))
@settings(max_examples=100, deadline=None)
def test_layout_counts_each_streams_samples(shard_sizes: list[list[int]]) -> None:
    """The weights are derived from these counts: a stream without shards counts 0, and each
    stream's count is its own shards' only."""
    from streaming.order.resample import StreamLayout

    counts = StreamLayout.from_shard_sizes(shard_sizes).samples_per_stream
    assert counts.tolist() == [sum(sizes) for sizes in shard_sizes]
