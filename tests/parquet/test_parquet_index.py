"""`index_parquet` / `streaming index`: footers only, shards of whole row groups, bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streaming import StreamingDataset, index_parquet
from streaming.convert.parquet_index import ParquetIndexError, split_files
from streaming.errors import ShardFormatError
from streaming.format.index import IN_PLACE_VERSION, parse_index
from tests.parquet.parquet_data import write_folder


def entries(folder: str) -> list[dict]:
    with open(os.path.join(folder, "index.json")) as f:
        obj = json.load(f)
    assert obj["version"] == IN_PLACE_VERSION
    return obj["shards"]


def test_shards_are_runs_of_row_groups_near_the_target(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 600, files=2, row_group=50)
    groups = [pq.ParquetFile(os.path.join(folder, f)).metadata.row_group(g)
              for f in sorted(os.listdir(folder)) for g in range(6)]
    sizes = [sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
             for rg in groups]
    target = 2 * max(sizes) + 1
    result = index_parquet(folder, shard_bytes=target)
    shards = entries(folder)
    assert result.files == 2 and result.rows == 600 and result.shards == len(shards)
    assert sum(s["samples"] for s in shards) == 600
    by_file: dict[str, list[list[int]]] = {}
    for shard in shards:
        by_file.setdefault(shard["source"]["basename"], []).append(shard["row_groups"])
        first, stop = shard["row_groups"]
        assert shard["samples"] == 50 * (stop - first)
        assert stop - first >= 1
    for runs in by_file.values():  # every row group exactly once, in order
        assert [g for first, stop in runs for g in range(first, stop)] == list(range(6))
    assert len(shards) < 12  # groups were joined up to the target
    # ranges of one column lie inside the file and are disjoint from the others'
    shard = shards[0]
    spans = sorted(tuple(r) for rs in shard["column_ranges"].values() for r in rs)
    assert all(start < end for start, end in spans)
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:]))
    assert spans[-1][1] <= shard["source"]["bytes"] - shard["source"]["footer_bytes"]
    assert [c[0] for c in shard["columns"]][:3] == ["id", "score", "flag"]  # schema order
    parse_index(open(os.path.join(folder, "index.json")).read())  # our parser accepts it


def test_result_reads_back_every_row(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 250, files=3, row_group=30)
    index_parquet(folder, shard_bytes=1)  # one row group per shard
    with StreamingDataset(local=folder, batch_size=4) as ds:
        assert ds.num_samples == 250 and ds.num_shards == sum(
            pq.ParquetFile(os.path.join(folder, f)).num_row_groups
            for f in os.listdir(folder) if f.endswith(".parquet"))
        assert [s["id"] for s in ds] == list(range(250))


def test_differing_schemas_name_the_file_and_column(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 100, files=2)
    pq.write_table(pa.table({"id": pa.array(["x"])}), os.path.join(folder, "zz.parquet"))
    with pytest.raises(ParquetIndexError, match=r"Parquet schemas differ: .*zz\.parquet"):
        index_parquet(folder)
    os.remove(os.path.join(folder, "zz.parquet"))
    table = pq.read_table(os.path.join(folder, "part-00000.parquet"))
    pq.write_table(table.set_column(0, "id", table.column("id").cast(pa.int32())),
                   os.path.join(folder, "part-00009.parquet"))
    with pytest.raises(ParquetIndexError,
                       match=r"column 'id' is int64 in .*part-00000.* but int32 in .*part-00009"):
        index_parquet(folder)
    assert not os.path.exists(os.path.join(folder, "index.json"))


def test_corrupt_footer_and_empty_file_are_named(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 100, files=2)
    path = os.path.join(folder, "part-00001.parquet")
    data = bytearray(open(path, "rb").read())
    data[-20:-8] = b"\xff" * 12  # footer bytes, magic kept
    open(path, "wb").write(bytes(data))
    with pytest.raises(ShardFormatError, match="part-00001.parquet has a corrupt Parquet footer"):
        index_parquet(folder)
    open(path, "wb").write(bytes(data[:-4]) + b"XXXX")
    with pytest.raises(ShardFormatError, match="part-00001.parquet is not a Parquet file"):
        index_parquet(folder)
    open(path, "wb").close()
    with pytest.raises(ShardFormatError, match=r"part-00001.parquet is empty \(0 bytes\)"):
        index_parquet(folder)


def test_files_without_rows_are_left_out(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 100, files=2)
    schema = pq.read_schema(os.path.join(folder, "part-00000.parquet"))
    pq.write_table(schema.empty_table(), os.path.join(folder, "part-00005.parquet"))
    result = index_parquet(folder)
    assert result.empty == ("part-00005.parquet",) and result.rows == 100


def test_no_files_and_hidden_files(tmp_path) -> None:
    (tmp_path / "e").mkdir()
    with pytest.raises(ParquetIndexError, match="No Parquet files under"):
        index_parquet(str(tmp_path / "e"))
    folder = write_folder(str(tmp_path / "d"), 60, files=1)
    os.makedirs(os.path.join(folder, "_temporary"))
    pq.write_table(pa.table({"other": [1]}), os.path.join(folder, "_temporary", "x.parquet"))
    assert index_parquet(folder).files == 1  # Spark's scratch folders are not data


def test_never_replaces_an_mds_index(tmp_path, make_mds) -> None:
    folder = make_mds(str(tmp_path / "d"))
    pq.write_table(pa.table({"id": [1, 2]}), os.path.join(folder, "x.parquet"))
    before = open(os.path.join(folder, "index.json")).read()
    with pytest.raises(ParquetIndexError, match="refusing to replace it"):
        index_parquet(folder)
    assert open(os.path.join(folder, "index.json")).read() == before
    out = str(tmp_path / "elsewhere")
    index_parquet(folder, out=out)
    assert entries(out)[0]["source"]["basename"] == "x.parquet"


def test_hub_split_layouts() -> None:
    paths = ["data/train-00000-of-00002.parquet", "data/test-00000-of-00001.parquet",
             "default/train/0000.parquet", "default/validation/0000.parquet",
             "train/a.parquet", "training/b.parquet"]
    assert split_files(paths, "train") == ["data/train-00000-of-00002.parquet",
                                           "default/train/0000.parquet", "train/a.parquet"]


def test_unsupported_types_are_recorded_and_refused_by_name(tmp_path) -> None:
    folder = str(tmp_path / "d")
    os.makedirs(folder)
    pq.write_table(pa.table({"id": pa.array(np.arange(10)),
                             "at": pa.array([1, 2] * 5, pa.time64("us"))}),
                   os.path.join(folder, "a.parquet"))
    index_parquet(folder)
    assert entries(folder)[0]["unsupported"] == {"at": "time64[us]"}
    with pytest.raises(ValueError, match=r"Column 'at' of a.parquet has type time64\[us\]"):
        with StreamingDataset(local=folder, batch_size=2) as ds:
            ds[0]
    from streaming import Stream

    with StreamingDataset(streams=[Stream(local=folder, columns=["id"])], batch_size=2) as ds:
        assert [s["id"] for s in ds] == list(range(10))


def test_timestamps_dates_durations_and_decimals(tmp_path) -> None:
    import datetime
    import decimal

    folder = str(tmp_path / "d")
    os.makedirs(folder)
    stamps = np.array(["2026-01-02T03:04:05.123456789", "NaT"], "datetime64[ns]")
    pq.write_table(pa.table({
        "when": pa.array(stamps),
        "zoned": pa.array([1_000_000, 2_000_000], pa.timestamp("us", tz="Europe/Paris")),
        "day": pa.array([datetime.date(2026, 11, 25), None]),
        "took": pa.array([1500, 2], pa.duration("ms")),
        "price": pa.array([decimal.Decimal("12.34"), decimal.Decimal("-0.01")],
                          pa.decimal128(6, 2)),
    }), os.path.join(folder, "a.parquet"))
    index_parquet(folder)
    assert "unsupported" not in entries(folder)[0]
    with StreamingDataset(local=folder, batch_size=2) as ds:
        first, second = ds[0], ds[1]
    assert first["when"] == np.datetime64("2026-01-02T03:04:05.123456789", "ns")
    assert first["when"].dtype == np.dtype("datetime64[ns]")  # nanoseconds kept
    assert first["zoned"] == np.datetime64(1_000_000, "us")  # UTC
    assert first["day"] == np.datetime64("2026-11-25", "D")
    assert first["took"] == np.timedelta64(1500, "ms")
    assert first["price"] == decimal.Decimal("12.34")
    assert second["when"] is None and second["day"] is None


def test_cli_index(tmp_path) -> None:
    from click.testing import CliRunner

    from streaming.cli.app import cli

    folder = write_folder(str(tmp_path / "d"), 90, files=3)
    result = CliRunner().invoke(cli, ["index", folder, "--json", "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["files"] == 3 and report["rows"] == 90
    bad = CliRunner().invoke(cli, ["index", str(tmp_path / "missing")])
    assert bad.exit_code != 0 and "No Parquet files" in bad.output


def test_cli_head_and_validate_read_in_place(tmp_path) -> None:
    from click.testing import CliRunner

    from streaming.cli.app import cli

    folder = write_folder(str(tmp_path / "d"), 60, files=2, columns=["id", "name"])
    index_parquet(folder)
    head = CliRunner().invoke(cli, ["head", folder, "-n", "2"])
    assert head.exit_code == 0, head.output
    assert '"name": "row-1"' in head.output
    checked = CliRunner().invoke(cli, ["validate", folder, "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output[checked.output.index("{"):])["samples"] == 60
