"""What a changed index does to the files of a cache (`format/shard_files.py`): files it
describes differently go, files with unchanged sizes and no digest are judged by the remote's
modification times."""

from __future__ import annotations

import os
from pathlib import Path

from streaming.format.index import ShardEntry
from streaming.format.shard_files import KeptShard, drop_changed_files, drop_kept, drop_rewritten


def _entry(i: int, size: int, *, zipped: int | None = None, digest: str | None = None
           ) -> ShardEntry:
    name = f"shard.{i:05d}.mds"
    hashes = {"xxh64": digest} if digest else {}
    raw = {"basename": name, "bytes": size, "hashes": hashes}
    zipped_info = ({"basename": name + ".zstd", "bytes": zipped, "hashes": {}}
                   if zipped is not None else None)
    return ShardEntry.from_json({
        "column_encodings": ["int"], "column_names": ["v"], "column_sizes": [8],
        "compression": "zstd" if zipped is not None else None, "format": "mds",
        "hashes": ["xxh64"] if digest else [], "raw_data": raw, "samples": 1,
        "size_limit": None, "version": 2, "zip_data": zipped_info}, "test index")


def _cache(tmp_path: Path, *names: str, mtime: float = 1_000.0) -> str:
    for name in names:
        path = tmp_path / name
        path.write_bytes(b"x")
        os.utime(path, (mtime, mtime))
    return str(tmp_path)


def test_changed_sizes_digests_and_gone_shards_are_deleted(tmp_path: Path) -> None:
    local = _cache(tmp_path, "shard.00000.mds", "shard.00001.mds", "shard.00002.mds",
                   "shard.00003.mds")
    old = [_entry(0, 10), _entry(1, 10), _entry(2, 10, digest="aa"), _entry(3, 10)]
    new = [_entry(0, 10), _entry(1, 11), _entry(2, 10, digest="bb")]
    refresh = drop_changed_files(local, old, new)
    assert sorted(refresh.removed) == ["shard.00001.mds", "shard.00002.mds", "shard.00003.mds"]
    assert refresh.unverified == [KeptShard(("shard.00000.mds",), ("shard.00000.mds",))]
    assert sorted(os.listdir(local)) == ["shard.00000.mds"]


def test_a_kept_file_with_a_digest_or_not_cached_is_not_unverified(tmp_path: Path) -> None:
    local = _cache(tmp_path, "shard.00000.mds")
    old = [_entry(0, 10, digest="aa"), _entry(1, 10)]  # shard 1 is not in the cache
    assert drop_changed_files(local, old, old).unverified == []


def test_a_compressed_shard_lists_both_forms_and_its_cached_raw_file(tmp_path: Path) -> None:
    local = _cache(tmp_path, "shard.00000.mds")
    old = [_entry(0, 10, zipped=7)]
    refresh = drop_changed_files(local, old, [_entry(0, 10, zipped=7)])
    assert refresh.unverified == [KeptShard(("shard.00000.mds", "shard.00000.mds.zstd"),
                                            ("shard.00000.mds",))]


def test_rewritten_at_the_remote_after_the_copy_is_deleted(tmp_path: Path) -> None:
    local = _cache(tmp_path, "shard.00000.mds", "shard.00001.mds", "shard.00002.mds",
                   mtime=1_000.0)
    kept = [KeptShard((f"shard.{i:05d}.mds",), (f"shard.{i:05d}.mds",)) for i in range(3)]
    times = {"shard.00000.mds": 999.0,  # written before the copy: the same file
             "shard.00001.mds": 1_000.5}  # rewritten since; shard 2 is not listed
    refresh = drop_rewritten(local, kept, times)
    assert refresh.removed == ["shard.00001.mds"]
    assert refresh.unverified == [kept[2]]
    assert sorted(os.listdir(local)) == ["shard.00000.mds", "shard.00002.mds"]


def test_a_compressed_shard_is_judged_by_its_remote_zip(tmp_path: Path) -> None:
    local = _cache(tmp_path, "shard.00000.mds", mtime=1_000.0)
    kept = [KeptShard(("shard.00000.mds", "shard.00000.mds.zstd"), ("shard.00000.mds",))]
    assert drop_rewritten(local, kept, {"shard.00000.mds.zstd": 900.0}).removed == []
    assert drop_rewritten(local, kept, {"shard.00000.mds.zstd": 1_100.0}).removed == [
        "shard.00000.mds"]
    assert not os.listdir(local)


def test_a_file_gone_meanwhile_is_skipped(tmp_path: Path) -> None:
    kept = [KeptShard(("shard.00000.mds",), ("shard.00000.mds",))]
    refresh = drop_rewritten(str(tmp_path), kept, {"shard.00000.mds": 5.0})
    assert refresh.removed == [] and refresh.unverified == []



def test_drop_kept_deletes_every_cached_form_and_skips_what_is_gone(tmp_path: Path) -> None:
    local = _cache(tmp_path, "shard.00000.mds", "shard.00001.mds.zstd", "shard.00001.mds",
                   "shard.00002.mds")
    kept = [KeptShard(("shard.00000.mds",), ("shard.00000.mds",)),
            KeptShard(("shard.00001.mds.zstd", "shard.00001.mds"),
                      ("shard.00001.mds.zstd", "shard.00001.mds")),
            KeptShard(("shard.00003.mds",), ("shard.00003.mds",))]  # gone meanwhile
    assert drop_kept(local, kept) == ["shard.00000.mds", "shard.00001.mds.zstd",
                                      "shard.00001.mds"]
    assert sorted(os.listdir(local)) == ["shard.00002.mds"]
