"""Ray Data <-> MDS on a real local Ray runtime (one per session, `ray_runtime`)."""

from __future__ import annotations

import decimal
import json
import os
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray.data")
import pyarrow as pa  # noqa: E402

from streaming import StreamingDataset  # noqa: E402
from streaming.convert.columns import ConversionError  # noqa: E402
from streaming.convert.ray import read_mds, write_mds  # noqa: E402
from tests.convert.convert_helpers import KillOnce, read_back  # noqa: E402

pytestmark = pytest.mark.slow

N = 60


def _every_type() -> pa.Table:
    """One column per Arrow type MDS can encode."""
    ids = np.arange(N)
    tensors = np.arange(N * 6, dtype=np.float32).reshape(N, 2, 3)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i8": pa.array(ids % 100 - 50, pa.int8()), "i16": pa.array(ids * 3, pa.int16()),
        "i32": pa.array(ids * 7, pa.int32()), "u8": pa.array(ids % 250, pa.uint8()),
        "u16": pa.array(ids, pa.uint16()), "u32": pa.array(ids, pa.uint32()),
        "u64": pa.array(ids.astype(np.uint64) + np.uint64(2**63), pa.uint64()),
        "f16": pa.array((ids / 4).astype(np.float16), pa.float16()),
        "f32": pa.array(ids / 3, pa.float32()), "f64": pa.array(ids / 7, pa.float64()),
        "text": [f"row {i} ✓" for i in ids], "large": pa.array([f"L{i}" for i in ids],
                                                               pa.large_string()),
        "blob": [bytes([i % 256]) * 5 for i in ids],
        "cat": pa.array([f"c{i % 3}" for i in ids]).dictionary_encode(),
        "price": pa.array([decimal.Decimal(int(i)) / 4 for i in ids], pa.decimal128(10, 2)),
        "tokens": pa.array([list(range(i % 5 + 1)) for i in ids], pa.list_(pa.int32())),
        "vec": pa.array([[float(i)] * 3 for i in ids], pa.list_(pa.float32(), 3)),
        "tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(tensors),
        "flag": [bool(i % 2) for i in ids],
        "meta": [{"k": int(i), "tags": ["a", "b"][: i % 3]} for i in ids],
    })


def _check_row(row: dict[str, Any], i: int) -> None:
    assert row["i8"] == i % 100 - 50 and row["i16"] == i * 3 and row["u64"] == i + 2**63
    assert row["f16"] == np.float16(i / 4) and row["f32"] == np.float32(i / 3)
    assert row["text"] == f"row {i} ✓" and row["large"] == f"L{i}"
    assert row["blob"] == bytes([i % 256]) * 5 and row["cat"] == f"c{i % 3}"
    assert decimal.Decimal(str(row["price"])) == decimal.Decimal(i) / 4
    assert list(row["tokens"]) == list(range(i % 5 + 1))
    assert list(row["vec"]) == [float(i)] * 3
    tensor = np.asarray(row["tensor"])
    assert tensor.shape == (2, 3) and tensor.dtype == np.float32
    assert tensor.ravel().tolist() == list(range(i * 6, i * 6 + 6))
    assert row["flag"] is bool(i % 2) and row["meta"] == {"k": i, "tags": ["a", "b"][: i % 3]}


