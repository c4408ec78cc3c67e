"""The binary shard table: construction from it, staleness, safety, lazy readers, cache set-up."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import streaming.cache.index_cache as index_cache_module
import streaming.stream as stream_module
from streaming import JSONWriter, MDSWriter, Stream, StreamingDataset
from streaming.errors import UnsafeTypeError
from streaming.format import load_readers
from streaming.format.shard_readers import ShardReaders, build_readers
from streaming.format.shard_table import (
    TABLE_SUFFIX,
    ShardTable,
    index_key,
    load_table,
    save_table,
)
from tests.dataset.conftest import write_ints


@pytest.fixture(autouse=True)
def every_index_gets_a_table(monkeypatch) -> None:
    """Small test datasets get a table too (the real threshold is hundreds of shards)."""
    monkeypatch.setattr(stream_module, "TABLE_MIN_SHARDS", 1)


def _no_parsing(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the index was parsed although its table was cached")

    monkeypatch.setattr(index_cache_module, "parse_index", refuse)


def _ids(ds: StreamingDataset) -> list[int]:
    return [int(sample["v"]) for sample in ds]


def test_second_construction_reads_the_table_not_the_index(ints30, cache_dir, monkeypatch):
    local = cache_dir()
    with StreamingDataset(remote=ints30, local=local, batch_size=4, shuffle=True) as ds:
        first = _ids(ds)
    assert os.path.isfile(os.path.join(local, "index.json" + TABLE_SUFFIX))
    _no_parsing(monkeypatch)
    with StreamingDataset(remote=ints30, local=local, batch_size=4, shuffle=True) as ds:
        assert isinstance(ds.shards, ShardReaders)
        assert list(ds.shards.built()) == []  # nothing read yet: no reader made
        assert ds.num_samples == 30 and ds.num_shards == 6
        assert _ids(ds) == first
        assert sorted(first) == list(range(30))


def test_readers_are_built_only_for_shards_read(ints30, cache_dir):
    local = cache_dir()
    StreamingDataset(remote=ints30, local=local, batch_size=4).close()
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as ds:
        assert ds[12]["v"] == 12  # shard 2 holds samples 10..14
        built = list(ds.shards.built())
        assert built == [ds.shards[2]]
        assert ds.shards[2] is ds.shards[2]  # one reader per shard, kept


def test_shards_does_what_the_reference_list_did(ints30, cache_dir):
    """The reference's `dataset.shards` was a list: code copies and concatenates it."""
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        shards = ds.shards
        every = shards.copy()
        assert type(every) is list and len(every) == len(shards) == 6
        assert all(a is b for a, b in zip(every, shards))
        assert shards + [] == every and [] + shards == every
        assert shards.index(shards[3]) == 3 and shards[-1] is every[-1]


def test_changed_index_replaces_the_table(tmp_path, cache_dir):
    remote = write_ints(str(tmp_path / "remote"), range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert sorted(_ids(ds)) == list(range(30))
    shutil.rmtree(remote)
    # Rewritten in place: 8 shards, other values (hashed, so the cached files of the same names
    # and sizes are known to be stale).
    write_ints(remote, range(100, 140), hashes=["xxh3_64"])
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert ds.num_samples == 40
        assert sorted(_ids(ds)) == list(range(100, 140))
    with open(os.path.join(remote, "index.json"), "rb") as f:
        key = index_key(f.read())
    assert load_table(os.path.join(local, "index.json" + TABLE_SUFFIX), key) is not None


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other_key", "file_name", "entry"])
def test_unusable_table_is_ignored_and_rewritten(ints30, cache_dir, damage):
    local = cache_dir()
    StreamingDataset(remote=ints30, local=local, batch_size=4).close()
    path = os.path.join(local, "index.json" + TABLE_SUFFIX)
    with open(path, "rb") as f:
        data = f.read()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = b"\x00" * len(data)
    elif damage == "other_key":
        data = data.replace(b'"key": "', b'"key": "1', 1)
    else:  # one bit: shard 1's file named as shard 0's, or a byte of an entry's JSON
        at = data.index(b"shard.00001.mds") + 10 if damage == "file_name" else data.index(
            b'"samples":5') + 2
        data = data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]
    with open(path, "wb") as f:
        f.write(data)
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as ds:
        assert sorted(_ids(ds)) == list(range(30))
    with open(os.path.join(local, "index.json"), "rb") as f:
        assert load_table(path, index_key(f.read())) is not None


