"""Parquet read in place from a real S3 server (moto): range reads, projections, egress, changes.

The folder's files are uploaded as they are, indexed at the remote (footers read with range
requests, index.json written back), and streamed through a cache: every shard's fetch is only
its row groups' byte ranges plus the footer, and a projection fetches only its columns' chunks.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streaming import Stream, StreamingDataset, index_parquet
from streaming.errors import SourceChangedError
from streaming.storage import open_store
from tests.parquet.parquet_data import expected_row, same, write_folder
from tests.storage.servers import Server

ROWS = 600


@pytest.fixture
def server(moto_server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    return moto_server.apply_env(monkeypatch)


def upload_folder(server: Server, folder: str) -> str:
    url = server.fresh_url()
    store = open_store(url, **server.options)
    for name in sorted(os.listdir(folder)):
        store.upload(os.path.join(folder, name), name)
    return url


@pytest.fixture
def remote(server: Server, tmp_path: Any) -> tuple[str, str]:
    folder = write_folder(str(tmp_path / "src"), ROWS, files=3, row_group=50)
    url = upload_folder(server, folder)
    index_parquet(url, shard_bytes=1)  # a shard per row group
    return url, folder


def _index(url: str, server: Server) -> dict[str, Any]:
    return json.loads(open_store(url, **server.options).get("index.json"))


def _needed(index: dict[str, Any], columns: list[str] | None) -> int:
    """Bytes a cold cache fetches: each shard's column ranges (all, or those) + its footer."""
    total = 0
    for shard in index["shards"]:
        names = columns or [c[0] for c in shard["columns"]]
        total += sum(b - a for n in names for a, b in shard["column_ranges"][n])
        total += shard["source"]["footer_bytes"]
    return total


@pytest.mark.timeout(120)
def test_epoch_from_s3_fetches_only_the_shards_ranges(server, remote, tmp_path) -> None:
    url, _ = remote
    index = _index(url, server)
    assert len(index["shards"]) == 3 * 4  # 200 rows per file, 50 per group
    with StreamingDataset(remote=url, local=str(tmp_path / "c"), batch_size=8,
                          shuffle=True) as ds:
        got = list(ds)
        assert sorted(s["id"] for s in got) == list(range(ROWS))
        for sample in got[:50]:
            want = expected_row(sample["id"])
            assert all(same(sample[k], want[k]) for k in want)
        assert ds.egress["bytes"] == _needed(index, None)
        list(ds)  # a second epoch comes from the cache
        assert ds.egress["bytes"] == _needed(index, None)


@pytest.mark.timeout(120)
def test_projection_fetches_only_its_columns(server, remote, tmp_path) -> None:
    url, folder = remote
    index = _index(url, server)
    columns = ["id", "name"]
    stream = Stream(remote=url, local=str(tmp_path / "c"), columns=columns)
    with StreamingDataset(streams=[stream], batch_size=8) as ds:
        rows = list(ds)
        assert rows[123] == {"id": 123, "name": "row-123"}
        fetched = ds.egress["bytes"]
    assert fetched == _needed(index, columns)
    chunks = sum(pq.ParquetFile(os.path.join(folder, f)).metadata.row_group(g).column(c)
                 .total_compressed_size
                 for f in os.listdir(folder) for g in range(4) for c in (0, 4))
    footers = sum(s["source"]["footer_bytes"] for s in index["shards"])
    assert fetched == chunks + footers  # exactly the two columns' chunks, and the footers
    # the cache holds the projected copies only, counted at the bytes they hold
    cached = [n for n in os.listdir(tmp_path / "c") if n != "index.json"]
    assert len(cached) == 12 and all(".rg" in n and ".c" in n for n in cached)
    # another projection later: the old copies are dropped when the stream is set up
    stream = Stream(remote=url, local=str(tmp_path / "c"), columns=["score"])
    with StreamingDataset(streams=[stream], batch_size=8) as ds:
        assert ds[5] == {"score": 1.25}
    cached = [n for n in os.listdir(tmp_path / "c") if n != "index.json"]
    assert len(cached) == 1
    # and all columns again: the projection's copy goes, the shard's whole copy comes
    with StreamingDataset(remote=url, local=str(tmp_path / "c"), batch_size=8) as ds:
        assert ds[5]["score"] == 1.25
    cached = [n for n in os.listdir(tmp_path / "c") if n != "index.json"]
    assert len(cached) == 1 and ".c" not in cached[0].rsplit(".rg", 1)[1]


@pytest.mark.timeout(120)
def test_cache_limit_evicts_parquet_shards(server, remote, tmp_path) -> None:
    url, _ = remote
    index = _index(url, server)
    sizes = {s["raw_data"]["basename"]: s["raw_data"]["bytes"] for s in index["shards"]}
    limit = 4 * max(sizes.values())
    with StreamingDataset(remote=url, local=str(tmp_path / "c"), batch_size=8,
                          cache_limit=limit) as ds:
        assert sorted(s["id"] for s in ds) == list(range(ROWS))
        on_disk = [n for n in os.listdir(tmp_path / "c") if ".rg" in n]
        assert 0 < len(on_disk) < len(sizes)  # shards were evicted
        assert sum(sizes[n] for n in on_disk) <= limit


@pytest.mark.timeout(120)
def test_remote_file_changed_after_indexing(server, remote, tmp_path) -> None:
    url, folder = remote
    table = pq.read_table(os.path.join(folder, "part-00002.parquet"))
    table = table.set_column(0, "id", pa.array(np.arange(len(table)) + 10_000))
    changed = str(tmp_path / "changed.parquet")
    pq.write_table(table, changed, row_group_size=50)
    open_store(url, **server.options).upload(changed, "part-00002.parquet")
    with StreamingDataset(remote=url, local=str(tmp_path / "c"), batch_size=8) as ds:
        assert ds[0]["id"] == 0
        with pytest.raises(Exception) as info:
            ds[ROWS - 1]
    chain = [info.value, info.value.__cause__, info.value.__context__]
    assert any(isinstance(e, SourceChangedError) or "changed after it was indexed" in str(e)
               for e in chain if e is not None), info.value
    assert not any(n.startswith("part-00002") for n in os.listdir(tmp_path / "c"))


@pytest.mark.timeout(120)
def test_mixing_mds_and_parquet_streams(server, remote, tmp_path) -> None:
    from tests.storage.sample_data import check_sample, publish

    url, _ = remote
    mds = publish(server, 200)
    streams = [Stream(remote=url, local=str(tmp_path / "p"), columns=["id"]),
               Stream(remote=mds, local=str(tmp_path / "m"))]
    with StreamingDataset(streams=streams, batch_size=8, shuffle=True) as ds:
        got = list(ds)
    parquet = sorted(s["id"] for s in got if "tokens" not in s)
    mds_ids = sorted(check_sample(s) for s in got if "tokens" in s)
    assert parquet == list(range(ROWS)) and mds_ids == list(range(200))