def test_every_arrow_type_round_trips(ray_runtime: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    ds = ray_runtime.data.from_arrow(_every_type()).repartition(3)
    report = write_mds(ds, out, compression=None)
    assert (report.shards, report.samples) == (3, N)

    index = json.load(open(os.path.join(out, "index.json")))
    encodings = dict(zip(index["shards"][0]["column_names"],
                         index["shards"][0]["column_encodings"]))
    assert encodings["tensor"] == "ndarray:float32:2,3" and encodings["vec"] == "ndarray:float32:3"
    assert encodings["price"] == "str_decimal" and encodings["meta"] == "json"
    assert encodings["u64"] == "uint64" and encodings["cat"] == "str"

    ours = sorted(read_back(out), key=lambda s: int(s["id"]))
    assert [int(s["id"]) for s in ours] == list(range(N))
    for i, row in enumerate(ours):
        _check_row(row, i)

    rows = sorted(read_mds(out).take_all(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == list(range(N))
    for i, row in enumerate(rows):
        _check_row(row, i)
    projected = read_mds(out, columns=["id", "text"]).take(1)[0]
    assert set(projected) == {"id", "text"}


def test_remote_output_on_s3(ray_runtime: Any, engine_s3: Any, tmp_path: Any,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in engine_s3.env().items():
        monkeypatch.setenv(key, value)
    url = engine_s3.url("ray-out")
    ds = ray_runtime.data.range(500, override_num_blocks=4)
    report = write_mds(ds, url, compression="zstd", hashes=["xxh64"], size_limit=1 << 11)
    assert report.remote_index == f"{url}/index.json" and report.samples == 500

    got = read_mds(url)
    assert got.count() == 500 and got.sum("id") == sum(range(500))
    stream = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=10)
    assert sorted(int(s["id"]) for s in stream) == list(range(500))


def test_task_killed_mid_write_still_yields_one_dataset(ray_runtime: Any, tmp_path: Any) -> None:
    out, marker = str(tmp_path / "out"), str(tmp_path / "killed")
    ds = (ray_runtime.data.range(400, override_num_blocks=2)
          .map_batches(KillOnce(marker), batch_size=50))
    report = write_mds(ds, out, compression=None, size_limit=1 << 10)
    assert os.path.exists(marker), "the worker was never killed"
    rows = read_back(out)
    assert sorted(int(r["id"]) for r in rows) == list(range(400))
    assert {r["text"] for r in rows} == {f"row {i}" for i in range(400)}
    on_disk = {e for e in os.listdir(out) if e != "index.json"}
    assert on_disk == set(report.partitions), "a dead attempt's directory was left behind"


def test_existing_output_is_refused_then_replaced(ray_runtime: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    write_mds(ray_runtime.data.range(10), out)
    first = set(os.listdir(out))
    with pytest.raises(FileExistsError, match="already holds a dataset"):
        write_mds(ray_runtime.data.range(20), out)
    assert set(os.listdir(out)) == first
    report = write_mds(ray_runtime.data.range(20, override_num_blocks=2), out, exist_ok=True)
    assert sorted(int(r["id"]) for r in read_back_zstd(out)) == list(range(20))
    assert set(os.listdir(out)) == set(report.partitions) | {"index.json"}


def read_back_zstd(out: str) -> list[dict[str, Any]]:
    return [dict(s) for s in StreamingDataset(local=out, batch_size=1)]


def test_unsupported_type_names_the_column(ray_runtime: Any, tmp_path: Any) -> None:
    table = pa.table({"id": [1, 2], "day": pa.array([1, 2], pa.date32())})
    with pytest.raises(ConversionError, match="'day' has type date32"):
        write_mds(ray_runtime.data.from_arrow(table), str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out" / "index.json")


def test_blocks_with_different_schemas_are_refused(ray_runtime: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    blocks = [pa.table({"id": [1, 2], "x": [1, 2]}), pa.table({"id": [3, 4], "x": ["a", "b"]})]
    with pytest.raises(Exception, match="Schemas differ between blocks: column 'x'"):
        write_mds(ray_runtime.data.from_arrow(blocks), out)
    assert os.listdir(out) == [], "a failed job left files behind"


def test_unsafe_columns_need_permission(ray_runtime: Any, tmp_path: Any) -> None:
    from streaming import MDSWriter

    with MDSWriter(out=str(tmp_path / "pk"), columns={"obj": "pkl"}) as writer:
        writer.write({"obj": {"a": 1}})
    with pytest.raises(Exception, match="pkl|unsafe"):
        read_mds(str(tmp_path / "pk")).take_all()
    assert read_mds(str(tmp_path / "pk"), allow_unsafe_types=True).take_all() == [
        {"obj": {"a": 1}}]
