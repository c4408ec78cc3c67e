"""The shard table a writer publishes beside a big index: a new node maps it instead of parsing.

Real sizes (the threshold is `TABLE_MIN_SHARDS` shards), a local folder as the remote. The
remote's table is input like any other: one of another index, one naming a path outside the
dataset, or one lying about an entry never changes what is read.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import numpy as np
import pytest

import streaming.cache.index_cache as index_cache_module
from streaming import MDSWriter, StreamingDataset
from streaming.errors import IndexFormatError
from streaming.format.shard_table import (
    TABLE_MIN_SHARDS,
    TABLE_SUFFIX,
    index_key,
    load_table,
    save_table,
)
from streaming.merge import merge_index
from tests.dataset.conftest import write_ints

SHARDS = TABLE_MIN_SHARDS + 8
PER_SHARD = 2  # size_limit 226 holds 5 ints; 80 bytes holds 2


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> str:
    """SHARDS shards of PER_SHARD ints: v = 0 .. SHARDS * PER_SHARD - 1."""
    return write_ints(str(tmp_path_factory.mktemp("big") / "remote"),
                      range(SHARDS * PER_SHARD), size_limit=_limit_for(PER_SHARD))


def _limit_for(per_shard: int) -> int:
    """A size_limit giving shards of exactly `per_shard` int samples (8 bytes + a 4-byte
    offset each, after the shard's header)."""
    return 166 + per_shard * 12


def _copy(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


def _table_path(folder: str) -> str:
    return os.path.join(folder, "index.json" + TABLE_SUFFIX)


def _parses(monkeypatch) -> list[int]:
    """Count index parses at construction (the fallback path)."""
    calls: list[int] = []
    real = index_cache_module.parse_index

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(index_cache_module, "parse_index", counting)
    return calls


def _values(ds: StreamingDataset) -> list[int]:
    return sorted(int(sample["v"]) for sample in ds)


def test_the_writer_publishes_a_table_of_exactly_its_index(big):
    with open(os.path.join(big, "index.json"), "rb") as f:
        text = f.read()
    table = load_table(_table_path(big), index_key(text))
    assert table is not None and len(table) == SHARDS
    assert table.samples.tolist() == [PER_SHARD] * SHARDS


def test_a_small_dataset_gets_no_table(tmp_path):
    small = write_ints(str(tmp_path / "small"), range(30))
    assert not os.path.exists(_table_path(small))
    assert sorted(os.listdir(small)) == ["index.json"] + [f"shard.{i:05d}.mds" for i in range(6)]


def test_a_new_node_maps_the_remote_table_instead_of_parsing(big, tmp_path, monkeypatch):
    parses = _parses(monkeypatch)
    with StreamingDataset(remote=big, local=str(tmp_path / "cache"), batch_size=4,
                          shuffle=True) as ds:
        assert parses == [] and list(ds.shards.built()) == []
        assert ds.num_samples == SHARDS * PER_SHARD
        assert _values(ds) == list(range(SHARDS * PER_SHARD))
    assert os.path.isfile(_table_path(str(tmp_path / "cache")))


def test_a_table_of_another_index_is_ignored(big, tmp_path, monkeypatch):
    """The dataset was rewritten with one shard more; the old table was left behind."""
    other = write_ints(str(tmp_path / "other"), range((SHARDS + 1) * PER_SHARD),
                       size_limit=_limit_for(PER_SHARD))
    shutil.copy(_table_path(big), _table_path(other))
    parses = _parses(monkeypatch)
    with StreamingDataset(remote=other, local=str(tmp_path / "cache"), batch_size=4) as ds:
        assert parses == [1]
        assert ds.num_shards == SHARDS + 1
        assert _values(ds) == list(range((SHARDS + 1) * PER_SHARD))


@pytest.mark.parametrize("name", [b"../escape.mds", b"/etc/passwd", b"a\x00b.mds", b""])
def test_a_table_naming_a_path_outside_the_dataset_is_ignored(big, tmp_path, monkeypatch, name):
    remote = _copy(big, str(tmp_path / "remote"))
    with open(os.path.join(remote, "index.json"), "rb") as f:
        key = index_key(f.read())
    table = load_table(_table_path(remote), key)
    assert table is not None
    names = table.file_names.copy().astype(f"S{max(len(name), 16)}")
    names[3] = name
    save_table(_table_path(remote), replace(table, file_names=names))
    parses = _parses(monkeypatch)
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4) as ds:
        assert parses == [1]  # the table was refused: the index was parsed instead
        assert _values(ds) == list(range(SHARDS * PER_SHARD))


def test_a_table_lying_about_an_entry_stops_before_that_shard_is_read(big, tmp_path):
    remote = _copy(big, str(tmp_path / "remote"))
    with open(os.path.join(remote, "index.json"), "rb") as f:
        key = index_key(f.read())
    table = load_table(_table_path(remote), key)
    assert table is not None
    samples = np.array(table.samples)
    samples[0] = PER_SHARD + 1  # one sample more than the entry says
    save_table(_table_path(remote), replace(table, samples=samples))
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4) as ds:
        with pytest.raises(IndexFormatError, match="disagrees with the index entry of shard 0"):
            ds[0]


