"""Ranks of a job that build a dataset with different order arguments are told so at once
(`streaming.coord.job_agreement`), with real processes over torch.distributed (gloo, loopback),
one rank per simulated node, each with its own cache."""

from __future__ import annotations

import os

import pytest

from tests.dataset.conftest import write_ints
from tests.dataset.test_multinode import run_job

pytestmark = pytest.mark.slow

WORKER = os.path.join(os.path.dirname(__file__), "agreement_worker.py")


def _run(job: dict, tmp_path) -> list[dict]:
    return run_job(2, 1, job, tmp_path, worker=WORKER)  # two nodes of one rank


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> str:
    return write_ints(str(tmp_path_factory.mktemp("agree") / "remote"), range(200))


def test_a_rank_with_another_seed_is_refused_naming_it(remote, tmp_path) -> None:
    reports = _run(dict(remote=remote, cache=str(tmp_path / "c"), seeds=[7, 8]), tmp_path)
    errors = [r["error"] for r in reports if "error" in r]
    assert len(errors) == 1  # the later of the two to arrive; the other built first
    assert "shuffle_seed=" in errors[0] and "every rank must pass the same" in errors[0].lower()
    assert ("shuffle_seed=8 here but 7 on rank 0" in errors[0]
            or "shuffle_seed=7 here but 8 on rank 1" in errors[0])


@pytest.mark.parametrize("peek", [False, True], ids=["same", "rank0-peeks-first"])
def test_ranks_with_the_same_arguments_split_the_epoch(remote, tmp_path, peek: bool) -> None:
    """A dataset only rank 0 builds, from another line, is compared with nothing."""
    reports = _run(dict(remote=remote, cache=str(tmp_path / "c"), seeds=[7, 7], peek=peek),
                   tmp_path)
    assert all("ids" in r for r in reports), reports
    assert sorted(reports[0]["ids"] + reports[1]["ids"]) == list(range(200))
