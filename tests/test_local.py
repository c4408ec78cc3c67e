"""`LocalDataset`: a map-style torch dataset over a local directory, every indexing form."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch.utils.data

from streaming import LocalDataset
from streaming.base.local import LocalDataset as BaseLocalDataset
from streaming.format import JSONWriter, MDSWriter


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    with MDSWriter(columns={"id": "int", "v": "ndarray:int32:2"}, out=str(root / "train"),
                   size_limit=300) as writer:
        for i in range(100):
            writer.write({"id": i, "v": np.array([i, -i], np.int32)})
    return root


def test_basics(dataset_dir) -> None:
    ds = LocalDataset(str(dataset_dir), "train")
    assert isinstance(ds, torch.utils.data.Dataset) and BaseLocalDataset is LocalDataset
    assert len(ds) == ds.size == ds.num_samples == 100
    assert ds.local == str(dataset_dir) and ds.split == "train"
    assert len(ds.shards) > 3 and ds.spanner.num_samples == 100
    assert ds[7]["id"] == 7 and ds[7]["v"].tolist() == [7, -7]
    assert ds[-1]["id"] == 99 and ds[np.int64(3)]["id"] == 3


def test_indexing_forms(dataset_dir) -> None:
    ds = LocalDataset(str(dataset_dir / "train"))
    ids = np.arange(100)
    for at in [slice(None), slice(5, 50, 7), slice(None, None, -3), slice(-10, None)]:
        assert [s["id"] for s in ds[at]] == ids[at].tolist()
    assert [s["id"] for s in ds[[3, -2, 50]]] == [3, 98, 50]
    nested = ds[np.array([[1, 2], [3, 4]])]
    assert [[s["id"] for s in row] for row in nested] == [[1, 2], [3, 4]]
    with pytest.raises(IndexError, match="Invalid sample index `100`"):
        ds[100]
    with pytest.raises(ValueError, match="Unsupported argument type"):
        ds["x"]


def test_iteration_is_in_order(dataset_dir) -> None:
    ds = LocalDataset(str(dataset_dir), "train")
    samples = list(ds)
    assert [s["id"] for s in samples] == list(range(100))
    assert all(s["v"].tolist() == [s["id"], -s["id"]] for s in samples)


class _ByGetitem(LocalDataset):
    def __getitem__(self, at):
        return {"tripled": 3 * super().__getitem__(at)["id"]}


class _ByGetItem(LocalDataset):
    def get_item(self, sample_id):
        return {"tripled": 3 * super().get_item(sample_id)["id"]}


@pytest.mark.parametrize("kind", [_ByGetitem, _ByGetItem])
def test_a_subclass_transform_applies_when_iterating(dataset_dir, kind) -> None:
    """As in the reference (no `__iter__` of its own: Python iterates through `__getitem__`)."""
    ds = kind(str(dataset_dir), "train")
    assert [s["tripled"] for s in ds] == [3 * i for i in range(100)]
    assert ds[4] == {"tripled": 12}


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_works_in_a_dataloader(dataset_dir) -> None:
    ds = LocalDataset(str(dataset_dir), "train")
    loader = torch.utils.data.DataLoader(ds, batch_size=10, num_workers=0)
    batch = next(iter(loader))
    assert batch["id"].tolist() == list(range(10))


def test_wrong_version_and_missing_index(tmp_path) -> None:
    (tmp_path / "index.json").write_text(json.dumps({"version": 1, "shards": []}))
    with pytest.raises(ValueError, match=r"^Unsupported streaming data version: 1\. Expected "
                                         r"version 2\.$"):
        LocalDataset(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        LocalDataset(str(tmp_path), "nope")


def test_empty_and_text_datasets(tmp_path) -> None:
    with MDSWriter(columns={"a": "int"}, out=str(tmp_path / "empty")):
        pass
    empty = LocalDataset(str(tmp_path / "empty"))
    assert len(empty) == 0 and list(empty) == []
    with JSONWriter(columns={"a": "int"}, out=str(tmp_path / "json"), size_limit=20) as writer:
        for i in range(10):
            writer.write({"a": i})
    ds = LocalDataset(str(tmp_path / "json"))
    assert [s["a"] for s in ds] == list(range(10)) and ds[9] == {"a": 9}


def test_compressed_shards_are_refused_at_construction_naming_the_way_out(tmp_path) -> None:
    """Reads in place never decompress; the first sample would otherwise fail with a bare
    "No such file" for `shard.00000.mds` (as the reference's does)."""
    from streaming import StreamingDataset
    from streaming.errors import ShardUnavailableError

    with MDSWriter(out=str(tmp_path), columns={"id": "int"}, compression="zstd") as writer:
        for i in range(5):
            writer.write({"id": i})
    with pytest.raises(ShardUnavailableError, match=r"compressed \(zstd: shard.00000.mds.zstd "
                                                    r"is there.*StreamingDataset\(local="):
        LocalDataset(str(tmp_path))
    assert StreamingDataset(local=str(tmp_path))[4]["id"] == 4  # the way out, as named
    assert LocalDataset(str(tmp_path))[4]["id"] == 4  # decompressed there now


def test_a_merged_index_with_a_compressed_part_is_refused_naming_it(tmp_path) -> None:
    """`merge_index` joins plain and compressed sub-datasets: looking at the first shard only
    let a bare FileNotFoundError out at the first sample of the compressed part."""
    from streaming.errors import ShardUnavailableError
    from streaming.merge import merge_index

    for part, compression in enumerate([None, "zstd"]):
        with MDSWriter(out=str(tmp_path / f"part{part}"), columns={"id": "int"},
                       compression=compression, size_limit=200) as writer:
            for i in range(20):
                writer.write({"id": part * 20 + i})
    merge_index(str(tmp_path))
    with pytest.raises(ShardUnavailableError, match=r"compressed \(zstd: part1/shard.00000"):
        LocalDataset(str(tmp_path))


def test_pickled_columns_need_the_opt_in(tmp_path) -> None:
    """The reference's LocalDataset unpickled a stranger's `pkl` column on first read (running
    its code); as StreamingDataset does, it now asks for `allow_unsafe_types=True`."""
    from streaming.errors import UnsafeTypeError

    with MDSWriter(out=str(tmp_path), columns={"o": "pkl"}) as writer:
        writer.write({"o": {"a": 1}})
    with pytest.raises(UnsafeTypeError, match="Column o contains an unsafe type: pkl"):
        LocalDataset(str(tmp_path))
    assert LocalDataset(str(tmp_path), allow_unsafe_types=True)[0] == {"o": {"a": 1}}
