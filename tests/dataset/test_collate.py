"""`collate_samples` gives what `default_collate` gives (type, dtype, shape, values) for samples
of every encoding family, and refuses what it refuses; `StreamingDataLoader` uses it by default
and keeps a user's `collate_fn`."""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, default_collate

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.batch_ring import WorkerRing
from streaming.collate import collate_columns, collate_samples  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "format"))
from codec_cases import MDS_CASES  # noqa: E402

ROWS = 6


def _same(ours: Any, theirs: Any, where: str) -> None:
    assert type(ours) is type(theirs), f"{where}: {type(ours)} vs {type(theirs)}"
    if isinstance(theirs, torch.Tensor):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0, equal_nan=True)
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for key in theirs:
            _same(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(theirs, np.ndarray):
        np.testing.assert_array_equal(ours, theirs)
    elif hasattr(theirs, "tobytes"):  # PIL images
        assert ours.tobytes() == theirs.tobytes(), where
    elif isinstance(theirs, float) and math.isnan(theirs):
        assert math.isnan(ours), where
    else:
        assert ours == theirs, where


def _both(batch: list[Any]) -> tuple[Any, Any]:
    """Each collation's result, or the type of what it raised."""
    results = []
    for collate in (collate_samples, default_collate):
        try:
            results.append(collate(batch))
        except Exception as err:  # compared below: the same refusal
            results.append(type(err))
    return results[0], results[1]


@pytest.mark.parametrize("case", sorted(MDS_CASES))
def test_every_encoding_collates_as_default_collate(case: str, tmp_path: Any) -> None:
    encoding, make = MDS_CASES[case]
    with MDSWriter(out=str(tmp_path), columns={"id": "int", "x": encoding,
                                               "v": "ndarray:float32:3"}) as writer:
        for i in range(ROWS):
            writer.write({"id": i, "x": make(), "v": np.full(3, i, np.float32)})
    dataset = StreamingDataset(local=str(tmp_path), batch_size=ROWS, allow_unsafe_types=True)
    if case in ("jpeg_array", "jpegarray"):  # placeholder bytes, not images: they do not decode
        pytest.skip("the case's values are not decodable images")
    batch = list(dataset)
    ours, theirs = _both(batch)
    if isinstance(theirs, type):
        assert ours is theirs, f"{case}: default_collate raised {theirs.__name__}, ours {ours}"
        return
    _same(ours, theirs, case)


def test_mixed_and_ragged_columns_defer_to_torch() -> None:
    ragged = [{"a": np.arange(3)}, {"a": np.arange(4)}]
    assert _both(ragged) == (RuntimeError, RuntimeError)
    mixed = [{"n": 1}, {"n": 2.5}]  # default_collate looks at the first value only
    ours, theirs = _both(mixed)
    _same(ours, theirs, "mixed")
    assert _both([{"a": 1}, {"b": 2}]) == (KeyError, KeyError)
    tuples = [(1, np.zeros(2)), (2, np.ones(2))]
    _same(*_both(tuples), "tuples")
    big_endian = [{"a": np.arange(3, dtype=">i4")} for _ in range(2)]
    _same(*_both(big_endian), "big-endian")
    columns = collate_samples([{"a": np.arange(3, dtype=np.int32)}] * 2)
    assert columns["a"].dtype == torch.int32 and columns["a"].shape == (2, 3)


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_batches_equal_default_collate(tmp_path: Any, workers: int) -> None:
    with MDSWriter(out=str(tmp_path), columns={"id": "int", "t": "ndarray:int32:8", "s": "str",
                                               "f": "float64"}) as writer:
        for i in range(100):
            writer.write({"id": i, "t": np.full(8, i, np.int32), "s": f"s{i}", "f": i / 3})
    ours = StreamingDataLoader(StreamingDataset(local=str(tmp_path), batch_size=16),
                               batch_size=16, num_workers=workers)
    # The batched path (batches read as columns, then `collate_columns`, or with workers a
    # ring of reused shared-memory slots).
    assert ours.batched
    assert isinstance(ours.batch_sender, WorkerRing) if workers else (
        ours.batch_sender is collate_columns)
    theirs = DataLoader(StreamingDataset(local=str(tmp_path), batch_size=16), batch_size=16,
                        num_workers=workers, collate_fn=default_collate)
    got, want = list(ours), list(theirs)
    assert len(got) == len(want) == math.ceil(100 / 16)
    for i, (a, b) in enumerate(zip(got, want)):
        _same(a, b, f"batch {i}")


def test_a_users_collate_fn_is_kept(tmp_path: Any) -> None:
    with MDSWriter(out=str(tmp_path), columns={"id": "int"}) as writer:
        for i in range(8):
            writer.write({"id": i})
    def mine(batch: list[Any]) -> dict[str, Any]:
        return {"id": [s["id"] for s in batch], "mine": True}

    loader = StreamingDataLoader(StreamingDataset(local=str(tmp_path), batch_size=4),
                                 batch_size=4, collate_fn=mine)
    assert loader.collate_fn is mine
    assert [b["id"] for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    unbatched = StreamingDataLoader(StreamingDataset(local=str(tmp_path), batch_size=1),
                                    batch_size=None)
    assert unbatched.collate_fn is not collate_samples


def test_in_a_worker_a_batch_crosses_in_one_shared_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    import streaming.collate as collate

    monkeypatch.setattr(collate, "get_worker_info", lambda: object())
    batch = [{"id": i, "t": np.full(5, i, np.int16), "f": i / 2, "s": "x"} for i in range(7)]
    ours = collate.collate_samples(batch)
    monkeypatch.undo()
    _same(ours, default_collate(batch), "in a worker")
    storages = {ours[k].untyped_storage().data_ptr() for k in ("id", "t", "f")}
    assert len(storages) == 1 and ours["t"].is_shared()
    assert all(ours[k].storage_offset() * ours[k].element_size() % 64 == 0
               for k in ("id", "t", "f"))


@pytest.mark.parametrize("workers", [0, 2])
def test_streams_of_different_columns_fail_as_a_key_error(tmp_path: Any, workers: int) -> None:
    """A batch mixing two schemas: a `KeyError` naming the missing column, as the reference's
    `default_collate` raises (also out of a worker), and a `ValueError`, with our text."""
    from streaming import Stream

    for name, column in (("a", "x"), ("b", "y")):
        with MDSWriter(out=str(tmp_path / name), columns={"id": "int", column: "int"}) as out:
            for i in range(20):
                out.write({"id": i, column: i})
    dataset = StreamingDataset(streams=[Stream(local=str(tmp_path / "a"), proportion=0.5),
                                        Stream(local=str(tmp_path / "b"), proportion=0.5)],
                               batch_size=8, shuffle=True)
    with pytest.raises(KeyError, match="must hold the first one's columns") as caught:
        for _ in StreamingDataLoader(dataset, batch_size=8, num_workers=workers):
            pass
    assert isinstance(caught.value, ValueError)


def test_later_samples_with_more_columns_batch_as_default_collate() -> None:
    """`default_collate` builds a batch of the first sample's columns, leaving out the extra
    ones of later samples (the reference's batches of mixed streams); the batched path raised
    instead. A later sample that lacks a column is a `KeyError` in both."""
    from torch.utils.data import default_collate

    from streaming.batch_columns import columns_of

    more_later = [{"id": 1}, {"id": 2, "extra": 3}]
    ours = columns_of(more_later)
    assert {k: v.tolist() for k, v in ours.items()} == {
        k: v.tolist() for k, v in default_collate(more_later).items()} == {"id": [1, 2]}
    fewer_later = more_later[::-1]
    with pytest.raises(KeyError, match="extra"):
        default_collate(fewer_later)
    with pytest.raises(KeyError, match="must hold the first one's columns"):
        columns_of(fewer_later)
