"""`hf://datasets/ORG/NAME`: the Hub's Parquet files through the same index, on a local
directory laid out like the Hub (see `hub_store.py`; no network)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest

from streaming import Stream, StreamingDataset, index_parquet
from streaming.storage.schemes import get_store_spec, register_store
from tests.parquet.hub_store import ROOT_ENV
from tests.parquet.parquet_data import table_of

URL = "hf://datasets/acme/corpus"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    repo = tmp_path / "hub" / "datasets" / "acme" / "corpus"
    (repo / "data").mkdir(parents=True)
    (repo / "README.md").write_text("---\nconfigs: default\n---\n")
    splits = {"train-00000-of-00002": range(0, 120), "train-00001-of-00002": range(120, 200),
              "test-00000-of-00001": range(1000, 1050)}
    for name, ids in splits.items():
        pq.write_table(table_of(np.array(ids)).select(["id", "name", "tokens"]),
                       repo / "data" / f"{name}.parquet", row_group_size=30)
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "hub"))
    before = get_store_spec("hf")
    register_store("hf", "tests.parquet.hub_store:LocalHub")
    yield repo
    if before is not None:
        register_store("hf", before.target, before.extra)


def test_hub_split_streams_through_an_index_in_the_cache(hub, tmp_path) -> None:
    cache = str(tmp_path / "cache" / "train")
    result = index_parquet(URL, split="train", out=cache)
    assert result.files == 2 and result.rows == 200 and result.index.startswith(cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the Hub has no index.json: that is expected, no warning
        stream = Stream(remote=URL, local=cache, columns=["id", "tokens"])
        with StreamingDataset(streams=[stream], batch_size=8, shuffle=True) as ds:
            ids = [s["id"] for s in ds]
            assert sorted(ids) == list(range(200))
            assert ds.egress["bytes"] > 0  # the rows came through the hf:// store
    assert not (hub / "index.json").exists()


def test_hub_is_read_only(hub) -> None:
    with pytest.raises(PermissionError, match="read-only"):
        index_parquet(URL, split="test")
    assert not os.path.exists(hub / "index.json")