def test_unsafe_columns_are_refused_from_the_table_too(tmp_path, cache_dir, monkeypatch):
    out = str(tmp_path / "pkl")
    with MDSWriter(out=out, columns={"x": "pkl"}) as writer:
        writer.write({"x": {"a": 1}})
    local = cache_dir()
    with StreamingDataset(remote=out, local=local, batch_size=1,
                          allow_unsafe_types=True) as ds:
        assert ds[0]["x"] == {"a": 1}
    _no_parsing(monkeypatch)
    with pytest.raises(UnsafeTypeError, match="contains an unsafe type: pkl"):
        StreamingDataset(remote=out, local=local, batch_size=1)
    with StreamingDataset(remote=out, local=local, batch_size=1, allow_unsafe_types=True) as ds:
        assert ds[0]["x"] == {"a": 1}


def test_local_only_dataset_uses_its_table(tmp_path, monkeypatch):
    data = write_ints(str(tmp_path / "data"), range(30))
    with StreamingDataset(local=data, batch_size=4) as ds:
        assert sorted(_ids(ds)) == list(range(30))
    _no_parsing(monkeypatch)
    with StreamingDataset(local=data, batch_size=4) as ds:
        assert sorted(_ids(ds)) == list(range(30))
    # The folder stays readable by readers that know only index.json (the reference's way).
    assert sum(r.samples for r in load_readers(data)) == 30


def test_table_round_trip(tmp_path):
    data = write_ints(str(tmp_path / "data"), range(30), compression="zstd")
    with open(os.path.join(data, "index.json"), "rb") as f:
        text = f.read()
    from streaming.format.index import parse_index

    entries = parse_index(text)
    table = build_readers(index_key(text), entries, data, None).part_tables()[0]
    assert isinstance(table, ShardTable)
    path = str(tmp_path / "t.table")
    save_table(path, table)
    loaded = load_table(path, table.key)
    assert loaded is not None and loaded.formats == table.formats
    for name in ("samples", "raw_bytes", "zip_bytes", "compressed", "unsafe", "entry_offsets",
                 "entry_blob", "file_names", "file_shard", "file_form", "format_code"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(table, name))
    assert [loaded.entry(i) for i in range(len(loaded))] == entries
    assert (loaded.zip_bytes > 0).all() and loaded.compressed.all()
    assert load_table(path, "0:0") is None


# -- the vectorised cache set-up agrees with each reader's own ------------------------------


def _dataset_files(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, _, names in os.walk(root) for n in names)


@pytest.fixture(scope="module")
def mixed_sources(tmp_path_factory) -> dict[str, str]:
    """A compressed MDS dataset and a compressed JSONL one (two files per form per shard)."""
    root = tmp_path_factory.mktemp("sources")
    mds = write_ints(str(root / "mds"), range(20), compression="zstd")
    jsonl = str(root / "jsonl")
    with JSONWriter(out=jsonl, columns={"v": "int"}, size_limit=120,
                    compression="zstd") as writer:
        for value in range(20):
            writer.write({"v": value})
    # Decompressed copies of every shard, so a cache can hold raw, zip, both or parts.
    for source in (mds, jsonl):
        for reader in load_readers(source):
            for raw, zipped in reader.files.pairs:
                import zstd

                with open(os.path.join(source, zipped.basename), "rb") as f:
                    data = zstd.decompress(f.read())
                with open(os.path.join(source, raw.basename), "wb") as f:
                    f.write(data)
    return {"mds": mds, "jsonl": jsonl}


