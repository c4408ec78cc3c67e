"""Faults a real job meets: changed data, deleted cache files, killed workers, shared caches."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import urllib.parse
import warnings
from typing import Any

import pytest

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.errors import ShardSizeMismatchError, UnverifiedCacheWarning
from tests.dataset.conftest import write_ints
from tests.dataset.procs import alive, all_children_of, children


def test_index_changed_under_a_cached_copy(make_ints, cache_dir, tmp_path) -> None:
    remote = make_ints(range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    # rewrite the remote in place with different data and shard sizes
    shutil.rmtree(remote)
    write_ints(remote, range(100, 140), size_limit=400)
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(100, 140))


def test_a_same_size_rewrite_without_digests_is_caught_by_modification_time(
        make_ints, cache_dir) -> None:
    """Shards of a dataset rewritten in place with the sizes of the old ones (no digests): the
    remote's listing shows them modified after the cache copied them, so they are fetched
    again (without a listing, `tests/storage/test_storage_index_remote.py`: a warning)."""
    remote = make_ints(range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    shutil.rmtree(remote)
    write_ints(remote, range(100, 125))  # shards 0-4 alike in size; shard 5 is gone
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedCacheWarning)
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(100, 125))
    assert not os.path.exists(os.path.join(local, "shard.00005.mds"))


def test_a_rewrite_under_an_identical_index_is_caught_by_the_index_time(
        make_ints, cache_dir) -> None:
    """Rewritten in place with other values of the same count: the index reads the same to the
    byte, but the remote's copy was written after the cache's, so the cached shards are judged
    by their times and fetched again; a start after that keeps them."""
    remote = make_ints(range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    with open(os.path.join(local, "index.json"), "rb") as f:
        cached = f.read()
    shutil.rmtree(remote)
    write_ints(remote, range(100, 130))
    with open(os.path.join(remote, "index.json"), "rb") as f:
        assert f.read() == cached
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedCacheWarning)
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(100, 130))
        inodes = {name: os.stat(os.path.join(local, name)).st_ino for name in os.listdir(local)
                  if name.endswith(".mds")}
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(100, 130))
    assert {name: os.stat(os.path.join(local, name)).st_ino for name in inodes} == inodes


_MARK = 1_000_000_000  # a past mtime set on cached shards: a file fetched again loses it


def _mark_shards(local: str) -> set[str]:
    """Give each cached shard the mark (inode numbers are no test: a file deleted and fetched
    again often gets its old one back) and return their names."""
    names = {name for name in os.listdir(local) if name.endswith(".mds")}
    for name in names:
        os.utime(os.path.join(local, name), (_MARK, _MARK))
    return names


def _marked(local: str) -> set[str]:
    return {name for name in os.listdir(local)
            if name.endswith(".mds") and os.stat(os.path.join(local, name)).st_mtime == _MARK}


def test_a_writers_own_output_is_not_fetched_again(tmp_path, cache_dir) -> None:
    """`MDSWriter(out=(local, remote))` leaves the shards in `local` and uploads them after;
    streaming the remote through that `local` keeps them, though the remote's index is the
    newer file (each was deleted and fetched again, judged rewritten by our clock)."""
    local, remote = str(tmp_path / "written"), str(tmp_path / "uploaded")
    with MDSWriter(out=(local, remote), columns={"v": "int"}, size_limit=226,
                   keep_local=True) as writer:
        for value in range(30):
            writer.write({"v": value})
    kept = _mark_shards(local)  # (the uploaded copies are the newer files)
    for _ in range(2):
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(30))
    assert kept and _marked(local) == kept


def test_a_rewrite_under_an_identical_index_is_caught_without_the_cache_record(
        make_ints, cache_dir) -> None:
    """The machine's record of the cache (the remote index's time when last read) is gone,
    with the temp dir after a reboot, say: the rewrite is judged by our clock's times of the
    cached copies instead (it was trusted, and then recorded as read: stale for good)."""
    from streaming.cache import origins

    remote = make_ints(range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    record = origins._record_path(local)
    assert record is not None and os.path.exists(record)
    os.remove(record)
    shutil.rmtree(remote)
    write_ints(remote, range(100, 130))
    for _ in range(2):
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(100, 130))


def test_a_remote_clock_ahead_of_ours_costs_no_download(make_ints, cache_dir) -> None:
    """Remote files stamped ahead of our clock (a server's clock two minutes fast): a warm
    start under the same index keeps every cached file; only the server's own times are
    compared (each start fetched every shard again while the skew lasted)."""
    remote = make_ints(range(30))
    local = cache_dir()
    ahead = time.time() + 120
    for name in os.listdir(remote):
        os.utime(os.path.join(remote, name), (ahead, ahead))
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    kept = _mark_shards(local)
    for _ in range(2):
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(30))
    assert kept and _marked(local) == kept


def test_a_cache_that_cannot_be_changed_is_used_with_a_warning(make_ints, cache_dir,
                                                                monkeypatch) -> None:
    """Another user's (read-only) cache under an index written again identically: its files
    cannot be dropped, so they are used as they are, with a warning, not a PermissionError at
    construction."""
    from streaming.cache import index_cache

    remote = make_ints(range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    later = time.time() + 5
    os.utime(os.path.join(remote, "index.json"), (later, later))

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", os.path.join(local, "shard.00000.mds"))

    monkeypatch.setattr(index_cache, "drop_rewritten", refused)
    with pytest.warns(UnverifiedCacheWarning, match="could not be checked.*PermissionError"):
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(30))


def test_a_dataset_that_grew_keeps_its_cached_shards(make_ints, cache_dir, tmp_path) -> None:
    """New shards and a new index beside untouched old shards: nothing cached is fetched
    again, and nothing is warned about."""
    remote = make_ints(range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    cached = {name: os.stat(os.path.join(local, name)).st_ino for name in os.listdir(local)
              if name.endswith(".mds")}
    assert len(cached) == 6
    grown = write_ints(str(tmp_path / "grown"), range(40))
    for name in ("shard.00006.mds", "shard.00007.mds", "index.json"):
        shutil.copy(os.path.join(grown, name), os.path.join(remote, name))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedCacheWarning)
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(40))
    assert {name: os.stat(os.path.join(local, name)).st_ino for name in cached} == cached


def test_a_cache_reused_for_another_remote_takes_nothing_of_the_first(
        make_ints, cache_dir, tmp_path, caplog) -> None:
    """Dataset B read through the cache dir of dataset A, whose shard 0 has B's shard 0's size
    and no digest; B's files are older than A's cached copies, so times cannot tell either. The
    machine records where the cache was filled from, so A's copy goes: B's epoch is B's alone
    (it used to be 49 of A's samples in 60). The record lives outside the cache directory,
    which holds only what the reference's would."""
    first = str(tmp_path / "B")
    write_ints(first, range(1000, 1025))  # written before A: older files
    remote = make_ints(range(30))
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    assert {n for n in os.listdir(local) if not n.startswith("shard.")} == {"index.json"}
    with StreamingDataset(remote=first, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(1000, 1025))
    assert f"was filled from {remote}, not {first}" in caplog.text
    with StreamingDataset(remote=first, local=local, batch_size=4) as ds:  # its own: kept
        assert ds.cache_usage > 0 and [s["v"] for s in ds] == list(range(1000, 1025))


def test_another_remote_with_the_very_same_index_text_takes_nothing_of_the_first(
        make_ints, cache_dir, caplog) -> None:
    """Two datasets of the same shape (same sizes, no digests) have byte-identical indexes: the
    cached copy of A's index read as B's, so A's shards were served as B's samples."""
    first = make_ints(range(30))
    other = make_ints(range(1000, 1030))
    with open(os.path.join(first, "index.json"), "rb") as a, \
            open(os.path.join(other, "index.json"), "rb") as b:
        assert a.read() == b.read()
    local = cache_dir()
    with StreamingDataset(remote=first, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    with StreamingDataset(remote=other, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(1000, 1030))
    assert f"was filled from {first}, not {other}" in caplog.text


def test_every_spelling_of_one_local_remote_is_one_origin(make_ints, cache_dir, tmp_path,
                                                          caplog) -> None:
    """A local remote as a path, a ``file://`` URL with %20, and ``file://localhost/...``:
    each switch of spelling once deleted the cache and fetched every shard again."""
    spaced = str(tmp_path / "my set")
    os.rename(make_ints(range(30)), spaced)
    local = cache_dir()
    quoted = "file://" + urllib.parse.quote(spaced)
    for remote in (spaced, quoted, f"file://localhost{spaced}", spaced + "/"):
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(30))
            fetched = ds.egress["bytes"]
            assert fetched == 0 or remote == spaced, (remote, fetched)
    assert "was filled from" not in caplog.text


def test_a_same_size_rewrite_with_digests_is_fetched_again(make_ints, cache_dir) -> None:
    remote = make_ints(range(30), hashes=["xxh64"])
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    shutil.rmtree(remote)
    write_ints(remote, range(100, 130), hashes=["xxh64"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedCacheWarning)
        with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
            assert [s["v"] for s in ds] == list(range(100, 130))


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_a_truncated_cached_shard_is_fetched_again(make_ints, cache_dir,
                                                   compression: str | None) -> None:
    """A cached shard file cut short (an interrupted copy of a cache) was read as corrupt
    although the remote had it whole: it is fetched again, by iteration, random access and the
    loader's workers alike."""
    remote = make_ints(range(30), compression=compression)
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))

    def truncate(name: str, size: int) -> None:
        with open(os.path.join(local, name), "r+b") as f:
            f.truncate(size)

    truncate("shard.00001.mds", 12)
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [s["v"] for s in ds] == list(range(30))
    truncate("shard.00002.mds", 0)
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        assert [ds[i]["v"] for i in range(30)] == list(range(30))
    truncate("shard.00003.mds", 12)
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=2)
        assert sorted(v for b in loader for v in b["v"].tolist()) == list(range(30))
        loader.close()


