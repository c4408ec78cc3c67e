"""`streaming.launch_env`: the launch variables, filled in where a launcher left RANK out.
(The two-process run under torch.distributed is in tests/dataset/test_multinode.py.)"""

from __future__ import annotations

import pytest

from streaming.launch_env import MissingRankError, launch_env, machine_key, ranks_per_machine


def test_a_launcher_that_sets_rank_is_taken_at_its_word() -> None:
    env = {"RANK": "3", "WORLD_SIZE": "4"}  # LOCAL_WORLD_SIZE missing: one rank per node
    assert launch_env(env) is env


def test_one_process_needs_nothing() -> None:
    for env in ({}, {"WORLD_SIZE": "1"}, {"WORLD_SIZE": ""}, {"WORLD_SIZE": "x"}):
        assert launch_env(env) is env


def test_several_processes_without_rank_or_process_group_are_refused() -> None:
    with pytest.raises(MissingRankError, match=r"^WORLD_SIZE is 2 but RANK is not set .* Set "
                                               r"RANK and LOCAL_WORLD_SIZE"):
        launch_env({"WORLD_SIZE": "2", "LOCAL_RANK": "1"})
    assert isinstance(MissingRankError("x"), ValueError)


@pytest.mark.parametrize("keys, rank, local", [
    (["a", "a", "b", "b"], 2, 2),
    (["a", "a", "a", "a"], 1, 4),
    (["a", "b", "c"], 2, 1),
])
def test_ranks_per_machine(keys: list[str], rank: int, local: int) -> None:
    assert ranks_per_machine(keys, rank) == local


@pytest.mark.parametrize("keys", [["a", "a", "b"], ["a", "b", "a", "b"]])
def test_machines_that_are_not_nodes_are_refused(keys: list[str]) -> None:
    """Uneven machines, or a machine's ranks not consecutive: `rank // ranks_per_node` would
    not be its node."""
    with pytest.raises(MissingRankError, match="every node must hold the same number of "
                                               "consecutive ranks"):
        ranks_per_machine(keys, 0)


def test_the_machine_key_names_host_boot_and_shared_state() -> None:
    key = machine_key()
    assert key == machine_key() and len(key.split("|")) == 4 and all(key.split("|")[:1])
