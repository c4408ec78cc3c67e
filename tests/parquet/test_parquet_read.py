"""Reading a Parquet folder in place: sample values, random access, batches, projections."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from torch.utils.data import default_collate

from streaming import LocalDataset, Stream, StreamingDataLoader, StreamingDataset, index_parquet
from streaming.errors import SourceChangedError
from tests.parquet.parquet_data import KINDS, expected_row, same, write_folder

FIXED = ["id", "score", "flag", "pair", "name", "meta", "blob", "tag"]  # default_collate-able


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> str:
    out = write_folder(str(tmp_path_factory.mktemp("pq") / "d"), 230, files=3, row_group=25)
    index_parquet(out, shard_bytes=1)  # a shard per row group: many shards, short ones
    return out


def check(sample: dict, i: int) -> None:
    want = expected_row(i)
    assert list(sample) == KINDS  # schema order
    for key in KINDS:
        assert same(sample[key], want[key]), (i, key, sample[key], want[key])


def test_every_kind_of_value_decodes(folder) -> None:
    with StreamingDataset(local=folder, batch_size=4) as ds:
        got = list(ds)
        assert len(got) == 230
        for i, sample in enumerate(got):
            check(sample, i)
        for i in (0, 24, 25, 26, 76, 229, 100, 3):  # random access, across row groups
            check(ds[i], i)
        assert got[5]["tokens"].flags.writeable  # views of a writable buffer


def test_local_dataset(folder) -> None:
    local = LocalDataset(local=folder)
    assert len(local) == 230
    check(local[199], 199)


def test_shuffled_epoch_has_every_row_once(folder, tmp_path) -> None:
    with StreamingDataset(remote=folder, local=str(tmp_path / "c"), batch_size=4, shuffle=True,
                          shuffle_block_size=50) as ds:
        ids = [s["id"] for s in ds]
    assert sorted(ids) == list(range(230)) and ids != list(range(230))


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_batches_equal_default_collate(folder, workers) -> None:
    stream = Stream(local=folder, columns=FIXED)
    with StreamingDataset(streams=[stream], batch_size=16, shuffle=True) as ds:
        loader = StreamingDataLoader(ds, batch_size=16, num_workers=workers)
        batches = list(loader)
        ids = [i for b in batches for i in b["id"].tolist()]
        assert sorted(ids) == list(range(230))
        for batch in batches[:4]:
            want = default_collate([ds[i] for i in batch["id"].tolist()])
            assert list(batch) == FIXED
            for key in FIXED:
                _equal(batch[key], want[key])


def _equal(a, b) -> None:
    if isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(b, dict):
        assert a.keys() == b.keys()
        for k in b:
            _equal(a[k], b[k])
    else:
        assert a == b


def test_read_columns_gathers_like_get_item(folder) -> None:
    with StreamingDataset(local=folder, batch_size=4) as ds:
        reader = ds.shards[1]  # rows 25..49
        indices = np.array([7, 0, 24, 7, 13])
        columns = reader.read_columns(indices)
        rows = [reader.get_item(int(i)) for i in indices]
        for key in KINDS:
            if isinstance(columns[key], np.ndarray):
                assert np.array_equal(columns[key], np.array([r[key] for r in rows]))
            else:
                assert all(same(a, b) for a, b in zip(columns[key], (r[key] for r in rows)))
        assert columns["id"].dtype == np.int64 and columns["score"].dtype == np.float64
        assert columns["pair"].shape == (5, 2) and columns["pair"].dtype == np.int16


def test_projection_reads_only_those_columns(folder) -> None:
    with StreamingDataset(streams=[Stream(local=folder, columns=["name", "id"])],
                          batch_size=4) as ds:
        assert ds[17] == {"name": "row-17", "id": 17}
    with pytest.raises(ValueError, match=r"Column 'nope' is not in part-00000.parquet"):
        StreamingDataset(streams=[Stream(local=folder, columns=["nope"])], batch_size=4)


def test_columns_on_an_mds_stream_is_refused(tmp_path, make_mds) -> None:
    mds = make_mds(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="`columns=` selects the columns of Parquet files"):
        StreamingDataset(streams=[Stream(local=mds, columns=["id"])], batch_size=4)


@pytest.mark.parametrize("bad", [[], ["a", "a"]])
def test_columns_argument_checked(bad) -> None:
    with pytest.raises(ValueError, match="`columns` must name at least one column"):
        Stream(local="x", columns=bad)
    with pytest.raises(TypeError, match="`columns` must be a list"):
        Stream(local="x", columns="id")


def test_file_changed_after_indexing_is_never_misread(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 100, files=2, row_group=20)
    index_parquet(folder)
    path = os.path.join(folder, "part-00001.parquet")
    table = pq.read_table(path)
    pq.write_table(table.set_column(0, "id", pa.array(np.arange(len(table)) + 1000)), path,
                   row_group_size=20)
    with StreamingDataset(local=folder, batch_size=4) as ds:
        assert ds[0]["id"] == 0  # the untouched file reads
        with pytest.raises(SourceChangedError, match="part-00001.parquet.*not the file that "
                                                     "was indexed"):
            ds[99]
    index_parquet(folder)  # indexing again picks the new rows up
    with StreamingDataset(local=folder, batch_size=4) as ds:
        assert ds[99]["id"] == 1000 + 49


def test_file_rewritten_while_open_is_reported_as_changed(tmp_path) -> None:
    folder = write_folder(str(tmp_path / "d"), 100, files=2, row_group=20)
    index_parquet(folder)
    path = os.path.join(folder, "part-00001.parquet")
    with StreamingDataset(local=folder, batch_size=4) as ds:
        assert ds[99]["id"] == 99  # the file is open (mapped), one row group decoded
        table = pq.read_table(path)
        with open(path, "r+b") as file:  # rewritten in place: the mapping sees the new bytes
            file.truncate(0)
        pq.write_table(pa.concat_tables([table] * 3), path, row_group_size=7)
        with pytest.raises(SourceChangedError, match="not the file that was indexed"):
            ds[50]


def test_reference_refuses_the_folder_clearly() -> None:
    from streaming.format.index import IN_PLACE_VERSION

    # The reference checks the top-level version first and prints it in its message.
    assert "parquet" in IN_PLACE_VERSION and "shardstream" in IN_PLACE_VERSION
    assert IN_PLACE_VERSION != 2


def test_decoded_row_groups_stay_within_the_budget(folder, monkeypatch) -> None:
    import gc

    from streaming.format.parquet.budget import decoded_budget

    gc.collect()
    baseline = decoded_budget.used
    monkeypatch.setattr(decoded_budget, "_limit", 1)  # only the group read last is kept
    with StreamingDataset(local=folder, batch_size=4, shuffle=True) as ds:
        ids = [s["id"] for s in ds]
        assert sorted(ids) == list(range(230))
        for i in (3, 200, 3, 77):
            check(ds[i], i)
        kept = sum(len(r._state.decoded) for r in ds.shards.built() if r._state is not None)
        assert kept == 1
    monkeypatch.setattr(decoded_budget, "_limit", None)
    del ds
    gc.collect()
    assert decoded_budget.used <= baseline  # closed shards give their bytes back


def test_dataset_columns_argument(folder) -> None:
    with StreamingDataset(local=folder, batch_size=4, columns=["name", "id"]) as ds:
        assert ds[9] == {"name": "row-9", "id": 9}
    with pytest.raises(ValueError, match="give each `Stream\\(columns=\\[...\\]\\)`"):
        StreamingDataset(streams=[Stream(local=folder)], batch_size=4, columns=["id"])
    with pytest.raises(TypeError, match="`columns` must be a list"):
        StreamingDataset(local=folder, batch_size=4, columns="id")


def test_an_all_null_column_and_null_rows_of_fixed_size_lists(tmp_path) -> None:
    """A column of Arrow type null (pandas writes one for an all-None column) reads as None;
    a fixed-size list of numbers stays an ndarray in a row group that has a null row."""
    table = pa.table({"comment": pa.nulls(4),
                      "v": pa.array([[1, 2], [3, 4], [5, 6], None], pa.list_(pa.float32(), 2))})
    pq.write_table(table, str(tmp_path / "a.parquet"), row_group_size=2)
    index_parquet(str(tmp_path))
    dataset = StreamingDataset(local=str(tmp_path), batch_size=1)
    rows = [dataset[i] for i in range(4)]
    assert [r["comment"] for r in rows] == [None] * 4 and rows[3]["v"] is None
    for i, row in enumerate(rows[:3]):
        assert isinstance(row["v"], np.ndarray) and row["v"].dtype == np.float32
        assert row["v"].tolist() == [2 * i + 1, 2 * i + 2]
