"""Local paths as users spell them: through a symlink, under `~`, too long for a temp suffix,
or not valid UTF-8 (an old Latin-1 filesystem)."""

from __future__ import annotations

import os

import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.atomic import drop_dead_temps, temp_name_for
from streaming.errors import ReusedLocalError
from tests.dataset.conftest import write_ints


def _strings(out: str, tag: str, count: int = 10) -> str:
    with MDSWriter(out=out, columns={"t": "str"}) as writer:
        for i in range(count):
            writer.write({"t": f"{tag}-{i}"})
    return out


def test_a_cache_reached_through_a_symlink_is_the_same_cache(tmp_path) -> None:
    """Two remotes over one directory, the second spelled through a symlink: it read the first
    one's shards as its own. It is refused like any other spelling of the same directory."""
    a = _strings(str(tmp_path / "a"), "from-a")
    b = _strings(str(tmp_path / "b"), "from-b")
    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(cache, tmp_path / "link")
    with StreamingDataset(remote=a, local=str(cache), batch_size=1) as first:
        assert first[0]["t"] == "from-a-0"
        with pytest.raises(ReusedLocalError, match="Reused local directory"):
            StreamingDataset(remote=b, local=str(tmp_path / "link"), batch_size=1)
    with StreamingDataset(remote=b, local=str(tmp_path / "other"), batch_size=1) as second:
        assert second[0]["t"] == "from-b-0"


def test_local_expands_the_home_directory(tmp_path, monkeypatch) -> None:
    """A writer's `out=~/ds` writes under $HOME; `local=~/ds` reads it there (it looked for a
    folder named `~` in the working directory)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    write_ints("~/ds", range(12))
    assert os.path.exists(tmp_path / "home" / "ds" / "index.json")
    with StreamingDataset(local="~/ds", batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(12))
    with StreamingDataset(remote="~/ds", local="~/cache", batch_size=4) as ds:
        assert ds[5]["v"] == 5
    assert os.path.isdir(tmp_path / "home" / "cache") and not os.path.exists(tmp_path / "~")


def test_a_shard_name_near_the_filesystem_limit_is_cached(tmp_path) -> None:
    """The temp name of a download adds `.tmp.<pid>.<12 hex>`: a 239-byte shard name went past
    255 bytes and every fetch failed with 'File name too long'."""
    remote = write_ints(str(tmp_path / "remote"), range(6), size_limit=None)
    long_name = "s" * 235 + ".mds"
    os.rename(tmp_path / "remote" / "shard.00000.mds", tmp_path / "remote" / long_name)
    index = (tmp_path / "remote" / "index.json").read_text()
    (tmp_path / "remote" / "index.json").write_text(index.replace("shard.00000.mds", long_name))
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=2) as ds:
        assert [s["v"] for s in ds] == list(range(6))
    assert os.path.exists(tmp_path / "cache" / long_name)
    temp = temp_name_for(str(tmp_path / ("é" * 127 + ".mds")))
    assert len(os.fsencode(os.path.basename(temp))) <= 255
    open(temp, "wb").close()
    assert drop_dead_temps([temp]) == []  # ours, and we are alive: kept


def test_a_directory_name_that_is_not_utf8(tmp_path) -> None:
    root = os.fsencode(str(tmp_path))
    remote = os.fsdecode(root + b"/caf\xe9")
    _strings(remote, "latin", 4)
    with StreamingDataset(local=remote, batch_size=1) as ds:
        assert ds[3]["t"] == "latin-3"
    with StreamingDataset(remote=remote, local=os.fsdecode(root + b"/cach\xe9"),
                          batch_size=1) as ds:
        assert [s["t"] for s in ds] == [f"latin-{i}" for i in range(4)]


def test_a_filled_cache_of_a_compressed_dataset_reads_local_only(make_ints, cache_dir) -> None:
    """A cache filled from a zstd remote holds only the decompressed shards. Opened later with
    `local=` alone, every shard was deleted as 'raw without its zip' (the reference does the
    same), though they were the only copy: they are kept and read."""
    remote = make_ints(range(60), compression="zstd")
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert sorted(s["v"] for s in ds) == list(range(60))
    files = sorted(os.listdir(local))
    assert files and not any(f.endswith(".zstd") for f in files)
    with StreamingDataset(local=local, batch_size=4) as ds:
        assert sorted(os.listdir(local)) == files
        assert [s["v"] for s in ds] == list(range(60))
        assert ds[59]["v"] == 59
    assert sorted(os.listdir(local)) == files
