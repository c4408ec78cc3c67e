"""Dask DataFrames <-> MDS on Dask's distributed scheduler (2 worker processes, `dask_client`)."""

from __future__ import annotations

import decimal
import json
import os
from typing import Any

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from streaming import StreamingDataset  # noqa: E402
from streaming.convert.columns import ConversionError  # noqa: E402
from streaming.convert.dask import from_mds, to_mds  # noqa: E402
from tests.convert.convert_helpers import read_back  # noqa: E402

pytestmark = pytest.mark.slow

N = 48


def _frame() -> pd.DataFrame:
    ids = np.arange(N)
    return pd.DataFrame({
        "id": ids.astype(np.int64), "small": (ids % 100).astype(np.int8),
        "u32": ids.astype(np.uint32), "f32": (ids / 3).astype(np.float32), "f64": ids / 7,
        "text": [f"row {i} ✓" for i in ids], "blob": [bytes([i % 256]) * 4 for i in ids],
        "price": [decimal.Decimal(int(i)) / 4 for i in ids],
        "tokens": pd.Series([np.arange(i % 4 + 1, dtype=np.int32) for i in ids]).astype(
            pd.ArrowDtype(pa.list_(pa.int32()))),
        "flag": [bool(i % 2) for i in ids],
        "meta": [{"k": int(i)} for i in ids],
    })


def test_round_trip_through_partitions(dask_client: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    ddf = dd.from_pandas(_frame(), npartitions=4)
    report = to_mds(ddf, out, compression=None)
    assert (report.shards, report.samples) == (4, N)
    index = json.load(open(os.path.join(out, "index.json")))
    shard = index["shards"][0]
    encodings = dict(zip(shard["column_names"], shard["column_encodings"]))
    assert encodings == {"blob": "bytes", "f32": "float32", "f64": "float64", "flag": "json",
                         "id": "int64", "meta": "json", "price": "str_decimal", "small": "int8",
                         "text": "str", "tokens": "ndarray:int32", "u32": "uint32"}
    rows = sorted(read_back(out), key=lambda s: int(s["id"]))
    assert [int(r["id"]) for r in rows] == list(range(N))
    assert rows[5]["text"] == "row 5 ✓" and rows[5]["blob"] == bytes([5]) * 4
    assert list(rows[7]["tokens"]) == list(range(4)) and rows[7]["meta"] == {"k": 7}

    back = from_mds(out)
    assert back.npartitions == 4
    frame = back.compute().sort_values("id").reset_index(drop=True)
    assert frame["id"].tolist() == list(range(N)) and frame["u32"].dtype == np.uint32
    assert frame["blob"][9] == bytes([9]) * 4 and frame["flag"].tolist()[3] is True
    assert list(frame["tokens"][6]) == [0, 1, 2]
    assert back["f64"].sum().compute() == pytest.approx(sum(range(N)) / 7)
    assert list(from_mds(out, columns=["id"], npartitions=2).compute().columns) == ["id"]


def test_remote_output_on_s3(dask_client: Any, engine_s3: Any, tmp_path: Any,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in engine_s3.env().items():
        monkeypatch.setenv(key, value)
    url = engine_s3.url("dask-out")
    ddf = dd.from_pandas(pd.DataFrame({"id": np.arange(300)}), npartitions=3)
    report = to_mds(ddf, url, hashes=["sha1"], size_limit=1 << 10)
    assert report.remote_index == f"{url}/index.json" and report.samples == 300
    assert int(from_mds(url)["id"].sum().compute()) == sum(range(300))
    stream = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=5)
    assert sorted(int(s["id"]) for s in stream) == list(range(300))


def test_merging_the_remote_again_never_brings_back_a_replaced_or_failed_job(
        dask_client: Any, tmp_path: Any) -> None:
    """The remote keeps every sub-dataset a job uploaded (nothing there is deleted): those of a
    dataset replaced with `exist_ok` and of a job that failed are marked, so `merge_index` of
    the remote leaves them out. (Before, a re-merge published the old rows with the new.)"""
    from streaming import StreamingDataset
    from streaming.merge import merge_root

    def ids(cache: str) -> list[int]:
        dataset = StreamingDataset(remote=remote, local=str(tmp_path / cache), batch_size=1)
        return sorted(int(dataset[i]["id"]) for i in range(dataset.num_samples))

    remote = f"file://{tmp_path}/remote"
    to_mds(dd.from_pandas(pd.DataFrame({"id": range(4), "s": list("abcd")}), npartitions=2),
           remote)
    bad = pd.DataFrame({"id": [10, 11, 12, 13], "s": ["a", "b", None, "d"]})
    with pytest.raises(ConversionError, match=r"row 0 is null.*In partition 1; rows are counted"):
        to_mds(dd.from_pandas(bad, npartitions=2, sort=False), remote, exist_ok=True)
    assert ids("c1") == [0, 1, 2, 3]
    to_mds(dd.from_pandas(pd.DataFrame({"id": [100, 101], "s": list("xy")}), npartitions=1),
           remote, exist_ok=True)
    merge_root(remote)
    assert ids("c2") == [100, 101]


def test_partitions_with_different_schemas_are_refused(dask_client: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    parts = [dask.delayed(pd.DataFrame)({"id": [1, 2], "x": [1, 2]}),
             dask.delayed(pd.DataFrame)({"id": [3, 4], "x": ["a", "b"]})]
    ddf = dd.from_delayed(parts, meta=pd.DataFrame({"id": [0], "x": [0]}).iloc[:0],
                          verify_meta=False)
    with pytest.raises(ConversionError, match="Schemas differ between blocks: column 'x'"):
        to_mds(ddf, out)
    assert os.listdir(out) == [], "a failed job left files behind"


def test_existing_output_and_bad_types(dask_client: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    to_mds(dd.from_pandas(pd.DataFrame({"id": range(6)}), npartitions=2), out)
    with pytest.raises(FileExistsError, match="already holds a dataset"):
        to_mds(dd.from_pandas(pd.DataFrame({"id": range(9)}), npartitions=3), out)
    report = to_mds(dd.from_pandas(pd.DataFrame({"id": range(9)}), npartitions=3), out,
                    exist_ok=True)
    assert sorted(os.listdir(out)) == sorted([*report.partitions, "index.json"])
    assert int(from_mds(out)["id"].sum().compute()) == sum(range(9))

    days = pd.DataFrame({"day": pd.to_datetime(["2026-01-01", "2026-01-02"]).date})
    with pytest.raises(ConversionError, match="'day' has type date32"):
        to_mds(dd.from_pandas(days, npartitions=1), str(tmp_path / "days"))
