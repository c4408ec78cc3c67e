"""Ranks of a job that build a dataset with different order arguments are told so at once
(`streaming.coord.job_agreement`), with real processes over torch.distributed (gloo, loopback),
each simulated node with its own cache; and jobs that differ only in what cannot change the
order, or that mean each rank to read its own data, run as in the reference."""

from __future__ import annotations

import os

import pytest

from tests.dataset.conftest import write_ints
from tests.dataset.test_multinode import run_job

pytestmark = pytest.mark.slow

WORKER = os.path.join(os.path.dirname(__file__), "agreement_worker.py")


def _run(plans: list[list[dict]], tmp_path, ranks_per_node: int = 1, **job) -> list[dict]:
    job = dict(cache=str(tmp_path / "c"), plans=plans, **job)
    return run_job(len(plans) // ranks_per_node, ranks_per_node, job, tmp_path, worker=WORKER)


@pytest.fixture(scope="module")
def remotes(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("agree")
    return {"train": write_ints(str(root / "train"), range(200)),
            "val": write_ints(str(root / "val"), range(1000, 1060)),
            "own": write_ints(str(root / "own"), range(2000, 2120))}


def _train(remotes: dict[str, str], seed: int, **spec) -> dict:
    return dict(name="train", remote=remotes["train"], seed=seed, **spec)


def test_a_rank_with_another_seed_is_refused_naming_it(remotes, tmp_path) -> None:
    reports = _run([[_train(remotes, 7)], [_train(remotes, 8)]], tmp_path)
    errors = [r["error"] for r in reports if "error" in r]
    assert len(errors) == 1  # the later of the two to arrive; the other built first
    assert "every rank must pass the same" in errors[0].lower()
    assert ("shuffle_seed=8 on rank 1 but 7 on rank 0" in errors[0]
            or "shuffle_seed=7 on rank 0 but 8 on rank 1" in errors[0])


@pytest.mark.parametrize("first", [0, 1])
def test_the_rank_that_went_on_fails_with_the_refusal_instead_of_waiting(remotes, tmp_path,
                                                                           first: int) -> None:
    """Two ranks of one node: the one refused exits, and the other, which built first and
    waits for it at the epoch's barrier, fails with the refusal (it waited with no limit), even
    when the one refused is rank 0, whose exit takes the job's store with it."""
    reports = _run([[_train(remotes, 7)], [_train(remotes, 8)]], tmp_path, ranks_per_node=2,
                   first=first)
    refused = [r for r in reports if "error" in r]
    went_on = [r for r in reports if "iter_error" in r]
    assert len(refused) == 1 and len(went_on) == 1, reports
    assert "shuffle_seed=" in went_on[0]["iter_error"]
    assert "different arguments" in went_on[0]["iter_error"]


@pytest.mark.parametrize("peek", [False, True], ids=["same", "rank0-peeks-first"])
def test_ranks_with_the_same_arguments_split_the_epoch(remotes, tmp_path, peek: bool) -> None:
    """A dataset only rank 0 builds, from another line, is compared with nothing; a seed given
    as a numpy integer (`rng.integers`) is compared as the number it is."""
    plans = [[_train(remotes, 7, numpy=True)], [_train(remotes, 7)]]
    reports = _run(plans, tmp_path, peek=peek)
    assert all("ids" in r for r in reports), reports
    assert sorted(reports[0]["ids"]["train"] + reports[1]["ids"]["train"]) == list(range(200))


def test_datasets_built_in_another_order_on_each_node_are_paired_by_their_data(
        remotes, tmp_path) -> None:
    """Train and val built from one line in a loop, in the order each node lists them: each is
    compared with its own counterpart (they were paired by build order, and refused)."""
    val = dict(name="val", remote=remotes["val"], seed=7)
    reports = _run([[_train(remotes, 7), val], [val, _train(remotes, 7)]], tmp_path)
    assert all("ids" in r for r in reports), reports
    assert sorted(reports[0]["ids"]["train"] + reports[1]["ids"]["train"]) == list(range(200))
    assert sorted(reports[0]["ids"]["val"] + reports[1]["ids"]["val"]) == list(range(1000, 1060))


def test_what_cannot_change_the_order_may_differ(remotes, tmp_path) -> None:
    """A seed per rank on a dataset that is not shuffled, and each rank reading its own data
    whole (replication = world size): both run, as in the reference."""
    plans = [[_train(remotes, 1000, shuffle=False),
              dict(name="mine", remote=remotes["train"], seed=7, replication=2)],
             [_train(remotes, 1001, shuffle=False),
              dict(name="mine", remote=remotes["own"], seed=7, replication=2)]]
    reports = _run(plans, tmp_path)
    assert all("ids" in r for r in reports), reports
    assert sorted(reports[0]["ids"]["train"] + reports[1]["ids"]["train"]) == list(range(200))
    assert sorted(reports[0]["ids"]["mine"]) == list(range(200))
    assert sorted(reports[1]["ids"]["mine"]) == list(range(2000, 2120))


def test_the_check_can_be_turned_off(remotes, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMING_CHECK_RANKS", "0")
    reports = _run([[_train(remotes, 7)], [_train(remotes, 8)]], tmp_path)
    assert all("ids" in r for r in reports), reports
