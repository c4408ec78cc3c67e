"""`dataframe_to_mds` on a real local-mode Spark (one session for the module), and its schema
mapping. Spark jobs are slow, so each test checks several things."""

from __future__ import annotations

import decimal
import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark")
from pyspark.sql import types as T  # noqa: E402

from streaming.base.converters import (  # noqa: E402
    SPARK_TO_MDS,
    dataframe_to_mds,
    infer_dataframe_schema,
    is_json_compatible,
)
from tests.convert.conftest import REPO  # noqa: E402
from tests.convert.convert_helpers import read_back  # noqa: E402

SCHEMA = T.StructType([
    T.StructField("id", T.LongType()), T.StructField("small", T.ShortType()),
    T.StructField("f", T.FloatType()), T.StructField("name", T.StringType()),
    T.StructField("blob", T.BinaryType()), T.StructField("price", T.DecimalType(10, 2)),
    T.StructField("tokens", T.ArrayType(T.IntegerType(), containsNull=False)),
])


def _rows(n: int) -> list[tuple]:
    return [(i, i % 7, None if i == 5 else i / 4, f"row {i}", bytes([i % 256]) * 3, decimal.Decimal(i) / 4,
             list(range(i % 5 + 1))) for i in range(n)]


def test_schema_mapping_is_the_reference_table() -> None:
    assert SPARK_TO_MDS[T.ByteType()] == "uint8" and SPARK_TO_MDS[T.ShortType()] == "uint16"
    assert SPARK_TO_MDS[T.ArrayType(T.DoubleType())] == "ndarray:float64"
    assert SPARK_TO_MDS[T.BooleanType()] is None
    assert is_json_compatible(T.StructType([T.StructField("a", T.ArrayType(T.StringType()))]))
    assert not is_json_compatible(T.MapType(T.StringType(), T.LongType()))


@pytest.mark.slow
def test_inferred_columns_round_trip_and_merge(spark: Any, tmp_path: Any) -> None:
    frame = spark.createDataFrame(_rows(40), SCHEMA).repartition(3)
    assert infer_dataframe_schema(frame) == {
        "id": "int64", "small": "uint16", "f": "float32", "name": "str", "blob": "bytes",
        "price": "str_decimal", "tokens": "ndarray:int32"}
    out = str(tmp_path / "out")
    assert dataframe_to_mds(frame, mds_kwargs={"out": out, "compression": None}) == (out, "")
    index = json.load(open(f"{out}/index.json"))
    assert list(index) == ["version", "shards"]
    assert len({s["raw_data"]["basename"].split("/")[0] for s in index["shards"]}) == 3
    samples = sorted(read_back(out), key=lambda s: int(s["id"]))
    assert [int(s["id"]) for s in samples] == list(range(40))
    s = samples[13]
    assert (int(s["small"]), float(s["f"]), s["name"], s["blob"], s["price"]) == (
        6, 3.25, "row 13", b"\x0d" * 3, decimal.Decimal("3.25"))
    assert s["tokens"].tolist() == [0, 1, 2, 3]
    assert np.isnan(samples[5]["f"])  # a null float is NaN, as the reference's pandas path has it


