"""The batched read path: `StreamingDataset.batches` and the loader's pass-through of them.

Batches hold the same samples in the same order as iterating the dataset; as tensors they are
what `default_collate` makes of those samples (type, dtype, shape, values) for every encoding
family, from shards whose samples share one layout and from shards whose layouts differ (both
gathered as columns); the loader's batches and checkpoints match its per-sample path.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import default_collate

from streaming import MDSWriter, Stream, StreamingDataLoader, StreamingDataset
from streaming.batch_columns import column_of, columns_of
from streaming.collate import collate_columns
from tests.dataset.conftest import write_ints
from tests.dataset.test_collate import _same

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "format"))
from codec_cases import MDS_CASES  # noqa: E402

ROWS, BATCH = 23, 4


def _write(out: str, encoding: str, make: Any, varied: bool) -> None:
    columns = {"id": "int", "x": encoding, "v": "ndarray:float32:3", "f": "float32"}
    if varied:  # strings of several lengths: samples of a shard no longer share one layout
        columns["name"] = "str"
    with MDSWriter(out=out, columns=columns, size_limit=1 << 12) as writer:
        for i in range(ROWS):
            sample = {"id": i, "x": make(), "v": np.full(3, i, np.float32),
                      "f": np.float32(i / 7)}
            if varied:
                sample["name"] = "n" * (i % 5)
            writer.write(sample)


def _same_arrays(ours: Any, theirs: Any, where: str) -> None:
    """Batches of numpy columns: equal types, dtypes, shapes and values."""
    assert type(ours) is type(theirs), f"{where}: {type(ours)} vs {type(theirs)}"
    if isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
        np.testing.assert_array_equal(ours, theirs)
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for key in theirs:
            _same_arrays(ours[key], theirs[key], f"{where}.{key}")
    else:
        _same(ours, theirs, where)


def _epoch(local: str, **kwargs: Any) -> list[Any]:
    with StreamingDataset(local=local, allow_unsafe_types=True, **kwargs) as ds:
        return list(ds)


def _epoch_batches(local: str, size: int, drop_last: bool = False, **kwargs: Any) -> list[Any]:
    with StreamingDataset(local=local, allow_unsafe_types=True, **kwargs) as ds:
        return list(ds.batches(size, drop_last))


@pytest.mark.parametrize("varied", [False, True], ids=["one_layout", "mixed_layouts"])
@pytest.mark.parametrize("case", sorted(MDS_CASES))
def test_batches_are_default_collate_of_the_samples(case: str, varied: bool, tmp_path) -> None:
    if case in ("jpeg_array", "jpegarray"):  # placeholder bytes, not images: they do not decode
        pytest.skip("the case's values are not decodable images")
    encoding, make = MDS_CASES[case]
    local = str(tmp_path / "data")
    _write(local, encoding, make, varied)
    order = {"batch_size": BATCH, "shuffle": True, "shuffle_seed": 11}
    samples = _epoch(local, **order)
    batches = _epoch_batches(local, BATCH, **order)
    assert [len(b["id"]) for b in batches] == [BATCH] * (ROWS // BATCH) + [ROWS % BATCH]
    assert np.concatenate([b["id"] for b in batches]).tolist() == [s["id"] for s in samples]
    for number, batch in enumerate(batches):
        group = samples[number * BATCH:(number + 1) * BATCH]
        _same_arrays(batch, columns_of(group), f"{case}[{number}]")
        try:
            expected = default_collate(group)
        except Exception as err:  # torch refuses these values: so must the tensor form
            with pytest.raises(type(err)):
                collate_columns(batch)
            continue
        _same(collate_columns(batch), expected, f"{case}[{number}]")


def test_fixed_columns_are_gathered_as_arrays(tmp_path) -> None:
    local = str(tmp_path / "data")
    _write(local, "ndarray:uint16:5", lambda: np.arange(5, dtype=np.uint16), varied=False)
    batches = _epoch_batches(local, 8, batch_size=8)
    first = batches[0]
    assert first["id"].dtype == np.int64 and first["id"].tolist() == list(range(8))
    assert first["x"].shape == (8, 5) and first["x"].dtype == np.uint16
    assert first["v"].shape == (8, 3) and first["f"].dtype == np.float32
    assert all(first[key].flags.writeable for key in ("id", "x", "v", "f"))


@pytest.mark.parametrize("drop_last", [False, True])
def test_in_order_and_shuffled_over_many_shards(tmp_path, drop_last) -> None:
    data = write_ints(str(tmp_path / "ints"), range(103))  # 21 shards of 5
    for order in ({}, {"shuffle": True, "shuffle_algo": "py1e", "shuffle_seed": 3,
                       "shuffle_block_size": 20}):
        ids = [s["v"] for s in _epoch(data, batch_size=8, **order)]
        batches = _epoch_batches(data, 8, drop_last, batch_size=8, **order)
        got = np.concatenate([b["v"] for b in batches]).tolist()
        assert got == (ids[:len(ids) - len(ids) % 8] if drop_last else ids)


def test_two_streams_in_one_batch(tmp_path, cache_dir) -> None:
    first = write_ints(str(tmp_path / "a"), range(30))
    second = write_ints(str(tmp_path / "b"), range(100, 120))

    def streams() -> list[Stream]:
        return [Stream(remote=first, local=cache_dir()), Stream(remote=second, local=cache_dir())]

    with StreamingDataset(streams=streams(), batch_size=10, shuffle=True) as ds:
        ids = [s["v"] for s in ds]
    with StreamingDataset(streams=streams(), batch_size=10, shuffle=True) as ds:
        got = np.concatenate([b["v"] for b in ds.batches()]).tolist()
    assert got == ids and sorted(got) == list(range(30)) + list(range(100, 120))


def test_a_shard_deleted_from_the_cache_is_fetched_again(tmp_path, cache_dir) -> None:
    remote = write_ints(str(tmp_path / "remote"), range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=5) as ds:
        list(ds.batches())  # every shard cached
        os.remove(os.path.join(local, "shard.00003.mds"))
        got = np.concatenate([b["v"] for b in ds.batches()]).tolist()
        assert got == list(range(30))
        assert os.path.isfile(os.path.join(local, "shard.00003.mds"))


def test_subclass_reads_pass_through_get_item(tmp_path) -> None:
    class Doubled(StreamingDataset):
        def get_item(self, sample_id: int, retry: int = 7) -> Any:
            sample = super().get_item(sample_id, retry)
            return {"v": sample["v"] * 2}

    data = write_ints(str(tmp_path / "ints"), range(12))
    with Doubled(local=data, batch_size=4) as ds:
        got = np.concatenate([b["v"] for b in ds.batches()]).tolist()
    assert got == [2 * i for i in range(12)]


class _TransformedByGetitem(StreamingDataset):
    """The reference's documented pattern: transforms in `__getitem__`, which its iteration
    goes through (`self[sample_id]`)."""

    def __getitem__(self, at: Any) -> Any:
        sample = super().__getitem__(at)
        return {"v": sample["v"] * 3, "seen": 1}


class _TransformedByGetItem(StreamingDataset):
    def get_item(self, sample_id: int, retry: int = 7) -> Any:
        sample = super().get_item(sample_id, retry)
        return {"v": sample["v"] * 3, "seen": 1}


@pytest.mark.parametrize("kind", [_TransformedByGetitem, _TransformedByGetItem])
@pytest.mark.parametrize("how", ["iterate", "batches", "loader", "loader_workers", "plain"])
def test_a_subclass_transform_applies_however_the_samples_are_read(tmp_path, kind, how) -> None:
    data = write_ints(str(tmp_path / "ints"), range(12))
    with kind(local=data, batch_size=4) as ds:
        assert ds[5] == {"v": 15, "seen": 1}
        if how == "iterate":
            samples = list(ds)
            got, seen = [s["v"] for s in samples], [s["seen"] for s in samples]
        else:
            if how == "batches":
                batches = list(ds.batches())
            elif how == "plain":
                batches = list(torch.utils.data.DataLoader(ds, batch_size=4))
            else:
                loader = StreamingDataLoader(ds, batch_size=4,
                                             num_workers=2 if how == "loader_workers" else 0)
                assert not loader.batched
                batches = list(loader)
            got = [int(v) for b in batches for v in b["v"]]
            seen = [int(v) for b in batches for v in b["seen"]]
    assert sorted(got) == [3 * i for i in range(12)] and seen == [1] * 12


def test_bad_batch_size(tmp_path) -> None:
    data = write_ints(str(tmp_path / "ints"), range(12))
    with StreamingDataset(local=data) as ds, pytest.raises(ValueError, match="batch_size"):
        next(ds.batches(0))


def test_column_of_mirrors_default_collate() -> None:
    cases = [[1, 2], [1.5, 2.5], [True, False], [np.float32(1), np.float32(2)],
             [np.arange(3), np.arange(3)], [1, np.int64(2)]]
    for values in cases:
        ours = column_of(values)
        assert isinstance(ours, np.ndarray)
        expected = default_collate(values)
        assert torch.from_numpy(ours).dtype == expected.dtype
        np.testing.assert_array_equal(ours, expected.numpy())
    for values in (["a", "b"], [b"a", b"b"], [np.arange(2), np.arange(3)], [{"a": 1}, {"a": 2}],
                   [2**70, 1]):
        assert isinstance(column_of(values), list)


# -- the loader ------------------------------------------------------------------------------


def _loader_batches(local: str, monkeypatch, batched: bool, **kwargs: Any
                    ) -> tuple[bool, int, list]:
    monkeypatch.setenv("STREAMING_BATCHED", "1" if batched else "0")
    with StreamingDataset(local=local, batch_size=8, shuffle=True, shuffle_seed=2) as ds:
        loader = StreamingDataLoader(ds, batch_size=8, **kwargs)
        assert loader.batch_size == 8
        return loader.batched, len(loader), list(loader)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("drop_last", [False, True])
def test_loader_batches_match_the_per_sample_path(tmp_path, monkeypatch, drop_last,
                                                  workers) -> None:
    local = str(tmp_path / "data")
    _write(local, "str", lambda: "abc", varied=True)
    data = write_ints(str(tmp_path / "ints"), range(103))
    for source in (local, data):
        used, length, ours = _loader_batches(source, monkeypatch, True, drop_last=drop_last,
                                             num_workers=workers)
        plain, plain_length, theirs = _loader_batches(source, monkeypatch, False,
                                                      drop_last=drop_last, num_workers=workers)
        assert used and not plain and length == plain_length
        assert len(ours) == len(theirs) > 0
        for number, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"batch {number}")


def _collate_own(samples: list[dict]) -> dict:
    return {"doubled": torch.tensor([2 * s["v"] for s in samples])}


def test_loader_keeps_a_users_collate_fn_and_worker_init(tmp_path) -> None:
    data = write_ints(str(tmp_path / "ints"), range(20))
    with StreamingDataset(local=data, batch_size=4) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, collate_fn=_collate_own)
        assert not loader.batched and loader.collate_fn is _collate_own
        doubled = sorted(torch.cat([b["doubled"] for b in loader]).tolist())
        assert doubled == list(range(0, 40, 2))
    with StreamingDataset(local=data, batch_size=4) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=2,
                                     worker_init_fn=_note_worker)
        assert loader.batched
        assert sorted(torch.cat([b["v"] for b in loader]).tolist()) == list(range(20))
        assert loader.dataset is ds and ds._loader_batches is None  # only workers' copies
    with StreamingDataset(local=data, batch_size=4) as ds:  # this process: only the loader's
        loader = StreamingDataLoader(ds, batch_size=4)
        batches = iter(loader)
        first = next(batches)
        assert loader.batched and first["v"].tolist() == [0, 1, 2, 3]
        assert ds._loader_batches is None  # the dataset's own iteration still yields samples
        assert next(iter(ds)) == {"v": 0}


@pytest.mark.parametrize("workers", [0, 2])
def test_torchs_default_collate_by_name_takes_the_batched_path(tmp_path, workers) -> None:
    """`collate_fn=default_collate` (common in training scripts) is what no `collate_fn`
    means: the same batches, built the faster way."""
    data = write_ints(str(tmp_path / "ints"), range(22))
    got = {}
    for name, kwargs in (("named", {"collate_fn": default_collate}), ("none", {})):
        with StreamingDataset(local=data, batch_size=4) as ds:
            loader = StreamingDataLoader(ds, batch_size=4, num_workers=workers, **kwargs)
            assert loader.batched
            got[name] = list(loader)
            loader.close()
    assert len(got["named"]) == len(got["none"]) == 6
    for number, (a, b) in enumerate(zip(got["named"], got["none"])):
        _same(a, b, f"batch {number}")


def _note_worker(worker_id: int) -> None:
    info = torch.utils.data.get_worker_info()
    assert info is not None and info.dataset._loader_batches == (4, False)


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_resumes_mid_epoch_like_the_per_sample_path(tmp_path, monkeypatch,
                                                           workers) -> None:
    data = write_ints(str(tmp_path / "ints"), range(103))

    def run(batched: bool) -> tuple[list[int], list[int]]:
        monkeypatch.setenv("STREAMING_BATCHED", "1" if batched else "0")
        with StreamingDataset(local=data, batch_size=8, shuffle=True, shuffle_seed=9) as ds:
            loader = StreamingDataLoader(ds, batch_size=8, num_workers=workers)
            seen: list[int] = []
            for number, batch in enumerate(loader):
                seen += batch["v"].tolist()
                if number == 4:
                    state = loader.state_dict()
                    break
            loader.close()
        with StreamingDataset(local=data, batch_size=8, shuffle=True, shuffle_seed=9) as ds:
            loader = StreamingDataLoader(ds, batch_size=8, num_workers=workers)
            loader.load_state_dict(state)
            rest = [v for batch in loader for v in batch["v"].tolist()]
        return seen, rest

    seen, rest = run(True)
    assert run(False) == (seen, rest)
    assert sorted(seen + rest) == list(range(103))


@pytest.mark.parametrize("workers", [0, 2])
def test_ragged_arrays_without_a_collate_fn_say_which_column(tmp_path, workers) -> None:
    """torch cannot stack arrays of several shapes and its error names no column; ours does,
    says what to do, and stays torch's RuntimeError (with torch's words in it)."""
    local = str(tmp_path / "data")
    with MDSWriter(out=local, columns={"id": "int", "tokens": "ndarray:uint16"}) as writer:
        for i in range(16):
            writer.write({"id": i, "tokens": np.arange(i % 3 + 1, dtype=np.uint16)})
    dataset = StreamingDataset(local=local, batch_size=4)
    loader = StreamingDataLoader(dataset, batch_size=4, num_workers=workers)
    with pytest.raises(RuntimeError, match=r"Column 'tokens' holds arrays of different shapes"):
        next(iter(loader))
    dataset.close()


def test_batches_of_a_dataset_built_without_a_batch_size_adopt_theirs(tmp_path) -> None:
    """It warned that the dataset lays samples out for batches of 1 and to use a DataLoader,
    though the caller had just said 32 and uses none."""
    data = write_ints(str(tmp_path / "data"), range(100))
    with StreamingDataset(local=data, shuffle=True) as plain:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = [batch["v"].tolist() for batch in plain.batches(32)]
        assert plain.batch_size == 32
    with StreamingDataset(local=data, shuffle=True, batch_size=32) as given:
        assert got == [batch["v"].tolist() for batch in given.batches()]
    assert sorted(v for batch in got for v in batch) == list(range(100))


def test_a_loader_replaces_a_batch_size_a_look_at_batches_adopted(tmp_path) -> None:
    """`batches(4)` as a quick look fixed the dataset's batch size for good: a loader of 8 then
    warned that the dataset's 4 differs, a setting the user never made."""
    data = write_ints(str(tmp_path / "data"), range(100))
    with StreamingDataset(local=data) as ds:
        next(iter(ds.batches(4)))
        assert ds.batch_size == 4
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loader = StreamingDataLoader(ds, batch_size=8, num_workers=0)
            got = sorted(int(v) for batch in loader for v in batch["v"])
        assert ds.batch_size == 8 and got == list(range(100))