def test_a_table_calling_an_unsafe_shard_safe_is_caught_at_its_read(tmp_path):
    remote = str(tmp_path / "pkl")
    with MDSWriter(out=remote, columns={"x": "pkl"}, size_limit=200) as writer:
        for i in range(SHARDS):
            writer.write({"x": {"i": i}})
    with open(os.path.join(remote, "index.json"), "rb") as f:
        key = index_key(f.read())
    table = load_table(_table_path(remote), key)
    assert table is not None and table.unsafe.all()
    save_table(_table_path(remote), replace(table, unsafe=np.zeros(len(table), np.bool_)))
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=1) as ds:
        with pytest.raises(IndexFormatError, match="disagrees"):
            ds[0]


def test_merge_index_publishes_the_table_of_the_merged_index(tmp_path):
    root = str(tmp_path / "merged")
    half = SHARDS // 2 + 1
    for part in range(2):
        write_ints(os.path.join(root, f"part{part}"),
                   range(part * half * PER_SHARD, (part + 1) * half * PER_SHARD),
                   size_limit=_limit_for(PER_SHARD))
    merge_index(root)
    with open(os.path.join(root, "index.json"), "rb") as f:
        text = f.read()
    table = load_table(_table_path(root), index_key(text))
    assert table is not None and len(table) == 2 * half
    with StreamingDataset(local=root, batch_size=4) as ds:
        assert _values(ds) == list(range(2 * half * PER_SHARD))


def _on_disk(folder: str) -> int:
    total = 0
    for entry in os.scandir(folder):
        try:
            total += entry.stat().st_size
        except FileNotFoundError:  # evicted while we looked (downloads run in threads)
            pass
    return total


@pytest.mark.parametrize("published", [True, False], ids=["remote table", "built here"])
def test_a_cache_limit_counts_the_table_beside_the_index(big, tmp_path, published):
    """The cache keeps a table of a big index: it is bytes on disk, so the limit holds it and
    `cache_usage` counts it (it did not: 1.57 MB on disk under a 900 KB limit)."""
    remote = _copy(big, str(tmp_path / "remote"))
    table_estimate = os.path.getsize(_table_path(remote))
    if not published:  # as the reference writes it: the cache builds its own
        os.remove(_table_path(remote))
    cache = str(tmp_path / "cache")
    index_bytes = os.path.getsize(os.path.join(remote, "index.json"))
    shard_bytes = os.path.getsize(os.path.join(remote, "shard.00000.mds"))
    limit = index_bytes + table_estimate + 40 * shard_bytes + 4096
    with StreamingDataset(remote=remote, local=cache, batch_size=4, cache_limit=limit) as ds:
        table_bytes = os.path.getsize(_table_path(cache))
        assert ds.streams[0].get_index_size() == index_bytes + table_bytes
        assert ds.cache_usage == index_bytes + table_bytes  # nothing fetched yet
        seen = 0
        for _sample in ds:
            seen += 1
            if seen % 97 == 0:
                assert _on_disk(cache) <= limit
        assert seen == SHARDS * PER_SHARD
        assert ds.cache_usage == _on_disk(cache) <= limit


@pytest.mark.parametrize("published", [True, False], ids=["remote table", "built here"])
def test_a_limit_below_the_index_leaves_no_table_behind(big, tmp_path, published):
    remote = _copy(big, str(tmp_path / "remote"))
    if not published:
        os.remove(_table_path(remote))
    cache = str(tmp_path / "cache")
    with pytest.raises(ValueError, match="Minimum cache usage"):
        StreamingDataset(remote=remote, local=cache, batch_size=4, cache_limit=1000)
    assert not os.path.exists(_table_path(cache))


def test_a_table_of_an_earlier_bigger_index_leaves_the_cache(big, tmp_path):
    """The remote was republished smaller: the old table stayed on disk, not counted (430 KB
    on disk under a 200 KB limit)."""
    cache = str(tmp_path / "cache")
    with StreamingDataset(remote=big, local=cache, batch_size=4) as ds:
        assert os.path.isfile(_table_path(cache)) and ds.num_shards == SHARDS
    small = write_ints(str(tmp_path / "small"), range(60), size_limit=_limit_for(PER_SHARD))
    index_bytes = os.path.getsize(os.path.join(small, "index.json"))
    with StreamingDataset(remote=small, local=cache, batch_size=4,
                          cache_limit=index_bytes + 64 * 1024) as ds:
        assert not os.path.exists(_table_path(cache))
        assert _values(ds) == list(range(60))
        assert ds.cache_usage == _on_disk(cache)
