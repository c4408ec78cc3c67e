"""Parquet in place where real data and real jobs get rough: a copy evicted by another worker
while it opens, a file rewritten smaller under a reader, uint64 beyond int64, column names with
dots or twice the same, pandas' empty files, big in-place indexes in a cache, and `LocalDataset`
over a cache folder."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streaming import LocalDataset, StreamingDataLoader, StreamingDataset, index_parquet
from streaming.convert.parquet_index import ParquetIndexError
from streaming.format.parquet import reader as parquet_reader
from tests.parquet.parquet_data import same, write_folder


def test_a_copy_evicted_right_after_it_opened_is_still_read(tmp_path, monkeypatch) -> None:
    """Another worker may evict a cached copy at any moment: a reader that has opened it reads
    on (one handle). It opened the file twice, and the second open failed as 'corrupted'."""
    remote = write_folder(str(tmp_path / "remote"), 60, files=1, row_group=20)
    index_parquet(remote)
    parse = parquet_reader.parse_footer
    evicted: list[str] = []

    def parse_then_evict(path: str, footer: bytes):
        metadata = parse(path, footer)
        if not evicted:  # between the footer check and pyarrow's open
            os.remove(path)
            evicted.append(path)
        return metadata

    monkeypatch.setattr(parquet_reader, "parse_footer", parse_then_evict)
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4) as ds:
        assert [s["id"] for s in ds] == list(range(60))
    assert evicted


REWRITE = """
import sys
import pyarrow as pa, pyarrow.parquet as pq
from streaming import StreamingDataset
from streaming.errors import SourceChangedError
folder, path = sys.argv[1], sys.argv[2]
ds = StreamingDataset(local=folder, batch_size=4)
assert ds[0]["id"] == 0
pq.write_table(pa.table({"id": [1]}), path)  # truncated and rewritten where it lies
try:
    ds[len(ds) - 1]
except SourceChangedError as err:
    print("refused:", err)
"""


def test_a_file_rewritten_smaller_under_a_reader_is_an_error_not_a_crash(tmp_path) -> None:
    folder = str(tmp_path / "d")
    os.makedirs(folder)
    path = os.path.join(folder, "a.parquet")
    pq.write_table(pa.table({"id": np.arange(200_000)}), path, row_group_size=50_000)
    index_parquet(folder)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(REWRITE), folder, path],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])  # -7 was SIGBUS
    assert "refused:" in out.stdout and "(read in place)" in out.stdout
    assert "delete the cached copy" not in out.stdout  # there is none


def test_uint64_beyond_int64_is_never_wrapped(tmp_path) -> None:
    folder = str(tmp_path / "d")
    os.makedirs(folder)
    values = [2**64 - 1, 2**63, 5, 2**63 - 1]
    pq.write_table(pa.table({"h": pa.array(values, pa.uint64()),
                             "small": pa.array([1, 2, 3, 4], pa.uint64())}),
                   os.path.join(folder, "a.parquet"))
    index_parquet(folder)
    with StreamingDataset(local=folder, batch_size=4) as ds:
        assert [ds[i]["h"] for i in range(4)] == values
        with pytest.raises(ValueError, match="'h' holds integers beyond int64"):
            next(iter(StreamingDataLoader(ds, batch_size=4)))
    with StreamingDataset(local=folder, batch_size=4, columns=["small"]) as ds:
        batch = next(iter(StreamingDataLoader(ds, batch_size=4)))
        assert batch["small"].tolist() == [1, 2, 3, 4]  # values that fit stay a tensor


def test_dotted_and_duplicate_column_names(tmp_path) -> None:
    dotted = str(tmp_path / "dotted")
    os.makedirs(dotted)
    table = pa.table({"user.name": ["a", "b", "c"], "n": [1, 2, 3],
                      "s": pa.array([{"p.q": i, "r": [i]} for i in range(3)])})
    pq.write_table(table, os.path.join(dotted, "a.parquet"))
    index_parquet(dotted)
    with StreamingDataset(local=dotted, batch_size=1) as ds:
        assert [dict(s) for s in ds] == table.to_pylist()
    with StreamingDataset(local=dotted, batch_size=1, columns=["user.name"]) as ds:
        assert [s["user.name"] for s in ds] == ["a", "b", "c"]

    clash = str(tmp_path / "clash")
    os.makedirs(clash)
    pq.write_table(pa.table({"a.b": [1], "a": pa.array([{"b": 2}])}),
                   os.path.join(clash, "a.parquet"))
    with pytest.raises(ParquetIndexError, match="same dotted path"):
        index_parquet(clash)

    twice = str(tmp_path / "twice")
    os.makedirs(twice)
    schema = pa.schema([("x", pa.int64()), ("x", pa.int64())])
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], schema=schema),
                   os.path.join(twice, "a.parquet"))
    with pytest.raises(ParquetIndexError, match=r"a\.parquet has more than one column named 'x'"):
        index_parquet(twice)


def test_an_empty_file_of_other_types_is_left_out(tmp_path) -> None:
    """pandas writes an empty frame's columns as double."""
    folder = str(tmp_path / "d")
    os.makedirs(folder)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}),
                   os.path.join(folder, "a.parquet"))
    pq.write_table(pa.table({"id": pa.array([], pa.float64())}),
                   os.path.join(folder, "b.parquet"))
    result = index_parquet(folder)
    assert result.empty == ("b.parquet",) and result.rows == 2


