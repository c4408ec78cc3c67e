"""The reference's import paths (`streaming.base.*`) are aliases of our modules (spec §1)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

ALIASES = [
    ('streaming.base.world', 'World', 'streaming.order.world'),
    ('streaming.base.sampling', 'get_sampling', 'streaming.order.sampling'),
    ('streaming.base.partition', 'get_partitions', 'streaming.order.partition'),
    ('streaming.base.partition', 'algos', 'streaming.order.partition'),
    ('streaming.base.partition.orig', 'get_partitions_orig', 'streaming.order.partition.orig'),
    ('streaming.base.partition.relaxed', 'get_partitions_relaxed',
     'streaming.order.partition.relaxed'),
    ('streaming.base.shuffle', 'get_shuffle', 'streaming.order.shuffle'),
    ('streaming.base.shuffle', 'algos', 'streaming.order.shuffle'),
    ('streaming.base.shuffle.py1s', 'divide_spans', 'streaming.order.shuffle.py1s'),
] + [('streaming.base.shuffle', f'get_shuffle_{a}', f'streaming.order.shuffle.{a}')
     for a in ('naive', 'py1s', 'py2s', 'py1br', 'py1e', 'py1b')] + [
    ('streaming.base.distributed', name, 'streaming.base.distributed')
    for name in ('get_rank', 'get_world_size', 'get_local_rank', 'get_local_world_size',
                 'barrier', 'broadcast', 'all_gather', 'all_gather_object', 'maybe_init_dist')]


@pytest.mark.parametrize('method', ['random', 'stratified', 'per_stream', 'device_per_stream'])
def test_reference_batching_entries_adapt_the_one_planner_table(method: str) -> None:
    """`streaming.base.batching` keeps the reference's dataset-reading entry points, each built
    from `streaming.order.batching.planners` (one table), never a second implementation."""
    from streaming.base import batching
    from streaming.order.batching import planners

    module = importlib.import_module(f'streaming.base.batching.{method}')
    entry = getattr(module, f'generate_work_{method}_batching')
    assert batching.batching_methods.keys() == planners.keys()
    assert planners[method].__name__ in (entry.__doc__ or '')
    assert planners[method].__name__ in (batching.batching_methods[method].__doc__ or '')


@pytest.mark.parametrize(('old', 'name', 'new'), ALIASES)
def test_alias_is_the_real_object(old: str, name: str, new: str) -> None:
    assert getattr(importlib.import_module(old), name) is getattr(importlib.import_module(new),
                                                                  name)


def test_registries_name_the_reference_algorithms() -> None:
    from streaming.base.batching import batching_methods
    from streaming.base.partition import algos as partitions
    from streaming.base.shuffle import algos as shuffles
    assert set(partitions) == {'orig', 'relaxed'}
    assert set(shuffles) == {'naive', 'py1s', 'py2s', 'py1br', 'py1e', 'py1b'}
    assert set(batching_methods) == {'random', 'stratified', 'per_stream', 'device_per_stream'}


def test_planner_imports_without_torch() -> None:
    code = ('import sys, streaming.order, streaming.base.batching, streaming.base.world, '
            'streaming.base.distributed; assert "torch" not in sys.modules')
    subprocess.run([sys.executable, '-c', code], check=True)