@settings(max_examples=40, deadline=None)
@given(fmt=st.sampled_from(["mds", "jsonl"]), keep_zip=st.booleans(), data=st.data())
def test_vectorised_set_up_matches_each_reader(mixed_sources, tmp_path_factory, fmt, keep_zip,
                                               data) -> None:
    source = mixed_sources[fmt]
    files = [f for f in _dataset_files(source) if f != "index.json"]
    present = data.draw(st.lists(st.sampled_from(files), unique=True))
    root = tmp_path_factory.mktemp("caches")
    results = []
    for with_table in (True, False):
        local = str(root / f"cache{with_table}")
        os.makedirs(local)
        shutil.copy(os.path.join(source, "index.json"), local)
        for name in present:
            shutil.copy(os.path.join(source, name), os.path.join(local, name))
        stream = Stream(local=local, keep_zip=keep_zip)
        shards = stream.get_shards()
        if not with_table:
            shards = list(shards)  # every reader, as a plain list: each reconciles itself
        usage = np.full(len(shards), -1, np.int64)
        stream.set_up_local(shards, usage)
        left = [f for f in _dataset_files(local)
                if f != "index.json" and not f.endswith(TABLE_SUFFIX)]
        results.append((usage.tolist(), left))
    assert results[0] == results[1]


def test_table_of_the_json_example(tmp_path):
    """An index whose entries carry format-specific keys keeps them through the table."""
    out = str(tmp_path / "j")
    with JSONWriter(out=out, columns={"v": "int", "s": "str"}, size_limit=200) as writer:
        for value in range(12):
            writer.write({"v": value, "s": str(value)})
    with open(os.path.join(out, "index.json")) as f:
        original = json.load(f)["shards"]
    with StreamingDataset(local=out, batch_size=2) as ds:
        pass
    with StreamingDataset(local=out, batch_size=2) as ds:
        table = ds.shards.part_tables()[0]
        assert table is not None
        assert [table.entry(i).to_json()["columns"] for i in range(len(table))] == [
            shard["columns"] for shard in original]
        assert [int(s["v"]) for s in ds] == list(range(12))


class _ListStream(Stream):
    """A user's stream returning its readers as a plain list (the reference's return type)."""

    def get_shards(self, world=None, allow_unsafe_types=False):
        return list(super().get_shards(world, allow_unsafe_types))


def test_stream_subclass_returning_a_list(ints30, cache_dir):
    streams = [_ListStream(remote=ints30, local=cache_dir())]
    with StreamingDataset(streams=streams, batch_size=4, shuffle=True, shuffle_seed=3) as ds:
        assert ds.num_shards == 6
        assert sorted(_ids(ds)) == list(range(30))
        assert ds[7]["v"] == 7


def test_two_streams_share_one_global_shard_numbering(tmp_path, cache_dir):
    first = write_ints(str(tmp_path / "a"), range(30))
    second = write_ints(str(tmp_path / "b"), range(100, 120))
    streams = [Stream(remote=first, local=cache_dir()), Stream(remote=second, local=cache_dir())]
    with StreamingDataset(streams=streams, batch_size=4) as ds:
        pass
    streams = [Stream(remote=first, local=cache_dir()), Stream(remote=second, local=cache_dir())]
    with StreamingDataset(streams=streams, batch_size=4) as ds:
        assert ds.num_shards == 10
        assert ds.shards[6].dirname == streams[1].local  # shard 6 is the second's first
        assert ds[30]["v"] == 100 and ds[29]["v"] == 29
        assert sorted(_ids(ds)) == list(range(30)) + list(range(100, 120))


def test_threads_asking_at_once_share_one_reader(ints30, cache_dir):
    import threading

    local = cache_dir()
    StreamingDataset(remote=ints30, local=local, batch_size=4).close()
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as ds:
        barrier = threading.Barrier(8)
        got: list[object] = []

        def ask() -> None:
            barrier.wait()
            got.append(ds.shards[4])

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(got) == 8 and all(reader is got[0] for reader in got)
        assert list(ds.shards.built()) == [got[0]]
