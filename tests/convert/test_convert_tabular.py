"""Parquet, CSV/TSV and JSON-lines converters, and format detection."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from streaming.convert import convert, csv_to_mds, jsonl_to_mds, parquet_to_mds  # noqa: E402
from streaming.convert.api import detect_format  # noqa: E402
from streaming.convert.columns import ConversionError  # noqa: E402
from tests.convert.convert_helpers import read_back  # noqa: E402


def _parquet(path: Any, start: int, rows: int, **extra: Any) -> None:
    ids = np.arange(start, start + rows)
    table = pa.table({"id": ids, "tokens": pa.array([[int(i)] * (int(i) % 3 + 1) for i in ids],
                                                    pa.list_(pa.int32())),
                      "name": [f"n{i}" for i in ids], **extra})
    pq.write_table(table, str(path), row_group_size=40)


def test_parquet_files_and_row_groups_in_parallel(tmp_path: Any) -> None:
    (tmp_path / "in").mkdir()
    _parquet(tmp_path / "in" / "a.parquet", 0, 100)
    _parquet(tmp_path / "in" / "b.parquet", 100, 60)
    result = parquet_to_mds(str(tmp_path / "in"), str(tmp_path / "out"), num_workers=2,
                            columns={"id": "int32"})
    assert result.samples == 160 and len(result.partitions) > 2  # split by row groups
    samples = read_back(str(tmp_path / "out"))
    assert [int(s["id"]) for s in samples] == list(range(160))
    assert samples[7]["tokens"].tolist() == [7, 7] and samples[7]["id"].dtype == np.int32
    assert samples[7]["name"] == "n7"


def test_parquet_schemas_that_differ_are_refused_up_front(tmp_path: Any) -> None:
    (tmp_path / "in").mkdir()
    _parquet(tmp_path / "in" / "a.parquet", 0, 10)
    pq.write_table(pa.table({"id": [f"x{i}" for i in range(5)], "tokens": [[1]] * 5,
                             "name": ["n"] * 5}), str(tmp_path / "in" / "b.parquet"))
    with pytest.raises(ConversionError, match=r"column 'id' is string in .*b.parquet but int64"):
        parquet_to_mds(str(tmp_path / "in"), str(tmp_path / "out"), num_workers=0)
    assert not os.path.exists(tmp_path / "out")
    result = parquet_to_mds(str(tmp_path / "in" / "a.parquet"), str(tmp_path / "only"),
                            include=["name"], num_workers=0)
    assert read_back(str(tmp_path / "only"))[0] == {"name": "n0"} and result.samples == 10


def test_csv_tsv_and_jsonl(tmp_path: Any) -> None:
    (tmp_path / "a.csv").write_text("id,score,label\n1,0.5,cat\n2,,dog\n")
    csv_to_mds(str(tmp_path / "a.csv"), str(tmp_path / "csv"), num_workers=0)
    assert read_back(str(tmp_path / "csv")) == [
        {"id": 1, "label": "cat", "score": 0.5}, {"id": 2, "label": "dog", "score": None}]
    (tmp_path / "a.tsv").write_text("id\tlabel\n1\tcat\n")
    convert(str(tmp_path / "a.tsv"), str(tmp_path / "tsv"), num_workers=0,
            columns={"id": "str_int"})
    assert read_back(str(tmp_path / "tsv")) == [{"id": 1, "label": "cat"}]
    (tmp_path / "a.jsonl").write_text('{"t": [1, 2], "m": {"k": "v"}}\n{"t": [3], "m": {}}\n')
    jsonl_to_mds([str(tmp_path / "a.jsonl")], str(tmp_path / "jl"), num_workers=0)
    samples = read_back(str(tmp_path / "jl"))
    assert samples[0]["t"].tolist() == [1, 2] and samples[0]["m"] == {"k": "v"}


def test_a_later_file_that_does_not_fit_names_the_file(tmp_path: Any) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id\n1\n2\n")
    (tmp_path / "in" / "b.csv").write_text("id\nthree\n")
    with pytest.raises(ConversionError, match="b.csv"):
        csv_to_mds(str(tmp_path / "in"), str(tmp_path / "out"), num_workers=0)


def test_detect_format(tmp_path: Any) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "x.jsonl").write_text("{}\n")
    assert detect_format(str(tmp_path / "t")) == "jsonl"
    assert detect_format([str(tmp_path / "a.parquet")]) == "parquet"
    (tmp_path / "t" / "y.csv").write_text("a\n1\n")
    with pytest.raises(ConversionError, match="several formats"):
        detect_format(str(tmp_path / "t"))
    with pytest.raises(ConversionError, match="Cannot tell"):
        detect_format(str(tmp_path / "nothing.bin"))
    assert detect_format(pa.table({"a": [1]})) == "hf"
