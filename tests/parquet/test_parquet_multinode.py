"""Parquet in place under real multi-node jobs (gloo on 127.0.0.1, a cache per node): every
row once per epoch in the order of one process, and resumption on other worlds."""

from __future__ import annotations

import pytest

from streaming import index_parquet
from tests.dataset.test_multinode import global_order, run_job
from tests.parquet.parquet_data import write_folder

pytestmark = pytest.mark.slow

NUM = 480


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> str:
    out = write_folder(str(tmp_path_factory.mktemp("pqmn") / "remote"), NUM, files=4,
                       row_group=20, columns=["id", "pair", "name"])
    index_parquet(out, shard_bytes=1)  # 24 shards
    return out


def test_every_row_once_and_same_order_as_one_process(remote, tmp_path) -> None:
    job = dict(remote=remote, cache=str(tmp_path / "c22"), batch_size=8, workers=2, ncn=2)
    reports = run_job(2, 2, job, tmp_path)
    seen = [i for r in reports for b in r["batches"] for i in b]
    assert sorted(seen) == list(range(NUM))
    single = run_job(1, 1, dict(job, cache=str(tmp_path / "c11"), batch_size=32, workers=0),
                     tmp_path)
    assert global_order(reports) == global_order(single)


def test_elastic_resume_on_other_worlds(remote, tmp_path) -> None:
    base = dict(remote=remote, batch_size=8, workers=0, ncn=4)
    full = global_order(run_job(1, 1, dict(base, cache=str(tmp_path / "full"), batch_size=32),
                                tmp_path))
    first = run_job(2, 2, dict(base, cache=str(tmp_path / "a"), take=5), tmp_path)
    state = first[0]["state"]
    second = run_job(1, 4, dict(base, cache=str(tmp_path / "b"), take=4, resume=state), tmp_path)
    third = run_job(4, 1, dict(base, cache=str(tmp_path / "c"), resume=second[0]["state"]),
                    tmp_path)
    order = global_order(first) + global_order(second) + global_order(third)
    assert order == full
    assert sorted(i for batch in order for i in batch) == list(range(NUM))
