"""`dataset[i]` fetches on demand; eviction leaves nothing but index.json behind."""

from __future__ import annotations

import os

import numpy as np
import pytest

from streaming import StreamingDataset


def test_getitem_forms_fetch_on_demand(ints30, cache_dir) -> None:
    local = cache_dir()
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as ds:
        assert sorted(os.listdir(local)) == ["index.json"]
        assert ds[7]["v"] == 7
        assert sorted(os.listdir(local)) == ["index.json", "shard.00001.mds"]
        assert ds[-1]["v"] == 29
        assert [s["v"] for s in ds[3:12:4]] == [3, 7, 11]
        assert [s["v"] for s in ds[np.array([1, 2])]] == [1, 2]
        with pytest.raises(IndexError):
            ds[30]
        assert len(ds) == 30 and ds.size == 30 and ds.num_shards == 6


def test_evict_everything_then_restore(ints30, cache_dir) -> None:
    local = cache_dir()
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as ds:
        assert [ds[i]["v"] for i in range(30)] == list(range(30))
        full = sorted(os.listdir(local))
        usage = ds.cache_usage
        for shard in range(ds.num_shards):
            ds.evict_shard(shard)
        assert os.listdir(local) == ["index.json"]
        assert ds.cache_usage == os.path.getsize(os.path.join(local, "index.json"))
        assert [ds[i]["v"] for i in range(30)] == list(range(30))
        assert sorted(os.listdir(local)) == full
        assert ds.cache_usage == usage


def test_compressed_and_hashed(make_ints, cache_dir) -> None:
    remote = make_ints(range(50), compression="zstd:7", hashes=["sha1", "xxh64"])
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4, validate_hash="xxh64") as ds:
        assert [s["v"] for s in ds] == list(range(50))
        names = os.listdir(local)
        assert not any(n.endswith(".zstd") for n in names)  # zips dropped after decompressing
        assert ds.egress["bytes"] > 0


@pytest.mark.parametrize("validate_hash", [None, "sha1", "xxh64"])
def test_digests_written_in_upper_case_are_read(make_ints, cache_dir, validate_hash) -> None:
    """Hex digests are case-free: an index written with upper-case ones (by another tool)
    failed every download on the fast digest check, where the reference read it."""
    import json

    remote = make_ints(range(20), compression="zstd", hashes=["sha1", "xxh64"])
    path = os.path.join(remote, "index.json")
    with open(path) as f:
        index = json.load(f)
    for shard in index["shards"]:
        for key in ("raw_data", "zip_data"):
            shard[key]["hashes"] = {k: v.upper() for k, v in shard[key]["hashes"].items()}
    with open(path, "w") as f:
        json.dump(index, f)
    with StreamingDataset(remote=remote, local=cache_dir(), batch_size=4,
                          validate_hash=validate_hash) as ds:
        assert [s["v"] for s in ds] == list(range(20))


def test_keep_zip(make_ints, cache_dir) -> None:
    remote = make_ints(range(10), compression="zstd")
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4, keep_zip=True) as ds:
        ds[0]
        assert "shard.00000.mds.zstd" in os.listdir(local)


def test_hash_algorithm_not_in_index(make_ints, cache_dir) -> None:
    remote = make_ints(range(10), hashes=["sha1"])
    with StreamingDataset(remote=remote, local=cache_dir(), batch_size=4,
                          validate_hash="md5") as ds:
        with pytest.raises(ValueError, match="does not match with those provided"):
            ds.prepare_shard(0)


def test_hash_algorithm_not_in_index_is_said_once(make_ints, cache_dir, caplog) -> None:
    """Iterating raises the setting's error; the prefetcher, which fails on it too, adds no
    warning that the shard 'will be fetched when needed' (it never will be)."""
    remote = make_ints(range(100), hashes=["sha1"], size_limit=200)
    with StreamingDataset(remote=remote, local=cache_dir(), batch_size=4,
                          validate_hash="md5") as ds:
        with pytest.raises(ValueError, match="does not match with those provided"):
            list(ds)
    assert not [r for r in caplog.records if "Prefetching shard" in r.getMessage()]


def test_corrupted_remote_shard_is_rejected_and_not_cached(make_ints, cache_dir) -> None:
    remote = make_ints(range(10), hashes=["sha1"])
    path = os.path.join(remote, "shard.00000.mds")
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF
    open(path, "wb").write(bytes(data))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4, validate_hash="sha1",
                          download_retry=1) as ds:
        with pytest.raises(ValueError, match="Checksum failure"):
            ds.prepare_shard(0)
        assert os.listdir(local) == ["index.json"]  # no partial or bad file left behind


def test_cache_limit_evicts_and_stays_under(make_ints, cache_dir) -> None:
    remote = make_ints(range(100))  # 20 shards of ~226 bytes
    local = cache_dir()
    limit = os.path.getsize(os.path.join(remote, "index.json")) + 5 * 226
    with StreamingDataset(remote=remote, local=local, batch_size=4, cache_limit=limit) as ds:
        assert [s["v"] for s in ds] == list(range(100))
        on_disk = sum(os.path.getsize(os.path.join(local, n)) for n in os.listdir(local))
        assert on_disk <= limit
        assert ds.cache_usage == on_disk
        assert len(os.listdir(local)) < 20  # evicted along the way


def test_cache_limit_too_low(make_ints, cache_dir) -> None:
    remote = make_ints(range(30), size_limit=None)  # one shard of ~400 bytes, small index
    with pytest.raises(ValueError, match="is larger than the cache limit"):
        StreamingDataset(remote=remote, local=cache_dir(), batch_size=4, cache_limit=10)
    with pytest.raises(ValueError, match="at-least four times the largest shard"):
        StreamingDataset(remote=remote, local=cache_dir(), batch_size=4, cache_limit="1kb")


def test_local_only_dataset(ints30) -> None:
    with StreamingDataset(local=ints30, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
        with pytest.raises(ValueError, match="no shards present locally to evict"):
            ds._ss_cache._make_room(10**9)  # local-only shards can never be evicted


def test_a_limit_without_room_for_the_index_and_a_shard_fails_at_construction(
        make_ints, cache_dir) -> None:
    """Four times the largest shard passes the reference's check, but the index counts too:
    such a limit used to fail at the first sample with `CacheFullError`."""
    remote = make_ints(range(300), size_limit=400)
    index = os.path.getsize(os.path.join(remote, "index.json"))
    largest = max(os.path.getsize(os.path.join(remote, n)) for n in os.listdir(remote)
                  if n.endswith(".mds"))
    assert index > 3 * largest  # many small shards: a big index
    limit = max(4 * largest, index + largest - 1)
    with pytest.raises(ValueError, match=r"cannot hold the index.json files .* and the largest "
                                         r"shard .* Raise `cache_limit` by at least 1 bytes"):
        StreamingDataset(remote=remote, local=cache_dir(), batch_size=4, cache_limit=limit)
    with StreamingDataset(remote=remote, local=cache_dir(), batch_size=4,
                          cache_limit=index + largest) as ds:
        assert sorted(s["v"] for s in ds) == list(range(300))
