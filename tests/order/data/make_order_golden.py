"""Regenerate `order_golden.json.gz` by running MosaicML Streaming 0.13.0 (the reference).

Run with the reference's interpreter from outside the repo (so `import streaming` is the
reference, not us):

    cd / && /path/to/refvenv/bin/python /work/main/tests/order/data/make_order_golden.py

Records, for seeded random inputs: partitions, shuffles (py1b from 0.10's block loop on top of
the reference's own `divide_spans`), `get_sampling`, `Stream.apply_weights`, and end-to-end
`generate_work` / `resample_streams` on real `StreamingDataset`s over small MDS datasets (shard
sizes chosen per case), including the errors raised. Outputs larger than `FULL` elements are
stored as a sha256 prefix of their little-endian int64 bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'order_golden.json.gz')
FULL = 64
SEED = 20261122


def encode(value: np.ndarray) -> dict[str, Any]:
    array = np.ascontiguousarray(value, dtype='<i8')
    out: dict[str, Any] = {'shape': list(array.shape),
                           'sha': hashlib.sha256(array.tobytes()).hexdigest()[:20]}
    if array.size <= FULL:
        out['data'] = array.reshape(-1).tolist()
    return out


def capture(fn: Callable[[], Any]) -> dict[str, Any]:
    try:
        return encode(fn())
    except Exception as error:  # noqa: BLE001 - recording the reference's errors is the point
        return {'error': type(error).__name__, 'msg': str(error)}


def partitions(rnd: random.Random) -> list[dict[str, Any]]:
    from streaming.base.partition import get_partitions
    cases = []
    for _ in range(400):
        algo = rnd.choice(['orig', 'relaxed'])
        n = rnd.choice([rnd.randint(0, 12), rnd.randint(1, 80), rnd.randint(1, 3000)])
        ncn = rnd.choice([1, 2, 3, 4, 6, 8, 12, 16, 64])
        nodes = rnd.choice([1, 2, 3, 4, 6, 8, 16])
        args = [algo, n, ncn, nodes, rnd.randint(1, 8), rnd.randint(1, 4), rnd.randint(1, 8),
                rnd.choice([0, 0, rnd.randint(0, n + 20)]),
                rnd.choice([None, rnd.choice([1, 2, 3, 4, 6, 8])]) if algo == 'relaxed' else None]
        if rnd.random() < 0.05:  # zero sizes: the reference's ZeroDivisionErrors
            args[rnd.randint(2, 6)] = 0
        cases.append({'args': args, 'out': capture(lambda args=args: get_partitions(*args))})
    return cases


def get_shuffle_py1b(shard_sizes: np.ndarray, num_canonical_nodes: int, seed: int, epoch: int,
                     block_size: int = 1 << 18) -> np.ndarray:
    """0.10's py1b: the reference's span setup, then fixed blocks shuffled per canonical node."""
    from streaming.base.shuffle.py1s import divide_spans
    spans, num_samples = [], 0
    for size in shard_sizes:
        spans.append((num_samples, num_samples + size))
        num_samples += size
    np.random.default_rng(seed).shuffle(spans)
    spans, super_spans = divide_spans(spans, num_samples, num_canonical_nodes)
    epoch_rng = np.random.default_rng(seed + epoch)
    for begin, end in super_spans:
        part = spans[begin:end]
        epoch_rng.shuffle(part)
        spans[begin:end] = part
    ids = np.empty(num_samples, np.int64)
    offset = 0
    for super_begin, super_end in super_spans:
        super_offset = offset
        for begin, end in spans[super_begin:super_end]:
            ids[offset:offset + end - begin] = np.arange(begin, end)
            offset += end - begin
        for start in range(super_offset, offset, block_size):
            epoch_rng.shuffle(ids[start:min(start + block_size, offset)])
    return ids


def shuffles(rnd: random.Random) -> list[dict[str, Any]]:
    from streaming.base.shuffle import get_shuffle
    cases = []
    for algo in ['naive', 'py1s', 'py2s', 'py1br', 'py1e', 'py1b']:
        for i in range(60):
            count = rnd.choice([0, 1, rnd.randint(1, 8), rnd.randint(1, 60)])
            big = i >= 54  # a few sizes large enough for the fast paths (argsort, spans)
            sizes = [rnd.randint(1, 5000) if big else rnd.choice(
                [0, 1, 2, rnd.randint(1, 12), rnd.randint(1, 200)]) for _ in range(count)]
            args = [algo, sizes, rnd.choice([1, 2, 3, 4, 5, 8, 16, 64]), rnd.randint(0, 99999),
                    rnd.randint(0, 6), rnd.choice([1, 2, 3, 7, 50, 1000, 1 << 18])]

            def run(args: list[Any] = args) -> np.ndarray:
                get = get_shuffle_py1b if args[0] == 'py1b' else \
                    (lambda *a: get_shuffle(args[0], *a))
                return get(np.array(args[1], np.int64), *args[2:])

            cases.append({'args': args, 'out': capture(run)})
    return cases


def samplings(rnd: random.Random) -> list[dict[str, Any]]:
    from streaming.base.sampling import get_sampling
    cases = []
    for _ in range(200):
        sizes = [rnd.choice([1, rnd.randint(1, 30), rnd.randint(1, 700)])
                 for _ in range(rnd.randint(1, 12))]
        total = sum(sizes)
        args = [sizes, rnd.choice([0, total, 3 * total, rnd.randint(0, 4 * total)]),
                rnd.choice([1, 1, 2, 5, 64]), rnd.choice([0, 7, 9176]), rnd.randint(0, 3),
                rnd.choice([True, False])]
        cases.append({'args': args, 'out': capture(
            lambda args=args: get_sampling(np.array(args[0], np.int64), *args[1:]))})
    return cases


def weightings(rnd: random.Random) -> list[dict[str, Any]]:
    from streaming.base.stream import Stream
    cases = []
    for _ in range(80):
        num = rnd.randint(1, 5)
        kind = rnd.choice(['proportion', 'repeat', 'choose', 'none', 'mixed'])
        weights = []
        for _ in range(num):
            pick = rnd.choice(['proportion', 'repeat', 'choose', 'none']) \
                if kind == 'mixed' else kind
            weights.append({} if pick == 'none' else {pick: {
                'proportion': rnd.choice([0.0, 0.5, 1.0, rnd.uniform(0, 3)]),
                'repeat': rnd.choice([0.5, 1.0, 2.0, rnd.uniform(0, 3)]),
                'choose': rnd.randint(0, 40)}[pick]})
        samples = [rnd.randint(1, 30) for _ in range(num)]
        epoch_size = rnd.choice([None, None, 0, rnd.randint(1, 100)])
        seed = rnd.choice([0, 9176, rnd.randint(0, 10**6)])
        streams = [SimpleNamespace(**w) for w in weights]
        try:
            size = Stream.apply_weights(streams, np.array(samples, np.int64), epoch_size, seed)
            out = {'epoch_size': size, 'derived': [
                [float(s.proportion), float(s.repeat), int(s.choose)] for s in streams]}
        except Exception as error:  # noqa: BLE001
            out = {'error': type(error).__name__, 'msg': str(error)}
        cases.append({'weights': weights, 'samples': samples, 'epoch_size': epoch_size,
                      'seed': seed, 'out': out})
    return cases


# End-to-end: one StreamingDataset per dataset config (construction fixes the weights); each
# config is planned under many variations of the order options and worlds.
DATASETS = [
    {'shards': [[5] * 6], 'weights': None, 'epoch_size': None},
    {'shards': [[7, 3, 12, 1, 9]], 'weights': None, 'epoch_size': 20},
    {'shards': [[5, 1], [5, 4]], 'weights': [{'proportion': 1}, {'proportion': 3}],
     'epoch_size': 10},
    {'shards': [[5, 1], [5, 4]], 'weights': [{'repeat': 1.5}, {'choose': 4}], 'epoch_size': None},
    {'shards': [[5, 1], [5, 4]], 'weights': None, 'epoch_size': None},
    {'shards': [[40, 17, 33], [25, 25], [8, 9, 10, 11]],
     'weights': [{'proportion': 0.5}, {'proportion': 0.3}, {'proportion': 0.2}], 'epoch_size': 150},
    {'shards': [[40, 17, 33], [25, 25], [8, 9, 10, 11]],
     'weights': [{'repeat': 0.5}, {}, {'repeat': 2.5}], 'epoch_size': None},
    {'shards': [[100, 60, 77, 13], [50, 50, 50]], 'weights': [{'choose': 123}, {'choose': 31}],
     'epoch_size': None},
    {'shards': [[64] * 8], 'weights': None, 'epoch_size': None},
    {'shards': [[3, 2], [1, 1, 1]], 'weights': [{'proportion': 2}, {'proportion': 1}],
     'epoch_size': 40},
    {'shards': [[30, 31, 29, 10], [12, 12]], 'weights': None, 'epoch_size': 500},
    {'shards': [[1]], 'weights': None, 'epoch_size': None},
]


def write_stream(root: str, sizes: list[int], first: int) -> None:
    from streaming.base.format.mds.writer import MDSWriter
    with MDSWriter(out=root, columns={'v': 'int'}, size_limit=1 << 20) as writer:
        value = first
        for size in sizes:
            for _ in range(size):
                writer.write({'v': value})
                value += 1
            writer.flush_shard()


def variation(rnd: random.Random) -> dict[str, Any]:
    nodes = rnd.choice([1, 1, 2, 3, 4])
    options = {
        'method': rnd.choice(['random', 'random', 'stratified', 'per_stream',
                              'device_per_stream']),
        'world': [nodes, rnd.choice([1, 2, 3]), rnd.choice([1, 2]), 0],
        'epoch': rnd.choice([0, 0, 1, 2]),
        'sample_in_epoch': rnd.choice([0, 0, 0, rnd.randint(0, 30)]),
        'shuffle': rnd.random() < 0.8,
        'shuffle_algo': rnd.choice(['py1e', 'py1e', 'py1br', 'py1s', 'py2s', 'naive']),
        'shuffle_seed': rnd.choice([9176, 42, rnd.randint(0, 10**5)]),
        'shuffle_block_size': rnd.choice([1 << 18, 10, 50, 7]),
        'num_canonical_nodes': rnd.choice([nodes, 2 * nodes, 4, 1, 6]),
        'batch_size': rnd.choice([1, 2, 3, 4, 8]),
        'sampling_method': rnd.choice(['balanced', 'fixed']),
        'sampling_granularity': rnd.choice([1, 1, 2, 5]),
        'partition_algo': rnd.choice(['relaxed', 'relaxed', 'orig']),
        'initial_physical_nodes': rnd.choice([None, None, 1, 2, 3]),
    }
    options['epoch_seed_change'] = options['shuffle'] and options['sampling_method'] == 'balanced'
    return options


def dataset_cases(index: int) -> list[dict[str, Any]]:
    """Build dataset config `index` and plan it under many variations (run in a subprocess)."""
    from streaming.base import Stream, StreamingDataset
    from streaming.base.batching import generate_work
    from streaming.base.world import World
    config = DATASETS[index]
    rnd = random.Random(SEED + index)
    construct_seed = rnd.choice([9176, 17])
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        first = 0
        streams = []
        for i, sizes in enumerate(config['shards']):
            root = os.path.join(tmp, f'stream{i}')
            write_stream(root, sizes, first)
            first += sum(sizes)
            weights = (config['weights'] or [{}] * len(config['shards']))[i]
            streams.append(Stream(local=root, **weights))
        dataset = StreamingDataset(streams=streams, epoch_size=config['epoch_size'],
                                   shuffle_seed=construct_seed, batch_size=4)
        for _ in range(24):
            options = variation(rnd)
            for key in ('shuffle', 'shuffle_algo', 'shuffle_seed', 'shuffle_block_size',
                        'num_canonical_nodes', 'batch_size', 'sampling_method',
                        'sampling_granularity', 'partition_algo', 'initial_physical_nodes',
                        'epoch_seed_change'):
                setattr(dataset, key, options[key])
            world = World(*options['world'])
            method, epoch, start = options['method'], options['epoch'], options['sample_in_epoch']
            out = capture(lambda: generate_work(method, dataset, world, epoch, start))  # noqa: B023
            stream = 0 if method != 'random' else None
            resampled = capture(
                lambda: np.concatenate(dataset.resample_streams(epoch, stream)))  # noqa: B023
            cases.append({'dataset': index, 'construct_seed': construct_seed,
                          'weights': config['weights'], 'epoch_size': config['epoch_size'],
                          'samples_per_shard': dataset.samples_per_shard.tolist(),
                          'shards_per_stream': dataset.shards_per_stream.tolist(),
                          'options': options, 'out': out, 'resampled': resampled})
    return cases


def main() -> None:
    warnings.simplefilter('ignore')
    logging.disable(logging.CRITICAL)
    if len(sys.argv) == 3 and sys.argv[1] == '--dataset':
        print(json.dumps(dataset_cases(int(sys.argv[2]))))
        return
    rnd = random.Random(SEED)
    golden = {'partition': partitions(rnd), 'shuffle': shuffles(rnd),
              'sampling': samplings(rnd), 'weights': weightings(rnd), 'work': []}
    for index in range(len(DATASETS)):  # a process per dataset: the reference leaks shm fds
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), '--dataset', str(index)],
                              capture_output=True, text=True, check=True, cwd='/')
        golden['work'].extend(json.loads(proc.stdout.strip().splitlines()[-1]))
    with gzip.open(OUT, 'wt') as f:
        json.dump(golden, f, separators=(',', ':'))
    print({key: len(value) for key, value in golden.items()}, os.path.getsize(OUT), 'bytes')


if __name__ == '__main__':
    main()
