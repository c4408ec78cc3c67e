"""The user's own eviction calls (`evict_shard`, `evict_coldest_shard`, `unpin_shards`) obey the
rules automatic eviction obeys: pinned shards stay, a shard whose only copy is local is never
deleted, an id must name a shard, and only a shard that was cached counts as evicted."""

from __future__ import annotations

import os

import numpy as np
import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.cache.eviction import CacheFullError


def write_ints(out: str, n: int = 300) -> str:
    """{'x': i} in shards of ~1 KB (five or more shards)."""
    with MDSWriter(out=out, columns={"x": "int"}, size_limit=1 << 10) as writer:
        for i in range(n):
            writer.write({"x": i})
    return out


def shard_files(folder: str) -> list[str]:
    return sorted(f for f in os.listdir(folder) if f.endswith(".mds"))


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> str:
    return write_ints(str(tmp_path_factory.mktemp("manual") / "remote"))


def test_evict_coldest_takes_the_coldest_unpinned_shard_and_never_a_pinned_one(
        remote, tmp_path) -> None:
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4,
                          cache_limit=1 << 20) as ds:
        ds.pin_shards([0, 1], fetch=True)
        ds.prepare_shard(3)
        ds.prepare_shard(2)  # 3 is colder than 2
        ds.evict_coldest_shard()
        local = [ds._ss_cache.is_local(s) for s in range(4)]
        assert local == [True, True, True, False]
        ds.evict_coldest_shard()
        assert [ds._ss_cache.is_local(s) for s in range(4)] == [True, True, False, False]
        with pytest.raises(CacheFullError, match="no shards present locally to evict"):
            ds.evict_coldest_shard()  # only pinned shards are left
        assert ds._ss_cache.is_local(0) and ds._ss_cache.is_local(1)
        ds.unpin_shards([0, 1])
        ds.evict_coldest_shard()
        assert sum(ds._ss_cache.is_local(s) for s in range(2)) == 1


def test_a_local_only_dataset_is_never_evicted_by_hand(tmp_path) -> None:
    folder = write_ints(str(tmp_path / "data"))
    before = shard_files(folder)
    with StreamingDataset(local=folder, batch_size=4) as ds:
        assert ds[0]["x"] == 0
        with pytest.raises(CacheFullError):
            ds.evict_coldest_shard()
        with pytest.raises(ValueError, match="only copy of its samples"):
            ds.evict_shard(0)
        assert shard_files(folder) == before
        assert [ds[i]["x"] for i in range(0, 300, 50)] == list(range(0, 300, 50))


def test_evicting_a_shard_never_cached_counts_no_eviction(remote, tmp_path) -> None:
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4) as ds:
        for _ in range(3):
            ds.evict_shard(0)
        assert ds.metrics()["evictions"] == 0
        assert int(ds._ss_cache.evictions.numpy()[-1]) == 0  # no mapping to look for
        assert ds[0]["x"] == 0
        ds.evict_shard(0)
        assert ds.metrics()["evictions"] == 1
        assert ds[0]["x"] == 0  # fetched again


@pytest.mark.parametrize("ids", [[-1], [10**6], [0.5]])
def test_shard_ids_out_of_range_are_refused_everywhere(remote, tmp_path, ids) -> None:
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4) as ds:
        ds.pin_shards([ds.num_shards - 1], fetch=False)
        for call in (ds.pin_shards, ds.unpin_shards, lambda i: ds.evict_shard(i[0])):
            with pytest.raises(ValueError, match="Shard ids must be"):
                call(ids)
        assert ds._ss_cache.pinned.numpy()[-1] == 1  # a refused call unpinned nothing
        assert np.count_nonzero(ds._ss_cache.pinned.numpy()) == 1
