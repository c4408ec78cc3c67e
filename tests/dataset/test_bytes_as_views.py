"""`StreamingDataset(bytes_as_views=True)`: `bytes` columns as read-only views of the shard."""

from __future__ import annotations

import os

import numpy as np
import pytest

from streaming import MDSWriter, StreamingDataset

SIZES = [40_000 + 997 * i for i in range(24)]  # large values: the in-order path would pread


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> tuple[str, list[bytes]]:
    out = str(tmp_path_factory.mktemp("images"))
    rng = np.random.default_rng(1)
    values = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in SIZES]
    with MDSWriter(out=out, columns={"image": "bytes", "label": "int", "name": "str"},
                   size_limit=1 << 18) as writer:
        for i, value in enumerate(values):
            writer.write({"image": value, "label": i, "name": f"n{i}"})
    return out, values


def test_default_stays_bytes(images) -> None:
    data, values = images
    with StreamingDataset(local=data, batch_size=4) as ds:
        samples = list(ds)
        assert all(type(s["image"]) is bytes for s in samples)
        assert type(ds[3]["image"]) is bytes


def test_views_hold_the_same_bytes_everywhere(images) -> None:
    data, values = images
    with StreamingDataset(local=data, batch_size=4, bytes_as_views=True) as ds:
        samples = list(ds)
        assert [s["label"] for s in samples] == list(range(len(values)))
        for sample in samples:
            view = sample["image"]
            assert type(view) is memoryview and view.readonly
            assert bytes(view) == values[sample["label"]]
            assert type(sample["name"]) is str and type(sample["label"]) is int
        one = ds[5]["image"]
        assert type(one) is memoryview and bytes(one) == values[5]
        batch = next(ds.batches(6))
        assert [bytes(v) for v in batch["image"]] == values[:6]
        with pytest.raises(TypeError):
            one[0] = 1  # read-only: a view cannot change the shard


def test_views_outlive_the_dataset_and_the_files(images, tmp_path) -> None:
    data, values = images
    with StreamingDataset(remote=data, local=str(tmp_path / "cache"), batch_size=4,
                          bytes_as_views=True) as ds:
        kept = [s["image"] for s in ds]
    for name in os.listdir(tmp_path / "cache"):  # evicted behind its back
        os.remove(tmp_path / "cache" / name)
    assert [bytes(v) for v in kept] == values


def test_bad_value_is_refused(images) -> None:
    data, _ = images
    with pytest.raises(ValueError, match="bytes_as_views"):
        StreamingDataset(local=data, batch_size=4, bytes_as_views="yes")


def _as_given(batch: list[dict]) -> list[dict]:
    """A `collate_fn` that hands the worker's samples over untouched (views included)."""
    return batch


@pytest.mark.parametrize("collate_fn", [None, _as_given])
def test_views_leave_dataloader_workers_as_bytes(images, collate_fn) -> None:
    """A worker's views would not pickle: the loader then waited forever for the batch. What a
    worker sends now arrives as bytes, with the default collation and with the user's own."""
    from streaming import StreamingDataLoader

    data, values = images
    with StreamingDataset(local=data, batch_size=4, bytes_as_views=True) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, collate_fn=collate_fn,
                                     timeout=120)  # a hang fails instead of blocking CI
        seen = {}
        for batch in loader:
            if collate_fn is None:
                batch = [{"label": int(label), "image": image}
                         for label, image in zip(batch["label"], batch["image"])]
            for sample in batch:
                assert type(sample["image"]) is bytes
                seen[sample["label"]] = sample["image"]
        loader.close()
    assert seen == dict(enumerate(values))


def test_default_collation_keeps_a_column_of_views_a_list(images, monkeypatch) -> None:
    """In one process the batch keeps the views (`default_collate` would take each view for a
    sequence of ints and transpose it)."""
    from streaming import StreamingDataLoader

    data, values = images
    with StreamingDataset(local=data, batch_size=4, bytes_as_views=True) as ds:
        for batched in ("1", "0"):  # batches read as columns, and samples collated
            monkeypatch.setenv("STREAMING_BATCHED", batched)
            batch = next(iter(StreamingDataLoader(ds, batch_size=4)))
            assert type(batch["image"]) is list and len(batch["image"]) == 4
            assert all(type(v) is memoryview for v in batch["image"])
            assert [bytes(v) for v in batch["image"]] == values[:4]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_loader_without_batches_hands_views_over_whole(images, workers) -> None:
    """`batch_size=None`: torch's `default_convert` took each view for a sequence and made a
    list of ints of it. In one process the sample keeps its view; out of a worker it is bytes."""
    from streaming import StreamingDataLoader

    data, values = images
    with StreamingDataset(local=data, batch_size=1, bytes_as_views=True) as ds:
        loader = StreamingDataLoader(ds, batch_size=None, num_workers=workers, timeout=120 * (
            workers > 0))
        samples = list(loader)
        loader.close()
    kind = memoryview if workers == 0 else bytes
    assert all(type(s["image"]) is kind for s in samples)
    assert {s["label"]: bytes(s["image"]) for s in samples} == dict(enumerate(values))