def test_a_big_in_place_index_in_the_cache_raises_no_warning(tmp_path) -> None:
    """An index written into the cache (`out=`) for a remote that cannot take it: expected,
    so silent, whatever its size (the check read only its first 4 KiB)."""
    remote = str(tmp_path / "remote")
    os.makedirs(remote)
    for k in range(40):
        pq.write_table(pa.table({"id": [k]}), os.path.join(remote, f"f{k:02d}.parquet"))
    cache = str(tmp_path / "cache")
    index_parquet(remote, out=cache)
    assert os.path.getsize(os.path.join(cache, "index.json")) > 4096
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with StreamingDataset(remote=remote, local=cache, batch_size=1) as ds:
            assert sorted(s["id"] for s in ds) == list(range(40))


def test_local_dataset_reads_a_streaming_datasets_cache_folder(tmp_path) -> None:
    remote = write_folder(str(tmp_path / "remote"), 50, files=2, row_group=10)
    index_parquet(remote)
    cache = str(tmp_path / "cache")
    with StreamingDataset(remote=remote, local=cache, batch_size=1) as ds:
        want = list(ds)
    local = LocalDataset(cache)  # the cache holds shard copies, not the files
    assert len(local) == 50
    assert all(same(local[i], want[i]) for i in range(50))


def test_groups_decoded_again_and_again_are_reported_once(monkeypatch, caplog) -> None:
    from streaming.format.parquet.budget import BUDGET_ENV, DecodedGroups, _Budget

    monkeypatch.setenv(BUDGET_ENV, "300")
    budget, groups = _Budget(), DecodedGroups()
    with caplog.at_level("WARNING", logger="streaming.format.parquet.budget"):
        for which in range(100):  # a first pass: forgotten once each, decoded once each
            budget.add(groups, which, {}, 100)
        assert not caplog.records and budget.redecodes == 0
        for _ in range(4):  # again and again: a block wider than the budget
            for which in range(100):
                budget.add(groups, which, {}, 100)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "decoded again and again" in warned[0]
    assert budget.redecodes == 400 and budget.used <= 300


def test_a_folder_named_as_its_own_remote_is_read_in_place(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 40, files=2, row_group=10)
    index_parquet(folder)
    before = sorted(os.listdir(folder))
    with StreamingDataset(remote=folder + "/", local=folder, batch_size=1) as ds:
        assert sorted(s["id"] for s in ds) == list(range(40))
    assert sorted(os.listdir(folder)) == before  # no shard copies beside the user's files


def test_validate_says_once_that_a_source_file_changed(tmp_path) -> None:
    """Each sample repeated the shard's `SourceChangedError` (20 lines and "80 more")."""
    from streaming.cli.checks import validate_dataset

    folder = write_folder(str(tmp_path / "pq"), 100, files=1)
    index_parquet(folder)
    path = os.path.join(folder, "part-00000.parquet")
    pq.write_table(pa.table({"id": np.arange(100, 200)}), path)  # rewritten where it lies
    report = validate_dataset(folder, workers=1)
    assert not report.ok
    changed = [p for p in report.problems if "SourceChanged" in str(p) or "changed" in str(p)]
    assert len(changed) == 1 and changed[0].sample is None, report.problems
