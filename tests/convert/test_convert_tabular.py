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
    got = read_back(str(tmp_path / "csv"))  # an empty cell of a float column is NaN
    assert got[0] == {"id": 1, "label": "cat", "score": 0.5} and np.isnan(got[1].pop("score"))
    assert got[1] == {"id": 2, "label": "dog"}
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


def test_a_folder_holding_a_dataset_is_not_taken_for_json_lines(tmp_path: Any) -> None:
    """Its index.json was converted as a JSON-lines file of one sample (exit 0)."""
    from streaming import MDSWriter

    with MDSWriter(out=str(tmp_path / "mds"), columns={"x": "int"}) as writer:
        writer.write({"x": 1})
    with pytest.raises(ConversionError, match=r"holds a streaming dataset already .*index\.json"):
        detect_format(str(tmp_path / "mds"))


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_column_only_a_later_text_file_has_is_refused_not_dropped(tmp_path: Any,
                                                                    kind: str) -> None:
    if kind == "csv":
        (tmp_path / "1.csv").write_text("a,b\n1,x\n")
        (tmp_path / "2.csv").write_text("a,b,c\n2,y,kept\n")
    else:
        (tmp_path / "1.jsonl").write_text('{"a": 1, "b": "x"}\n')
        (tmp_path / "2.jsonl").write_text('{"a": 2, "b": "y", "c": "kept"}\n')
    paths = [str(tmp_path / f"1.{kind}"), str(tmp_path / f"2.{kind}")]
    to_mds = csv_to_mds if kind == "csv" else jsonl_to_mds
    with pytest.raises(ConversionError, match=r"2\.\w+: has column\(s\) \['c'\] that the first"):
        to_mds(paths, str(tmp_path / "out"), num_workers=0)
    to_mds(paths, str(tmp_path / "picked"), num_workers=0, include=["a", "b"])
    assert [s["b"] for s in read_back(str(tmp_path / "picked"))] == ["x", "y"]


def test_pandas_nan_stays_a_float_early_or_late(tmp_path: Any) -> None:
    pd = pytest.importorskip("pandas")
    from streaming.convert import table_to_mds

    values = np.arange(3000, dtype=np.float64)
    values[[1, 2000]] = np.nan
    table_to_mds(pd.DataFrame({"x": values}), str(tmp_path / "out"), num_workers=0)
    got = np.array([float(s["x"]) for s in read_back(str(tmp_path / "out"))])
    np.testing.assert_array_equal(got, values)  # NaN where NaN was, every other value exact


def test_exist_ok_on_an_empty_directory_does_not_warn_of_removing_contents(
        tmp_path: Any, caplog: Any) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "in.csv").write_text("a\n1\n")
    with caplog.at_level("WARNING"):
        csv_to_mds(str(tmp_path / "in.csv"), str(tmp_path / "out"), num_workers=0,
                   exist_ok=True)
    assert "will remove contents" not in caplog.text
    assert [int(s["a"]) for s in read_back(str(tmp_path / "out"))] == [1]


def test_include_of_a_column_no_file_has_names_the_column(tmp_path: Any) -> None:
    (tmp_path / "in").mkdir()
    _parquet(tmp_path / "in" / "a.parquet", 0, 10)
    _parquet(tmp_path / "in" / "b.parquet", 10, 10)
    with pytest.raises(ConversionError, match=r"Column\(s\) \['txet'\] are not in .*a.parquet"):
        parquet_to_mds(str(tmp_path / "in"), str(tmp_path / "out"), include=["txet"],
                       num_workers=0)


def test_a_chosen_type_decides_how_text_is_parsed(tmp_path: Any) -> None:
    """`columns=` applied after parsing only: CSV's `007` became `"7"`, an id past int64 made
    its column float (`"1.2345678901234568e+17"`), and a JSON field whole in the first rows and
    fractional later could not be converted at all, override or not."""
    (tmp_path / "zip.csv").write_text("zip,id\n007,12345678901234567890\n01234,123456789012345678\n")
    csv_to_mds(str(tmp_path / "zip.csv"), str(tmp_path / "a"), num_workers=0,
               columns={"zip": "str", "id": "str"})
    assert [(s["zip"], s["id"]) for s in read_back(str(tmp_path / "a"))] == [
        ("007", "12345678901234567890"), ("01234", "123456789012345678")]
    lines = [f'{{"id": {i}, "score": {1 if i < 30000 else 1.5}, "n": {i}}}\n'
             for i in range(30001)]
    (tmp_path / "s.jsonl").write_text("".join(lines))
    with pytest.raises(ConversionError, match="give it a float type"):
        jsonl_to_mds(str(tmp_path / "s.jsonl"), str(tmp_path / "b"), num_workers=0)
    jsonl_to_mds(str(tmp_path / "s.jsonl"), str(tmp_path / "c"), num_workers=0,
                 columns={"score": "float64", "n": "str"})
    samples = read_back(str(tmp_path / "c"))
    assert samples[-1]["score"] == 1.5 and samples[0]["score"] == 1.0
    assert samples[7]["n"] == "7"  # a JSON number read as text: cast after parsing


def test_a_row_longer_than_a_parse_block_converts(tmp_path: Any) -> None:
    """pyarrow refused a row past its 1 MiB block (\"straddling object\"), with no option."""
    import json

    rows = [{"id": i, "text": "x" * (3 * 1024 * 1024 if i == 2 else 10)} for i in range(5)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "a.csv").write_text("id,text\n" + "".join(f"{r['id']},{r['text']}\n"
                                                          for r in rows))
    for name, convert_file in (("a.jsonl", jsonl_to_mds), ("a.csv", csv_to_mds)):
        convert_file(str(tmp_path / name), str(tmp_path / f"out-{name}"), num_workers=0)
        samples = read_back(str(tmp_path / f"out-{name}"))
        assert [len(s["text"]) for s in samples] == [len(r["text"]) for r in rows]


