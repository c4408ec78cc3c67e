"""Parquet in place under real multi-node jobs (gloo on 127.0.0.1, a cache per node): every
row once per epoch in the order of one process, and resumption on other worlds."""

from __future__ import annotations

import json
import os

import pytest

from streaming import index_parquet
from tests.dataset.test_multinode import elastic_resume, every_sample_once
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
    reports = every_sample_once(remote, tmp_path, NUM)
    # each node fetched each shard's byte ranges (its row groups and its file's footer) at
    # most once: never more than one copy of every shard
    with open(os.path.join(remote, "index.json")) as f:
        shard_bytes = sum(e["raw_data"]["bytes"] for e in json.load(f)["shards"])
    for node in range(2):
        fetched = next(r["egress"]["bytes"] for r in reports if r["rank"] // 2 == node)
        assert 0 < fetched <= shard_bytes


def test_elastic_resume_on_other_worlds(remote, tmp_path) -> None:
    elastic_resume(remote, tmp_path, NUM)