def test_a_truncated_shard_without_a_remote_says_so(make_ints) -> None:
    local = make_ints(range(30))
    with open(os.path.join(local, "shard.00001.mds"), "r+b") as f:
        f.truncate(12)
    with StreamingDataset(local=local, batch_size=4) as ds, pytest.raises(
            ShardSizeMismatchError, match=r"shard\.00001\.mds has 12 bytes, but the index says"):
        list(ds)
    assert os.path.getsize(os.path.join(local, "shard.00001.mds")) == 12  # the only copy: kept


def test_shard_deleted_from_cache_mid_epoch_is_fetched_again(ints30, cache_dir) -> None:
    local = cache_dir()
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as ds:
        it = iter(ds)
        got = [next(it)["v"] for _ in range(3)]
        for name in os.listdir(local):
            # Whole shards only: a prefetch's temp file may be renamed away meanwhile.
            if name.startswith("shard.0000") and name.endswith(".mds") and (
                    name != "shard.00000.mds"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(local, name))
        got += [s["v"] for s in it]
        assert got == list(range(30))


def test_two_jobs_on_one_cache_dir(ints30, cache_dir) -> None:
    local = cache_dir()
    script = textwrap.dedent("""
        import sys, time
        from streaming import StreamingDataset
        ds = StreamingDataset(remote=sys.argv[1], local=sys.argv[2], batch_size=4)
        print("ready", flush=True)
        time.sleep(60)
    """)
    other = subprocess.Popen([sys.executable, "-c", script, ints30, local],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "ready"
        with pytest.raises(ValueError, match="Reused local directory"):
            StreamingDataset(remote=ints30, local=local, batch_size=4)
        other.kill()  # the other job dies without cleaning up ...
        other.wait()
        with StreamingDataset(remote=ints30, local=local, batch_size=4) as ds:  # ... reclaimed
            assert [s["v"] for s in ds] == list(range(30))
    finally:
        other.kill()


def test_sigkilled_worker_leaves_a_clean_start(make_ints, cache_dir) -> None:
    # Enough batches that the workers cannot have queued them all (and the loop could then
    # end without noticing their death) before they are killed, on a loaded machine too.
    remote = make_ints(range(4000), size_limit=2000)
    local = cache_dir()
    ds = StreamingDataset(remote=remote, local=local, batch_size=4)
    loader = StreamingDataLoader(ds, batch_size=4, num_workers=2)
    before = set(children())  # other tests may have servers running as our children
    it = iter(loader)
    next(it)
    workers = set(children()) - before
    assert len(workers) == 2
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    # Usually torch's "DataLoader worker ... exited unexpectedly"; if a worker dies while handing
    # a batch over, receiving the batch's shared-memory handle fails first (torch, not us).
    with pytest.raises((RuntimeError, ConnectionResetError)) as failure:
        for _ in it:
            pass
    if failure.type is RuntimeError:
        assert "DataLoader worker" in str(failure.value)
    del it, loader
    ds.close()
    del ds
    with StreamingDataset(remote=remote, local=local, batch_size=4) as fresh:
        loader = StreamingDataLoader(fresh, batch_size=4, num_workers=2)
        assert sorted(v for b in loader for v in b["v"].tolist()) == list(range(4000))


def _fds() -> int:
    gc.collect()  # files held by collectable cycles of earlier tests are not this test's
    return len(os.listdir("/proc/self/fd"))


def _shm(prefix: str) -> int:
    return sum(name.startswith(prefix) for name in os.listdir("/dev/shm"))


@pytest.mark.slow
def test_many_datasets_do_not_leak(ints30, cache_dir) -> None:
    local = cache_dir()
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as warm:
        list(warm)
        name = warm._ss_namespace.name
    fds = _fds()
    start = time.monotonic()
    for i in range(500):
        ds = StreamingDataset(remote=ints30, local=local, batch_size=4)
        ds[i % 30]
        if i % 2:
            ds.close()
        del ds
    assert _fds() <= fds + 5
    assert _shm(name) == 0  # every block of every dataset was unlinked
    assert time.monotonic() - start < 240


@pytest.mark.parametrize("batches", [False, True])
def test_a_cached_copy_that_does_not_decode_is_fetched_again_by_the_next_run(
        tmp_path, cache_dir, batches: bool) -> None:
    """A shard damaged at the remote (no digests to tell) fails the run that reads it; the
    node cache's copy goes with it, so once the remote is repaired the next run reads it whole
    instead of failing on the cached bytes forever. A local-only shard is the data: kept."""
    from streaming import MDSWriter
    from streaming.errors import ShardFormatError

    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"v": "int", "s": "str"}, size_limit=400) as writer:
        for v in range(40):
            writer.write({"v": v, "s": f"row-{v:04d}"})
    shard = os.path.join(remote, "shard.00001.mds")
    good = open(shard, "rb").read()
    assert b"row-0012" in good
    with open(shard, "wb") as f:
        f.write(good.replace(b"row-0012", b"row-\xff\xfe12"))

    def read(**kwargs) -> list[int]:
        with StreamingDataset(batch_size=4, **kwargs) as ds:
            if batches:
                return [v for batch in ds.batches(4) for v in batch["v"].tolist()]
            return [s["v"] for s in ds]

    local = cache_dir()
    with pytest.raises(ShardFormatError, match="shard.00001.mds"):
        read(remote=remote, local=local)
    assert not os.path.exists(os.path.join(local, "shard.00001.mds"))
    with open(shard, "wb") as f:  # the remote repaired
        f.write(good)
    assert read(remote=remote, local=local) == list(range(40))
    with open(shard, "wb") as f:
        f.write(good.replace(b"row-0012", b"row-\xff\xfe12"))
    with pytest.raises(ShardFormatError):
        read(local=remote)
    assert os.path.exists(shard)  # the only copy


