"""Writers with a remote `out`, against real S3 servers (moto, SeaweedFS).

Each shard is uploaded in the background as soon as it is complete, the index last; with
`keep_local=False` nothing stays local; and whatever kills a write (an exception, a failed upload,
SIGKILL) never leaves a remote index naming a shard that is not there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.storage import open_store
from tests.storage.proxy import Fault, FaultProxy
from tests.storage.sample_data import COLUMNS, check_sample, index_of, tokens_for, write_local
from tests.storage.servers import REPO, Server


@pytest.fixture(params=["moto", "seaweed"])
def s3(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Server:
    return request.getfixturevalue(f"{request.param}_server").apply_env(monkeypatch)


def _files(index: dict[str, Any]) -> list[str]:
    """The files a writer uploads: only the compressed one of a compressed shard."""
    return [(shard.get("zip_data") or shard["raw_data"])["basename"] for shard in index["shards"]]


def _wait_for(predicate: Any, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def _streamed_ids(url: str, local: Any) -> list[int]:
    with StreamingDataset(remote=url, local=str(local), batch_size=4,
                          validate_hash="xxh64") as dataset:
        return sorted(check_sample(sample) for sample in dataset)


@pytest.mark.timeout(120)
def test_shards_land_while_writing_and_the_index_last(s3: Server, tmp_path: Any) -> None:
    url = s3.fresh_url()
    store = open_store(url)
    with MDSWriter(out=url, columns=COLUMNS, compression="zstd", hashes=["xxh64"],
                   size_limit=6_000) as writer:
        i = 0
        while not store.exists("shard.00000.mds.zstd"):  # uploaded while the writer is open
            writer.write({"id": i, "tokens": tokens_for(i)})
            i += 1
            assert i < 2_000, "no shard was uploaded while writing"
        assert not store.exists("index.json")
        total = max(i, 300)
        for j in range(i, total):
            writer.write({"id": j, "tokens": tokens_for(j)})
        local = writer.local
    index = index_of(url)
    assert sorted(store.list()) == sorted(["index.json", *_files(index)])
    assert not os.path.exists(local)  # a temp local side is removed once everything is sent
    assert _streamed_ids(url, tmp_path / "cache") == list(range(total))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("keep_local", [True, False])
def test_local_remote_pair_honours_keep_local(s3: Server, tmp_path: Any,
                                              keep_local: bool) -> None:
    url, local = s3.fresh_url(), tmp_path / "out"
    with MDSWriter(out=(str(local), url), columns=COLUMNS, compression="zstd",
                   hashes=["xxh64"], size_limit=6_000, keep_local=keep_local) as writer:
        for i in range(200):
            writer.write({"id": i, "tokens": tokens_for(i)})
    remote_files = sorted(open_store(url).list())
    assert remote_files == sorted(["index.json", *_files(index_of(url))])
    if keep_local:
        assert sorted(os.listdir(local)) == remote_files
    else:
        assert not local.exists() or os.listdir(local) == []


@pytest.mark.timeout(120)
def test_exception_mid_write_publishes_every_sample_written(s3: Server, tmp_path: Any) -> None:
    url = s3.fresh_url()
    with pytest.raises(KeyboardInterrupt):
        with MDSWriter(out=url, columns=COLUMNS, compression="zstd", hashes=["xxh64"],
                       size_limit=6_000) as writer:
            for i in range(250):
                writer.write({"id": i, "tokens": tokens_for(i)})
            raise KeyboardInterrupt  # the user hits ^C with a shard half full
    store = open_store(url)
    index = index_of(url)
    assert all(store.exists(name) for name in _files(index))
    assert sum(shard["samples"] for shard in index["shards"]) == 250  # the half-full one too
    assert _streamed_ids(url, tmp_path / "cache") == list(range(250))


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_killed_writer_leaves_shards_but_no_index(s3: Server) -> None:
    url = s3.fresh_url()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tests.storage.crash_writer", url, "3"],
                          env=env, cwd=REPO, capture_output=True, timeout=100)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    names = open_store(url).list()
    assert len([n for n in names if n.startswith("shard.")]) >= 3
    assert "index.json" not in names


@pytest.mark.timeout(120)
def test_failed_upload_fails_the_writer_and_publishes_no_index(moto_server: Server,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Any) -> None:
    proxy = FaultProxy(moto_server.host_port)
    try:
        moto_server.apply_env(monkeypatch)
        monkeypatch.setenv("S3_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
        url = moto_server.fresh_url()
        writer = MDSWriter(out=url, columns=COLUMNS, compression="zstd", size_limit=6_000,
                           retry=2)
        for i in range(100):
            writer.write({"id": i, "tokens": tokens_for(i)})
        assert _wait_for(lambda: open_store(url).exists("shard.00000.mds.zstd"))
        proxy.reset(Fault("refuse"))  # the server goes away for good
        proxy.drop_all()
        with pytest.raises(Exception, match="One of the threads failed"):
            for i in range(100, 400):
                writer.write({"id": i, "tokens": tokens_for(i)})
            writer.finish()
    finally:
        proxy.stop()
    direct = open_store(url, **moto_server.options)  # around the proxy
    assert direct.exists("shard.00000.mds.zstd") and not direct.exists("index.json")
    # The temp directory of unsent shards goes, though `finish` may not be reached (a writer
    # used without `with` whose `write` raised) and the user never saw its name.
    assert not os.path.exists(writer.local)


def test_a_failed_upload_keeps_the_users_own_local_directory(tmp_path: Any,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture
                                                             ) -> None:
    """`keep_local=False` removes the user's local directory only after a complete upload: it
    holds the only copy of what never reached the remote."""
    from streaming.storage import sink

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("refused")

    monkeypatch.setattr(sink, "push", refused)
    local = tmp_path / "local"
    with pytest.raises(Exception, match="One of the threads failed"):
        with MDSWriter(out=(str(local), str(tmp_path / "remote")), columns=COLUMNS,
                       size_limit=6_000, keep_local=False) as writer:
            for i in range(300):
                writer.write({"id": i, "tokens": tokens_for(i)})
    assert any(name.startswith("shard.") for name in os.listdir(local))
    assert str(local) in caplog.text and "keeps the shards written" in caplog.text


@pytest.mark.parametrize("when", ["finish", "inside"])
def test_an_interrupt_keeps_the_users_own_local_directory(tmp_path: Any,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          when: str) -> None:
    """^C while `finish` waits for uploads in flight (or inside the block, then again while the
    writer publishes what it has): the user's directory holds the only copy of the shards that
    never reached the remote, and no index was published. It was deleted at once."""
    import threading

    from streaming.storage import sink

    release = threading.Event()

    def slow(*args: Any, **kwargs: Any) -> Any:  # a slow uplink, then cut: nothing arrives
        release.wait(30)
        raise ConnectionError("cut")

    monkeypatch.setattr(sink, "push", slow)
    local, remote = tmp_path / "local", tmp_path / "remote"
    try:
        with pytest.raises(KeyboardInterrupt):
            with MDSWriter(out=(str(local), str(remote)), columns=COLUMNS, size_limit=6_000,
                           keep_local=False) as writer:
                for i in range(300):
                    writer.write({"id": i, "tokens": tokens_for(i)})

                def interrupted() -> None:
                    raise KeyboardInterrupt

                monkeypatch.setattr(writer.cloud_writer, "wait", interrupted)
                if when == "inside":
                    raise KeyboardInterrupt
    finally:
        release.set()
    kept = {name for name in os.listdir(local) if name.startswith("shard.")}
    names = {shard["raw_data"]["basename"] for shard in writer.shards}
    assert len(names) > 1 and kept == names  # the only copy of every shard: none lost
    assert not os.path.exists(remote / "index.json")


def test_local_folder_remote_still_works(tmp_path: Any) -> None:
    """A plain-directory remote is not a URL: the sink copies through a `LocalStore`."""
    write_local((str(tmp_path / "local"), str(tmp_path / "remote")), 120, size_limit=6_000)
    assert _streamed_ids(str(tmp_path / "remote"), tmp_path / "cache") == list(range(120))


def test_writing_over_a_published_dataset_warns(tmp_path: Any,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """The reference writes over a remote dataset silently; until the new index lands, readers
    get the old index over a mix of old and new shards (and a crash leaves that mix)."""
    remote = str(tmp_path / "remote")
    write_local((str(tmp_path / "a"), remote), 50, size_limit=6_000)
    assert "already holds a dataset" not in caplog.text  # a fresh remote: no warning
    write_local((str(tmp_path / "b"), remote), 50, size_limit=6_000)
    assert f"{remote} already holds a dataset (index.json)" in caplog.text