def test_errors_name_the_row_of_the_file(tmp_path: Any) -> None:
    """Rows were counted from the start of an internal batch: a null at row 99,995 of a JSON
    lines file was said to be at row 24,304; in Parquet, from the task's first row group."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(tmp_path / "a.jsonl", "w") as f:
        for i in range(100000):  # past the first parse block, whose rows set the types
            f.write(json.dumps({"id": i, "opt": None if i == 99995 else i}) + "\n")
    with pytest.raises(ConversionError, match=r"Column 'opt' row 99995 is null"):
        jsonl_to_mds(str(tmp_path / "a.jsonl"), str(tmp_path / "o1"), num_workers=0)
    opt = pa.array([None if i == 29995 else i for i in range(30000)], pa.int64())
    pq.write_table(pa.table({"opt": opt}), tmp_path / "a.parquet", row_group_size=1000)
    with pytest.raises(ConversionError, match=r"Column 'opt' row 29995 is null"):
        parquet_to_mds(str(tmp_path / "a.parquet"), str(tmp_path / "o2"), num_workers=0,
                       columns={"opt": "int64"})


def test_small_text_files_share_sub_datasets_in_order(tmp_path: Any) -> None:
    """A task per file made a sub-dataset, and a shard, per file: 5,000 two-row files were
    5,000 shards (62 MB on disk for 1.1 MB of samples)."""
    import json

    source = tmp_path / "in"
    source.mkdir()
    for f in range(300):
        (source / f"f{f:04d}.jsonl").write_text(
            "".join(json.dumps({"id": f * 2 + i}) + "\n" for i in range(2)))
    result = jsonl_to_mds(str(source), str(tmp_path / "out"), num_workers=2)
    assert len(result.partitions) <= 10 and result.samples == 600  # ~4 tasks per worker
    assert [s["id"] for s in read_back(str(tmp_path / "out"))] == list(range(600))
    (source / "f0150.jsonl").write_text('{"id": 1}\n{"id": "x", "extra": 1}\n')
    with pytest.raises(ConversionError, match=r"f0150\.jsonl"):  # errors name the file
        jsonl_to_mds(str(source), str(tmp_path / "out2"), num_workers=0)


def test_a_file_named_twice_is_converted_once_and_urls_are_refused(tmp_path: Any) -> None:
    """A glob and its folder (or one file by two paths) wrote its rows twice, silently; a URL
    input said "No input files found", as if the bucket were empty."""
    (tmp_path / "in").mkdir()
    _parquet(tmp_path / "in" / "a.parquet", 0, 30)
    os.symlink(tmp_path / "in", tmp_path / "alias")
    sources = [str(tmp_path / "in" / "*.parquet"), str(tmp_path / "in"),
               str(tmp_path / "alias" / "a.parquet")]
    with pytest.warns(UserWarning, match="2 input file.s. were named more than once"):
        result = parquet_to_mds(sources, str(tmp_path / "out"), num_workers=0)
    assert result.samples == 30
    assert [int(s["id"]) for s in read_back(str(tmp_path / "out"))] == list(range(30))
    with pytest.raises(ConversionError, match="is a URL: conversion reads local files"):
        parquet_to_mds("s3://bucket/raw/a.parquet", str(tmp_path / "out2"), num_workers=0)


def test_a_value_of_another_type_in_a_later_text_file_names_its_column(tmp_path: Any) -> None:
    """Arrow names a JSON field `Column(/v)` or none, a CSV column by number, and counts rows
    from its parse block; the hint used a made-up column ('score') or there was none."""
    import json

    for kind, odd, fix in (("jsonl", 2.5, "float64"), ("jsonl", "x", "str"),
                           ("csv", 2.5, "float64")):
        folder = tmp_path / f"{kind}-{fix}"
        folder.mkdir()
        if kind == "jsonl":
            (folder / "a.jsonl").write_text("".join(json.dumps({"v": i}) + "\n" for i in range(5)))
            (folder / "b.jsonl").write_text(json.dumps({"v": 1}) + "\n" + json.dumps({"v": odd}))
        else:
            (folder / "a.csv").write_text("w,v\n" + "".join(f"a,{i}\n" for i in range(5)))
            (folder / "b.csv").write_text(f"w,v\na,1\nb,{odd}\n")
        convert_ = jsonl_to_mds if kind == "jsonl" else csv_to_mds
        with pytest.raises(ConversionError, match=rf"b\.{kind}.*from row 0 of the file on: "
                                                  rf"column 'v' .*columns=\{{'v': '{fix}'\}}"):
            convert_(str(folder), str(tmp_path / f"out-{kind}-{fix}"), num_workers=0)


def test_a_header_only_first_file_does_not_refuse_the_folder(tmp_path: Any) -> None:
    """Types come from the first file with rows (the folder was refused for its first file)."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id,name\n")
    (tmp_path / "in" / "b.csv").write_text("id,name\n1,x\n2,y\n")
    csv_to_mds(str(tmp_path / "in"), str(tmp_path / "out"), num_workers=0)
    assert [(int(s["id"]), s["name"]) for s in read_back(str(tmp_path / "out"))] == [
        (1, "x"), (2, "y")]
    (tmp_path / "in" / "b.csv").write_text("id,name\n")
    with pytest.raises(ConversionError, match=r"a\.csv holds no rows .*nor do the 1 other"):
        csv_to_mds(str(tmp_path / "in"), str(tmp_path / "out2"), num_workers=0)
