"""`World` and the env-only rank helpers of `streaming.base.distributed`."""

from __future__ import annotations

import pytest

from streaming.base import distributed
from streaming.order.world import World

FIELDS = ['node', 'num_nodes', 'is_multinode', 'rank', 'num_ranks', 'rank_of_node',
          'ranks_per_node', 'worker', 'num_workers', 'worker_of_node', 'workers_per_node',
          'worker_of_rank', 'workers_per_rank', 'is_leader', 'is_local_leader']


def test_derived_fields() -> None:
    world = World(num_nodes=2, ranks_per_node=4, workers_per_rank=3, worker=17)
    assert list(world.to_json()) == FIELDS
    assert world.to_json() == {
        'node': 1, 'num_nodes': 2, 'is_multinode': True, 'rank': 5, 'num_ranks': 8,
        'rank_of_node': 1, 'ranks_per_node': 4, 'worker': 17, 'num_workers': 24,
        'worker_of_node': 5, 'workers_per_node': 12, 'worker_of_rank': 2,
        'workers_per_rank': 3, 'is_leader': False, 'is_local_leader': False}
    assert World(1, 1, 1, 0).is_leader and World(2, 2, 2, 4).is_local_leader
    assert world.copy() == world and world.copy() is not world


def test_replicate() -> None:
    world = World(2, 4, 2, 11)  # rank 5, worker 1 of its rank
    replicated = world.replicate(2)
    assert (replicated.num_nodes, replicated.ranks_per_node, replicated.rank,
            replicated.worker) == (1, 4, 2, 5)
    odd = World(1, 6, 1, 0).replicate(4 // 2 * 3)  # 6 ranks / 6 -> 1 rank on 1 node
    assert (odd.num_nodes, odd.ranks_per_node) == (1, 1)
    with pytest.raises(ValueError, match='^Replication factor must be positive.$'):
        world.replicate(0)
    with pytest.raises(ValueError, match='^World size must be divisible by your replication'):
        world.replicate(3)


def test_from_env() -> None:
    env = {'RANK': '5', 'WORLD_SIZE': '8', 'LOCAL_WORLD_SIZE': '4'}
    world = World.from_env(env, worker_info=(1, 2))
    assert world == World(2, 4, 2, 11)
    assert World.from_env({}) == World(1, 1, 1, 0)
    with pytest.raises(ZeroDivisionError):
        World.from_env({'LOCAL_WORLD_SIZE': '0'})


def test_zero_sizes_fail_like_the_reference() -> None:
    with pytest.raises(ZeroDivisionError):
        World(1, 0, 1, 0)
    with pytest.raises(ZeroDivisionError):
        World(1, 1, 0, 0)


def test_detect_uses_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('RANK', '3')
    monkeypatch.setenv('WORLD_SIZE', '4')
    monkeypatch.setenv('LOCAL_WORLD_SIZE', '2')
    world = World.detect()  # main process: worker 0 of 1
    assert world == World(2, 2, 1, 3)
    assert world.detect_workers() == world


def test_env_rank_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE'):
        monkeypatch.delenv(name, raising=False)
    assert (distributed.get_rank(), distributed.get_world_size(), distributed.get_local_rank(),
            distributed.get_local_world_size()) == (0, 1, 0, 1)
    monkeypatch.setenv('RANK', '7')
    monkeypatch.setenv('WORLD_SIZE', '9')
    monkeypatch.setenv('LOCAL_RANK', '1')
    monkeypatch.setenv('LOCAL_WORLD_SIZE', '3')
    assert (distributed.get_rank(), distributed.get_world_size(), distributed.get_local_rank(),
            distributed.get_local_world_size()) == (7, 9, 1, 3)


def test_collectives_without_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('WORLD_SIZE', '1')
    distributed.barrier()
    assert distributed.all_gather_object({'a': 1}) == [{'a': 1}]
    assert distributed.maybe_init_dist() is False
    monkeypatch.setenv('WORLD_SIZE', '3')
    with pytest.raises(RuntimeError, match=r'^The world_size\(3\) > 1, but the distributed'):
        distributed.all_gather_object(1)