def test_local_workers_run_on_this_python_unless_one_was_chosen(
        spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a venv that is not activated, `python3` on PATH lacks this package; a local master
    with no Python chosen for its workers gets the driver's interpreter for our tasks."""
    context = spark.sparkContext
    frame = spark.createDataFrame(_rows(4), SCHEMA).repartition(2)  # its rows' own Python
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setattr(context, "pythonExec", str(tmp_path / "no-such-python"))
    out = str(tmp_path / "out")
    dataframe_to_mds(frame, mds_kwargs={"out": out, "compression": None})
    assert sorted(int(s["id"]) for s in read_back(out)) == [0, 1, 2, 3]
    assert context.pythonExec == str(tmp_path / "no-such-python")  # restored afterwards
    monkeypatch.setenv("PYSPARK_PYTHON", str(tmp_path / "no-such-python"))  # chosen: kept
    with pytest.raises(Exception, match="no-such-python"):
        dataframe_to_mds(frame, mds_kwargs={"out": str(tmp_path / "out2"), "compression": None})


@pytest.mark.slow
def test_remote_output_from_executors_and_udf_iterable(spark: Any, tmp_path: Any) -> None:
    from streaming.cli.checks import validate_dataset

    frame = spark.createDataFrame(_rows(30), SCHEMA).repartition(2)
    remote = f"file://{tmp_path}/remote"
    local, got_remote = dataframe_to_mds(frame, mds_kwargs={
        "out": (str(tmp_path / "local"), remote), "columns": {"id": "int64", "name": "str"}})
    assert got_remote == remote and not os.path.exists(local)  # keep_local defaults to False
    report = validate_dataset(remote, workers=1)
    assert report.ok and report.samples == 30  # zstd by default, every shard uploaded

    def doubled(pdf: Any, factor: int) -> Any:
        for row in pdf.itertuples():
            yield {"id": int(row.id) * factor, "note": {"n": row.name}}

    out = str(tmp_path / "udf")
    dataframe_to_mds(frame, mds_kwargs={"out": out, "compression": None,
                                        "columns": {"id": "int", "note": "json"}},
                     udf_iterable=doubled, udf_kwargs={"factor": 2})
    ids = sorted(int(s["id"]) for s in read_back(out))
    assert ids == [2 * i for i in range(30)]


@pytest.mark.slow
def test_bad_input_is_refused_before_any_work(spark: Any, tmp_path: Any) -> None:
    frame = spark.createDataFrame([(1, True)], "id long, flag boolean")
    with pytest.raises(ValueError, match=r"BooleanType\(\) is not supported by dataframe_to_mds "
                                         r"\(column `flag`\)"):
        dataframe_to_mds(frame, mds_kwargs={"out": str(tmp_path / "a")})
    with pytest.raises(ValueError, match="Mismatched types: column name `id` is `int64`"):
        infer_dataframe_schema(frame, {"id": "str"})
    with pytest.raises(ValueError, match="Non-binary col id cannot encode as jpeg"):
        infer_dataframe_schema(frame, {"id": "jpeg"})
    with pytest.raises(ValueError, match="nope is not a column of input dataframe"):
        infer_dataframe_schema(frame, {"nope": "int64"})
    with pytest.raises(ValueError, match="`out` and `columns` need to be specified"):
        dataframe_to_mds(frame, mds_kwargs={})
    with pytest.raises(ValueError, match="user must provide correct `columns`"):
        dataframe_to_mds(frame, mds_kwargs={"out": str(tmp_path / "b")},
                         udf_iterable=lambda pdf: [])
    with pytest.raises(ValueError, match="Input dataframe is None or Empty!"):
        dataframe_to_mds(frame.limit(0), mds_kwargs={"out": str(tmp_path / "c")})
    assert not os.listdir(tmp_path)


def test_without_pyspark_the_import_error_says_what_to_install() -> None:
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "try:\n    import streaming.base.converters\n"
            "except ImportError as err:\n    print(err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert "pip install 'shardstream[spark]'" in out.stdout, out.stderr


@pytest.mark.slow
def test_reruns_never_clear_a_folder_or_mix_two_datasets(spark: Any, tmp_path: Any) -> None:
    """A second run into a remote replaces the dataset (as the reference does) without
    writing over the files the live index names, and marks the old folders and a failed run's,
    so `merge_index` of the remote publishes the last dataset only (it published both runs'
    rows). A local `out` is never cleared: `exist_ok` in mds_kwargs used to delete whatever
    else the folder held."""
    from streaming import StreamingDataset
    from streaming.merge import merge_root

    def ids(cache: str) -> list[int]:
        dataset = StreamingDataset(remote=remote, local=str(tmp_path / cache), batch_size=1)
        return sorted(int(dataset[i]["id"]) for i in range(dataset.num_samples))

    remote = f"file://{tmp_path}/remote"
    dataframe_to_mds(spark.createDataFrame([(i,) for i in range(6)], "id long").repartition(3),
                     mds_kwargs={"out": remote})
    with pytest.raises(Exception, match="udf failed"):
        def failing(pdf: Any) -> Any:
            if int(pdf["id"].max()) > 10:  # the partition holding 11 fails
                raise RuntimeError("udf failed")
            return pdf.to_dict("records")

        dataframe_to_mds(spark.createDataFrame([(7,), (11,)], "id long").repartition(2),
                         mds_kwargs={"out": remote, "columns": {"id": "int64"}},
                         udf_iterable=failing)
    assert ids("c1") == list(range(6))
    dataframe_to_mds(spark.createDataFrame([(100,), (101,)], "id long"),
                     mds_kwargs={"out": remote})
    assert ids("c2") == [100, 101]
    merge_root(remote)
    assert ids("c3") == [100, 101]

    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="never clears one"):
        dataframe_to_mds(spark.createDataFrame([(1,)], "id long"),
                         mds_kwargs={"out": str(out), "exist_ok": True})
    assert os.listdir(out) == ["notes.txt"]