def test_a_killed_trainers_lingering_workers_do_not_block_its_restart(ints30, cache_dir,
                                                                     tmp_path) -> None:
    """A trainer SIGKILLed mid-epoch leaves its DataLoader workers running for up to ~5 s
    (torch's watchdog); a restart over the same cache in that window waits for them, as the
    reference's restart simply works, instead of refusing a "live" dataset."""
    local = cache_dir()
    script = textwrap.dedent(f"""
        import sys, time
        from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
        ds = StreamingDataset(remote={ints30!r}, local={local!r}, batch_size=4)
        it = iter(StreamingDataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True))
        next(it)
        print("running", flush=True)
        time.sleep(600)
    """)
    trainer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert trainer.stdout is not None and trainer.stdout.readline().strip() == "running"
        workers = all_children_of(trainer.pid)
        assert len(workers) == 2
    finally:
        trainer.kill()
        trainer.wait()
    assert any(alive(pid) for pid in workers)  # the window this test is about
    with StreamingDataset(remote=ints30, local=local, batch_size=4) as again:
        assert sorted(s["v"] for s in again) == list(range(30))


def test_evicting_the_shard_being_read_does_not_break_iteration(make_ints, cache_dir) -> None:
    """`evict_shard` / `evict_coldest_shard` between two samples of a bulk run: the run keeps
    the mapping it started with, and later runs fetch the shard again (as the reference's
    `get_item` retries)."""
    remote = make_ints(range(300), size_limit=1000)  # ~68 samples per shard: bulk runs
    with StreamingDataset(remote=remote, local=cache_dir(), batch_size=4) as ds:
        assert len(list(ds)) == 300  # a warm cache: the next epoch reads shard 0 in bulk
        it = iter(ds)
        seen = [next(it)["v"]]
        ds.evict_shard(0)
        for sample in it:
            seen.append(sample["v"])
            if len(seen) == 150:
                ds.evict_coldest_shard()
        assert seen == list(range(300))


