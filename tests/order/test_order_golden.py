"""Differential tests against fixtures recorded from MosaicML Streaming 0.13.0.

`data/order_golden.json.gz` comes from `data/make_order_golden.py` (run with the reference's
interpreter); every case must give the same ids (compared by sha256 of int64 bytes) or the same
exception type and message. `work` cases were planned by real reference StreamingDatasets over
MDS files; here they are rebuilt from the shard sizes and stream weights alone.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from order_fakes import fake_dataset

from streaming.base.batching import generate_work
from streaming.order import World, get_partitions, get_sampling, get_shuffle
from streaming.order.resample import StreamLayout, resample_streams
from streaming.order.weighting import StreamWeights, apply_weights

GOLDEN = json.loads(gzip.decompress(
    (Path(__file__).parent / 'data' / 'order_golden.json.gz').read_bytes()))


def _encode(value: np.ndarray) -> dict[str, Any]:
    array = np.ascontiguousarray(value, dtype='<i8')
    return {'shape': list(array.shape),
            'sha': hashlib.sha256(array.tobytes()).hexdigest()[:20]}


def _check(expected: dict[str, Any], run: Callable[[], np.ndarray]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        if 'error' in expected:
            with pytest.raises(Exception) as info:
                run()
            assert type(info.value).__name__ == expected['error']
            assert str(info.value) == expected['msg']
            return
        got = run()
    if 'data' in expected:
        assert np.asarray(got).reshape(-1).tolist() == expected['data']
    assert _encode(got) == {'shape': expected['shape'], 'sha': expected['sha']}


def _ids(kind: str) -> list[str]:
    return [f'{kind}{i}' for i in range(len(GOLDEN[kind]))]


@pytest.mark.parametrize('case', GOLDEN['partition'], ids=_ids('partition'))
def test_partition(case: dict[str, Any]) -> None:
    _check(case['out'], lambda: get_partitions(*case['args']))


@pytest.mark.parametrize('case', GOLDEN['shuffle'], ids=_ids('shuffle'))
def test_shuffle(case: dict[str, Any]) -> None:
    algo, sizes, *rest = case['args']
    _check(case['out'], lambda: get_shuffle(algo, np.array(sizes, np.int64), *rest))


@pytest.mark.parametrize('case', GOLDEN['sampling'], ids=_ids('sampling'))
def test_sampling(case: dict[str, Any]) -> None:
    sizes, *rest = case['args']
    _check(case['out'], lambda: get_sampling(np.array(sizes, np.int64), *rest))


@pytest.mark.parametrize('case', GOLDEN['weights'], ids=_ids('weights'))
def test_weights(case: dict[str, Any]) -> None:
    weights = [StreamWeights(**w) for w in case['weights']]
    samples = np.array(case['samples'], np.int64)
    expected = case['out']
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        if 'error' in expected:
            with pytest.raises(ValueError, match='') as info:
                apply_weights(weights, samples, case['epoch_size'], case['seed'])
            assert str(info.value) == expected['msg']
            return
        derived, size = apply_weights(weights, samples, case['epoch_size'], case['seed'])
    assert size == expected['epoch_size']
    got = [[float(w.proportion), float(w.repeat), int(w.choose)] for w in derived]
    np.testing.assert_equal(got, expected['derived'])  # NaN-aware, otherwise exact


def _dataset(case: dict[str, Any]) -> Any:
    sizes = case['samples_per_shard']
    bounds = np.cumsum([0] + case['shards_per_stream']).tolist()
    shards = [sizes[begin:end] for begin, end in zip(bounds[:-1], bounds[1:])]
    options = {k: v for k, v in case['options'].items()
               if k not in ('method', 'world', 'epoch', 'sample_in_epoch', 'epoch_seed_change')}
    dataset = fake_dataset(shards, case['weights'], epoch_size=case['epoch_size'],
                           weight_seed=case['construct_seed'], **options)
    dataset.epoch_seed_change = case['options']['epoch_seed_change']
    return dataset


@pytest.mark.parametrize('case', GOLDEN['work'], ids=_ids('work'))
def test_generate_work(case: dict[str, Any]) -> None:
    dataset, options = _dataset(case), case['options']
    world = World(*options['world'])
    _check(case['out'], lambda: generate_work(options['method'], dataset, world,
                                              options['epoch'], options['sample_in_epoch']))


@pytest.mark.parametrize('case', GOLDEN['work'][::3], ids=_ids('work')[::3])
def test_resample_streams(case: dict[str, Any]) -> None:
    dataset, options = _dataset(case), case['options']
    layout = StreamLayout(dataset.samples_per_shard, dataset.sample_offset_per_shard,
                          dataset.shard_offset_per_stream, dataset.shards_per_stream)
    chooses = [stream.choose for stream in dataset.streams]
    stream_id = 0 if options['method'] != 'random' else None
    _check(case['resampled'], lambda: np.concatenate(resample_streams(
        layout, chooses, dataset.sampling_granularity, dataset.shuffle_seed, options['epoch'],
        dataset.sampling_method == 'balanced', dataset.epoch_seed_change, stream_id)))


def test_golden_covers_every_category() -> None:
    counts = {kind: len(cases) for kind, cases in GOLDEN.items()}
    assert counts['partition'] >= 300 and counts['shuffle'] >= 300 and counts['work'] >= 200
    methods = {case['options']['method'] for case in GOLDEN['work'] if 'error' not in case['out']}
    assert methods == {'random', 'stratified', 'per_stream', 'device_per_stream'}
    algos = {case['args'][0] for case in GOLDEN['shuffle']}
    assert algos == {'naive', 'py1s', 'py2s', 'py1br', 'py1e', 'py1b'}
