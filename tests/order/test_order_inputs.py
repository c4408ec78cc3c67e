"""Bad inputs: the reference's exception types and messages, never a hang or a silent repeat."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from order_fakes import fake_dataset

from streaming.base.batching import generate_work
from streaming.order import World, get_partitions, get_shuffle
from streaming.order.defaults import (
    check_batching_method,
    check_epoch_size,
    check_sampling_granularity,
    check_sampling_method,
    check_shuffle_seed,
    resolve_num_canonical_nodes,
    resolve_predownload,
    resolve_shuffle_block_size,
)
from streaming.order.sampling import get_sampling
from streaming.order.weighting import StreamWeights, apply_weights, check_stream_weights

W1 = World(1, 1, 1, 0)


@pytest.mark.parametrize('position', range(1, 8))
def test_negative_partition_sizes_are_rejected(position: int) -> None:
    args = ['orig', 100, 2, 2, 2, 2, 2, 0]
    args[position] = -1
    with pytest.raises(ValueError, match='must be non-negative, but got: -1'):
        get_partitions(*args)


@pytest.mark.filterwarnings('ignore::UserWarning')
@pytest.mark.parametrize(('args', 'error', 'message'), [
    (('orig', 100, 0, 1, 1, 1, 1), ZeroDivisionError, 'integer modulo by zero'),
    (('orig', 100, 1, 0, 1, 1, 1), ZeroDivisionError, 'integer modulo by zero'),
    (('orig', 100, 1, 1, 0, 1, 1), ZeroDivisionError, 'integer modulo by zero'),
    (('orig', 100, 1, 1, 1, 0, 1), ZeroDivisionError, 'integer modulo by zero'),
    (('orig', 100, 1, 1, 1, 1, 0), ZeroDivisionError, 'division by zero'),
    (('orig', 0, 1, 1, 1, 1, 1), ZeroDivisionError, 'integer division or modulo by zero'),
    (('orig', 100, 3, 2, 1, 1, 1), ValueError, 'Either canonical or physical nodes must be'),
    (('orig', 100, 2, 1, 1, 1, 1, 102), ValueError,
     r'Resuming further into the dataset \(102\) than it has samples \(100\)'),
    (('relaxed', 100, 2, 3, 2, 1, 1, 0, 2), ValueError,
     'A global batch size of 6 is not evenly divisible by the initial total number of devices'),
    (('orig', 16, 8, 32, 1, 1, 1), ValueError,
     r'could not broadcast input array from shape \(8,0\) into shape \(8,2\)'),
    (('nope', 100, 1, 1, 1, 1, 1), KeyError, "Unknown partition_algo 'nope'; known: orig"),
])
def test_partition_errors(args: tuple, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        get_partitions(*args)


def test_partition_warns_instead_of_silent_repeats() -> None:
    with pytest.warns(UserWarning, match='Trying to partition 3 samples over 4 canonical nodes'):
        get_partitions('orig', 3, 4, 1, 1, 1, 1)
    with pytest.warns(UserWarning, match='Attempting to partition 3 samples per physical node'):
        work = get_partitions('orig', 3, 1, 1, 8, 1, 1)  # epoch smaller than the world
    assert sorted(set(work.reshape(-1).tolist())) == [0, 1, 2]


def test_shuffle_errors() -> None:
    with pytest.raises(KeyError, match="Unknown shuffle_algo 'py3x'; known: naive, py1b"):
        get_shuffle('py3x', np.array([5]), 1, 0, 0)
    with pytest.raises(ValueError, match='number of samples assigned to a canonical node is 0'):
        get_shuffle('py1e', np.array([1], np.int64), 2, 0, 0)
    with pytest.warns(UserWarning, match='^Shuffle block size was smaller than shard size'):
        get_shuffle('py1e', np.array([50, 50], np.int64), 1, 0, 0, 10)


@pytest.mark.parametrize(('args', 'message'), [
    ((-1, 1, 0, 0), '`choose` must be a non-negative integer, but got: -1.'),
    ((5, 0, 0, 0), '`granularity` must be a positive integer, but got: 0.'),
    ((5, 1, -2, 0), '`seed` must be a non-negative integer, but got: -2.'),
    ((5, 1, 0, -1), '`epoch` must be a non-negative integer, but got: {epoch}.'),
])
def test_sampling_errors(args: tuple, message: str) -> None:
    with pytest.raises(ValueError) as info:
        get_sampling(np.array([3, 4]), *args, True)
    assert str(info.value) == message


def test_weight_errors() -> None:
    with pytest.raises(ValueError, match='^At most one of `proportion`, `repeat`, and `choose`'):
        check_stream_weights(1.0, 2.0, None)
    with pytest.raises(ValueError, match='^`repeat` must be non-negative$'):
        check_stream_weights(None, -1.0, None)
    samples = np.array([5, 9])
    with pytest.raises(ValueError, match=r'at most one of .* \(error in stream 1\)'):
        apply_weights([StreamWeights(), StreamWeights(1.0, 2.0)], samples, None, 0)
    with pytest.raises(ValueError, match=r'^Relative .* incompatible .* \(error in stream 1\)$'):
        apply_weights([StreamWeights(proportion=1), StreamWeights(choose=3)], samples, None, 0)
    with pytest.raises(ValueError, match='^Only provide `choose` when weighting streams rel'):
        apply_weights([StreamWeights(repeat=1), StreamWeights(choose=3)], samples, 5, 0)
    for size in (None, 2, 7):  # 2 streams, 2 samples: the reference would silently go wrong
        with pytest.raises(ValueError, match='^Cannot take a larger sample than population.*'
                                             'sum to 0.0; give at least one stream a positive'):
            apply_weights([StreamWeights(proportion=0.0)] * 2, samples, size, 0)


def test_apply_weights_examples() -> None:
    samples = np.full(4, 2)
    derived, size = apply_weights([StreamWeights(choose=c) for c in (0, 2, 4, 6)], samples,
                                  None, 0)
    assert size == 12
    assert [(float(w.proportion), float(w.repeat), int(w.choose)) for w in derived] == [
        (i / 6, i, 2 * i) for i in range(4)]
    derived, size = apply_weights([StreamWeights(proportion=1)] * 4, samples, None, 0)
    assert size == 8 and {(w.proportion, w.repeat, w.choose) for w in derived} == {(0.25, 1, 2)}


def test_batching_errors() -> None:
    two = [[5, 1], [5, 4]]
    dataset = fake_dataset(two, [{'proportion': 0.02}, {'proportion': 0.98}], epoch_size=100,
                           batch_size=2)
    with pytest.raises(ValueError, match='^Number of samples for stream 0 is 0 because the por'):
        generate_work('stratified', dataset, W1, 0, 0)
    small = fake_dataset(two, batch_size=8)
    with pytest.raises(ValueError, match='^Stream with index 0 does not have an adequate number '
                                         'of samples to construct a complete global batch'):
        generate_work('per_stream', small, W1, 0, 0)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with pytest.raises(ValueError, match='^Stream with index 0 does not have an adequate '
                                             'number of samples to construct even a single'):
            generate_work('device_per_stream', fake_dataset(two, batch_size=9), W1, 0, 0)
    odd = fake_dataset(two, batch_size=1, num_canonical_nodes=3)
    with pytest.raises(ValueError, match='^For `device_per_stream` batching, num_canonical_nod'):
        generate_work('device_per_stream', odd, World(2, 1, 1, 0), 0, 0)
    tiny = fake_dataset(two, batch_size=1, shuffle=True, shuffle_block_size=1)
    with pytest.raises(ValueError, match='^Samples from stream 0 are not being used. Please'):
        generate_work('device_per_stream', tiny, W1, 0, 0)
    with pytest.raises(KeyError):
        generate_work('diagonal', small, W1, 0, 0)


def test_dataset_preconditions() -> None:
    dataset = fake_dataset([[5] * 6], batch_size=4)
    dataset.num_canonical_nodes = None
    with pytest.raises(RuntimeError, match='^`num_canonical_nodes` can never be None'):
        generate_work('random', dataset, W1, 0, 0)
    dataset = fake_dataset([[5] * 6])
    with pytest.raises(ValueError, match='^Please pass `batch_size` to StreamingDataset'):
        generate_work('random', dataset, W1, 0, 0)
    dataset = fake_dataset([[5] * 6], batch_size=4, shuffle=True)
    dataset.shuffle_block_size = None
    with pytest.raises(TypeError, match="^Dataset `shuffle_block_size` must be an integer. Got "
                                        "<class 'NoneType'> instead.$"):
        generate_work('random', dataset, W1, 0, 0)


@pytest.mark.parametrize("algo", ["py1b", "py1br", "py1e"])
@pytest.mark.parametrize("block", [0, -3])
def test_a_block_shuffle_needs_a_positive_block(algo: str, block: int, tmp_path) -> None:
    """The reference met numpy's "high <= 0" (py1b looped on `range(0, n, 0)`); the shard
    shuffles and naive ignore the block size, as there."""
    from streaming import MDSWriter, StreamingDataset

    dataset = fake_dataset([[5] * 6], batch_size=4, shuffle=True, shuffle_algo=algo,
                           shuffle_block_size=block)
    message = r"^`shuffle_block_size` must be a positive number of samples for shuffle_algo "
    with pytest.raises(ValueError, match=message + rf"'{algo}', but got: {block}\.$"):
        generate_work('random', dataset, W1, 0, 0)
    with MDSWriter(out=str(tmp_path), columns={"a": "int"}) as writer:
        for i in range(10):
            writer.write({"a": i})
    with pytest.raises(ValueError, match=message):
        list(StreamingDataset(local=str(tmp_path), shuffle=True, shuffle_algo=algo,
                              shuffle_block_size=block, batch_size=2))
    for algo in ("naive", "py1s", "py2s"):
        got = StreamingDataset(local=str(tmp_path), shuffle=True, shuffle_algo=algo,
                               shuffle_block_size=block, batch_size=2)
        assert {s["a"] for s in got} == set(range(10))  # py1s/py2s pad 64 canonical nodes


def test_defaults() -> None:
    assert resolve_num_canonical_nodes(None, 'py1e', 3) == 3
    assert resolve_num_canonical_nodes(0, 'py1s', 2) == 128
    assert resolve_num_canonical_nodes(None, 'py2s', 1) == 64
    assert resolve_num_canonical_nodes(5, 'py1s', 1) == 5
    assert resolve_shuffle_block_size(None, 1) == 4_000_000
    assert resolve_shuffle_block_size(None, 64) == 1 << 18
    assert resolve_shuffle_block_size(None, None) == 1 << 18
    assert resolve_shuffle_block_size(10, 8) == 10
    assert resolve_predownload(None, 4) == 32 and resolve_predownload(None, None) == 64
    with pytest.warns(UserWarning, match=r'^predownload < batch_size \(2 < 4\)\.This may result '
                                         'in slower batch time. Recommendation is to set'):
        assert resolve_predownload(2, 4) == 2


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match='^Invalid sampling method: x. Must be one of `balanced` '
                                         'or `fixed`.$'):
        check_sampling_method('x')
    with pytest.raises(ValueError, match='^`sampling_granularity` must be a positive integer, '
                                         'but got: 0.$'):
        check_sampling_granularity(0)
    with pytest.raises(ValueError, match='^Invalid batching method: y. Must be one of `random`, '
                                         '`stratified`, `per_stream`, or `device_per_stream`.$'):
        check_batching_method('y')
    with pytest.raises(ValueError, match='^`shuffle_seed` must be a non-negative integer'):
        check_shuffle_seed(-1)
    with pytest.raises(ValueError, match='^Epoch size cannot be negative. Received -5.$'):
        check_epoch_size(-5)
    assert check_epoch_size(0) is None and check_epoch_size(7) == 7


def test_stratified_ties_go_to_the_later_streams_on_any_numpy() -> None:
    """300 equal streams and a global batch of 750: 150 streams get a third sample. numpy's
    default sort placed ties differently from one version to the next (2.1 and 2.4 disagree
    here), so a run's order could change with a numpy upgrade; the stable sort does not, and
    agrees with the default one on small tables (the reference's order there)."""
    import numpy as np

    from streaming.order.batching.stratified import batch_portions

    portions = batch_portions(tuple([1 / 300] * 300), 750)
    assert portions.sum() == 750 and sorted(set(portions.tolist())) == [2, 3]
    assert np.flatnonzero(portions == 3).tolist() == list(range(150, 300))
    small = batch_portions((0.25, 0.25, 0.25, 0.25), 6)  # n <= 16: insertion sort in numpy
    leftovers = 6 * np.full(4, 0.25) - 1
    expected = np.ones(4, np.int64)
    expected[np.flip(np.argsort(leftovers))[:2]] += 1
    assert small.tolist() == expected.tolist() == [1, 1, 2, 2]


@pytest.mark.parametrize("batch_size", [np.int64(4), np.uint8(4), 4])
def test_a_numpy_integer_batch_size_plans_as_an_int(batch_size) -> None:
    """`check_whole` accepts numpy integers; the plan then said "Please pass `batch_size`"
    (an `isinstance(int)` check of its own). The options now hold a plain int."""
    from streaming.order.plan import OrderOptions
    options = OrderOptions(batch_size=batch_size, num_canonical_nodes=np.int32(2))
    assert type(options.batch_size) is int and options.batch_size == 4
    assert type(options.num_canonical_nodes) is int
    with pytest.raises(ValueError, match="`batch_size` must be a positive integer"):
        OrderOptions(batch_size=np.bool_(True))