class _FailsAt(StreamingDataset):
    """A user's transform that fails on one sample."""

    def __getitem__(self, idx: int) -> dict:
        sample = super().__getitem__(idx)
        if sample["v"] == 17:
            raise ValueError("a bad sample")
        return sample


def test_workers_of_a_plain_loader_collected_after_an_error_end_by_themselves(
        ints30, cache_dir) -> None:
    """The iterator is in a cycle with the worker's error (torch's `reraise`), so a garbage
    collection reclaims it: its queues were finalised first, the workers never got their last
    message, and torch waited 5 s for each before terminating it (10 s with 2 workers, at
    whatever collection came next). They now see the loader is done and exit by themselves,
    before torch's join gives up on them and terminates them."""
    from torch.utils.data import DataLoader

    terminated = []
    with _FailsAt(remote=ints30, local=cache_dir(), batch_size=2) as ds:
        it = iter(DataLoader(ds, batch_size=2, num_workers=2))
        workers = list(it._workers)
        for worker in workers:
            kill = worker.terminate
            worker.terminate = lambda kill=kill: (terminated.append(1), kill())  # type: ignore
        with pytest.raises(ValueError, match="a bad sample"):
            for _ in it:
                pass
        del it
        gc.collect()
        assert all(w.exitcode == 0 for w in workers)
        assert not terminated


