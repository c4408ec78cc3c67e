"""Subclasses written for the reference's `StreamingDataset`: its attributes were plain ones.

Users assign them before calling `super().__init__()`, keep their own `self.config` or
`self._cache`, set `self.length`, or patch `get_item` on an instance; each works as it did.
"""

from __future__ import annotations

from typing import Any

import pytest
from torch.utils.data import DataLoader

from streaming import StreamingDataLoader, StreamingDataset
from streaming.format.mds.reader import MDSReader

# Every attribute the reference's `__init__` assigns from an argument of the same name.
EARLY = {
    "predownload": 3,
    "cache_limit": 10**9,
    "sampling_method": "fixed",
    "sampling_granularity": 2,
    "partition_algo": "orig",
    "shuffle": True,
    "shuffle_algo": "py1b",
    "batching_method": "stratified",
    "allow_unsafe_types": True,
    "replication": 2,
    "num_canonical_nodes": 7,
    "shuffle_seed": 1,
    "shuffle_block_size": 5,
    "batch_size": 3,
    "num_samples": 5,
    "length": 4,
}


@pytest.mark.parametrize("name", sorted(EARLY))
def test_an_attribute_assigned_before_init_is_decided_by_its_arguments(ints30, name):
    """The reference's `__init__` overwrote it with its argument: so does ours (it failed with
    AttributeError 'config')."""

    class Early(StreamingDataset):
        def __init__(self, **kwargs: Any) -> None:
            setattr(self, name, EARLY[name])
            assert getattr(self, name) == EARLY[name]  # a plain attribute until then
            super().__init__(**kwargs)

    with Early(local=ints30, batch_size=4) as ds, StreamingDataset(local=ints30,
                                                                     batch_size=4) as plain:
        assert getattr(ds, name) == getattr(plain, name)
        assert [int(s["v"]) for s in ds] == [int(s["v"]) for s in plain] == list(range(30))


def test_reading_an_attribute_before_init_names_it(ints30):
    class Curious(StreamingDataset):
        def __init__(self, **kwargs: Any) -> None:
            self.seen = hasattr(self, "shuffle_seed")
            with pytest.raises(AttributeError, match="'shuffle_seed' yet.*__init__"):
                _ = self.shuffle_seed
            super().__init__(**kwargs)

    with Curious(local=ints30) as ds:
        assert ds.seen is False and ds.shuffle_seed == 9176


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("attr", ["config", "_cache", "_table", "_catalog", "_namespace",
                                  "_resolution", "_latest"])
def test_a_subclass_keeps_its_own_attributes(ints30, when, attr):
    """Our state lives in `_ss_*` attributes: a subclass's `self.config` (set before
    `super().__init__()`, it was replaced; after, the dataset broke) is its own."""
    mine = {"model": "mine"}

    class Own(StreamingDataset):
        def __init__(self, **kwargs: Any) -> None:
            if when == "before":
                setattr(self, attr, mine)
            super().__init__(**kwargs)
            if when == "after":
                setattr(self, attr, mine)

    with Own(local=ints30, batch_size=4, shuffle=True) as ds:
        assert getattr(ds, attr) is mine
        assert sorted(int(s["v"]) for s in ds) == list(range(30))
        assert int(ds[7]["v"]) == 7
        loader = DataLoader(ds, batch_size=4, num_workers=1)
        assert sorted(int(v) for b in loader for v in b["v"]) == list(range(30))
        assert ds.state_dict(30, True)["sample_in_epoch"] == 30


def test_length_is_settable_as_in_the_reference(ints30):
    with StreamingDataset(local=ints30, batch_size=2) as ds:
        assert len(ds) == ds.length == 30
        ds.length = 12
        assert len(ds) == 12
        assert len([s for s in ds]) == 30  # the epoch itself is unchanged, as in the reference
        with pytest.raises(TypeError):
            ds.length = 2.5  # type: ignore[assignment]


def test_catalog_attributes_set_after_init_read_as_set(ints30):
    """A plain attribute in the reference: a subclass's value is what it reads (today's first
    cut refused it), and the dataset still reads every sample."""

    class Sub(StreamingDataset):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.num_samples = 10

    with Sub(local=ints30, batch_size=2) as ds:
        assert ds.num_samples == 10 and ds.size == 10
        assert sorted(int(s["v"]) for s in ds) == list(range(30))


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("name", ["batches", "metrics"])
def test_a_subclass_may_own_the_names_we_added(ints30, workers, name):
    """`batches` and `metrics` are ours, not the reference's: a subclass's own attribute of
    that name broke every loader (`'int' object is not callable`)."""

    class Own(StreamingDataset):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            setattr(self, name, 0)

    with Own(local=ints30, batch_size=4) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=workers)
        assert sorted(int(v) for b in loader for v in b["v"]) == list(range(30))
        assert loader.metrics()["samples"] >= 30


@pytest.mark.parametrize("workers", [0, 1])
def test_get_item_patched_on_an_instance_is_what_iteration_reads(ints30, workers):
    """`ds[i]` calls `self.get_item` (so an instance's own counts); iteration read in bulk and
    ignored it."""
    with StreamingDataset(local=ints30, batch_size=5) as ds:
        plain = ds.get_item
        ds.get_item = lambda i, retry=7: {"v": plain(i)["v"] * 10}  # type: ignore[method-assign]
        assert int(ds[3]["v"]) == 30
        assert sorted(int(s["v"]) for s in ds) == [10 * v for v in range(30)]
        loader = DataLoader(ds, batch_size=5, num_workers=workers)
        assert sorted(int(v) for b in loader for v in b["v"]) == [10 * v for v in range(30)]


class _Doubling(MDSReader):
    def get_item(self, idx: int) -> dict[str, Any]:
        return {"v": super().get_item(idx)["v"] * 2}


class _TextDecoding(MDSReader):
    """Decodes with `bytes` methods, as code written for the reference's readers may."""

    def decode_sample(self, data: bytes) -> dict[str, Any]:
        assert type(data) is bytes  # the reference handed it bytes; ours had a memoryview
        return {"v": -int.from_bytes(data[-8:], "little")}


@pytest.mark.parametrize("reader, expected", [(_Doubling, lambda v: 2 * v),
                                              (_TextDecoding, lambda v: -v)])
def test_a_reader_swapped_into_shards_is_what_reads(tmp_path, reader, expected):
    """`ds.shards[i] = reader` (code written for the reference's list swaps in subclasses of
    its readers) raised 'ShardReaders' object does not support item assignment; and a reader
    of the user's own was skipped by the bulk reads for all but the first sample of a run."""
    from streaming import MDSWriter

    local = str(tmp_path / "ds")
    with MDSWriter(out=local, columns={"v": "int64"}, size_limit=None) as writer:
        for v in range(30):
            writer.write({"v": v})
    with StreamingDataset(local=local, batch_size=5) as ds:
        old = ds.shards[0]
        ds.shards[0] = reader.from_json(old.dirname, old.split, _entry(old))
        assert isinstance(ds.shards[0], reader)
        assert int(ds[4]["v"]) == expected(4)
        assert sorted(int(s["v"]) for s in ds) == sorted(expected(v) for v in range(30))
        loader = StreamingDataLoader(ds, batch_size=5)
        assert sorted(int(v) for b in loader for v in b["v"]) == sorted(
            expected(v) for v in range(30))
        with pytest.raises(IndexError, match="out of range"):
            ds.shards[1] = old


def _entry(reader: Any) -> dict[str, Any]:
    import json
    import os

    return json.load(open(os.path.join(reader.dirname, "index.json")))["shards"][0]