def test_a_compressed_shard_that_expands_past_its_index_is_refused(make_ints, cache_dir) -> None:
    """A decompression bomb: 4 MiB of zeros in a zstd file, where the index gives the raw shard
    a few hundred bytes. It was decoded whole and written to the cache."""
    import json

    from streaming.errors import ShardFormatError
    from streaming.format.compression import compress

    remote = make_ints(range(10), compression="zstd")
    path = os.path.join(remote, "index.json")
    with open(path) as f:
        index = json.load(f)
    bomb = compress("zstd", bytes(4 << 20))
    zip_data = index["shards"][0]["zip_data"]
    with open(os.path.join(remote, zip_data["basename"]), "wb") as f:
        f.write(bomb)
    zip_data["bytes"] = len(bomb)
    with open(path, "w") as f:
        json.dump(index, f)
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4) as ds:
        with pytest.raises(ShardFormatError, match="decompresses to more than the"):
            ds[0]
    assert max(os.path.getsize(os.path.join(local, n)) for n in os.listdir(local)) < 1 << 20


@pytest.mark.parametrize("victim", ["index.json", "shard.00000.mds"])
@pytest.mark.parametrize("with_remote", [False, True])
def test_a_fifo_in_place_of_a_dataset_file_is_refused_not_waited_on(
        make_ints, cache_dir, victim, with_remote) -> None:
    """A FIFO planted as a shard or an index blocked `open` forever."""
    from streaming.errors import NotARegularFileError

    remote = make_ints(range(10))
    os.remove(os.path.join(remote, victim))
    os.mkfifo(os.path.join(remote, victim))
    with pytest.raises(NotARegularFileError, match=rf"{victim} is a FIFO, not a regular file"):
        if with_remote:
            StreamingDataset(remote=remote, local=cache_dir(), batch_size=4)[0]
        else:
            StreamingDataset(local=remote, batch_size=4)[0]


def test_a_read_only_compressed_dataset_says_where_and_what_to_do(make_ints, monkeypatch) -> None:
    """Decompressing into a read-only folder failed naming a `.tmp.<pid>` file. (As root the
    suite cannot make a folder read-only, so the write itself is refused here.)"""
    import errno

    from streaming.cache import prepare

    remote = make_ints(range(10), compression="zstd")

    def refused(path: str, parts: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EROFS, "Read-only file system", path + ".tmp.1.abc")

    monkeypatch.setattr(prepare, "write_atomic", refused)
    with StreamingDataset(local=remote, batch_size=4) as ds:
        with pytest.raises(PermissionError, match=r"Cannot write the decompressed shard "
                                                  r"shard\.00000\.mds into .*Read-only file "
                                                  r"system.*writable cache"):
            ds[0]
